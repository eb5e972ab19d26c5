import type { Clock } from '../clock.js';
import { type Dispatcher, type LastError, type Stats, statsOf, streamKey } from '../delivery/dispatcher.js';
import { storedQueueSize } from '../delivery/kv-queue.js';
import { rateKey } from '../delivery/rate-store.js';
import { START_RATE } from '../delivery/success-rate.js';
import type { StoredStream } from './model.js';
import {
  findHistory,
  historyView,
  logView,
  rangeOfKey,
  tenantRanges,
  type Range,
  type DeliveryLog,
  type HistoryRecord,
  type StoredHistory,
  type StoredLog,
} from '../delivery/records.js';
import { ownBytes } from '../delivery/body.js';
import { standardWebhooksSecret } from '../delivery/webhook.js';
import type { EnqueueItem, EnqueueResult } from '../delivery/enqueue.js';
import { NotHere, type PartitionRequest, type PartitionRequests } from './partition-requests.js';
import { ApiError, notFound, unavailable } from '../errors.js';
import { counted, cursorKey, rangePage, type Page } from '../page.js';
import type { Kv } from '../ports.js';
import { type ControlPlane, StoreControlPlane } from './control-plane.js';
import { mustOwn } from './resources.js';
import { settingsOf } from './settings.js';

/** A replay's answer: the record, whether the webhook was delivered, and the receiver's status or the error. */
export type ReplayAnswer = HistoryRecord & { delivered: boolean; status?: number; errorMessage: string };

/** A stream's records replayed (POST /history/replay/:streamId): each one's answer, oldest first. */
export interface StreamReplay {
  streamId: string;
  replayed: number;
  /** Its records not yet delivered left for another call (over REPLAY_ALL_MAX). */
  remaining: number;
  results: ReplayAnswer[];
}

/** A stream's records replayed in one call at most: each may take the delivery timeout (10 s) when its receiver does not answer. */
export const REPLAY_ALL_MAX = 100;
/** Rows of the history a replay of a whole stream reads between two turns of the event loop. */
const SCAN_TURN = 1_000;

/** A stream's statistics and its delivery's state: where its webhooks go, that URL's success rate, its queue, its last failure. */
export type StreamStats = Omit<Stats, 'lastError'> & {
  streamId: string;
  webhookUrl: string;
  successRate: number;
  queueSize: number;
  lastError: LastError | null;
};

/** Retry-After of a replay whose partition changed owner while its mark was being published, seconds. */
const LOST_RETRY_AFTER_S = 5;

/**
 * What a tenant's streams of every family share: settings, stats, history, replay. Each family's own resources
 * (create, update, list, status, addresses) are its FamilyStreams, built by its family (engine/families/family.ts).
 */
export class StreamsService {
  private readonly kv: Kv;
  private readonly clock: Clock;
  private readonly dispatcher: Dispatcher;
  private readonly plane: ControlPlane;
  private readonly requests: PartitionRequests | undefined;

  constructor({
    kv,
    clock,
    dispatcher,
    plane = new StoreControlPlane(kv),
    requests,
  }: {
    kv: Kv;
    clock: Clock;
    dispatcher: Dispatcher;
    plane?: ControlPlane;
    /** A cluster node: a partition's work (a replay, webhooks staged on demand) is carried out by its owner. */
    requests?: PartitionRequests | undefined;
  }) {
    this.kv = kv;
    this.plane = plane;
    this.clock = clock;
    this.dispatcher = dispatcher;
    this.requests = requests;
  }

  /** Whether this node carries out the partition's work: always in one process. */
  private here(partition: number): boolean {
    return this.requests === undefined || this.requests.here(partition);
  }

  /** 404 unless the tenant has this stream, of any family (stats, the test hook). */
  mustOwn(tenant: string, id: string): void {
    mustOwn(this.kv, tenant, id);
  }

  /** The tenant's settings; `standardWebhooksSecret` is its secret as Standard Webhooks libraries take it. */
  async settings(tenant: string): Promise<{ region: string; secretKey: string; standardWebhooksSecret: string }> {
    const s = await settingsOf(this.kv, this.plane, tenant);
    return { region: s.region, secretKey: s.secretKey, standardWebhooksSecret: standardWebhooksSecret(s.secretKey) };
  }

  async setRegion(tenant: string, region: string): Promise<{ region: string }> {
    const s = await settingsOf(this.kv, this.plane, tenant);
    await this.plane.write({ kind: 'settings.set', tenant, settings: { ...s, region } });
    return { region };
  }

  stats(tenant: string): Stats;
  stats(tenant: string, streamId: string): StreamStats;
  stats(tenant: string, streamId?: string): Stats | StreamStats;
  stats(tenant: string, streamId?: string): Stats | StreamStats {
    const iso = new Date(this.clock.now()).toISOString();
    if (streamId === undefined) return statsOf(this.kv, tenant, iso);
    const stream = this.kv.get<StoredStream>('streams', streamKey(tenant, streamId));
    if (stream === undefined) throw notFound(`no stream ${streamId}`);
    const { lastError, ...st } = statsOf(this.kv, streamKey(tenant, streamId), iso);
    // Read from the rows every node applies (a cluster's partition owner writes them): the same on any node.
    return {
      ...st,
      streamId,
      webhookUrl: stream.webhookUrl,
      successRate: this.kv.get<number>('rates', rateKey(tenant, stream.webhookUrl)) ?? START_RATE,
      queueSize: storedQueueSize(this.kv, streamId),
      lastError: lastError ?? null,
    };
  }

  /**
   * Newest first, the tenant's ranges (one per delivery partition with records) merged; a page reads limit + 2
   * records of each at most, and `total` is the sum of their counters.
   */
  history(tenant: string, limit: number, cursor: string | null, excludePayload: boolean): Page<Partial<HistoryRecord>> {
    return this.tenantPage<StoredHistory, Partial<HistoryRecord>>(tenant, 'history', 'history', limit, cursor, (h) =>
      historyView(h, !excludePayload),
    );
  }

  /** Successes and failures (stored apart, kept for different times, per partition) newest first, as one list. */
  logs(tenant: string, limit: number, cursor: string | null): Page<DeliveryLog> {
    return this.tenantPage<StoredLog, DeliveryLog>(tenant, 'deliveryLogs', 'history/logs', limit, cursor, (row, key) => logView(key, row));
  }

  /** A page of the tenant's ranges of a table (those with a counter) merged newest first, `total` their counters' sum. */
  private tenantPage<T, R>(
    tenant: string,
    table: Range['table'],
    list: string,
    limit: number,
    cursor: string | null,
    map: (value: T, key: string) => R,
  ): Page<R> {
    const { ranges, total } = tenantRanges(this.kv, tenant, table);
    const prefixes = ranges.map((r) => r.prefix);
    // A cursor whose range was purged empty since (its counter gone) still goes on, over the ranges left.
    const from = cursorKey(cursor);
    const gone = from === undefined ? undefined : rangeOfKey(table, tenant, from);
    if (gone !== undefined && !prefixes.includes(gone)) prefixes.push(gone);
    const p = rangePage<T>(this.kv, table, prefixes, { list, limit, reverse: true, cursor });
    return counted(p, total, limit, map);
  }

  /**
   * Re-sends a failed webhook now; answers the record and whether it was delivered. The stream's state
   * does not change; a delivery marks the record delivered (deliveredAt: the first delivery) and ends the
   * webhook's pending retry (Dispatcher.replayDelivered). Carried out by the record's partition's owner: on another
   * node, asked to it over the bus.
   */
  async replay(tenant: string, historyId: string, streamId?: string): Promise<ReplayAnswer> {
    const { partition } = this.found(tenant, historyId, streamId);
    if (this.here(partition)) return this.replayHere(tenant, historyId, streamId);
    const request: PartitionRequest = { kind: 'replay', tenant, historyId, ...(streamId === undefined ? {} : { streamId }) };
    return (await this.requests!.ask(partition, request)) as ReplayAnswer;
  }

  /**
   * POST /history/replay/:id: the tenant's history record with that id replayed, else every record of its stream
   * with that id (history ids and stream ids are both UUIDs, never equal); 404 when it has neither.
   */
  async replayRecordOrStream(tenant: string, id: string): Promise<ReplayAnswer | StreamReplay> {
    if (findHistory(this.kv, tenant, id) !== undefined) return this.replay(tenant, id);
    if (!this.kv.has('streams', streamKey(tenant, id))) throw notFound(`no history record or stream ${id}`);
    return this.replayStream(tenant, id);
  }

  /**
   * Replays the stream's failed-delivery records not delivered yet, oldest first, at most REPLAY_ALL_MAX, one after
   * another: each as `replay` does (by its partition's owner). A record gone meanwhile (retention) is passed over;
   * another refusal ends the call, and the records replayed before it are delivered or not as their answers were
   * (sent again, a delivered one is passed over).
   */
  async replayStream(tenant: string, streamId: string): Promise<StreamReplay> {
    this.mustOwn(tenant, streamId);
    // Each range is in time order (UUID v7 ids): the oldest REPLAY_ALL_MAX overall are among each range's first
    // REPLAY_ALL_MAX; the rest are only counted. A tenant's history may be long: the scan gives the event loop a turn
    // every SCAN_TURN rows, so one tenant's call does not hold the others' requests.
    const ids: string[] = [];
    let waiting = 0;
    let rows = 0;
    for (const r of tenantRanges(this.kv, tenant, 'history').ranges) {
      let taken = 0;
      for (const { value } of this.kv.range<StoredHistory>('history', { start: r.prefix, end: `${r.prefix}\uffff` })) {
        if (++rows % SCAN_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
        if (value.streamId !== streamId || value.deliveredAt !== undefined) continue;
        waiting++;
        if (taken++ < REPLAY_ALL_MAX) ids.push(value.id);
      }
    }
    ids.sort();
    const results: ReplayAnswer[] = [];
    for (const id of ids.slice(0, REPLAY_ALL_MAX)) {
      try {
        results.push(await this.replay(tenant, id, streamId));
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
      }
    }
    return { streamId, replayed: results.length, remaining: Math.max(0, waiting - REPLAY_ALL_MAX), results };
  }

  /**
   * Webhooks staged on demand (a block replay, the test hooks), each by its stream's partition's owner: those of the
   * partitions this node carries out staged here, the others asked to their owners; the results in the items' order.
   * One owner not reachable refuses the whole with 503, the other partitions' webhooks staged all the same.
   */
  async enqueue(items: ReadonlyArray<EnqueueItem>): Promise<EnqueueResult[]> {
    if (this.requests === undefined) return this.dispatcher.enqueueBatch(items);
    const byPartition = new Map<number, number[]>();
    const local: number[] = [];
    items.forEach((item, i) => {
      const p = this.dispatcher.partitionOfStream(item.streamId);
      // A stream this node does not know is dropped here, as anywhere.
      if (p === undefined || this.here(p)) local.push(i);
      else {
        const list = byPartition.get(p);
        if (list === undefined) byPartition.set(p, [i]);
        else list.push(i);
      }
    });
    const results: EnqueueResult[] = new Array(items.length);
    const put = async (indexes: number[], answer: Promise<EnqueueResult[]>): Promise<void> => {
      const got = await answer;
      indexes.forEach((i, k) => (results[i] = got[k]!));
    };
    await Promise.all([
      ...(local.length === 0 ? [] : [put(local, this.dispatcher.enqueueBatch(local.map((i) => items[i]!)))]),
      ...[...byPartition].map(([p, indexes]) =>
        put(indexes, this.requests!.ask(p, { kind: 'enqueue', items: indexes.map((i) => items[i]!) }) as Promise<EnqueueResult[]>),
      ),
    ]);
    return results;
  }

  /** On a partition's owner: another node's request (PartitionRequests.ask), carried out as if asked here; NotHere when it is not. */
  async carryOut(partition: number, request: PartitionRequest): Promise<unknown> {
    if (!this.here(partition)) throw new NotHere(partition);
    if (request.kind === 'replay') {
      if (this.found(request.tenant, request.historyId, request.streamId).partition !== partition) throw new NotHere(partition);
      return this.replayHere(request.tenant, request.historyId, request.streamId);
    }
    if (request.items.some((item) => this.dispatcher.partitionOfStream(item.streamId) !== partition)) throw new NotHere(partition);
    return this.dispatcher.enqueueBatch(request.items);
  }

  /** The tenant's history record and the partition holding it; 404 when it has none by that id (of that stream). */
  private found(tenant: string, historyId: string, streamId: string | undefined): { record: StoredHistory; partition: number } {
    const found = findHistory(this.kv, tenant, historyId);
    if (found === undefined || (streamId !== undefined && found.record.streamId !== streamId))
      throw notFound(`no history record ${historyId}${streamId === undefined ? '' : ` of stream ${streamId}`}`);
    return found;
  }

  /** The replay, on the node carrying out the record's partition. */
  private async replayHere(tenant: string, historyId: string, streamId?: string): Promise<ReplayAnswer> {
    const { record: stored, partition } = this.found(tenant, historyId, streamId);
    // The very bytes last sent.
    const body = ownBytes(stored.body);
    const h = historyView({ ...stored, body }, true) as HistoryRecord;
    // The webhook's own id again (a receiver de-duplicating by webhook-id sees the same webhook).
    const res = await this.dispatcher.post(
      tenant,
      h.webhookUrl,
      body,
      this.dispatcher.queueSize(h.streamId),
      stored.webhookId ?? stored.id,
    );
    let deliveredAt = h.deliveredAt;
    if (res.delivered) {
      const marked = this.dispatcher.replayDelivered(tenant, { id: historyId, streamId: stored.streamId, seq: stored.seq, partition });
      deliveredAt = marked.deliveredAt ?? deliveredAt;
      // A cluster node answers once the mark is durable in the partition's log; taken back (the partition lost first),
      // the retry stays pending.
      await marked.durable?.catch(() => {
        throw unavailable(
          `the webhook was delivered, but partition ${partition} changed owner before its record was marked delivered: its retry stays pending`,
          LOST_RETRY_AFTER_S,
        );
      });
    }
    const out = { ...h, delivered: res.delivered, deliveredAt, errorMessage: res.delivered ? '' : (res.error ?? h.errorMessage) };
    return res.status === undefined ? out : { ...out, status: res.status };
  }
}
