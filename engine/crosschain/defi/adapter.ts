import { decodeFunctionResult, encodeFunctionData } from 'viem/utils';
import type { Abi, Hex } from 'viem';
import type { Factory, FactoryKind } from '../../chains/pricing.js';
import type { DataDeps } from '../../data-api/common/deps.js';
import { fromNode } from '../../data-api/common/node-reads.js';

/**
 * What a DeFi adapter is (one module per protocol, listed in ./registry.ts): it finds a wallet's positions in its
 * protocol on one chain at one block, as token amounts; ./positions.ts values them at the tokens' USD prices
 * and shapes the answers. An adapter reads the indexes (balances, NFT ownership) and the contracts' views by
 * eth_call at that block, the same reads a mainnet node answers.
 */

export interface DefiProtocol {
  /** The Universal API's protocol id (`uniswap-v2`). */
  id: string;
  name: string;
  url: string;
  /** The registry factories of this kind and name are the protocol's (forks with the same contracts are other protocols). */
  kind: FactoryKind;
}

/** One token of a position: what it supplies (its share of a pool), what it earned and may claim, or the receipt token itself. */
export interface PositionToken {
  tokenType: 'supplied' | 'reward' | 'lp';
  address: string;
  /** In the token's smallest units. */
  amount: bigint;
}

export interface RawPosition {
  label: 'liquidity';
  /** The pool (V2: the pair, which is also the LP token). */
  address: string;
  tokens: PositionToken[];
  /** Protocol facts (camelCase; the v2.2 answer writes them snake_case): reserves, ticks, share of the pool… */
  details: Record<string, unknown>;
}

export interface AdapterContext {
  deps: DataDeps;
  chain: string;
  /** The indexed head: every read is at this block. */
  block: number;
  /** The chain's registry factories that are this protocol's. */
  factories: readonly Factory[];
}

export interface DefiAdapter {
  protocol: DefiProtocol;
  positions(ctx: AdapterContext, wallet: string): Promise<RawPosition[]>;
}

/** A contract's view by eth_call at the context's block, decoded; null when it reverts or answers nothing of that shape. */
export async function readView<T>(
  ctx: Pick<AdapterContext, 'deps' | 'chain' | 'block'>,
  abi: Abi,
  address: string,
  functionName: string,
  args: readonly unknown[] = [],
): Promise<T | null> {
  const out = await fromNode(
    () => ctx.deps.reads.call(ctx.chain, address, encodeFunctionData({ abi, functionName, args } as never) as Hex, ctx.block),
    `${functionName} of ${address} on chain ${ctx.chain}`,
  );
  if (out === null || out === '0x') return null;
  try {
    return decodeFunctionResult({ abi, functionName, data: out } as never) as T;
  } catch {
    return null;
  }
}
