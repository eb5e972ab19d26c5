import { fromNode, metadata } from '../common/node-reads.js';
import { decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem/utils';
import type { Hex } from 'viem';
import type { TokenInfo } from '../../evm/token-metadata.js';
import type { DataDeps } from '../common/deps.js';
import { tokenKey, type TokenState } from './index/keys.js';

/** What the ERC-20 endpoints share: a token's facts (its metadata, supply and index state), views read from its contract, shares of its supply. */

export interface TokenFacts extends TokenInfo {
  address: string;
  /** totalSupply (decimal string) as the indexes moved it, or read at the head for a token they have not seen. */
  totalSupply: string | null;
  state: TokenState | undefined;
}

const ABI = parseAbi([
  'function totalSupply() view returns (uint256)',
  'function balanceOf(address) view returns (uint256)',
  'function allowance(address,address) view returns (uint256)',
]);

/** A uint256 view by eth_call at a block; null when the contract reverts or has no such function. */
export async function viewUint(
  deps: Pick<DataDeps, 'reads'>,
  chain: string,
  token: string,
  block: number | 'latest',
  functionName: 'totalSupply' | 'balanceOf' | 'allowance',
  args: readonly string[] = [],
): Promise<bigint | null> {
  const out: Hex | null = await fromNode(
    () => deps.reads.call(chain, token, encodeFunctionData({ abi: ABI, functionName, args } as never), block),
    `${functionName} of ${token} on chain ${chain}`,
  );
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

/** A balance's share of the supply, in percent (a number, as the hosted service answers it); null without a supply. */
export function shareOf(balance: bigint, supply: string | null): number | null {
  if (supply === null || BigInt(supply) === 0n) return null;
  return Number((balance * 10n ** 12n) / BigInt(supply)) / 1e10;
}
