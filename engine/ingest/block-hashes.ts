import type { Kv } from '../ports.js';
import { blockKey } from './store.js';

/**
 * Block hash → number for the canonical blocks, so node access can find a
 * block a caller names by hash (eth_getLogs blockHash, eth_getBlockReceipts)
 * without asking the node. Kept like `canon`: written with each block, removed
 * with it on a reorg, left in place by pruning. A hit counts only while `canon`
 * still holds that hash at that height.
 */
const key = (chain: string, hash: string): string => `${chain}/${hash.toLowerCase()}`;

export function indexBlockHash(kv: Kv, chain: string, number: number, hash: string): void {
  kv.put('blockHashes', key(chain, hash), number);
}

/** Removes the index entry of the block now canonical at `number` (before the block itself goes). */
export function unindexBlockHash(kv: Kv, chain: string, number: number): void {
  const hash = kv.get<string>('canon', blockKey(chain, number));
  if (hash !== undefined) kv.remove('blockHashes', key(chain, hash));
}

/** The number of the canonical block with this hash, if the store knows it. */
export function canonicalNumber(kv: Kv, chain: string, hash: string): number | undefined {
  const n = kv.get<number>('blockHashes', key(chain, hash));
  if (n === undefined) return undefined;
  return kv.get<string>('canon', blockKey(chain, n))?.toLowerCase() === hash.toLowerCase() ? n : undefined;
}
