import type { ChainState } from '../evm/follower.js';
import type { Kv } from '../ports.js';
import type { DataDeps } from './deps.js';

/**
 * The block a Data API read is about: the stored head unless the request names
 * an earlier one (`to_block`), and, for reads of the indexes, a bounded wait
 * for them to hold that block.
 */

/** The stored head (−1 before the first block). */
export const storedHead = (kv: Kv, chain: string): number => kv.get<ChainState>('chainState', chain)?.head ?? -1;

/** The block a node read is made at: `to_block`, no later than the stored head; the stored head when none is asked. */
export function readBlock(kv: Kv, chain: string, toBlock: number | undefined): number | 'latest' {
  const head = storedHead(kv, chain);
  if (head < 0) return toBlock ?? 'latest';
  return Math.min(toBlock ?? head, head);
}

/** Waits (at most 5 s) until the indexes hold `to`, or the stored head when no `to` or a later one is asked; then answers from what they hold. */
export async function indexedTo(deps: Pick<DataDeps, 'kv' | 'indexer'>, chain: string, to?: number): Promise<void> {
  const head = storedHead(deps.kv, chain);
  const target = Math.min(to ?? head, head);
  if (target >= 0) await deps.indexer.reached(chain, target, 5_000);
}
