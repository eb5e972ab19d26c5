import { ApiError } from '../../errors.js';
import type { TokenMetadata } from '../../evm/token-metadata.js';
import { NodeUnavailable } from '../../match/matcher.js';

/**
 * Reads the Data API answers from the chain's node (eth_getBalance, eth_call):
 * the node's failures as answers.
 */

/** A node read; a node that cannot be reached answers 502 naming `what` was read (the request may be sent again). */
export async function fromNode<T>(read: () => Promise<T>, what = 'a read'): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof NodeUnavailable) throw new ApiError(502, `${what}: the chain's node could not be reached: ${err.message}`);
    throw err;
  }
}

/** Node reads in flight at once (an index's reads before its batch: one node, shared with everything else). */
const READS_AT_ONCE = 16;

/** Runs the reads READS_AT_ONCE at a time; their results in order. */
export async function inBatches<T>(jobs: ReadonlyArray<() => Promise<T>>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < jobs.length; i += READS_AT_ONCE) out.push(...(await Promise.all(jobs.slice(i, i + READS_AT_ONCE).map((j) => j()))));
  return out;
}

/** Token metadata (stored after its first read by eth_call); a node that cannot be reached fails the request. */
export async function metadata(deps: { tokens: TokenMetadata }, chain: string, contract: string) {
  return fromNode(() => deps.tokens.get(chain, contract), `the metadata of ${contract} on chain ${chain}`);
}
