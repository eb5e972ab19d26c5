import { timeKey } from '../expiry.js';
import type { Kv } from '../ports.js';
import { ownBytes } from './body.js';
import { uuidV7 } from './ids.js';
import { QUEUE_CAP } from './limits.js';
import type { DeliveryQueue, QueueItem, QueueWrite, Settlement, Taken } from './queue.js';
import { RowCache } from './row-cache.js';

/**
 * The delivery queue in the store (the Kv port): fresh webhooks in `queue` under `streamId/seq`, failed ones in
 * `retries` under `streamId/dueTime/seq` (ordered by when they are due), and each stream's counters in `queueMeta`.
 * A unit of work is the caller's write transaction: `begin()` inside it, `close()` at its end, `committed()` after.
 */
export interface QueueMeta {
  nextSeq: number;
  queued: number;
  /**
   * The delivery partition its webhooks were staged in: kept while any wait, set by the first staged into an empty
   * queue (absent: a row from before partitions, 0). A stream's rows of `queue` and `retries` are in it.
   */
  partition?: number;
}

/**
 * A stream's undelivered webhooks as committed in the store (`queueMeta`): what x-queue-size says, readable on any
 * node (every cluster node applies every partition's rows).
 */
export const storedQueueSize = (kv: Pick<Kv, 'get'>, streamId: string): number => kv.get<QueueMeta>('queueMeta', streamId)?.queued ?? 0;

/** The partition a stream's `queue` and `retries` rows are in, by its `queueMeta` row. */
export const queuePartition = (m: QueueMeta | undefined): number => m?.partition ?? 0;

const seqPart = (seq: number): string => String(seq).padStart(12, '0');
const seqKey = (streamId: string, seq: number): string => `${streamId}/${seqPart(seq)}`;
const retryKey = (streamId: string, nextAt: number, seq: number): string => `${streamId}/${timeKey(nextAt)}/${seqPart(seq)}`;
const within = (id: string) => ({ start: `${id}/`, end: `${id}/\uffff` });

/** A ticket names the table and the key: `q` + a `queue` key, `r` + a `retries` key. */
const ticketOf = (table: 'queue' | 'retries', key: string): string => (table === 'queue' ? 'q' : 'r') + key;
const whereOf = (ticket: string): { table: 'queue' | 'retries'; key: string } => ({
  table: ticket[0] === 'q' ? 'queue' : 'retries',
  key: ticket.slice(1),
});

export class KvDeliveryQueue implements DeliveryQueue {
  /** `queueMeta` rows as committed. */
  readonly metas = new RowCache<QueueMeta>();
  /** Per stream, the seq of its fresh queue's first webhook, when known: read by its key (the queue only loses its head). */
  private readonly heads = new Map<string, number>();
  /** Streams whose retry index was found empty, until a retry is put there again. */
  private readonly noRetry = new Set<string>();
  /** Each stream's undelivered count as last committed (x-queue-size), read from `queueMeta` once. */
  private readonly queued = new Map<string, number>();
  /** Per stream, the ticket of its webhook out for an attempt. */
  private readonly out = new Map<string, string>();
  private writes = 0;

  constructor(
    readonly kv: Kv,
    readonly cap = QUEUE_CAP,
  ) {}

  size(streamId: string): number {
    let n = this.queued.get(streamId);
    if (n === undefined) this.queued.set(streamId, (n = storedQueueSize(this.kv, streamId)));
    return n;
  }

  next(streamId: string, now: number): { taken?: Taken; retryAt?: number } {
    let retryAt: number | undefined;
    // A failed webhook waits aside for its retry; fresh ones keep going in staging order meanwhile.
    if (!this.noRetry.has(streamId)) {
      const retry = this.kv.range<QueueItem>('retries', { ...within(streamId), limit: 1 })[0];
      if (retry === undefined) this.noRetry.add(streamId);
      else if (retry.value.nextAt <= now) return { taken: { streamId, item: retry.value, ticket: ticketOf('retries', retry.key) } };
      else retryAt = retry.value.nextAt;
    }
    const seq = this.heads.get(streamId);
    if (seq !== undefined) {
      const key = seqKey(streamId, seq);
      const value = this.kv.get<QueueItem>('queue', key);
      if (value !== undefined)
        return { taken: { streamId, item: { ...value, bytes: ownBytes(value.bytes) }, ticket: ticketOf('queue', key) }, retryAt };
    }
    const fresh = this.kv.range<QueueItem>('queue', { ...within(streamId), limit: 1 })[0];
    if (fresh === undefined) return { retryAt };
    this.heads.set(streamId, fresh.value.seq);
    return { taken: { streamId, item: fresh.value, ticket: ticketOf('queue', fresh.key) }, retryAt };
  }

  hold(taken: Taken): void {
    this.out.set(taken.streamId, taken.ticket);
  }

  release(streamId: string): void {
    this.out.delete(streamId);
  }

  holding(streamId: string): boolean {
    return this.out.has(streamId);
  }

  get held(): number {
    return this.out.size;
  }

  stagedIn(streamId: string, stored = false): number | undefined {
    const m = (stored ? undefined : this.metas.known(streamId)) ?? this.kv.get<QueueMeta>('queueMeta', streamId);
    return m !== undefined && m.queued > 0 ? queuePartition(m) : undefined;
  }

  forget(streamId: string): void {
    this.metas.forget(streamId);
    this.heads.delete(streamId);
    this.noRetry.delete(streamId);
    this.queued.delete(streamId);
  }

  begin(): KvQueueWrite {
    return new KvQueueWrite(this);
  }

  drop(streamId: string): () => void {
    for (const table of ['queue', 'retries'] as const)
      for (const { key } of this.kv.range(table, within(streamId))) this.kv.remove(table, key);
    this.kv.remove('queueMeta', streamId);
    // Never marked committed: the deleted stream's row is read from the store from now on.
    this.metas.wrote(streamId);
    return () => {
      this.heads.delete(streamId);
      this.noRetry.delete(streamId);
      this.queued.delete(streamId);
    };
  }

  /** The order of a unit's writes among all, taken at its close (the closes run in commit order). */
  nextVersion(): number {
    return ++this.writes;
  }

  /** What a committed unit changed that is kept in memory. */
  committedWrite(w: KvQueueWrite): void {
    for (const [id, seq] of w.heads) this.heads.set(id, seq);
    for (const [id, m] of w.metas) {
      // A later unit's count may be known already: a replay's commits at once, before an earlier flush is told.
      if (this.metas.committed(id, m, w.version)) this.queued.set(id, m.queued);
    }
  }

  /** A retry was put aside for the stream. */
  mayRetry(streamId: string): void {
    this.noRetry.delete(streamId);
  }

  /** The ticket of the stream's webhook out for an attempt. */
  outTicket(streamId: string): string | undefined {
    return this.out.get(streamId);
  }
}

/** One unit of work's changes: counters read once, changed in memory, written once at its close. */
class KvQueueWrite implements QueueWrite {
  readonly metas = new Map<string, QueueMeta>();
  /** Per stream, the seq its fresh queue starts at once this commits. */
  readonly heads = new Map<string, number>();
  version = 0;
  private readonly kv: Kv;

  constructor(private readonly queue: KvDeliveryQueue) {
    this.kv = queue.kv;
  }

  enqueue(streamId: string, partition: number, webhook: Omit<QueueItem, 'seq'>): number {
    const meta = this.meta(streamId);
    if (meta.queued === 0) meta.partition = partition;
    const webhookId = webhook.webhookId ?? uuidV7(webhook.nextAt);
    this.kv.put('queue', seqKey(streamId, meta.nextSeq), { seq: meta.nextSeq, ...webhook, webhookId } satisfies QueueItem);
    meta.nextSeq++;
    meta.queued++;
    return meta.queued;
  }

  stagedIn(streamId: string): number | undefined {
    const m = this.metas.get(streamId) ?? this.queue.metas.known(streamId) ?? this.kv.get<QueueMeta>('queueMeta', streamId);
    return m !== undefined && m.queued > 0 ? queuePartition(m) : undefined;
  }

  holds(taken: Taken): boolean {
    const { table, key } = whereOf(taken.ticket);
    return this.kv.has(table, key);
  }

  settle(taken: Taken, outcome: Settlement): void {
    const { streamId, item } = taken;
    const { table, key } = whereOf(taken.ticket);
    this.kv.remove(table, key);
    if (table === 'queue') this.heads.set(streamId, item.seq + 1);
    if ('leaves' in outcome) {
      this.meta(streamId).queued--;
      return;
    }
    this.queue.mayRetry(streamId);
    this.kv.put('retries', retryKey(streamId, outcome.retryAt, item.seq), outcome.item);
  }

  dropRetry(streamId: string, seq: number): boolean {
    // Its keys only are read.
    const end = `/${seqPart(seq)}`;
    const out = this.queue.outTicket(streamId);
    const key = this.kv.keys('retries', within(streamId)).find((k) => k.endsWith(end) && ticketOf('retries', k) !== out);
    if (key === undefined) return false;
    this.kv.remove('retries', key);
    this.meta(streamId).queued--;
    return true;
  }

  drain(streamId: string): QueueItem[] {
    const items: QueueItem[] = [];
    for (const table of ['retries', 'queue'] as const) {
      for (const { key, value } of this.kv.range<QueueItem>(table, within(streamId))) {
        items.push(value);
        this.kv.remove(table, key);
      }
    }
    this.meta(streamId).queued = 0;
    return items;
  }

  close(): void {
    this.version = this.queue.nextVersion();
    for (const [id, m] of this.metas) {
      this.kv.put('queueMeta', id, m);
      this.queue.metas.wrote(id);
    }
  }

  committed(): void {
    this.queue.committedWrite(this);
  }

  private meta(streamId: string): QueueMeta {
    let m = this.metas.get(streamId);
    if (m === undefined) {
      const known = this.queue.metas.known(streamId);
      m = known !== undefined ? { ...known } : (this.kv.get<QueueMeta>('queueMeta', streamId) ?? { nextSeq: 0, queued: 0 });
      this.metas.set(streamId, m);
    }
    return m;
  }
}
