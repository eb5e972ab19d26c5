import { z } from 'zod';
import type { Chain } from '../chains/registry.js';
import { ohlcvQuery, pairCandles } from '../data-api/dex/candles.js';
import type { DataDeps } from '../data-api/common/deps.js';
import { bool, cursor, evmAddress, limit, poolAddress } from '../data-api/common/params.js';
import { toNumber } from '../data-api/dex/index/prices.js';
import { pairSwaps, pairSwapsQuery, tokenSwaps, tokenSwapsQuery } from '../data-api/dex/swaps.js';
import { validate } from '../schema.js';
import { v1ChainId } from './chains.js';
import { listOf, offsetPage } from './cursor.js';
import {
  amount,
  bySort,
  filterParams,
  kept,
  ms,
  orNull,
  percentages,
  periodParam,
  sortBy,
  tokenTradersPnl,
  usd,
  v1Window,
  type TokenPnl,
} from './pnl.js';
import { metaOf } from './token-price.js';

/**
 * The DEX endpoints of /v1 on one EVM chain, answered by the Data API's own code (engine/data-api/dex/swaps.ts,
 * candles.ts) under the Universal API's names: GET /v1/chains/:chainAlias/tokens/:tokenAddress/swaps,
 * /pairs/:pairAddress/swaps, /pairs/:pairAddress/ohlcv (with connectedCandles), and the token's top traders
 * (its traders' profit and loss by pnl.ts).
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
  const asked = validate(v1OhlcvQuery, raw, 'query');
  const { pairAddress, connectedCandles, ...q } = asked;
  // Connected across pages too: the page is cut from the whole range connected (candles are answered newest first).
  const whole = await pairCandles(deps, chain.key, { ...q, address: pairAddress, limit: Number.MAX_SAFE_INTEGER, cursor: null });
  const all = connectedCandles ? connect(whole.result) : whole.result;
  const { page, start, cursor: next } = offsetPage(all, { list: listOf('pair-ohlcv', chain.key, asked), limit: q.limit, cursor: q.cursor });
  return {
    cursor: next,
    page: Math.floor(start / Math.max(1, q.limit)),
    pairAddress: whole.pairAddress,
    tokenAddress: whole.tokenAddress,
    timeframe: whole.timeframe,
    currency: whole.currency,
    result: page,
    meta: metaOf(deps, [chain]),
  };
}

// ---- top traders ----

export const topTradersQuery = z.object({
  tokenAddress: evmAddress,
  // pnl.ts' periods and 1d.
  period: periodParam(['1d', '7d', '30d', '60d', '90d', 'all']),
  fromTimestamp: ms.optional(),
  toTimestamp: ms.optional(),
  sortBy,
  ...filterParams,
  limit: limit(100),
  cursor,
});

/** A wallet's row: its position in the token (pnl.ts), USD amounts as decimal strings; roi is the total percentage, as documented. */
function traderItem({ wallet, pnl }: Trader) {
  const { position: p, figures: f, info } = pnl;
  const pc = percentages(pnl);
  return {
    walletAddress: wallet,
    totalTokensBought: amount(p.bought, info),
    totalTokensSold: amount(p.sold, info),
    totalBoughtVolumeUsd: usd(p.boughtUsd),
    totalSoldVolumeUsd: usd(p.soldUsd),
    totalTrades: f.trades,
    avgBuyPriceUsd: orNull(f.avgBuyPrice, usd),
    avgSellPriceUsd: orNull(f.avgSellPrice, usd),
    avgCostOfQuantitySold: orNull(f.avgCostOfSold, usd),
    realizedProfitUsd: usd(p.realized),
    realizedProfitPercentage: pc.realized,
    unrealizedProfitUsd: orNull(f.unrealized, usd),
    totalPnlUsd: usd(f.total),
    totalPnlPercentage: pc.total,
    roi: pc.total,
  };
}

/** What the ranking reads of a trader's row (tokenTradersPnl's, without its chain). */
export interface Trader {
  wallet: string;
  pnl: Pick<TokenPnl, 'position' | 'figures' | 'priceUsd' | 'info'>;
}

/** The token's traders filtered by excludeLowLiquidity, minVolumeUsd and minTradeCount, best first by `sortBy` (ties by wallet), as answer rows. */
export function traderRows(
  traders: readonly Trader[],
  q: Pick<z.output<typeof topTradersQuery>, 'sortBy' | 'minTradeCount' | 'minVolumeUsd' | 'excludeLowLiquidity'>,
) {
  const keep = kept(q);
  const order = bySort(q.sortBy);
  return traders
    .filter((t) => keep(t.pnl))
    .sort((a, b) => order(a.pnl, b.pnl) || (a.wallet < b.wallet ? -1 : 1))
    .map(traderItem);
}

/**
 * GET /v1/chains/:chainAlias/tokens/:tokenAddress/top-traders: the wallets that swapped the token (the senders of
 * its swaps), ranked by `sortBy` (default totalPnl), best first, each with its profit and loss in the token as
 * pnl.ts counts it (tokenTradersPnl: the same positions at weighted average cost, swaps, window and limit as the
 * wallet PnL and top-gainers). The window is `period` (1d … 90d, all) or fromTimestamp/toTimestamp (ms, included),
 * which override it. minVolumeUsd and minTradeCount drop smaller wallets; excludeLowLiquidity (pnl.ts' rule: a token
 * with no price now) leaves no row for a token without a priced pool. Amounts are decimal strings of whole tokens.
 */
export async function topTraders(deps: DataDeps, chain: Chain, raw: Record<string, unknown>, nowSeconds: number) {
  const q = validate(topTradersQuery, raw, 'query');
  const { priceUsd, info, traders } = await tokenTradersPnl(deps, chain, q.tokenAddress, v1Window(q, nowSeconds), { field: 'period' });
  const rows = traderRows(traders, q);
  const { page, cursor: next } = offsetPage(rows, { list: listOf('top-traders', chain.key, q), limit: q.limit, cursor: q.cursor });
  return {
    token: {
      chain: v1ChainId(chain),
      tokenAddress: q.tokenAddress,
      name: info.name,
      symbol: info.symbol,
      decimals: info.decimals,
      logo: null,
      possibleSpam: false,
      verifiedContract: false,
      securityScore: null,
      currentPriceUsd: priceUsd === null ? null : toNumber(priceUsd),
    },
    result: page,
    cursor: next,
    limit: q.limit,
    meta: metaOf(deps, [chain]),
  };
}
