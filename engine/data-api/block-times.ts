import { z } from 'zod';
import { unixIso } from '../datetime.js';
import { blockKey } from '../ingest/chain-store.js';
import { notFound } from '../errors.js';
import type { Kv } from '../ports.js';
import type { DataIndex } from './indexer.js';
import { date } from './params.js';

/**
 * Block times: `blockTimes` maps each indexed block's number to its timestamp,
 * kept when the block record is pruned (the record holds the header only
 * within the retention window). Timestamps grow with the number (a block's is
 * after its parent's), so a date is found by binary search over numbers:
 * O(log n) point reads.
 */

export const blockTimesIndex: DataIndex = {
  name: 'blockTimes',
  apply(w, block) {
    w.put('blockTimes', blockKey(block.chain, block.number), block.timestamp);
  },
};

/** A block's timestamp (Unix seconds), if indexed. */
export const blockTime = (kv: Kv, chain: string, number: number): number | undefined => kv.get<number>('blockTimes', blockKey(chain, number));

/** The first and last indexed block numbers of the chain, if any. */
function indexedSpan(kv: Kv, chain: string): [number, number] | undefined {
  const ends = [false, true].map((reverse) => kv.range<number>('blockTimes', reverse ? { start: `${chain}/\uffff`, end: `${chain}/`, reverse, limit: 1 } : { start: `${chain}/`, end: `${chain}/\uffff`, limit: 1 })[0]);
  if (ends[0] === undefined || ends[1] === undefined) return undefined;
  const num = (key: string) => parseInt(key.slice(chain.length + 1), 16);
  return [num(ends[0].key), num(ends[1].key)];
}

/** The last indexed block whose timestamp is at or before `unix`; undefined when every indexed block is later. */
export function blockAtOrBefore(kv: Kv, chain: string, unix: number): number | undefined {
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

/** The first indexed block whose timestamp is at or after `unix`; undefined when every indexed block is earlier. */
export function blockAtOrAfter(kv: Kv, chain: string, unix: number): number | undefined {
  const before = blockAtOrBefore(kv, chain, unix - 1);
  const span = indexedSpan(kv, chain);
  if (span === undefined) return undefined;
  const next = before === undefined ? span[0] : before + 1;
  return next <= span[1] ? next : undefined;
}

export const dateToBlockQuery = z.object({ date });

/** GET /dateToBlock: the block with the latest timestamp at or before the date, in the interface's blockDate shape. */
export function dateToBlock(kv: Kv, chain: string, q: z.output<typeof dateToBlockQuery>) {
  let number = blockAtOrBefore(kv, chain, q.date);
  if (number === undefined) {
    const first = indexedSpan(kv, chain)?.[0];
    // Before genesis the answer is block 0, as the hosted service says; before a later first block nothing here knows.
    if (first !== 0) throw notFound(`no block of chain ${chain} at or before ${unixIso(q.date)} is indexed here${first === undefined ? '' : ` (the first indexed block is ${first})`}`);
    number = 0;
  }
  const timestamp = blockTime(kv, chain, number)!;
  return {
    block: number,
    date: unixIso(q.date),
    timestamp,
    block_timestamp: unixIso(timestamp),
    hash: kv.get<string>('canon', blockKey(chain, number)) ?? null,
    parent_hash: number === 0 ? '0x0000000000000000000000000000000000000000000000000000000000000000' : (kv.get<string>('canon', blockKey(chain, number - 1)) ?? null),
  };
}
