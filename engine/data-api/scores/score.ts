import { z } from 'zod';
import { unixIso } from '../../datetime.js';
import { ApiError } from '../../errors.js';
import { blockAtOrBefore, blockTime } from '../common/block-times.js';
import type { DataDeps } from '../common/deps.js';
import { tokenPoolsPrefix } from '../dex/index/keys.js';
import { tokenFacts } from '../erc20/reads.js';
import { supplyPercent, topBalances } from '../erc20/holders.js';
import { DAY, tokenKey } from '../erc20/index/keys.js';
import { evmAddress } from '../common/params.js';
import { totalLiquidity, weighPools } from '../dex/pairs.js';
import { priceReader, toNumber, MIN_SIDE_USD } from '../dex/index/prices.js';
import { tokenSwapsSince } from './analytics.js';
import { keyed } from '../dex/activity.js';
import { dayChange, usdOf } from '../dex/index/usd.js';
import { indexedHead } from '../common/pages.js';
import { formatted } from '../common/values.js';

/**
 * Token scores: GET /tokens/:tokenAddress/score and /score/historical. The hosted service does not publish
 * its method, so this module is the single source of chainpost's own (docs/api.md, "Token scores"): five inputs read from
 * the indexes, each normalized to 0–100 by the rule of `subScores`, summed with WEIGHTS into a score of 0–100.
 */

/** Each input's weight in the score (they sum to 100). */
export const WEIGHTS = { liquidity: 30, volume: 20, transactions: 15, priceStability: 15, distribution: 20 } as const;

/** What the score is computed from, as the answer's `metrics` report it. */
export interface ScoreInputs {
  /** Both sides of the token's pools in USD. */
  liquidityUsd: number;
  /** USD volume of its swaps over the last day. */
  volumeUsd1d: number;
  /** Its swaps over the last day. */
  transactions1d: number;
  /** Percent change of its USD price over 24 h; null without a price now or 24 h before. */
  usdPricePercentChange1d: number | null;
  /** Percent of its supply its 10 largest holders hold; null without a supply. */
  top10Percent: number | null;
}

export type SubScores = Record<keyof typeof WEIGHTS, number>;

/** 0 at or below `low`, 100 at or above `low` × 10^`decades`, linear in log10 between. */
const logScale = (value: number, low: number, decades: number): number =>
  value <= low ? 0 : Math.min(100, (100 * Math.log10(value / low)) / decades);

/**
 * Each input on 0–100:
 * - liquidity: log scale from $1,000 (0) to $10,000,000 (100), 25 points a decade;
 * - volume: the day's USD volume, log scale from $100 (0) to $1,000,000 (100), 25 points a decade;
 * - transactions: the day's swaps n, 100 × log10(1 + n) / 3, at most 100 (0 swaps 0, 9 → 33.3, 99 → 66.7, 999 or more 100);
 * - priceStability: 100 − 2 × |24 h percent change|, at least 0 (a 50 % move or more: 0); no price or none 24 h before: 0;
 * - distribution: 100 − the top 10 holders' percent of supply, within 0–100; no supply: 0.
 */
export function subScores(i: ScoreInputs): SubScores {
  return {
    liquidity: logScale(i.liquidityUsd, 1_000, 4),
    volume: logScale(i.volumeUsd1d, 100, 4),
    transactions: Math.min(100, (100 * Math.log10(1 + Math.max(0, i.transactions1d))) / 3),
    priceStability: i.usdPricePercentChange1d === null ? 0 : Math.max(0, 100 - 2 * Math.abs(i.usdPricePercentChange1d)),
    distribution: i.top10Percent === null ? 0 : Math.min(100, Math.max(0, 100 - i.top10Percent)),
  };
}

/** The score: the weighted sum of the sub-scores over 100, rounded to an integer. */
export function tokenScoreOf(i: ScoreInputs): { score: number; subScores: SubScores } {
  const parts = subScores(i);
  const sum = (Object.keys(WEIGHTS) as Array<keyof typeof WEIGHTS>).reduce((s, k) => s + WEIGHTS[k] * parts[k], 0);
  return { score: Math.round(sum / 100), subScores: parts };
}

export const scoreQuery = z.object({ tokenAddress: evmAddress });
/** Each timeframe's resolution: points `step` seconds apart (the score's and the token analytics' time series). */
export const TIMEFRAMES = {
  '1d': { points: 24, step: 3_600 },
  '7d': { points: 28, step: 21_600 },
  '30d': { points: 30, step: DAY },
} as const;
export const TIMEFRAME_NAMES = Object.keys(TIMEFRAMES) as Array<keyof typeof TIMEFRAMES>;
export const historicalScoreQuery = z.object({
  tokenAddress: evmAddress,
  timeframe: z.enum(TIMEFRAME_NAMES, `one of ${TIMEFRAME_NAMES.join(', ')}`),
});

/** The windows `volumeUsd` and `transactions` report, back from the point's time. */
const WINDOWS = [
  ['10m', 600],
  ['30m', 1_800],
  ['1h', 3_600],
  ['4h', 14_400],
  ['12h', 43_200],
  ['1d', DAY],
  ['7d', 7 * DAY],
  ['30d', 30 * DAY],
] as const;
type Windowed = Record<(typeof WINDOWS)[number][0], number>;
const WINDOW_NAMES = WINDOWS.map(([name]) => name);

/** GET /tokens/:tokenAddress/score (chainpost's own: the hosted service publishes none). */
export const scoreAnswer = z.object({
  tokenAddress: z.string(),
  chainId: z.string(),
  score: z.number().int().meta({ description: 'From 0 to 100: the sub-scores weighted (docs/api.md, "Token scores")' }),
  updatedAt: z.string().meta({ description: "The indexed head's block time" }),
  metrics: z.object({
    usdPrice: z.number().nullable(),
    usdPrice24hrPercentChange: z.number().nullable(),
    liquidityUsd: z.number(),
    volumeUsd: keyed(WINDOW_NAMES, z.number()),
    transactions: keyed(WINDOW_NAMES, z.number().int()),
    supply: z.object({
      total: z.string().nullable(),
      top10Percent: z.number().nullable().meta({ description: 'Percent of the supply its 10 largest holders hold' }),
    }),
  }),
  subScores: keyed(Object.keys(WEIGHTS) as Array<keyof typeof WEIGHTS>, z.number()).meta({ description: 'Each input on 0–100' }),
});
export const historicalScoreAnswer = z.object({
  chainId: z.string(),
  tokenAddress: z.string(),
  timeseries: z.array(z.object({ timestamp: z.string(), score: z.number().int() })),
});

const LONGEST = Math.max(...WINDOWS.map(([, seconds]) => seconds));

/** A point a score is computed at: a time and the last indexed block at or before it. */
interface Point {
  time: number;
  block: number;
}

/** The token the indexes know: a pool of it, or a transfer of it. Else 404, as the hosted service answers an unknown token. */
function knownToken(deps: DataDeps, chain: string, token: string): void {
  const prefix = tokenPoolsPrefix(chain, token);
  const pooled = deps.kv.range<number>('dexPools', { start: prefix, end: `${prefix}\uffff`, limit: 1 }).length > 0;
  if (!pooled && deps.kv.get('erc20Tokens', tokenKey(chain, token)) === undefined)
    throw new ApiError(404, `${token} is no token this server has indexed on chain ${chain} (no pool of it, no transfer of it)`);
}

/**
 * The score's metrics at each point. One scan of the token's swaps (tokenSwapsSince: SCAN entries, POOL_SWAPS a pool)
 * from the head back to the oldest point's 30 days; a swap counts in a point's window when its block time is within
 * the window back from the point's time. Volumes are the token amounts valued at the point's price; liquidity is
 * its pools' sides at the point's block. The holders index keeps current balances only: every point takes the
 * current top-10 share.
 */
async function metricsAt(deps: DataDeps, chain: string, token: string, head: number, points: readonly Point[]) {
  const reader = priceReader(deps, chain, head);
  const facts = await tokenFacts(deps, chain, token);
  const decimals = reader === undefined ? (facts.decimals ?? 0) : await reader.tokenDecimals(token);
  const top10Percent =
    facts.totalSupply === null || BigInt(facts.totalSupply) === 0n
      ? null
      : supplyPercent(
          topBalances(deps.kv, chain, token, 10).reduce((a, b) => a + b, 0n),
          facts.totalSupply,
        );
  const raw = points.map(() => WINDOWS.map(() => 0n));
  const counts = points.map(() => WINDOWS.map(() => 0));
  const oldest = Math.min(...points.map((p) => p.time));
  for (const { time, delta } of tokenSwapsSince(deps, chain, token, head, oldest - LONGEST))
    points.forEach((p, i) => {
      if (time > p.time) return;
      WINDOWS.forEach(([, seconds], w) => {
        if (time < p.time - seconds) return;
        raw[i]![w]! += delta < 0n ? -delta : delta;
        counts[i]![w]!++;
      });
    });
  return Promise.all(
    points.map(async (p, i) => {
      const price = reader === undefined ? null : await reader.price(token, p.block, { minSideUsd: MIN_SIDE_USD });
      const change = price === null ? null : dayChange(price);
      const windowed = (f: (w: number) => number): Windowed => Object.fromEntries(WINDOWS.map(([name], w) => [name, f(w)])) as Windowed;
      const volumeUsd = windowed((w) => (price === null ? 0 : toNumber(usdOf(raw[i]![w]!, decimals, price.now.usd))));
      const transactions = windowed((w) => counts[i]![w]!);
      const liquidityUsd = totalLiquidity(await weighPools(deps, chain, reader, head, token, p.block));
      const metrics = {
        usdPrice: change?.usdPrice ?? null,
        usdPrice24hrPercentChange: change?.percent ?? null,
        liquidityUsd,
        volumeUsd,
        transactions,
        supply: { total: facts.totalSupply === null ? null : formatted(BigInt(facts.totalSupply), decimals), top10Percent },
      };
      const inputs: ScoreInputs = {
        liquidityUsd,
        volumeUsd1d: volumeUsd['1d'],
        transactions1d: transactions['1d'],
        usdPricePercentChange1d: metrics.usdPrice24hrPercentChange,
        top10Percent,
      };
      return { time: p.time, metrics, ...tokenScoreOf(inputs) };
    }),
  );
}

/** The indexed head and its block time (a chain with no block stored yet: 404, as dateToBlock answers). */
async function headPoint(deps: DataDeps, chain: string): Promise<Point> {
  const head = await indexedHead(deps, chain);
  const time = blockTime(deps.kv, chain, head);
  if (time === undefined) throw new ApiError(404, `no block of chain ${chain} is indexed yet`);
  return { time, block: head };
}

/** GET /tokens/:tokenAddress/score: the score at the indexed head, its inputs (`metrics`) and its sub-scores (an extra field). */
export async function tokenScore(deps: DataDeps, chain: string, q: z.output<typeof scoreQuery>): Promise<z.infer<typeof scoreAnswer>> {
  const now = await headPoint(deps, chain);
  knownToken(deps, chain, q.tokenAddress);
  const [at] = await metricsAt(deps, chain, q.tokenAddress, now.block, [now]);
  return {
    tokenAddress: q.tokenAddress,
    chainId: chain,
    score: at!.score,
    updatedAt: unixIso(now.time),
    metrics: at!.metrics,
    subScores: at!.subScores,
  };
}

/**
 * GET /tokens/:tokenAddress/score/historical: the score at points `step` apart over the timeframe (1d: hourly, 24
 * points; 7d: every 6 hours, 28; 30d: daily, 30), the newest at the indexed head's time, oldest first; a point before
 * the first indexed block is left out.
 */
export async function historicalTokenScore(
  deps: DataDeps,
  chain: string,
  q: z.output<typeof historicalScoreQuery>,
): Promise<z.infer<typeof historicalScoreAnswer>> {
  const now = await headPoint(deps, chain);
  knownToken(deps, chain, q.tokenAddress);
  const { points, step } = TIMEFRAMES[q.timeframe];
  const at: Point[] = [];
  for (let k = points - 1; k >= 0; k--) {
    const time = now.time - k * step;
    const block = k === 0 ? now.block : blockAtOrBefore(deps.kv, chain, time);
    if (block !== undefined) at.push({ time, block: Math.min(block, now.block) });
  }
  const scored = await metricsAt(deps, chain, q.tokenAddress, now.block, at);
  return { chainId: chain, tokenAddress: q.tokenAddress, timeseries: scored.map((s) => ({ timestamp: unixIso(s.time), score: s.score })) };
}
