import { indexedTo } from '../common/read-at.js';
import { fromNode } from '../common/node-reads.js';
import { decodeFunctionResult, encodeFunctionData, formatUnits, parseAbi, type Hex } from 'viem';
import { ApiError, badRequest } from '../../errors.js';
import type { TokenInfo } from '../../evm/token-metadata.js';
import type { DataDeps } from '../common/deps.js';
import { tokenKey, type TokenState } from './index/keys.js';
import { IndexedBlocks, type PageBlock } from '../common/indexed-blocks.js';
import type { DataIndexer } from '../common/indexer.js';
import { metadata } from '../nft/transfers.js';

/** What the ERC-20 endpoints share: waiting for the indexes, token facts, amounts. */

/** Waits for the indexes as every read does (indexedTo); returns the last block they hold. */
export async function indexedHead(deps: DataDeps, chain: string): Promise<number> {
  return (await indexedTo(deps, chain)).position;
}

export interface TokenFacts extends TokenInfo {
  address: string;
  /** totalSupply (decimal string) as the indexes moved it, or read at the head for a token they have not seen. */
  totalSupply: string | null;
  state: TokenState | undefined;
}

const ABI = parseAbi(['function totalSupply() view returns (uint256)', 'function balanceOf(address) view returns (uint256)', 'function allowance(address,address) view returns (uint256)']);

/** A uint256 view by eth_call at a block; null when the contract reverts or has no such function. */
export async function viewUint(deps: Pick<DataDeps, 'reads'>, chain: string, token: string, block: number | 'latest', functionName: 'totalSupply' | 'balanceOf' | 'allowance', args: readonly string[] = []): Promise<bigint | null> {
  const out: Hex | null = await fromNode(() => deps.reads.call(chain, token, encodeFunctionData({ abi: ABI, functionName, args } as never), block), `${functionName} of ${token} on chain ${chain}`);
  if (out === null || out === '0x') return null;
  try {
    return decodeFunctionResult({ abi: ABI, functionName, data: out }) as bigint;
  } catch {
    return null;
  }
}

/** Name, symbol, decimals (eth_call, stored once per contract), supply and index state of a token. */
export async function tokenFacts(deps: DataDeps, chain: string, token: string): Promise<TokenFacts> {
  const info = await metadata(deps, chain, token);
  const state = deps.kv.get<TokenState>('erc20Tokens', tokenKey(chain, token));
  const supply = state !== undefined ? BigInt(state.supply) : await viewUint(deps, chain, token, 'latest', 'totalSupply');
  return { ...info, address: token, totalSupply: supply === null ? null : supply.toString(), state };
}

/** An amount in the token's units; decimals() is optional in ERC-20, a token without it counts whole units. */
export const formatted = (raw: bigint, decimals: number | null): string => formatUnits(raw, decimals ?? 0);

/** A balance's share of the supply, in percent (a number, as the hosted service answers it); null without a supply. */
export function shareOf(balance: bigint, supply: string | null): number | null {
  if (supply === null || BigInt(supply) === 0n) return null;
  return Number((balance * 10n ** 12n) / BigInt(supply)) / 1e10;
}

const notIndexed = (chain: string, number: number): ApiError => new ApiError(503, `block ${number} of chain ${chain} is not indexed yet; try again`);

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
