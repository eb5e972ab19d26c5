import { blockKey } from '../../ingest/chain-store.js';
import type { Kv } from '../../ports.js';

/**
 * Block times: `blockTimes` maps each indexed block's number to its timestamp
 * and hash, kept when the block record is pruned (the record holds the header
 * only within the retention window). A page's items read their block there
 * once: one row, the block as the indexes hold it. Timestamps grow with the number (a block's is
 * after its parent's, or equal on a devnet), so a date is found by binary
 * search over numbers: O(log n) point reads (GET /dateToBlock, chain/date-to-block.ts,
 * searches the node for dates before the first indexed block). The rows are
 * written by chain/index/writer.ts.
 */

/** A `blockTimes` row: the block's timestamp (Unix seconds) and hash; a store written by schema version 5 or older holds the timestamp alone (still read). */
export type BlockTimeRow = [timestamp: number, hash: string] | number;

/** A block's timestamp (Unix seconds), if indexed. */
export function blockTime(kv: Pick<Kv, 'get'>, chain: string, number: number): number | undefined {
  const row = kv.get<BlockTimeRow>('blockTimes', blockKey(chain, number));
  return Array.isArray(row) ? row[0] : row;
}

/** An indexed block's timestamp and hash, in one read (`canon`'s hash for a row of the old form); undefined when not indexed. */
export function indexedBlockAt(kv: Kv, chain: string, number: number): { timestamp: number; hash: string } | undefined {
  const row = kv.get<BlockTimeRow>('blockTimes', blockKey(chain, number));
  if (row === undefined) return undefined;
  if (Array.isArray(row)) return { timestamp: row[0], hash: row[1] };
  const hash = kv.get<string>('canon', blockKey(chain, number));
  return hash === undefined ? undefined : { timestamp: row, hash };
}

/** The first and last indexed block numbers of the chain, if any. */
export function indexedSpan(kv: Pick<Kv, 'range'>, chain: string): [number, number] | undefined {
  const ends = [false, true].map(
    (reverse) =>
      kv.range<BlockTimeRow>(
        'blockTimes',
        reverse
          ? { start: `${chain}/\uffff`, end: `${chain}/`, reverse, limit: 1 }
          : { start: `${chain}/`, end: `${chain}/\uffff`, limit: 1 },
      )[0],
  );
  if (ends[0] === undefined || ends[1] === undefined) return undefined;
  const num = (key: string) => parseInt(key.slice(chain.length + 1), 16);
  return [num(ends[0].key), num(ends[1].key)];
}

/** The last indexed block whose timestamp is at or before `unix`; undefined when every indexed block is later. */
export function blockAtOrBefore(kv: Pick<Kv, 'get' | 'range'>, chain: string, unix: number): number | undefined {
  const span = indexedSpan(kv, chain);
  if (span === undefined) return undefined;
  let [lo, hi] = span;
  if (blockTime(kv, chain, lo)! > unix) return undefined;
  // Invariant: time(lo) ≤ unix; the answer lies in [lo, hi].
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (blockTime(kv, chain, mid)! <= unix) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** A query's block range: from/to block and date. */
export interface BlockRangeQuery {
  from_block?: number | undefined;
  to_block?: number | undefined;
  from_date?: number | undefined;
  to_date?: number | undefined;
}

/**
 * The blocks of a query's range, both ends inclusive (`to` Number.MAX_SAFE_INTEGER when open): a block
 * given wins over a date (as the hosted service documents), a date is the first indexed block at or after
 * it (from) or the last at or before it (to); null when nothing can match.
 */
export function blockSpan(kv: Kv, chain: string, q: BlockRangeQuery): { from: number; to: number } | null {
  const from = q.from_block ?? (q.from_date === undefined ? 0 : blockAtOrAfter(kv, chain, q.from_date));
  const to = q.to_block ?? (q.to_date === undefined ? Number.MAX_SAFE_INTEGER : blockAtOrBefore(kv, chain, q.to_date));
  return from === undefined || to === undefined || to < from ? null : { from, to };
}

/** A block number as index keys write it: 12 hex digits (they sort as the numbers). */
export const n12 = (n: number): string => n.toString(16).padStart(12, '0');
/** The last block number 12 hex digits hold: bounds at or past it are left open. */
export const MAX_KEY_BLOCK = 0xffffffffffff;

/**
 * rangePage's bounds (`low`, `high`) of a span over keys whose rest (after the list's prefix) begins with the
 * block number in 12 hex digits and a `/`.
 */
export function spanBounds(span: { from: number; to: number }): { low?: string; high?: string } {
  return {
    ...(span.from > 0 ? { low: `${n12(Math.min(span.from, MAX_KEY_BLOCK))}/` } : {}),
    ...(span.to < MAX_KEY_BLOCK ? { high: `${n12(span.to + 1)}/` } : {}),
  };
}

/** A query's blocks as rangePage bounds (keys as spanBounds reads them), never past the indexed `head`; null when nothing can match. */
export function headBounds(kv: Kv, chain: string, head: number, q: BlockRangeQuery): { low?: string; high: string } | null {
  const span = blockSpan(kv, chain, q);
  if (span === null || span.from > Math.min(span.to, head)) return null;
  return { ...spanBounds(span), high: `${n12(Math.min(span.to, head) + 1)}/` };
}

/** The first indexed block whose timestamp is at or after `unix`; undefined when every indexed block is earlier. */
export function blockAtOrAfter(kv: Kv, chain: string, unix: number): number | undefined {
  const before = blockAtOrBefore(kv, chain, unix - 1);
  const span = indexedSpan(kv, chain);
  if (span === undefined) return undefined;
  const next = before === undefined ? span[0] : before + 1;
  return next <= span[1] ? next : undefined;
}
