import { z } from 'zod';
import { unixIso } from '../../datetime.js';
import { pos } from '../../evm/store.js';
import { offChain } from '../common/answer-parts.js';
import { blockAtOrAfter, blockAtOrBefore, blockTime } from '../common/block-times.js';
import type { DataDeps } from '../common/deps.js';
import { indexedHead } from '../common/pages.js';
import { evmAddress, limit } from '../common/params.js';
import { tokenFacts } from '../erc20/reads.js';
import { DAY } from '../erc20/index/keys.js';
import { analyticsAnswer, tokenAnalytics, tokenSwapsSince } from './analytics.js';
import { TIMEFRAME_NAMES, TIMEFRAMES } from './score.js';
import { keyed, perWindow, percentChange, tally, usdNumber } from '../dex/activity.js';
import { tokenSwapsPrefix } from '../dex/index/keys.js';
import { MIN_SIDE_USD, priceReader, toNumber, type LatestMarkRow, type PriceReader } from '../dex/index/prices.js';
import { fdvOf, usdOf } from '../dex/index/usd.js';
import { totalLiquidity, weighPools } from '../dex/pairs.js';

/**
 * Token activity over many tokens, from the DEX swaps index (engine/data-api/dex/activity.ts counts it):
 * - POST /tokens/analytics: GET /tokens/:tokenAddress/analytics for each token asked (its own chain each);
 * - POST /tokens/analytics/timeseries: each token's buy and sell volumes per step of the timeframe, with its
 *   liquidity and fully diluted valuation at each step's last block;
 * - GET /tokens/trending: the tokens with the most swaps in the last 24 h of block time (docs/api.md gives the rule).
 */

/** Tokens one request takes at most (the hosted document's maxItems). */
const MAX_TOKENS = 30;
/** A token of a request's list: its chain (hex, decimal or name) and address. */
const tokensBody = z.object({
  tokens: z
    .array(z.object({ chain: z.string().min(1), tokenAddress: evmAddress }))
    .min(1, 'at least one token')
    .max(MAX_TOKENS, `at most ${MAX_TOKENS} tokens`),
});
export const multipleAnalyticsBody = tokensBody;
export const timeseriesBody = tokensBody;
/** A token whose chain the endpoint resolved (the chain's key). */
export interface ChainToken {
  chain: string;
  tokenAddress: string;
}

/** The reference's MultipleTokenAnalyticsData; each item names its chain and token besides (extra fields). */
export const multipleAnalyticsAnswer = z.object({
  categories: z.array(z.object({ chainId: z.string(), tokenAddress: z.string(), ...analyticsAnswer.shape })),
});

export async function multipleTokenAnalytics(
  deps: DataDeps,
  tokens: readonly ChainToken[],
): Promise<z.infer<typeof multipleAnalyticsAnswer>> {
  const categories = [];
  for (const t of tokens)
    categories.push({
      chainId: t.chain,
      tokenAddress: t.tokenAddress,
      ...(await tokenAnalytics(deps, t.chain, { tokenAddress: t.tokenAddress })),
    });
  return { categories };
}

export const timeseriesQuery = z.object({
  timeframe: z.enum(TIMEFRAME_NAMES, `one of ${TIMEFRAME_NAMES.join(', ')}`).default('1d'),
});
/** The reference's TimeSeriesByTokensData. */
export const timeseriesAnswer = z.object({
  result: z.array(
    z.object({
      chainId: z.string(),
      tokenAddress: z.string(),
      timeseries: z.array(
        z.object({
          timestamp: z.string().meta({ description: "The step's start (UTC)" }),
          buyVolume: z.number(),
          sellVolume: z.number(),
          liquidityUsd: z.number(),
          fullyDilutedValuation: z.number().nullable(),
        }),
      ),
    }),
  ),
});

/**
 * One token's series: steps aligned on UTC (1d: hours, 24; 7d: 6 hours, 28; 30d: days, 30), the newest holding the
 * indexed head's time, oldest first; a step that ends before the first indexed block is left out. A step's volumes
 * are its swaps' amounts (the same scan as the analytics) valued at the token's price at the step's last block; its
 * liquidity and valuation are read at that block.
 */
async function tokenSeries(deps: DataDeps, t: ChainToken, timeframe: keyof typeof TIMEFRAMES) {
  const head = await indexedHead(deps, t.chain);
  const reader = priceReader(deps, t.chain, head);
  const now = blockTime(deps.kv, t.chain, head);
  if (now === undefined || reader === undefined) return { chainId: t.chain, tokenAddress: t.tokenAddress, timeseries: [] };
  const { points, step } = TIMEFRAMES[timeframe];
  const first = Math.floor(now / step) * step - (points - 1) * step;
  const bought = Array.from({ length: points }, () => 0n);
  const sold = Array.from({ length: points }, () => 0n);
  for (const { time, delta } of tokenSwapsSince(deps, t.chain, t.tokenAddress, head, first)) {
    const i = Math.floor((time - first) / step);
    if (delta < 0n) bought[i]! += -delta;
    else sold[i]! += delta;
  }
  const facts = await tokenFacts(deps, t.chain, t.tokenAddress);
  const decimals = await reader.tokenDecimals(t.tokenAddress);
  const timeseries = [];
  for (let i = 0; i < points; i++) {
    const start = first + i * step;
    const last = blockAtOrBefore(deps.kv, t.chain, Math.min(start + step - 1, now));
    if (last === undefined) continue;
    const block = Math.min(last, head);
    const usd = (await reader.price(t.tokenAddress, block, { minSideUsd: MIN_SIDE_USD }))?.now.usd ?? null;
    const fdv = fdvOf(facts.totalSupply, decimals, usd);
    timeseries.push({
      timestamp: unixIso(start),
      buyVolume: usd === null ? 0 : toNumber(usdOf(bought[i]!, decimals, usd)),
      sellVolume: usd === null ? 0 : toNumber(usdOf(sold[i]!, decimals, usd)),
      liquidityUsd: totalLiquidity(await weighPools(deps, t.chain, reader, head, t.tokenAddress, block)),
      fullyDilutedValuation: fdv === null ? null : toNumber(fdv),
    });
  }
  return { chainId: t.chain, tokenAddress: t.tokenAddress, timeseries };
}

export async function tokenTimeseries(
  deps: DataDeps,
  tokens: readonly ChainToken[],
  q: z.output<typeof timeseriesQuery>,
): Promise<z.infer<typeof timeseriesAnswer>> {
  const result = [];
  for (const t of tokens) result.push(await tokenSeries(deps, t, q.timeframe));
  return { result };
}

export const trendingQuery = z.object({
  chain: z.string().optional().meta({ description: 'The chain: hex id, decimal id or name; every EVM chain followed here when absent' }),
  limit: limit(25),
});

const WINDOWS = [
  ['1h', 3_600],
  ['4h', 14_400],
  ['12h', 43_200],
  ['24h', DAY],
] as const;
type WindowName = (typeof WINDOWS)[number][0];
const WINDOW_NAMES = WINDOWS.map(([name]) => name);
const counts = keyed(WINDOW_NAMES, z.number().int());

/** GET /tokens/trending's items (the hosted document's), USD as whole dollars where it types them integers. */
export const trendingAnswer = z.array(
  z.object({
    chainId: z.string(),
    tokenAddress: z.string(),
    name: z.string(),
    symbol: z.string(),
    uniqueName: offChain,
    decimals: z.number().int(),
    logo: offChain,
    usdPrice: z.number().nullable(),
    createdAt: z.number().int().nullable().meta({ description: "The token's creation (Unix seconds) when the indexes saw it" }),
    marketCap: z.number().int().nullable().meta({ description: 'null: this server knows no circulating supply' }),
    liquidityUsd: z.number().int().meta({ description: "Both sides of the token's pools in USD, whole dollars" }),
    holders: z.number().int().nullable(),
    pricePercentChange: keyed(WINDOW_NAMES, z.number().nullable()),
    totalVolume: counts.meta({ description: 'USD, whole dollars' }),
    transactions: counts,
    buyTransactions: counts,
    sellTransactions: counts,
    buyers: counts,
    sellers: counts,
  }),
);

/** Tokens a chain's ranking weighs at most (its priced tokens, in address order). */
const MAX_CANDIDATES = 100_000;

/**
 * The chain's tokens that swapped in the last 24 h of block time, with their swaps then: the tokens some pool prices
 * (their last price mark is at or after the day's first block: a swap moves its pool, which writes the mark), less the
 * chain's stablecoins and wrapped native token (the quote side of most pools); the swaps counted in `dexTokenSwaps`.
 */
function swappedToday(deps: DataDeps, chain: string, head: number): Array<{ chain: string; token: string; swaps: number }> {
  const pricing = deps.pricing?.(chain);
  const now = blockTime(deps.kv, chain, head);
  const from = now === undefined ? undefined : blockAtOrAfter(deps.kv, chain, now - DAY);
  if (pricing === undefined || from === undefined) return [];
  const quotes = new Set([...pricing.stablecoins, pricing.wrappedNative]);
  const prefix = `${chain}/l/`;
  const found = [];
  for (const { key, value } of deps.kv.range<LatestMarkRow>('priceMarks', {
    start: prefix,
    end: `${prefix}\uffff`,
    limit: MAX_CANDIDATES,
  })) {
    const token = key.slice(prefix.length);
    if (value[0] < from || quotes.has(token)) continue;
    const swaps = tokenSwapsPrefix(chain, token);
    const n = deps.kv.count('dexTokenSwaps', { start: swaps + pos(from, 0), end: swaps + pos(head + 1, 0) });
    if (n > 0) found.push({ chain, token, swaps: n });
  }
  return found;
}

/** A trending token's item: its activity by window (activity.ts), price changes, liquidity, holders. */
async function trendingItem(deps: DataDeps, chain: string, head: number, reader: PriceReader, token: string) {
  const now = blockTime(deps.kv, chain, head)!;
  const facts = await tokenFacts(deps, chain, token);
  const decimals = await reader.tokenDecimals(token);
  const priceAt = async (block: number | undefined): Promise<number | null> => {
    const p = block === undefined ? null : await reader.price(token, block, { minSideUsd: MIN_SIDE_USD });
    return p === null ? null : toNumber(p.now.usd);
  };
  const price = await reader.price(token, head, { minSideUsd: MIN_SIDE_USD });
  const usd = price === null ? null : toNumber(price.now.usd);
  const t = tally<WindowName>(
    WINDOWS,
    now,
    tokenSwapsSince(deps, chain, token, head, now - DAY),
    usdNumber(decimals, price?.now.usd ?? null),
  );
  const before = await Promise.all(WINDOWS.map(([, seconds]) => priceAt(reader.blockBefore(head, seconds))));
  return {
    chainId: chain,
    tokenAddress: token,
    name: facts.name,
    symbol: facts.symbol,
    uniqueName: null,
    decimals,
    logo: null,
    usdPrice: usd,
    createdAt: facts.state?.createdAt ?? null,
    marketCap: null,
    liquidityUsd: Math.floor(totalLiquidity(await weighPools(deps, chain, reader, head, token))),
    holders: facts.state?.holders ?? null,
    pricePercentChange: perWindow(WINDOWS, (_, __, i) => percentChange(usd, before[i]!)),
    totalVolume: perWindow(WINDOWS, (w) => Math.floor(t.buyVolume[w] + t.sellVolume[w])),
    transactions: perWindow(WINDOWS, (w) => t.buys[w] + t.sells[w]),
    buyTransactions: t.buys,
    sellTransactions: t.sells,
    buyers: t.buyers,
    sellers: t.sellers,
  };
}

/**
 * GET /tokens/trending over `chains`: their tokens ranked by their swaps in the last 24 h of block time before each
 * chain's indexed head (swappedToday), then by chain and address; the first `limit`.
 */
export async function trendingTokens(
  deps: DataDeps,
  chains: readonly string[],
  q: z.output<typeof trendingQuery>,
): Promise<z.infer<typeof trendingAnswer>> {
  const heads = new Map<string, number>();
  const ranked = [];
  for (const chain of chains) {
    const head = await indexedHead(deps, chain);
    heads.set(chain, head);
    ranked.push(...swappedToday(deps, chain, head));
  }
  ranked.sort((a, b) => b.swaps - a.swaps || (a.chain < b.chain ? -1 : a.chain > b.chain ? 1 : a.token < b.token ? -1 : 1));
  const readers = new Map<string, PriceReader>();
  const items = [];
  for (const { chain, token } of ranked.slice(0, q.limit)) {
    const head = heads.get(chain)!;
    const reader = readers.get(chain) ?? readers.set(chain, priceReader(deps, chain, head)!).get(chain)!;
    items.push(await trendingItem(deps, chain, head, reader, token));
  }
  return items;
}
