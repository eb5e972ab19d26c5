/**
 * Uniswap V3's position amounts, exact in integers as the contracts compute them: TickMath.getSqrtRatioAtTick
 * (v3-core) and LiquidityAmounts.getAmountsForLiquidity (v3-periphery), both rounding down. A position's
 * amounts are what burning its liquidity at the pool's current price would give back (fees aside).
 */

export const MIN_TICK = -887272;
export const MAX_TICK = 887272;
const Q96 = 1n << 96n;
const MAX_UINT256 = (1n << 256n) - 1n;

/** TickMath's constants: for bit i of |tick| (from bit 1), 2^128 / sqrt(1.0001)^(2^i). Bit 0's is the start value. */
const BIT_FACTORS: readonly bigint[] = [
  0xfff97272373d413259a46990580e213an,
  0xfff2e50f5f656932ef12357cf3c7fdccn,
  0xffe5caca7e10e4e61c3624eaa0941cd0n,
  0xffcb9843d60f6159c9db58835c926644n,
  0xff973b41fa98c081472e6896dfb254c0n,
  0xff2ea16466c96a3843ec78b326b52861n,
  0xfe5dee046a99a2a811c461f1969c3053n,
  0xfcbe86c7900a88aedcffc83b479aa3a4n,
  0xf987a7253ac413176f2b074cf7815e54n,
  0xf3392b0822b70005940c7a398e4b70f3n,
  0xe7159475a2c29b7443b29c7fa6e889d9n,
  0xd097f3bdfd2022b8845ad8f792aa5825n,
  0xa9f746462d870fdf8a65dc1f90e061e5n,
  0x70d869a156d2a1b890bb3df62baf32f7n,
  0x31be135f97d08fd981231505542fcfa6n,
  0x9aa508b5b7a84e1c677de54f3e99bc9n,
  0x5d6af8dedb81196699c329225ee604n,
  0x2216e584f5fa1ea926041bedfe98n,
  0x48a170391f7dc42444e8fa2n,
];

/** sqrt(1.0001^tick) · 2^96 as TickMath.getSqrtRatioAtTick computes it (Q64.96, rounded up from Q128.128). */
export function sqrtRatioAtTick(tick: number): bigint {
  if (!Number.isInteger(tick) || tick < MIN_TICK || tick > MAX_TICK)
    throw new RangeError(`tick ${tick} is outside ${MIN_TICK}…${MAX_TICK}`);
  const abs = Math.abs(tick);
  let ratio = (abs & 1) !== 0 ? 0xfffcb933bd6fad37aa2d162d1a594001n : 1n << 128n;
  BIT_FACTORS.forEach((factor, i) => {
    if ((abs & (2 << i)) !== 0) ratio = (ratio * factor) >> 128n;
  });
  if (tick > 0) ratio = MAX_UINT256 / ratio;
  return (ratio >> 32n) + (ratio % (1n << 32n) === 0n ? 0n : 1n);
}

/** LiquidityAmounts.getAmount0ForLiquidity: token0 between two prices (a < b). */
const amount0 = (a: bigint, b: bigint, liquidity: bigint): bigint => ((liquidity << 96n) * (b - a)) / b / a;
/** LiquidityAmounts.getAmount1ForLiquidity: token1 between two prices (a < b). */
const amount1 = (a: bigint, b: bigint, liquidity: bigint): bigint => (liquidity * (b - a)) / Q96;

/**
 * LiquidityAmounts.getAmountsForLiquidity: a position's token0 and token1 at the pool's price `sqrtPriceX96`,
 * between its ticks: all token0 below its range, all token1 above it, both inside.
 */
export function amountsForLiquidity(sqrtPriceX96: bigint, tickLower: number, tickUpper: number, liquidity: bigint): [bigint, bigint] {
  let a = sqrtRatioAtTick(tickLower);
  let b = sqrtRatioAtTick(tickUpper);
  if (a > b) [a, b] = [b, a];
  if (sqrtPriceX96 <= a) return [amount0(a, b, liquidity), 0n];
  if (sqrtPriceX96 < b) return [amount0(sqrtPriceX96, b, liquidity), amount1(a, sqrtPriceX96, liquidity)];
  return [0n, amount1(a, b, liquidity)];
}
