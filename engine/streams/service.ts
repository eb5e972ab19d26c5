import type { Clock } from '../clock.js';
import { type Dispatcher, type Stats, statsOf, streamKey } from '../delivery/dispatcher.js';
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
import { notFound } from '../errors.js';
import { counted, cursorKey, rangePage, type Page } from '../page.js';
import type { Kv } from '../ports.js';
import { type ControlPlane, StoreControlPlane } from './control-plane.js';
import { mustOwn } from './resources.js';
import { settingsOf } from './settings.js';

/**
 * What a tenant's streams of every family share: settings, stats, history, replay. Each family's own resources
 * (create, update, list, status, addresses) are its FamilyStreams, built by its family (engine/families/family.ts).
 */
export class StreamsService {
  private readonly kv: Kv;
  private readonly clock: Clock;
  private readonly dispatcher: Dispatcher;
  private readonly plane: ControlPlane;

  constructor({
    kv,
    clock,
    dispatcher,
    plane = new StoreControlPlane(kv),
  }: { kv: Kv; clock: Clock; dispatcher: Dispatcher; plane?: ControlPlane }) {
    this.kv = kv;
    this.plane = plane;
    this.clock = clock;
    this.dispatcher = dispatcher;
  }

  /** 404 unless the tenant has this stream, of any family (stats, the test hook). */
  mustOwn(tenant: string, id: string): void {
    mustOwn(this.kv, tenant, id);
  }

  async settings(tenant: string): Promise<{ region: string; secretKey: string }> {
    const s = await settingsOf(this.kv, this.plane, tenant);
    return { region: s.region, secretKey: s.secretKey };
  }

  async setRegion(tenant: string, region: string): Promise<{ region: string }> {
    const s = await settingsOf(this.kv, this.plane, tenant);
    await this.plane.write({ kind: 'settings.set', tenant, settings: { ...s, region } });
    return { region };
  }

  stats(tenant: string, streamId?: string): Stats & { streamId?: string } {
    if (streamId !== undefined) this.mustOwn(tenant, streamId);
    const of = streamId === undefined ? tenant : streamKey(tenant, streamId);
    const st = statsOf(this.kv, of, new Date(this.clock.now()).toISOString());
    return streamId === undefined ? st : { ...st, streamId };
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
   * webhook's pending retry (Dispatcher.replayDelivered).
   */
  async replay(
    tenant: string,
    historyId: string,
    streamId?: string,
  ): Promise<HistoryRecord & { delivered: boolean; status?: number; errorMessage: string }> {
    const found = findHistory(this.kv, tenant, historyId);
    const stored = found?.record;
    if (stored === undefined || (streamId !== undefined && stored.streamId !== streamId))
      throw notFound(`no history record ${historyId}${streamId === undefined ? '' : ` of stream ${streamId}`}`);
    // The very bytes last sent.
    const body = ownBytes(stored.body);
    const h = historyView({ ...stored, body }, true) as HistoryRecord;
    const res = await this.dispatcher.post(tenant, h.webhookUrl, body, this.dispatcher.queueSize(h.streamId));
    const deliveredAt = res.delivered
      ? (this.dispatcher.replayDelivered(tenant, {
          id: historyId,
          streamId: stored.streamId,
          seq: stored.seq,
          partition: found!.partition,
        }) ?? h.deliveredAt)
      : h.deliveredAt;
    const out = { ...h, delivered: res.delivered, deliveredAt, errorMessage: res.delivered ? '' : (res.error ?? h.errorMessage) };
    return res.status === undefined ? out : { ...out, status: res.status };
  }
}
