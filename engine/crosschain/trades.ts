import { z } from 'zod';
import type { Chain } from '../chains/registry.js';
import { ohlcvQuery, pairCandles } from '../data-api/candles.js';
import type { DataDeps } from '../data-api/deps.js';
import { indexedHead, offsetCursor, readOffsetCursor } from '../data-api/erc20-common.js';
import { metadata } from '../data-api/nft-transfers.js';
import { bool, cursor, evmAddress, limit, poolAddress } from '../data-api/params.js';
import { priceReader, toNumber } from '../data-api/prices.js';
import { pairSwaps, pairSwapsQuery, tokenSwaps, tokenSwapsQuery } from '../data-api/swap-lists.js';
import { badRequest } from '../errors.js';
import { validate } from '../schema.js';
import { v1ChainId } from './chains.js';
import { metaOf } from './token-price.js';

/**
 * The DEX endpoints of /v1 on one EVM chain, answered by the Data API's own code (engine/data-api/swap-lists.ts,
 * candles.ts) under the Universal API's names: GET /v1/chains/:chainAlias/tokens/:tokenAddress/swaps,
 * /pairs/:pairAddress/swaps, /pairs/:pairAddress/ohlcv (with connectedCandles), and the token's top traders.
 */

/** The v2.2 schema of a list with its `address` under the /v1 path's name, so a bad one is a 400 naming that. */
export const v1TokenSwapsQuery = tokenSwapsQuery.omit({ address: true }).extend({ tokenAddress: evmAddress });
export const v1PairSwapsQuery = pairSwapsQuery.omit({ address: true }).extend({ pairAddress: poolAddress });
export const v1OhlcvQuery = ohlcvQuery.omit({ address: true }).extend({ pairAddress: poolAddress, connectedCandles: bool(false) });

export async function v1TokenSwaps(deps: DataDeps, chain: Chain, raw: Record<string, unknown>) {
  const { tokenAddress, ...q } = validate(v1TokenSwapsQuery, raw, 'query');
  const r = await tokenSwaps(deps, chain.key, { ...q, address: tokenAddress });
  return { cursor: r.cursor, page: r.page, pageSize: r.page_size, result: r.result, meta: metaOf(deps, [chain]) };
}

export async function v1PairSwaps(deps: DataDeps, chain: Chain, raw: Record<string, unknown>) {
  const { pairAddress, ...q } = validate(v1PairSwapsQuery, raw, 'query');
  return { ...(await pairSwaps(deps, chain.key, { ...q, address: pairAddress })), meta: metaOf(deps, [chain]) };
}

/**
 * connectedCandles: each candle opens at the close of the candle before it (the pair's price did not jump
 * between them), its high and low widened to take that open in. The first candle of the range keeps its own
 * open (the one before it is outside the answer). Candles are answered newest first.
 */
export function connect<C extends { open: number; high: number; low: number; close: number }>(newestFirst: readonly C[]): C[] {
  return newestFirst.map((c, i) => {
    const before = newestFirst[i + 1];
    if (before === undefined) return c;
    const open = before.close;
    return { ...c, open, high: Math.max(c.high, open), low: Math.min(c.low, open) };
  });
}

export async function v1PairOhlcv(deps: DataDeps, chain: Chain, raw: Record<string, unknown>) {
  const { pairAddress, connectedCandles, ...q } = validate(v1OhlcvQuery, raw, 'query');
  // Connected across pages too: the page is cut from the whole range connected (candles are answered newest first).
  const whole = await pairCandles(deps, chain.key, { ...q, address: pairAddress, limit: Number.MAX_SAFE_INTEGER, cursor: null });
  const all = connectedCandles ? connect(whole.result) : whole.result;
  const start = q.cursor === null ? 0 : readOffsetCursor(q.cursor);
  return {
    cursor: start + q.limit < all.length ? offsetCursor(start + q.limit) : null,
    page: Math.floor(start / Math.max(1, q.limit)),
    pairAddress: whole.pairAddress,
    tokenAddress: whole.tokenAddress,
    timeframe: whole.timeframe,
    currency: whole.currency,
    result: all.slice(start, start + q.limit),
    meta: metaOf(deps, [chain]),
  };
}

// ---- top traders ----

const SORTS = ['realizedPnl', 'unrealizedPnl', 'totalPnl', 'volume', 'tradeCount'] as const;
const PERIODS: Readonly<Record<string, number | null>> = { '1d': 86_400, '7d': 7 * 86_400, '30d': 30 * 86_400, '60d': 60 * 86_400, '90d': 90 * 86_400, all: null };
const msTimestamp = z.string().regex(/^\d{1,15}$/, 'a Unix time in milliseconds').transform(Number);

export const topTradersQuery = z.object({
  tokenAddress: evmAddress,
  period: z.enum(Object.keys(PERIODS) as [string, ...string[]], `one of ${Object.keys(PERIODS).join(', ')}`).default('all'),
  fromTimestamp: msTimestamp.optional(),
  toTimestamp: msTimestamp.optional(),
  sortBy: z.enum(SORTS, SORTS.join(', ')).default('totalPnl'),
  minVolumeUsd: z.string().regex(/^\d+(\.\d+)?$/, 'a number of USD').transform(Number).optional(),
  minTradeCount: z.string().regex(/^\d{1,9}$/, 'a whole number').transform(Number).optional(),
  limit: limit(100),
  cursor,
});

/** The token's swaps a ranking reads at most, oldest first (its pages of the token's swap list). */
export const MAX_TRADER_SWAPS = 10_000;

interface Trader {
  walletAddress: string;
  bought: number;
  sold: number;
  boughtUsd: number;
  soldUsd: number;
  trades: number;
  /** Tokens held from the buys seen, and what they cost (weighted average cost). */
  held: number;
  heldCost: number;
  /** The quantity sold out of what the buys seen hold, its cost and proceeds. */
  matched: number;
  matchedCost: number;
  matchedProceeds: number;
}

/** What the ranking reads of an item of the token's swap list. */
export type SwapItem = Pick<Awaited<ReturnType<typeof tokenSwaps>>['result'][number], 'walletAddress' | 'transactionType' | 'totalValueUsd'> & { bought: { amount: string | null }; sold: { amount: string | null } };

/** Adds one of the token's swaps to its wallet's row: the token is the list's base, so a buy's bought leg and a sell's sold leg are the token. */
function add(t: Trader, s: SwapItem): void {
  const amount = Number((s.transactionType === 'buy' ? s.bought : s.sold).amount);
  const usd = s.totalValueUsd ?? 0;
  t.trades++;
  if (s.transactionType === 'buy') {
    t.bought += amount;
    t.boughtUsd += usd;
    t.held += amount;
    t.heldCost += usd;
    return;
  }
  t.sold += amount;
  t.soldUsd += usd;
  // Only what the buys seen account for is realized (tokens received otherwise have no known cost).
  const matched = Math.min(amount, t.held);
  if (matched > 0) {
    const cost = (t.heldCost * matched) / t.held;
    t.matched += matched;
    t.matchedCost += cost;
    t.matchedProceeds += (usd * matched) / amount;
    t.held -= matched;
    t.heldCost -= cost;
  }
}

const pct = (part: number, whole: number): number => (whole === 0 ? 0 : (part / whole) * 100);

function row(t: Trader, price: number | null) {
  const realized = t.matchedProceeds - t.matchedCost;
  const unrealized = price === null ? 0 : t.held * price - t.heldCost;
  const total = realized + unrealized;
  return {
    walletAddress: t.walletAddress,
    totalTokensBought: String(t.bought),
    totalTokensSold: String(t.sold),
    totalBoughtVolumeUsd: String(t.boughtUsd),
    totalSoldVolumeUsd: String(t.soldUsd),
    totalTrades: t.trades,
    avgBuyPriceUsd: t.bought === 0 ? null : String(t.boughtUsd / t.bought),
    avgSellPriceUsd: t.sold === 0 ? null : String(t.soldUsd / t.sold),
    avgCostOfQuantitySold: t.matched === 0 ? null : String(t.matchedCost / t.matched),
    realizedProfitUsd: String(realized),
    realizedProfitPercentage: pct(realized, t.matchedCost),
    unrealizedProfitUsd: String(unrealized),
    totalPnlUsd: String(total),
    totalPnlPercentage: pct(total, t.boughtUsd),
    roi: pct(total, t.boughtUsd),
  };
}

const SORT_KEY: Record<(typeof SORTS)[number], (r: ReturnType<typeof row>) => number> = {
  realizedPnl: (r) => Number(r.realizedProfitUsd),
  unrealizedPnl: (r) => Number(r.unrealizedProfitUsd),
  totalPnl: (r) => Number(r.totalPnlUsd),
  volume: (r) => Number(r.totalBoughtVolumeUsd) + Number(r.totalSoldVolumeUsd),
  tradeCount: (r) => r.totalTrades,
};

/** The ranking of the token's swaps (oldest first; the token is each item's base) at `price`, best first by `sortBy`, filtered. */
export function traderRows(swaps: readonly SwapItem[], price: number | null, q: Pick<z.output<typeof topTradersQuery>, 'sortBy' | 'minTradeCount' | 'minVolumeUsd'>) {
  const traders = new Map<string, Trader>();
  for (const s of swaps) {
    const w = s.walletAddress.toLowerCase();
    const t = traders.get(w) ?? { walletAddress: w, bought: 0, sold: 0, boughtUsd: 0, soldUsd: 0, trades: 0, held: 0, heldCost: 0, matched: 0, matchedCost: 0, matchedProceeds: 0 };
    add(t, s);
    traders.set(w, t);
  }
  const sortKey = SORT_KEY[q.sortBy];
  return [...traders.values()]
    .map((t) => row(t, price))
    .filter((r) => (q.minTradeCount === undefined || r.totalTrades >= q.minTradeCount) && (q.minVolumeUsd === undefined || SORT_KEY.volume(r) >= q.minVolumeUsd))
    .sort((a, b) => sortKey(b) - sortKey(a) || a.walletAddress.localeCompare(b.walletAddress));
}

/**
 * GET /v1/chains/:chainAlias/tokens/:tokenAddress/top-traders: the wallets that swapped the token (the senders of
 * its swaps, as the token's swap list has them), ranked by `sortBy` (default totalPnl), best first. Per wallet:
 * tokens and USD (each swap valued at its block, as the list values it) bought and sold, and profit by weighted
 * average cost over the swaps seen: a sale realizes proceeds − average cost for the part of it the wallet's
 * earlier buys account for; what is held from those buys is unrealized at the token's price at the head.
 * Percentages are of the cost (realized: of the quantity sold; total and roi: of all bought). The window is
 * `period` (1d … 90d, all) or fromTimestamp/toTimestamp (ms), which override it; at most MAX_TRADER_SWAPS
 * swaps are read, oldest first. minVolumeUsd and minTradeCount drop smaller wallets; excludeLowLiquidity is
 * accepted and not applied (no liquidity measure is kept per swap). Amounts are decimal strings of whole tokens.
 */
export async function topTraders(deps: DataDeps, chain: Chain, raw: Record<string, unknown>, nowSeconds: number) {
  const q = validate(topTradersQuery, raw, 'query');
  const since = PERIODS[q.period];
  const fromDate = q.fromTimestamp !== undefined ? Math.floor(q.fromTimestamp / 1000) : since === null || since === undefined ? undefined : nowSeconds - since;
  const toDate = q.toTimestamp === undefined ? undefined : Math.floor(q.toTimestamp / 1000);
  if (fromDate !== undefined && toDate !== undefined && fromDate > toDate) throw badRequest('fromTimestamp', 'after toTimestamp');
  const swaps: SwapItem[] = [];
  let next: string | null = null;
  do {
    const page = await tokenSwaps(deps, chain.key, { address: q.tokenAddress, fromDate, toDate, fromBlock: undefined, toBlock: undefined, order: 'ASC', limit: 100, cursor: next, transactionTypes: [] });
    swaps.push(...page.result);
    next = page.cursor;
  } while (next !== null && swaps.length < MAX_TRADER_SWAPS);
  const head = await indexedHead(deps, chain.key);
  const usd = await priceReader(deps, chain.key, head)?.valueUsd(q.tokenAddress, head);
  const price = usd === null || usd === undefined ? null : toNumber(usd);
  const rows = traderRows(swaps, price, q);
  const start = q.cursor === null ? 0 : readOffsetCursor(q.cursor);
  const info = await metadata(deps, chain.key, q.tokenAddress);
  return {
    token: { chain: v1ChainId(chain), tokenAddress: q.tokenAddress, name: info.name, symbol: info.symbol, decimals: info.decimals, logo: null, possibleSpam: false, verifiedContract: false, securityScore: null, currentPriceUsd: price },
    result: rows.slice(start, start + q.limit),
    cursor: start + q.limit < rows.length ? offsetCursor(start + q.limit) : null,
    limit: q.limit,
    meta: metaOf(deps, [chain]),
  };
}
