import { indexedTo } from '../common/read-at.js';
import { z } from 'zod';
import type { DataDeps } from '../common/deps.js';
import type { NftMetadata } from './metadata.js';
import { indexComplete, tokenIdOf } from './transfers.js';

/** What the NFT endpoints read: the Data API's deps and the NFT metadata cache. */
export interface NftDeps extends DataDeps {
  metadata: NftMetadata;
}

/**
 * Waits (briefly) until the indexes hold the chain's stored head, so an answer includes what was just
 * ingested; says whether the answer is complete (the follower caught up with its node, the index with it).
 */
export async function indexedUpTo(deps: NftDeps, chain: string): Promise<boolean> {
  // Far behind (catching up, a backfill): no wait, the answer says it is not complete.
  const { reached } = await indexedTo(deps, chain);
  return reached && indexComplete(deps.kv, chain, deps.follower(chain));
}

export const format = z.enum(['decimal', 'hex'], 'decimal or hex').default('decimal');

/** Reads `token_id` as `format` says (the NFT transfers endpoint's rule), or fails the schema naming token_id. */
export function withTokenId<T extends { token_id: string; format: 'decimal' | 'hex' }>(
  q: T,
  ctx: z.RefinementCtx,
): Omit<T, 'token_id'> & { tokenId: bigint } {
  const tokenId = tokenIdOf(q.token_id, q.format);
  if (tokenId === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['token_id'],
      message: `not a token id written in ${q.format} (format=${q.format}), up to 2^256 − 1`,
    });
    return z.NEVER;
  }
  const { token_id: _raw, ...rest } = q;
  return { ...rest, tokenId };
}

export const contractType = (kind: string): 'ERC721' | 'ERC1155' => (kind === 'erc721' ? 'ERC721' : 'ERC1155');
