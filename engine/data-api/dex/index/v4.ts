import type { Factory, Pricing } from '../../../chains/pricing.js';
import { v4Initialize, v4ModifyLiquidity, v4Swap, V4_INITIALIZE, V4_MODIFY_LIQUIDITY, V4_SWAP, type SwapDelta } from './events.js';
import type { PoolRow, V4StateRow } from './keys.js';
import { hex } from '../../erc20/index/keys.js';
import { ZERO_ADDRESS } from '../../common/values.js';

/**
 * Uniswap V4 pools in the DEX index (engine/data-api/dex/index/writer.ts). One PoolManager of the registry (kind v4) holds
 * every pool: a pool is its PoolId (`0x` + 64 hex, topic1 of each of its events), made at `Initialize` (a pool
 * initialized before the indexes' first block stays unknown: its key is only ever logged then). Its tokens all lie
 * in the PoolManager, so its reserves are not balances: a state row holds the virtual reserves of its active
 * liquidity, amount0 = L·2^96/sqrtPriceX96 and amount1 = L·sqrtPriceX96/2^96, which the side rule weighs. L is 0 at
 * Initialize, what each Swap says after it, and moves by a ModifyLiquidity's liquidityDelta when the position's
 * [tickLower, tickUpper) holds the current tick (v4-core Pool.modifyLiquidity's rule).
 */

/** The topics of the V4 events the index reads. */
export const V4_EVENTS: ReadonlySet<string> = new Set([V4_INITIALIZE, V4_SWAP, V4_MODIFY_LIQUIDITY]);

/**
 * The token a V4 currency is priced as: the native coin (currency address 0) as the registry's wrapped native token. The one
 * place this mapping is made: pool rows hold the token, so prices, pairs and candles never see address 0.
 */
export const currencyToken = (pricing: Pricing, currency: string): string => (currency === ZERO_ADDRESS ? pricing.wrappedNative : currency);

/** The virtual reserves of liquidity L at sqrtPriceX96 (rounded down): L·2^96/√P of token0, L·√P/2^96 of token1. */
export function virtualReserves(liquidity: bigint, sqrtPriceX96: bigint): [bigint, bigint] {
  if (sqrtPriceX96 === 0n || liquidity <= 0n) return [0n, 0n];
  return [(liquidity << 96n) / sqrtPriceX96, (liquidity * sqrtPriceX96) >> 96n];
}

export const v4StateRow = (sqrtPriceX96: bigint, liquidity: bigint, tick: number): V4StateRow => {
  const [r0, r1] = virtualReserves(liquidity, sqrtPriceX96);
  return [hex(sqrtPriceX96), hex(liquidity), tick, hex(r0), hex(r1)];
};

interface Log {
  topics: readonly string[];
  data: string;
}

/**
 * The pool a registry PoolManager's Initialize makes: [PoolId, row], tokens as currencyToken prices them (in the
 * key's order: token0 is currency0, whose price in currency1 sqrtPriceX96 gives). A pool of the native coin against
 * the wrapped native token itself prices nothing: undefined, as for any other log.
 */
export function v4PoolCreated(pricing: Pricing, manager: Factory, l: Log): [string, PoolRow] | undefined {
  const init = v4Initialize(l);
  if (init === undefined) return undefined;
  const [token0, token1] = [currencyToken(pricing, init.currency0), currencyToken(pricing, init.currency1)];
  return token0 === token1 ? undefined : [init.id, ['v4', token0, token1, manager.address, init.fee]];
}

/** A V4 event as the index writes it: the pool it names, the pool's state after it (if it moved), its swap. */
export interface V4Move {
  pool: string;
  state?: V4StateRow;
  swap?: SwapDelta;
}

/**
 * What a PoolManager's log does to its pool, given the pool's last state before the log (`before`; undefined when
 * it has none). Pure: the caller checks the pool is the manager's.
 */
export function v4Move(l: Log, before: (pool: string) => V4StateRow | undefined): V4Move | undefined {
  const init = v4Initialize(l);
  if (init !== undefined) return { pool: init.id, state: v4StateRow(init.sqrtPriceX96, 0n, init.tick) };
  const swap = v4Swap(l);
  if (swap !== undefined) return { pool: swap.id, state: v4StateRow(swap.sqrtPriceX96, swap.liquidity, swap.tick), swap };
  const modify = v4ModifyLiquidity(l);
  if (modify === undefined) return undefined;
  const last = before(modify.id);
  // Out of range, or a pool whose state is unknown: its price and active liquidity stay.
  if (last === undefined || modify.tickLower > last[2] || last[2] >= modify.tickUpper) return { pool: modify.id };
  const liquidity = BigInt(last[1]) + modify.liquidityDelta;
  return { pool: modify.id, state: v4StateRow(BigInt(last[0]), liquidity < 0n ? 0n : liquidity, last[2]) };
}
