import { ApiError } from '../errors.js';
import type { ChainState } from '../evm/follower.js';
import { NodeUnavailable } from '../match/matcher.js';
import type { Kv } from '../ports.js';

/**
 * Reads the Data API answers from the chain's node (eth_getBalance, eth_call):
 * the block asked, and the node's failures as answers.
 */

/** The block a node read is made at: `to_block`, no later than the stored head; the stored head when none is asked. */
export function readBlock(kv: Kv, chain: string, toBlock: number | undefined): number | 'latest' {
  const head = kv.get<ChainState>('chainState', chain)?.head ?? -1;
  if (head < 0) return toBlock ?? 'latest';
  return Math.min(toBlock ?? head, head);
}

/** A node read; a node that cannot be reached answers 502 (the request may be sent again). */
export async function fromNode<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof NodeUnavailable) throw new ApiError(502, `the chain's node could not be reached: ${err.message}`);
    throw err;
  }
}
