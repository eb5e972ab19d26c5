import type { Kv } from '../ports.js';
import { uuidV7Time } from './ids.js';
import { addCount, countKey, isSuccessLogs, rangeOf, successLogShare, type Range } from './records.js';

/**
 * How long history and delivery logs are kept, and their removal: each
 * tenant's rows sort by time, so what expired is the start of its range,
 * removed in batches of bounded size, one transaction each, with its counter.
 */
export interface Retention {
  /** Failed-delivery history (CHAINPOST_HISTORY_DAYS), and the logs of failed deliveries. */
  historyMs: number;
  /** Logs of successful deliveries (CHAINPOST_DELIVERY_LOG_DAYS). */
  successLogMs: number;
  /** At most this many success logs per tenant, shared by its partitions (successLogShare), the oldest dropped first (CHAINPOST_DELIVERY_LOG_MAX). */
  successLogMax: number;
}

/** Rows removed per transaction: a purge never holds the write lock for long. */
export const PURGE_BATCH = 1_000;

/** How long a range's rows stay after the time their key leads with (a history record: its first failure). */
function keepMs(r: Range, rules: Retention): number {
  return isSuccessLogs(r) ? rules.successLogMs : rules.historyMs;
}

/** Runs a purge's batch in a write transaction of its own (delivery's: a unit of work, engine/delivery/unit.ts). */
export type PurgeTransaction = (fn: () => number) => Promise<number>;

/** Removes every row whose retention ended by `now`; resolves with how many. */
export async function purgeExpired(
  kv: Kv,
  now: number,
  rules: Retention,
  batch = PURGE_BATCH,
  transact: PurgeTransaction = (fn) => kv.transactAsync(fn),
): Promise<number> {
  let removed = 0;
  // Every range with rows has a counter: the counters list what there is to purge.
  for (const { key } of kv.range<number>('counts')) {
    const r = rangeOf(key);
    const end = r.prefix + uuidV7Time(now - keepMs(r, rules));
    // Nothing expired in the range: no transaction (and no fsync) at all.
    while (kv.range(r.table, { start: r.prefix, end, limit: 1 }).length > 0) {
      // Each batch commits off the event loop: deliveries go on meanwhile.
      const n = await transact(() => dropFirst(kv, r, end, batch));
      removed += n;
      if (n < batch) break;
    }
    // A tenant's success logs in a partition beyond its share, since the tenant's logs reached more partitions.
    if (isSuccessLogs(r))
      for (let over = overShare(kv, r, rules.successLogMax); over > 0; over = overShare(kv, r, rules.successLogMax)) {
        const n = await transact(() => dropFirst(kv, r, `${r.prefix}\uffff`, Math.min(over, batch)));
        removed += n;
        if (n === 0) break;
      }
  }
  return removed;
}

/** How many success logs of the range are beyond the tenant's share of the cap in it. */
const overShare = (kv: Kv, r: Range, max: number): number => (kv.get<number>('counts', countKey(r)) ?? 0) - successLogShare(kv, r, max);

/** Drops the oldest success logs beyond the cap; call in the transaction that added logs to the range. */
export function capRange(kv: Kv, r: Range, total: number, max: number): void {
  if (total > max) dropFirst(kv, r, `${r.prefix}\uffff`, total - max);
}

function dropFirst(kv: Kv, r: Range, end: string, limit: number): number {
  const n = kv.removeRange(r.table, { start: r.prefix, end, limit });
  if (n > 0) addCount(kv, countKey(r), -n);
  return n;
}
