import { z } from 'zod';
import { unixIso } from '../../datetime.js';
import { blockKey } from '../../ingest/chain-store.js';
import { ApiError, notFound } from '../../errors.js';
import type { BlockHeader } from '../../evm/chain-reads.js';
import { blockAtOrBefore, indexedBlockAt, indexedSpan } from '../common/block-times.js';
import type { DataDeps } from '../common/deps.js';
import { fromNode } from '../common/node-reads.js';
import { date } from '../common/params.js';
import { storedHead } from '../common/read-at.js';

export const dateToBlockQuery = z.object({ date });
/** The interface's blockDate: the block, the date asked (ISO) and the block's time (Unix seconds and ISO). */
export const dateToBlockAnswer = z.object({
  block: z.int(),
  date: z.string(),
  timestamp: z.int(),
  block_timestamp: z.string(),
  hash: z.string(),
  parent_hash: z.string(),
});

const ZERO_HASH = '0x0000000000000000000000000000000000000000000000000000000000000000';

/**
 * The block as the indexes have it (its hash and time from `blockTimes`, as the Data API's items answer them; its
 * parent's hash from the row below, or `canon` below the first indexed block; from the node when neither holds the
 * parent: the first block ingested).
 */
async function indexedHeader(deps: Pick<DataDeps, 'kv' | 'reads'>, chain: string, number: number): Promise<BlockHeader> {
  const block = indexedBlockAt(deps.kv, chain, number);
  const parentHash =
    number === 0
      ? ZERO_HASH
      : (indexedBlockAt(deps.kv, chain, number - 1)?.hash ?? deps.kv.get<string>('canon', blockKey(chain, number - 1)));
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
