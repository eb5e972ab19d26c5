import type { Kv } from '../ports.js';
import { blockHashKey, blockKey } from './chain-store.js';

/**
 * Block hash → number for the canonical blocks, so node access can find a
 * block a caller names by hash (eth_getLogs blockHash, eth_getBlockReceipts)
 * without asking the node. Kept like `canon`: written with each block and
 * removed with it on a reorg (writeBlock, removeBlock), left in place by
 * pruning. A hit counts only while `canon` still holds that hash at that height.
 */

/** The number of the canonical block with this hash, if the store knows it. */
export function canonicalNumber(kv: Kv, chain: string, hash: string): number | undefined {
  const n = kv.get<number>('blockHashes', blockHashKey(chain, hash));
  if (n === undefined) return undefined;
  return kv.get<string>('canon', blockKey(chain, n))?.toLowerCase() === hash.toLowerCase() ? n : undefined;
}
