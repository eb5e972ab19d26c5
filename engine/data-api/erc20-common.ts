import { decodeFunctionResult, encodeFunctionData, formatUnits, parseAbi, type Hex } from 'viem';
import { ApiError, badRequest } from '../errors.js';
import type { ChainState } from '../evm/follower.js';
import type { TokenInfo } from '../evm/token-metadata.js';
import type { DataDeps } from './deps.js';
import { blockInfoKey, tokenKey, type BlockInfo, type TokenState } from './erc20-keys.js';
import { metadata } from './nft-transfers.js';

/** What the ERC-20 endpoints share: waiting for the indexes, token facts, amounts. */

/** How long a read waits for the indexes to reach the stored head before answering from what they hold. */
const WAIT_MS = 5_000;

/** Waits until the indexes hold the follower's stored head (or WAIT_MS); returns the last block they hold. */
export async function indexedHead(deps: DataDeps, chain: string): Promise<number> {
  const head = deps.kv.get<ChainState>('chainState', chain)?.head;
  if (head !== undefined) await deps.indexer.reached(chain, head, WAIT_MS);
  return deps.indexer.position(chain) ?? -1;
}

export interface TokenFacts extends TokenInfo {
  address: string;
  /** totalSupply (decimal string) as the indexes moved it, or read at the head for a token they have not seen. */
  totalSupply: string | null;
  state: TokenState | undefined;
}

const ABI = parseAbi(['function totalSupply() view returns (uint256)', 'function balanceOf(address) view returns (uint256)', 'function allowance(address,address) view returns (uint256)']);

/** A uint256 view by eth_call at a block; null when the contract reverts or has no such function. */
export async function viewUint(deps: DataDeps, chain: string, token: string, block: number | 'latest', functionName: 'totalSupply' | 'balanceOf' | 'allowance', args: readonly string[] = []): Promise<bigint | null> {
  let out: Hex | null;
  try {
    out = await deps.reads.call(chain, token, encodeFunctionData({ abi: ABI, functionName, args } as never), block);
  } catch (err) {
    throw new ApiError(500, `${functionName} of ${token} on chain ${chain} could not be read from its node: ${(err as Error).message}`);
  }
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

/** Hash and time of a block that holds ERC-20 transfers. */
export function blockInfo(deps: DataDeps, chain: string, number: number): BlockInfo {
  const info = deps.kv.get<BlockInfo>('erc20Blocks', blockInfoKey(chain, number));
  if (info === undefined) throw new ApiError(503, `block ${number} of chain ${chain} is not indexed yet; try again`);
  return info;
}

/**
 * The first block at or after `at` (unix seconds) among blocks with ERC-20 transfers, by binary search over block
 * numbers (timestamps grow with them): ~log2(head) single-entry reads. `head + 1` when there is none.
 */
export function firstBlockFrom(deps: DataDeps, chain: string, at: number, head: number): number {
  const next = (x: number) => deps.kv.range<BlockInfo>('erc20Blocks', { start: blockInfoKey(chain, x), end: `${chain}/\uffff`, limit: 1 })[0];
  const number = (e: { key: string }): number => parseInt(e.key.slice(chain.length + 1), 16);
  // The smallest x whose next block with transfers is at or after `at` (or is none): monotone in x.
  let lo = 0;
  let hi = head + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const e = next(mid);
    if (e === undefined || e.value.timestamp >= at) hi = mid;
    else lo = number(e) + 1;
  }
  const e = next(lo);
  return e === undefined ? head + 1 : number(e);
}

/** A block range as key bounds (`from`, `to` segments of `number/logIndex` keys): from_block … to_block, from_date … to_date. */
export function blockBounds(deps: DataDeps, chain: string, head: number, q: { from_block?: number; to_block?: number; from_date?: number; to_date?: number }): { from?: string; to?: string } {
  let low = q.from_block ?? 0;
  let high = q.to_block ?? Number.MAX_SAFE_INTEGER;
  if (q.from_date !== undefined) low = Math.max(low, firstBlockFrom(deps, chain, q.from_date, head));
  if (q.to_date !== undefined) high = Math.min(high, firstBlockFrom(deps, chain, q.to_date + 1, head) - 1);
  const seg = (n: number): string => Math.max(n, 0).toString(16).padStart(12, '0');
  return { ...(low > 0 ? { from: seg(low) } : {}), ...(high < Number.MAX_SAFE_INTEGER ? { to: seg(high + 1) } : {}) };
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
