import type { Kv, Table } from '../ports.js';
import { ownBytes, payloadOf } from './body.js';
import { uuidV7Ms } from './ids.js';
import type { WebhookSummary } from './webhook.js';

/**
 * Failed-delivery history and delivery logs as stored and as answered. Keys
 * lead with the tenant and the delivery partition of the stream that wrote them
 * (engine/cluster/partitions.ts: each partition's rows are its owner's alone),
 * then a UUID v7 (time-ordered), so a partition's records sort by time: pages
 * merge the tenant's ranges and retention removes each from its start. Each
 * range has a counter in `counts`, changed in the transactions that add or
 * remove its rows, so a page's `total` is the sum of the tenant's counters.
 */

/** A failed-delivery record as the API answers it. */
export interface HistoryRecord {
  id: string;
  date: string;
  payload: Record<string, unknown>;
  tinyPayload: WebhookSummary & { retries: number; amount: number };
  streamId: string;
  tag: string;
  errorMessage: string;
  webhookUrl: string;
  /** Whether a later retry or a replay delivered the webhook (the record keeps the error of its last failure). */
  delivered: boolean;
  /** When it was first answered 200 (ISO 8601), null while undelivered. */
  deliveredAt: string | null;
}

/**
 * As stored: the body's bytes as last sent instead of the payload object, deliveredAt once a retry or replay delivered
 * it, and the webhook's `seq` in its stream's queue when it failed there (a replay that delivers finds its pending
 * retry by it; records written before it was kept have none).
 */
export type StoredHistory = Omit<HistoryRecord, 'payload' | 'delivered' | 'deliveredAt'> & {
  body: Uint8Array;
  deliveredAt?: string;
  seq?: number;
  /** The `webhook-id` its attempts carried (absent on a record made before it was kept: its id is sent instead). */
  webhookId?: string;
};

/** A history record a replay delivered: where it is (`partition`: its range's, where a retry of its webhook waits too). */
export type ReplayedRecord = Pick<StoredHistory, 'id' | 'streamId' | 'seq'> & { partition: number };

export function historyView(h: StoredHistory, withPayload: boolean): Partial<HistoryRecord> {
  // The fields in the order the API has always answered them; delivered and deliveredAt came later.
  return {
    id: h.id,
    date: h.date,
    payload: withPayload ? payloadOf(h.body) : undefined,
    tinyPayload: h.tinyPayload,
    streamId: h.streamId,
    tag: h.tag,
    errorMessage: h.errorMessage,
    webhookUrl: h.webhookUrl,
    delivered: h.deliveredAt !== undefined,
    deliveredAt: h.deliveredAt ?? null,
  };
}

/**
 * A later attempt (a retry, or a replay) delivered a failed webhook: its record
 * (in `partition`'s range) says when it first was, and keeps the error it had. Call in a transaction;
 * answers the record's deliveredAt, or undefined when the record is gone.
 */
export function markDelivered(kv: Kv, tenant: string, partition: number, historyId: string, now: number): string | undefined {
  const key = historyRange(tenant, partition).prefix + historyId;
  const h = kv.get<StoredHistory>('history', key);
  if (h === undefined || h.deliveredAt !== undefined) return h?.deliveredAt;
  const deliveredAt = new Date(now).toISOString();
  // The body copied off the read buffer before the write.
  kv.put('history', key, { ...h, body: ownBytes(h.body), deliveredAt } satisfies StoredHistory);
  return deliveredAt;
}

export type DeliveryStatus = 'success' | 'failed';

export interface DeliveryLog {
  id: string;
  streamId: string;
  chain: string;
  webhookUrl: string;
  tag: string;
  retries: number;
  deliveryStatus: DeliveryStatus;
  blockNumber: string;
  errorMessage: string;
  type: string;
  createdAt: string;
}

/** A delivery log as stored: what its key (tenant, status, time-ordered id) does not already say. */
export type StoredLog = [
  streamId: string,
  chain: string,
  webhookUrl: string,
  tag: string,
  retries: number,
  blockNumber: string,
  errorMessage: string,
];

export function logView(key: string, [streamId, chain, webhookUrl, tag, retries, blockNumber, errorMessage]: StoredLog): DeliveryLog {
  const id = key.slice(key.lastIndexOf('/') + 1);
  const deliveryStatus: DeliveryStatus = key.endsWith(`/s/${id}`) ? 'success' : 'failed';
  return {
    id,
    streamId,
    chain,
    webhookUrl,
    tag,
    retries,
    deliveryStatus,
    blockNumber,
    errorMessage,
    type: 'evm',
    createdAt: new Date(uuidV7Ms(id)).toISOString(),
  };
}

/** A tenant's rows of one kind: a table and the key prefix they share. */
export interface Range {
  table: Extract<Table, 'history' | 'deliveryLogs'>;
  prefix: string;
}

/** A partition as keys hold it: `#` and two digits, which no stream id, tenant id or UUID starts with. */
export const partitionTag = (partition: number): string => `#${String(partition).padStart(2, '0')}`;

/** The partition a key names with partitionTag as one of its segments, if any. */
export function taggedPartition(key: string): number | undefined {
  const m = /(?:^|\/)#(\d\d)(?:\/|$)/.exec(key);
  return m === null ? undefined : Number(m[1]);
}

export const historyRange = (tenant: string, partition: number): Range => ({
  table: 'history',
  prefix: `${tenant}/${partitionTag(partition)}/`,
});
/** Successes and failures apart: they are kept for different times. */
export const logRange = (tenant: string, partition: number, status: DeliveryStatus): Range => ({
  table: 'deliveryLogs',
  prefix: `${tenant}/${partitionTag(partition)}/${status === 'success' ? 's' : 'f'}/`,
});

/**
 * A key of the delivery tables as written before partitions (schema version 7) in partition 0's place, or
 * undefined when it names a partition already (or its table has none): history `tenant/id`, delivery logs
 * `tenant/s|f/id`, their counters, and stats `tenant` and `tenant/streamId`. A stream whose `queueMeta` names no
 * partition waits in partition 0 too, until its queue drained.
 */
export function keyInPartition0(table: Table, key: string): string | undefined {
  const tag = partitionTag(0);
  // The tenant's segment: the first of a record's key, the second of a counter's (`table/tenant/…`).
  const after = table === 'counts' ? key.indexOf('/', key.indexOf('/') + 1) : key.indexOf('/');
  switch (table) {
    case 'history':
    case 'deliveryLogs':
    case 'counts':
      return after < 0 || key.startsWith('#', after + 1) ? undefined : `${key.slice(0, after)}/${tag}${key.slice(after)}`;
    case 'stats':
      return taggedPartition(key) !== undefined ? undefined : `${key}/${tag}`;
    default:
      return undefined;
  }
}

/** A tenant's ranges of a table that hold rows (every one has a counter), and their rows in all. */
export function tenantRanges(kv: Kv, tenant: string, table: Range['table']): { ranges: Range[]; total: number } {
  const start = `${table}/${tenant}/#`;
  const ranges: Range[] = [];
  let total = 0;
  for (const { key, value } of kv.range<number>('counts', { start, end: `${start}\uffff` })) {
    ranges.push(rangeOf(key));
    total += value;
  }
  return { ranges, total };
}

/** The prefix of the tenant's range of `table` a key of it lies in (`tenant/#NN/`, logs `tenant/#NN/s|f/`), if it is one. */
export function rangeOfKey(table: Range['table'], tenant: string, key: string): string | undefined {
  const m = (table === 'history' ? /^#\d\d\// : /^#\d\d\/[sf]\//).exec(key.startsWith(`${tenant}/`) ? key.slice(tenant.length + 1) : '');
  return m === null ? undefined : `${tenant}/${m[0]}`;
}

/** A tenant's history record by its id, and the partition that holds it (each range is asked: a record's id does not name it). */
export function findHistory(kv: Kv, tenant: string, historyId: string): { record: StoredHistory; partition: number } | undefined {
  for (const r of tenantRanges(kv, tenant, 'history').ranges) {
    const record = kv.get<StoredHistory>('history', r.prefix + historyId);
    if (record !== undefined) return { record, partition: taggedPartition(r.prefix)! };
  }
  return undefined;
}

export const isSuccessLogs = (r: Range): boolean => r.table === 'deliveryLogs' && r.prefix.endsWith('/s/');

/**
 * A tenant's success-log cap (CHAINPOST_DELIVERY_LOG_MAX) shared by the partitions holding its success logs: each
 * partition's owner keeps its own range to `max / partitions` (at least one), read from the counters every node
 * holds, so the tenant's total stays within `max` whichever nodes own them. The range's own partition counts too.
 */
export function successLogShare(kv: Kv, r: Range, max: number): number {
  const tenant = r.prefix.slice(0, r.prefix.indexOf('/'));
  const ranges = tenantRanges(kv, tenant, 'deliveryLogs').ranges.filter(isSuccessLogs);
  const partitions = ranges.some((x) => x.prefix === r.prefix) ? ranges.length : ranges.length + 1;
  return Math.max(1, Math.floor(max / partitions));
}

/** The `counts` key of a range, and back. */
export const countKey = (r: Range): string => `${r.table}/${r.prefix}`;
export function rangeOf(countKey: string): Range {
  const slash = countKey.indexOf('/');
  return { table: countKey.slice(0, slash) as Range['table'], prefix: countKey.slice(slash + 1) };
}

/** Rows in a range now. */
export const countOf = (kv: Kv, r: Range): number => kv.get<number>('counts', countKey(r)) ?? 0;

/** Adds `n` (negative: removes) to a range's counter; call in the transaction that changes its rows. A range with no rows has no counter. */
export function addCount(kv: Kv, key: string, n: number): number {
  const total = (kv.get<number>('counts', key) ?? 0) + n;
  if (total > 0) kv.put('counts', key, total);
  else kv.remove('counts', key);
  return total;
}
