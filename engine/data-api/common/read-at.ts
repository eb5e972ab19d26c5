import type { ChainState } from '../../evm/follower.js';
import { blockKey } from '../../ingest/chain-store.js';
import type { Kv } from '../../ports.js';
import type { DataDeps } from './deps.js';
import { INDEX_BATCH } from './indexer.js';

/**
 * The block a Data API read is about: the stored head unless the request names
 * an earlier one (`to_block`), and, for reads of the indexes, a bounded wait
 * for them to hold that block. The Data API's head is the indexed head: a block
 * past it is never answered as if its index rows were there.
 */

/** The stored head (−1 before the first block). */
export const storedHead = (kv: Kv, chain: string): number => kv.get<ChainState>('chainState', chain)?.head ?? -1;

/** The block a node read is made at: `to_block`, no later than the stored head; the stored head when none is asked. */
export function readBlock(kv: Kv, chain: string, toBlock: number | undefined): number | 'latest' {
  const head = storedHead(kv, chain);
  if (head < 0) return toBlock ?? 'latest';
  return Math.min(toBlock ?? head, head);
}

/** How long a read waits for the indexes to reach the block it is about. */
const WAIT_MS = 2_000;

/**
 * The Data API's head as it is now, without waiting: the last block every index holds (−1 before their first batch).
 * pages.ts's indexedHead is the same after the wait every list read makes (indexedTo).
 */
export const indexedPosition = (deps: Pick<DataDeps, 'indexer'>, chain: string): number => deps.indexer.position(chain) ?? -1;

/**
 * Every Data API read of the indexes starts here: a wait (at most WAIT_MS) until they hold `to`, or the
 * stored head when no `to` or a later one is asked, so an answer includes what was just ingested. Far
 * behind (a backfill: more than two index batches), or while the chain's follower catches up with its node
 * (more than a batch of blocks behind it: the stored head moves on faster than a read could wait for), it does
 * not wait and answers from what they hold. Resolves whether they hold the block; with the last block they hold.
 */
export async function indexedTo(
  deps: Pick<DataDeps, 'kv' | 'indexer'> & Partial<Pick<DataDeps, 'follower'>>,
  chain: string,
  to?: number,
): Promise<{ reached: boolean; position: number }> {
  const head = storedHead(deps.kv, chain);
  const target = Math.min(to ?? head, head);
  const position = indexedPosition(deps, chain);
  const behind = target - position;
  // Caught up (every read at the head, most of the time): nothing to wait for, the position just read holds.
  if (behind <= 0) return { reached: true, position };
  const follower = deps.follower?.(chain);
  const catchingUp = follower !== undefined && follower.nodeHead - follower.head > INDEX_BATCH;
  const reached = behind > INDEX_BATCH * 2 || catchingUp ? false : await deps.indexer.reached(chain, target, WAIT_MS);
  return { reached, position: indexedPosition(deps, chain) };
}

/**
 * A read naming one block (by number or hash): answered once every index holds it, never before, when its token
 * transfers or logs would be missing. It waits for that (at most WAIT_MS) even while the follower catches up: the
 * indexes are then paced within PACE_LEAD blocks of it. Resolves whether they hold the block; false at once for a
 * block the store has no canonical hash for (past the head, or never followed).
 */
export async function blockIndexed(deps: Pick<DataDeps, 'kv' | 'indexer'>, chain: string, n: number): Promise<boolean> {
  if (n <= indexedPosition(deps, chain)) return true;
  if (!deps.kv.has('canon', blockKey(chain, n))) return false;
  return deps.indexer.reached(chain, n, WAIT_MS);
}
