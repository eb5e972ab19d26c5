import { ApiError } from '../errors.js';
import { NodeUnavailable } from '../match/matcher.js';

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
