import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { subScores, tokenScoreOf, WEIGHTS, type ScoreInputs } from '../../../../../engine/data-api/scores/score.js';

/**
 * The token score's rule (engine/data-api/scores/score.ts, docs/api.md "Token scores"), one input at a time: from a base
 * whose sub-scores are round (liquidity $100,000 → 50, volume $10,000 → 50, 99 swaps → 66.67, a 10 % move → 80, top
 * 10 holding 40 % → 60; score 59), each input moved alone changes its own sub-score as documented and the score by its
 * weight times that change over 100, and nothing else.
 */

const BASE: ScoreInputs = { liquidityUsd: 100_000, volumeUsd1d: 10_000, transactions1d: 99, usdPricePercentChange1d: 10, top10Percent: 40 };
const BASE_PARTS = { liquidity: 50, volume: 50, transactions: 200 / 3, priceStability: 80, distribution: 60 };

/** The sub-scores of the base with one input changed, and the score. */
const moved = (change: Partial<ScoreInputs>) => tokenScoreOf({ ...BASE, ...change });

/** Expects only `key`'s sub-score to differ from the base's, equal to `part`. */
function onlyChanged(change: Partial<ScoreInputs>, key: keyof typeof WEIGHTS, part: number): void {
  const got = moved(change).subScores;
  for (const k of Object.keys(WEIGHTS) as Array<keyof typeof WEIGHTS>) expect(got[k], k).toBeCloseTo(k === key ? part : BASE_PARTS[k], 9);
}

describe('token score', () => {
  it('weighs five inputs, the weights summing to 100; the base scores 59', () => {
    expect(Object.values(WEIGHTS).reduce((a, b) => a + b, 0)).toBe(100);
    expect(WEIGHTS).toEqual({ liquidity: 30, volume: 20, transactions: 15, priceStability: 15, distribution: 20 });
    const base = tokenScoreOf(BASE);
    for (const [k, v] of Object.entries(BASE_PARTS)) expect(base.subScores[k as keyof typeof WEIGHTS], k).toBeCloseTo(v, 9);
    expect(base.score).toBe(59);
  });

  it('liquidity: log scale, 0 at $1,000 or less, 25 points a decade, 100 from $10,000,000', () => {
    for (const [usd, part] of [
      [0, 0],
      [999, 0],
      [1_000, 0],
      [10_000, 25],
      [1_000_000, 75],
      [10_000_000, 100],
      [1e12, 100],
    ] as const)
      onlyChanged({ liquidityUsd: usd }, 'liquidity', part);
    expect(moved({ liquidityUsd: 10_000_000 }).score).toBe(59 + 15);
    expect(moved({ liquidityUsd: 0 }).score).toBe(59 - 15);
  });

  it("volume: the day's USD volume, log scale, 0 at $100 or less, 25 points a decade, 100 from $1,000,000", () => {
    for (const [usd, part] of [
      [0, 0],
      [100, 0],
      [1_000, 25],
      [100_000, 75],
      [1_000_000, 100],
      [5e9, 100],
    ] as const)
      onlyChanged({ volumeUsd1d: usd }, 'volume', part);
    expect(moved({ volumeUsd1d: 1_000_000 }).score).toBe(59 + 10);
    expect(moved({ volumeUsd1d: 0 }).score).toBe(59 - 10);
  });

  it("transactions: 100 × log10(1 + n) / 3 of the day's swaps, at most 100", () => {
    for (const [n, part] of [
      [0, 0],
      [9, 100 / 3],
      [999, 100],
      [100_000, 100],
    ] as const)
      onlyChanged({ transactions1d: n }, 'transactions', part);
    expect(moved({ transactions1d: 999 }).score).toBe(59 + 5);
    expect(moved({ transactions1d: 0 }).score).toBe(59 - 10);
  });

  it('price stability: 100 − 2 × |24 h percent change|, at least 0; no price or none a day before: 0', () => {
    for (const [pct, part] of [
      [0, 100],
      [-10, 80],
      [25, 50],
      [-49, 2],
      [50, 0],
      [300, 0],
      [null, 0],
    ] as const)
      onlyChanged({ usdPricePercentChange1d: pct }, 'priceStability', part);
    expect(moved({ usdPricePercentChange1d: 0 }).score).toBe(59 + 3);
    expect(moved({ usdPricePercentChange1d: -10 }).score).toBe(59);
    expect(moved({ usdPricePercentChange1d: null }).score).toBe(59 - 12);
  });

  it("distribution: 100 − the top 10 holders' percent of supply; no supply: 0", () => {
    for (const [pct, part] of [
      [0, 100],
      [12.5, 87.5],
      [100, 0],
      [null, 0],
    ] as const)
      onlyChanged({ top10Percent: pct }, 'distribution', part);
    expect(moved({ top10Percent: 0 }).score).toBe(59 + 8);
    expect(moved({ top10Percent: null }).score).toBe(59 - 12);
  });

  it('is an integer within 0–100 that never falls when an input improves', () => {
    const inputs = fc.record({
      liquidityUsd: fc.double({ min: 0, max: 1e13, noNaN: true }),
      volumeUsd1d: fc.double({ min: 0, max: 1e13, noNaN: true }),
      transactions1d: fc.nat(1e7),
      usdPricePercentChange1d: fc.option(fc.double({ min: -100, max: 1e6, noNaN: true })),
      top10Percent: fc.option(fc.double({ min: 0, max: 100, noNaN: true })),
    });
    fc.assert(
      fc.property(inputs, fc.double({ min: 0, max: 1e9, noNaN: true }), (i, more) => {
        const { score } = tokenScoreOf(i);
        expect(Number.isInteger(score) && score >= 0 && score <= 100).toBe(true);
        const parts = subScores(i);
        for (const v of Object.values(parts)) expect(v >= 0 && v <= 100).toBe(true);
        expect(tokenScoreOf({ ...i, liquidityUsd: i.liquidityUsd + more }).score).toBeGreaterThanOrEqual(score);
        expect(tokenScoreOf({ ...i, volumeUsd1d: i.volumeUsd1d + more }).score).toBeGreaterThanOrEqual(score);
        expect(tokenScoreOf({ ...i, transactions1d: i.transactions1d + Math.floor(more) }).score).toBeGreaterThanOrEqual(score);
      }),
    );
  });
});
