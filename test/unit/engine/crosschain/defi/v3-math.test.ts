import { describe, expect, it } from 'vitest';
import { amountsForLiquidity, MAX_TICK, MIN_TICK, sqrtRatioAtTick } from '../../../../../engine/crosschain/defi/v3-math.js';

/**
 * Uniswap V3's TickMath and LiquidityAmounts in integers, against values known independently: TickMath's own
 * MIN_SQRT_RATIO and MAX_SQRT_RATIO, 2^96 at tick 0, sqrt(1.0001^tick) · 2^96 written out for every bit of the
 * tick, and a mainnet-style USDC/WETH position (0.05% pool, ether at $2,000) computed here by the formulas.
 */

const Q96 = 2n ** 96n;
const MIN_SQRT_RATIO = 4295128739n;
const MAX_SQRT_RATIO = 1461446703485210103287273052203988822378723970342n;
const near = (actual: number, expected: number, rel: number): void =>
  expect(Math.abs(actual - expected), `${actual} vs ${expected}`).toBeLessThanOrEqual(Math.abs(expected) * rel);

describe('V3 math: sqrtRatioAtTick', () => {
  it('gives TickMath’s bounds and 2^96 at tick 0', () => {
    expect(sqrtRatioAtTick(MIN_TICK)).toBe(MIN_SQRT_RATIO);
    expect(sqrtRatioAtTick(MAX_TICK)).toBe(MAX_SQRT_RATIO);
    expect(sqrtRatioAtTick(0)).toBe(Q96);
    expect(() => sqrtRatioAtTick(MAX_TICK + 1)).toThrow(RangeError);
    expect(() => sqrtRatioAtTick(1.5)).toThrow(RangeError);
  });

  it('is sqrt(1.0001^tick) · 2^96 for each bit of the tick, either sign', () => {
    for (let bit = 0; bit < 20; bit++)
      for (const tick of [1 << bit, -(1 << bit), (1 << bit) + 7, -((1 << bit) + 7)]) {
        if (Math.abs(tick) > MAX_TICK) continue;
        // Relative to the value: 1.0001^(tick/2) in floating point is good to ~1e-12 over this range.
        const want = Math.exp((tick / 2) * Math.log(1.0001));
        near(Number(sqrtRatioAtTick(tick)) / 2 ** 96, want, 1e-10);
      }
  });
});

/** Integer square root (Newton). */
function isqrt(n: bigint): bigint {
  if (n < 2n) return n;
  let x = 1n << BigInt(Math.ceil(n.toString(2).length / 2));
  for (;;) {
    const y = (x + n / x) >> 1n;
    if (y >= x) return x;
    x = y;
  }
}

/** sqrt(1.0001^tick) · 2^96 from its definition, in 512-bit fixed point (1.0001 squared per bit of the tick), rounded down. */
function referenceSqrtRatio(tick: number): bigint {
  const P = 512n;
  let x = (10001n << P) / 10000n;
  let r = 1n << P;
  for (let bit = 0; bit < 20; bit++) {
    if ((Math.abs(tick) & (1 << bit)) !== 0) r = (r * x) >> P;
    x = (x * x) >> P;
  }
  if (tick < 0) r = (1n << (2n * P)) / r;
  return isqrt(r >> (P - 192n));
}

describe('V3 math: sqrtRatioAtTick against the definition in integers', () => {
  // TickMath multiplies Q128.128 ratios of 1.0001^(-|tick|/2): its error is a few units of the last of those 128 bits,
  // relative to the smallest ratio, i.e. about 1.0001^(|tick|/2) · 2^-128 of the value (2^-122 allowed here).
  it('differs from sqrt(1.0001^tick) · 2^96 by TickMath’s rounding only', () => {
    for (let bit = 0; bit < 20; bit++)
      for (const tick of [1 << bit, -(1 << bit), (1 << bit) + 7, -((1 << bit) + 7), (1 << bit) - 1, -((1 << bit) - 1)]) {
        if (Math.abs(tick) > MAX_TICK) continue;
        const got = sqrtRatioAtTick(tick);
        const want = referenceSqrtRatio(tick);
        const diff = got > want ? got - want : want - got;
        const growth = tick >= 0 ? want : (1n << 192n) / want;
        expect(diff <= 2n + (((want * growth) >> 96n) >> 122n), `tick ${tick}: ${got} vs ${want} (${diff} apart)`).toBe(true);
      }
  });
});

describe('V3 math: amountsForLiquidity', () => {
  // USDC (token0, 6 decimals) / WETH (token1, 18) at $2,000 an ether: token1 per token0 in smallest units is
  // 1e12 / 2000 = 5e8, tick ≈ ln(5e8) / ln(1.0001) = 200,311; a position from 199,310 to 201,310.
  const price = 5e8;
  const sqrtPriceX96 = BigInt(Math.round(Math.sqrt(price) * 2 ** 48)) * 2n ** 48n;
  const [lower, upper] = [199_310, 201_310];
  const L = 2n * 10n ** 17n;

  it('inside the range: token0 = L(√b − √p)/(√p√b), token1 = L(√p − √a)', () => {
    const sp = Number(sqrtPriceX96) / 2 ** 96;
    const [sa, sb] = [Math.sqrt(1.0001 ** lower), Math.sqrt(1.0001 ** upper)];
    const [a0, a1] = amountsForLiquidity(sqrtPriceX96, lower, upper, L);
    near(Number(a0), (Number(L) * (sb - sp)) / (sp * sb), 1e-9);
    near(Number(a1), Number(L) * (sp - sa), 1e-9);
    // About $4,000 of USDC and 2 ether here: what such a position holds on mainnet.
    expect(Number(a0) / 1e6).toBeGreaterThan(1000);
    expect(Number(a1) / 1e18).toBeGreaterThan(0.5);
  });

  it('below the range all token0, above it all token1, exactly at the bounds as LiquidityAmounts', () => {
    // Exact: the bounds of TickMath are known integers, so the formulas are computed here in integers.
    expect(amountsForLiquidity(Q96, MIN_TICK, 0, L)).toEqual([0n, (L * (Q96 - MIN_SQRT_RATIO)) / Q96]);
    expect(amountsForLiquidity(Q96, 0, MAX_TICK, L)).toEqual([((L << 96n) * (MAX_SQRT_RATIO - Q96)) / MAX_SQRT_RATIO / Q96, 0n]);
    const [a0, a1] = amountsForLiquidity(sqrtRatioAtTick(lower) - 1n, lower, upper, L);
    expect(a1).toBe(0n);
    expect(a0).toBeGreaterThan(0n);
    expect(amountsForLiquidity(sqrtRatioAtTick(upper), lower, upper, L)[0]).toBe(0n);
    expect(amountsForLiquidity(sqrtPriceX96, lower, upper, 0n)).toEqual([0n, 0n]);
  });
});
