import type { Kv } from '../ports.js';
import { uuidV7, uuidV7Ms } from './ids.js';
import { DELIVERY_TIMEOUT_MS } from './limits.js';
import {
  addCount,
  countKey,
  historyRange,
  isSuccessLogs,
  logRange,
  partitionTag,
  rangeOf,
  successLogShare,
  type DeliveryStatus,
  type StoredHistory,
  type StoredLog,
} from './records.js';
import { capRange } from './retention.js';
import { GIVE_UP_AFTER_MS } from './retry-schedule.js';
import { RowCache } from './row-cache.js';
import { streamKey, type DeliveryStream } from './stream-port.js';
import type { WebhookSummary } from './webhook.js';

/**
 * What attempts leave behind, written in their unit of work: failed-delivery history, delivery logs (and the
 * counters of their ranges, with the success-log cap), and the statistics of streams and tenants.
 */
export interface Stats {
  totalWebhooksDelivered: number;
  totalWebhooksFailed: number;
  totalLogsProcessed: number;
  totalTxsProcessed: number;
  totalTxsInternalProcessed: number;
  createdAt: string;
  updatedAt: string;
  /** A stream's rows only: its last failed attempt (the newest of its partitions' where read). */
  lastError?: LastError;
}

/** A stream's last failed attempt: the error, when, to which URL, and its history record. */
export interface LastError {
  message: string;
  /** ISO 8601. */
  at: string;
  webhookUrl: string;
  historyId: string;
}

/** A stream's or tenant's statistics before anything happened. */
export const emptyStats = (iso: string): Stats => ({
  totalWebhooksDelivered: 0,
  totalWebhooksFailed: 0,
  totalLogsProcessed: 0,
  totalTxsProcessed: 0,
  totalTxsInternalProcessed: 0,
  createdAt: iso,
  updatedAt: iso,
});

/**
 * A `stats` row's key: a tenant's (`of` = tenant) or a stream's (`of` = tenant/streamId, streamKey) in one
 * partition. A tenant's streams deliver in several partitions, and a stream moves with its URL: each partition's
 * owner writes its own rows, summed where they are read (statsOf).
 */
export const statsKey = (of: string, partition: number): string => `${of}/${partitionTag(partition)}`;

/** A tenant's or stream's statistics: its rows in every partition summed, created at the first, updated at the last. */
export function statsOf(kv: Kv, of: string, iso: string): Stats {
  const start = `${of}/#`;
  let sum: Stats | undefined;
  for (const { value } of kv.range<Stats>('stats', { start, end: `${start}\uffff` })) {
    if (sum === undefined) {
      sum = { ...value };
      continue;
    }
    const into = sum as unknown as Record<string, number | string>;
    for (const [k, v] of Object.entries(value)) if (typeof v === 'number') into[k] = ((into[k] as number | undefined) ?? 0) + v;
    if (value.createdAt < sum.createdAt) sum.createdAt = value.createdAt;
    if (value.updatedAt > sum.updatedAt) sum.updatedAt = value.updatedAt;
    if (value.lastError !== undefined && (sum.lastError === undefined || value.lastError.at > sum.lastError.at))
      sum.lastError = value.lastError;
  }
  return sum ?? emptyStats(iso);
}

/** The `stats` rows as committed, and the order of the units' writes (taken at their close, which runs in commit order). */
export class RecordRows {
  readonly stats = new RowCache<Stats>();
  private writes = 0;

  constructor(
    readonly kv: Kv,
    /** At most this many success logs per tenant (CHAINPOST_DELIVERY_LOG_MAX), shared by its partitions (successLogShare). */
    readonly successLogMax: number,
  ) {}

  nextVersion(): number {
    return ++this.writes;
  }

  begin(): RecordWrite {
    return new RecordWrite(this);
  }
}

/** One unit of work's records: stats and range counters added in memory, written once at its close. */
export class RecordWrite {
  private readonly stats = new Map<string, Record<string, number>>();
  /** Per stream's `stats` key, its last failed attempt in this unit. */
  private readonly errors = new Map<string, LastError>();
  /** Rows added per history or log range (`counts` key). */
  private readonly added = new Map<string, number>();
  /** The `stats` rows as written (the cache takes them once this commits). */
  private readonly written = new Map<string, Stats>();
  private version = 0;
  private readonly kv: Kv;

  constructor(private readonly rows: RecordRows) {
    this.kv = rows.kv;
  }

  /** Adds to the stream's statistics and its tenant's, in the stream's partition. */
  bump(tenant: string, streamId: string, partition: number, add: Record<string, number>): void {
    for (const key of [statsKey(tenant, partition), statsKey(streamKey(tenant, streamId), partition)]) {
      const d = this.stats.get(key) ?? {};
      for (const [k, v] of Object.entries(add)) d[k] = (d[k] ?? 0) + v;
      this.stats.set(key, d);
    }
  }

  /** The stream's last failed attempt, kept in its statistics row of the partition (with a bump of totalWebhooksFailed). */
  failed(tenant: string, streamId: string, partition: number, error: LastError): void {
    this.errors.set(statsKey(streamKey(tenant, streamId), partition), error);
  }

  /**
   * Writes a failed-delivery record with the bytes last sent. The retries of its first day rewrite it in place (its
   * id, and so its retention, count from the first failure); a failure after that (the stream was paused or in error
   * meanwhile) writes it anew, as a new record kept from now. `seq`: the webhook's in its stream's queue, when a
   * retry of it may wait there. In the range of the stream's partition. Answers the record as written.
   */
  history(
    tenant: string,
    partition: number,
    s: Pick<DeliveryStream, 'id' | 'tag' | 'webhookUrl'>,
    body: Uint8Array,
    summary: WebhookSummary,
    retries: number,
    errorMessage: string,
    now: number,
    id?: string,
    seq?: number,
    /** Its webhook's `webhook-id` (a replay sends it again). */
    webhookId?: string,
  ): StoredHistory {
    const range = historyRange(tenant, partition);
    const old = id === undefined ? undefined : range.prefix + id;
    // The last retry is sent at the 24-hour mark and answered within the delivery timeout.
    const inPlace = old !== undefined && uuidV7Ms(id!) >= now - GIVE_UP_AFTER_MS - DELIVERY_TIMEOUT_MS && this.kv.has('history', old);
    if (old !== undefined && !inPlace && this.kv.has('history', old)) {
      this.kv.remove('history', old);
      this.count(countKey(range), -1);
    }
    // A replay may have delivered it meanwhile: the rewritten record still says so. (In place, `body` is a
    // retry's, made by bodyAt, not a view of the read buffer this get reuses.)
    const deliveredAt = inPlace ? this.kv.get<StoredHistory>('history', old!)?.deliveredAt : undefined;
    const historyId = inPlace ? id! : uuidV7(now);
    const key = range.prefix + historyId;
    if (!inPlace) this.count(countKey(range));
    const record: StoredHistory = {
      id: historyId,
      date: new Date(now).toISOString(),
      body,
      tinyPayload: { ...summary, retries, amount: summary.records },
      streamId: s.id,
      tag: s.tag,
      errorMessage,
      webhookUrl: s.webhookUrl,
    };
    if (deliveredAt !== undefined) record.deliveredAt = deliveredAt;
    if (seq !== undefined) record.seq = seq;
    if (webhookId !== undefined) record.webhookId = webhookId;
    this.kv.put('history', key, record);
    return record;
  }

  /** A delivery log of one attempt (`retries`: the failures before it), in the range of the stream's partition. */
  log(
    tenant: string,
    partition: number,
    s: Pick<DeliveryStream, 'id' | 'tag' | 'webhookUrl'>,
    attempt: { summary: WebhookSummary; failures: number },
    status: DeliveryStatus,
    errorMessage: string,
    now: number,
  ): void {
    const range = logRange(tenant, partition, status);
    const row: StoredLog = [
      s.id,
      attempt.summary.chainId,
      s.webhookUrl,
      s.tag,
      attempt.failures,
      attempt.summary.block.number,
      errorMessage,
    ];
    this.kv.put('deliveryLogs', range.prefix + uuidV7(now), row);
    this.count(countKey(range));
  }

  /** The end of the unit, inside it: stats and range counters are written, and the success-log cap kept. */
  close(now: number): void {
    this.version = this.rows.nextVersion();
    const iso = new Date(now).toISOString();
    for (const [key, d] of this.stats) {
      const known = this.rows.stats.known(key);
      const st = known !== undefined ? { ...known } : (this.kv.get<Stats>('stats', key) ?? emptyStats(iso));
      const counters = st as unknown as Record<string, number>;
      for (const [k, v] of Object.entries(d)) counters[k] = (counters[k] ?? 0) + v;
      const error = this.errors.get(key);
      if (error !== undefined) st.lastError = error;
      st.updatedAt = iso;
      this.kv.put('stats', key, st);
      this.rows.stats.wrote(key);
      this.written.set(key, st);
    }
    for (const [key, n] of this.added) {
      const total = addCount(this.kv, key, n);
      // The success-log cap is kept in the same transaction: the oldest go as new ones come.
      const range = rangeOf(key);
      if (isSuccessLogs(range)) capRange(this.kv, range, total, successLogShare(this.kv, range, this.rows.successLogMax));
    }
  }

  committed(): void {
    for (const [key, st] of this.written) this.rows.stats.committed(key, st, this.version);
  }

  private count(key: string, n = 1): void {
    this.added.set(key, (this.added.get(key) ?? 0) + n);
  }
}
