import { z } from 'zod';
import { unixIso } from '../../datetime.js';
import { blockKey } from '../../ingest/chain-store.js';
import { ApiError, notFound } from '../../errors.js';
import type { BlockHeader } from '../../evm/chain-reads.js';
import type { Kv } from '../../ports.js';
import type { DataIndex } from './indexer.js';
import type { DataDeps } from './deps.js';
import { fromNode } from './node-reads.js';
import { date } from './params.js';
import { storedHead } from './read-at.js';

/**
 * Block times: `blockTimes` maps each indexed block's number to its timestamp
 * and hash, kept when the block record is pruned (the record holds the header
 * only within the retention window). A page's items read their block there
 * once: one row, the block as the indexes hold it. Timestamps grow with the number (a block's is
 * after its parent's, or equal on a devnet), so a date is found by binary
 * search over numbers: O(log n) point reads. Dates before the first indexed
 * block are searched on the node (eth_getBlockByNumber), as blocks below a
 * start block are not indexed.
 */

/** A `blockTimes` row: the block's timestamp (Unix seconds) and hash; a store written by schema version 5 or older holds the timestamp alone (still read). */
export type BlockTimeRow = [timestamp: number, hash: string] | number;

export const blockTimesIndex: DataIndex = {
  name: 'blockTimes',
  apply(w, block) {
    w.put('blockTimes', blockKey(block.chain, block.number), [block.timestamp, block.hash] satisfies BlockTimeRow);
  },
};

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
function indexedSpan(kv: Pick<Kv, 'range'>, chain: string): [number, number] | undefined {
  const ends = [false, true].map((reverse) => kv.range<BlockTimeRow>('blockTimes', reverse ? { start: `${chain}/\uffff`, end: `${chain}/`, reverse, limit: 1 } : { start: `${chain}/`, end: `${chain}/\uffff`, limit: 1 })[0]);
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
  return { ...(span.from > 0 ? { low: `${n12(Math.min(span.from, MAX_KEY_BLOCK))}/` } : {}), ...(span.to < MAX_KEY_BLOCK ? { high: `${n12(span.to + 1)}/` } : {}) };
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

export const dateToBlockQuery = z.object({ date });

const ZERO_HASH = '0x0000000000000000000000000000000000000000000000000000000000000000';

/**
 * The block as the indexes have it (its hash and time from `blockTimes`, as the Data API's items answer them; its
 * parent's hash from the row below, or `canon` below the first indexed block; from the node when neither holds the
 * parent: the first block ingested).
 */
async function indexedHeader(deps: Pick<DataDeps, 'kv' | 'reads'>, chain: string, number: number): Promise<BlockHeader> {
  const block = indexedBlockAt(deps.kv, chain, number);
  const parentHash = number === 0 ? ZERO_HASH : (indexedBlockAt(deps.kv, chain, number - 1)?.hash ?? deps.kv.get<string>('canon', blockKey(chain, number - 1)));
  if (block !== undefined && parentHash !== undefined) return { number, hash: block.hash, parentHash, timestamp: block.timestamp };
  return nodeHeader(deps, chain, number);
}

async function nodeHeader(deps: Pick<DataDeps, 'reads'>, chain: string, number: number): Promise<BlockHeader> {
  const h = await fromNode(() => deps.reads.header(chain, number));
  if (h === null) throw new ApiError(502, `the node of chain ${chain} has no block ${number}`);
  return h;
}

/**
 * The last block at or before `unix` among 0 … `hi`, by binary search on the node (blocks before the indexed
 * ones: a start block after genesis); block 0 when even it is later.
 */
async function searchNode(deps: Pick<DataDeps, 'reads'>, chain: string, unix: number, hi: number): Promise<BlockHeader> {
  let best = await nodeHeader(deps, chain, 0);
  let lo = 0;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const h = await nodeHeader(deps, chain, mid);
    if (h.timestamp <= unix) [lo, best] = [mid, h];
    else hi = mid - 1;
  }
  return best;
}

/** GET /dateToBlock: the block with the latest timestamp at or before the date, in the interface's blockDate shape. */
export async function dateToBlock(deps: Pick<DataDeps, 'kv' | 'reads'>, chain: string, q: z.output<typeof dateToBlockQuery>) {
  const number = blockAtOrBefore(deps.kv, chain, q.date);
  const first = indexedSpan(deps.kv, chain)?.[0];
  let block: BlockHeader;
  // Before genesis the answer is block 0, as the hosted service says.
  if (number !== undefined || first === 0) block = await indexedHeader(deps, chain, number ?? 0);
  else {
    // Before every indexed block (or none indexed yet): the node knows the blocks below the first indexed one.
    const below = (first ?? storedHead(deps.kv, chain) + 1) - 1;
    if (below < 0) throw notFound(`no block of chain ${chain} is stored yet`);
    block = await searchNode(deps, chain, q.date, below);
  }
  return {
    block: block.number,
    date: unixIso(q.date),
    timestamp: block.timestamp,
    block_timestamp: unixIso(block.timestamp),
    hash: block.hash,
    parent_hash: block.parentHash,
  };
}
