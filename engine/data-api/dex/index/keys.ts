import type { FactoryKind } from '../../../chains/pricing.js';

/** Keys and rows of the DEX index's tables (tables.ts): written by writer.ts and v4.ts, read by prices.ts and the DEX endpoints. */

/**
 * [kind, token0, token1, factory, fee (V3, V4; V2 null)]: the exchange's name is the registry's entry for the factory
 * (V4: the PoolManager). V4 tokens are the key's currencies, the native coin as the wrapped native token.
 */
export type PoolRow = [kind: FactoryKind, token0: string, token1: string, factory: string, fee: number | null];
/**
 * V2: the reserves after a Sync (0x quantities). V3: sqrtPriceX96, liquidity (null at Initialize) and tick, and the
 * pool's token balances at the end of the block (its reserves: as the ERC-20 index holds them once it has applied
 * the block, which it does before this index). V4: sqrtPriceX96, active liquidity, tick and the virtual reserves of
 * that liquidity (V4StateRow: the PoolManager holds every pool's tokens, so balances say nothing of one pool).
 */
export type StateRow =
  | [reserve0: string, reserve1: string]
  | [sqrtPriceX96: string, liquidity: string | null, tick: number, balance0: string, balance1: string]
  | V4StateRow;
/**
 * An address that logged a pool's events and is no pool of a registry factory: 0 for good (its factory said so, or
 * it names no registry factory), or the block from which to ask again (its factory() could not be read: a node error
 * is not an answer).
 */
export type NotPool = number;
/** [transaction hash, its index, trader (the transaction's sender), amount0, amount1]: the pool's balance changes, decimal, signed (positive: into the pool). */
export type SwapRow = [tx: string, ti: number, trader: string, amount0: string, amount1: string];

export const poolKey = (chain: string, pool: string): string => `${chain}/p/${pool}`;
export const notPoolKey = (chain: string, address: string): string => `${chain}/x/${address}`;
/** A token's pools (`other` given: those against that token), each key ending with the other token and the pool. */
export const tokenPoolsPrefix = (chain: string, token: string, other?: string): string =>
  `${chain}/t/${token}/${other === undefined ? '' : `${other}/`}`;
export const poolRowsPrefix = (chain: string, pool: string): string => `${chain}/${pool}/`;
/** A trader's swaps in `dexWalletSwaps`, each key ending with the swap's place (its `dexSwaps` key under the pool). */
export const walletSwapsPrefix = (chain: string, trader: string): string => `${chain}/${trader}/`;
/** A token's swaps in `dexTokenSwaps`, each key ending with the swap's place (its `dexSwaps` key under the pool). */
export const tokenSwapsPrefix = (chain: string, token: string): string => `${chain}/${token}/`;

/** [sqrtPriceX96, active liquidity, tick, virtual reserve0, virtual reserve1] (0x quantities). */
export type V4StateRow = [sqrtPriceX96: string, liquidity: string, tick: number, reserve0: string, reserve1: string];
