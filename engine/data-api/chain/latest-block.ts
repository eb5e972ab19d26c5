import { z } from 'zod';
import { ApiError } from '../../errors.js';
import type { DataDeps } from '../common/deps.js';
import { indexedHead } from '../common/pages.js';

/**
 * GET /latestBlockNumber/:chain: the last block the Data API's indexes hold (what every other answer is read at),
 * as the hosted service's string. The chain's node's head, which may be ahead (the blocks not ingested or indexed
 * yet, the confirmation depth aside), is the `x-node-block-number` header: the hosted answer is a bare string,
 * with no room for a field.
 */

/** The chain as the path names it (hex, decimal or name). */
export const latestBlockQuery = z.object({ chain: z.string().meta({ description: 'The chain: hex id, decimal id or name' }) });
export const latestBlockAnswer = z.string().meta({
  description: "The last block the indexes hold, in decimal; the node's head is the x-node-block-number header",
});
/** The response header that carries the node's head (decimal), when the follower has heard of one. */
export const NODE_HEAD_HEADER = 'x-node-block-number';

export async function latestBlock(deps: DataDeps, chain: string): Promise<{ block: string; nodeHead: number | undefined }> {
  const head = await indexedHead(deps, chain);
  if (head < 0) throw new ApiError(404, `no block of chain ${chain} is indexed yet`);
  const node = deps.follower(chain)?.nodeHead;
  return { block: String(head), nodeHead: node === undefined || node < 0 ? undefined : node };
}
