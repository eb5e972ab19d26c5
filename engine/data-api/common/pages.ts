import { ApiError, badRequest } from '../../errors.js';
import type { DataDeps } from './deps.js';
import { IndexedBlocks, type PageBlock } from './indexed-blocks.js';
import type { DataIndexer } from './indexer.js';
import { indexedTo } from './read-at.js';

/** What every list of the Data API shares: the indexed head it reads at, the blocks its items name, cursors of lists computed whole. */

/** Waits for the indexes as every read does (indexedTo); returns the last block they hold. */
export async function indexedHead(deps: DataDeps, chain: string): Promise<number> {
  return (await indexedTo(deps, chain)).position;
}

const notIndexed = (chain: string, number: number): ApiError =>
  new ApiError(503, `block ${number} of chain ${chain} is not indexed yet; try again`);

/** What reads a page's blocks: the store, and the indexer's IndexedBlocks when there is one (the server's). */
export type BlockDeps = Pick<DataDeps, 'kv'> & { indexer?: Pick<DataIndexer, 'blocks'> };

/** The indexed blocks of one page's items, as IndexedBlocks keeps them; 503 for a block the indexes do not hold. */
export function pageBlocks(deps: BlockDeps, chain: string): (number: number) => PageBlock {
  const blocks = deps.indexer?.blocks ?? new IndexedBlocks();
  return (number) => {
    const block = blocks.get(deps.kv, chain, number);
    if (block === undefined) throw notIndexed(chain, number);
    return block;
  };
}

/** A cursor for lists computed whole (a wallet's tokens, time buckets): how many items the next page skips. */
export const offsetCursor = (offset: number): string => Buffer.from(JSON.stringify({ o: offset }), 'utf8').toString('base64url');

export function readOffsetCursor(raw: string): number {
  try {
    const o = (JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as { o?: unknown }).o;
    if (Number.isSafeInteger(o) && (o as number) > 0) return o as number;
  } catch {
    // below
  }
  throw badRequest('cursor', 'not a cursor of this list (pass the cursor of the previous answer as it is)');
}
