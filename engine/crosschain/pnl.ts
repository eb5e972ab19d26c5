import { z } from 'zod';
import type { Chain } from '../chains/registry.js';
import type { TokenInfo } from '../evm/token-metadata.js';
import type { DataDeps } from '../data-api/common/deps.js';
import { metadata } from '../data-api/common/node-reads.js';
import { bool, cursor, evmAddress, limit } from '../data-api/common/params.js';
import { add, decimal, div, mul, type PriceReader, type Ratio, type Role } from '../data-api/dex/index/prices.js';
import { tradesOf, type Blame, type Trade } from '../data-api/dex/swaps.js';
import { badRequest } from '../errors.js';
import { validate } from '../schema.js';
import { v1ChainId, type ResolvedChains } from './chains.js';
import { listOf, offsetPage } from './cursor.js';
import { acrossChains, syncedAt, v1Meta } from './fan-out.js';

/**
 * Profit and loss of DEX trades by weighted average cost (data-api-notes.md §3.5), from the swaps the DEX index
 * holds (engine/data-api/dex/swaps.ts reads and values them): per token, a buy adds its amount to the position and
 * its USD value to the position's cost; a sale realizes (sale price − average cost) × amount and takes that amount
 * at average cost out of the position; what is held is worth (current price − average cost) × held, unrealized.
 * A swap's USD value is the trade's (its leg that routes to USD, at its block), the same for the token bought and the
 * token sold. Stablecoins get no PnL; the wrapped native token only against stablecoins. Tokens sold beyond the
 * position (received by a transfer, or bought before the window) have no known cost: their sale counts in the
 * volumes and prices, and realizes nothing. A swap neither of whose legs has a price is left out (no USD value).
 * Served as GET /v1/wallets/:walletAddress/pnl and /pnl/summary, and under the Data API's names as
 * GET /api/v2.2/wallets/:address/profitability, /profitability/summary and /erc20/:address/top-gainers; a token's
 * traders (tokenTradersPnl) also rank GET /v1/chains/:chainAlias/tokens/:tokenAddress/top-traders (trades.ts).
 */

// ---- exact signed arithmetic (prices.ts' Ratio is non-negative; a realized loss is not) ----

const ZERO: Ratio = { num: 0n, den: 1n };
const gcd = (a: bigint, b: bigint): bigint => {
  let [x, y] = [a < 0n ? -a : a, b < 0n ? -b : b];
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
};
/** Lowest terms, positive denominator: sums over thousands of swaps stay small. */
function norm(r: Ratio): Ratio {
  const sign = r.den < 0n ? -1n : 1n;
  const g = gcd(r.num, r.den);
  return g <= 1n ? { num: sign * r.num, den: sign * r.den } : { num: (sign * r.num) / g, den: (sign * r.den) / g };
}
const plus = (a: Ratio, b: Ratio): Ratio => norm(add(a, b));
const minus = (a: Ratio, b: Ratio): Ratio => norm(add(a, { num: -b.num, den: b.den }));
const times = (a: Ratio, b: Ratio): Ratio => norm(mul(a, b));
/** a / b; null when b is zero. */
const per = (a: Ratio, b: Ratio): Ratio | null => (b.num === 0n ? null : norm(div(a, b)));
const less = (a: Ratio, b: Ratio): boolean => a.num * b.den < b.num * a.den;
const HUNDRED: Ratio = { num: 100n, den: 1n };
/** a / b in percent; 0 when b is zero (nothing invested: no percentage). */
const percent = (a: Ratio, b: Ratio): number => num(times(per(a, b) ?? ZERO, HUNDRED));

/** A signed ratio as a decimal string, truncated to `digits` after the point. */
export function signedDecimal(r: Ratio, digits?: number): string {
  const n = norm(r);
  return n.num < 0n ? `-${decimal({ num: -n.num, den: n.den }, digits)}` : decimal(n, digits);
}
const num = (r: Ratio): number => Number(signedDecimal(r));
/** USD amounts as the Data API's strings write them. */
const USD_DIGITS = 18;

// ---- the pure method ----

/** One token's side of a swap, as the position counts it. */
export interface TokenTrade {
  token: string;
  side: 'buy' | 'sell';
  /** Whole tokens. */
  amount: Ratio;
  /** The trade's value in USD. */
  usd: Ratio;
}

/** The legs of a swap that count (§3.5): not a stablecoin; the wrapped native token only against a stablecoin; none for an unvalued swap. */
export function tokenTrades(t: Pick<Trade, 'bought' | 'sold' | 'valueUsd'>, role: (token: string) => Role): TokenTrade[] {
  const usd = t.valueUsd;
  if (usd === null) return [];
  const counts = (token: string, other: string): boolean =>
    role(token) !== 'stable' && (role(token) !== 'native' || role(other) === 'stable');
  const out: TokenTrade[] = [];
  if (counts(t.bought.token, t.sold.token)) out.push({ token: t.bought.token, side: 'buy', amount: t.bought.amount, usd });
  if (counts(t.sold.token, t.bought.token)) out.push({ token: t.sold.token, side: 'sell', amount: t.sold.amount, usd });
  return out;
}

/** A token's trades summed, and its position at weighted average cost. */
export interface Position {
  token: string;
  bought: Ratio;
  sold: Ratio;
  boughtUsd: Ratio;
  soldUsd: Ratio;
  buys: number;
  sells: number;
  /** Tokens held at a known cost, and that cost. */
  held: Ratio;
  cost: Ratio;
  realized: Ratio;
  /** Of the tokens sold, those of known cost, and what they had cost (the average cost at each sale). */
  soldAtCost: Ratio;
  costOfSold: Ratio;
}

const opened = (token: string): Position => ({
  token,
  bought: ZERO,
  sold: ZERO,
  boughtUsd: ZERO,
  soldUsd: ZERO,
  buys: 0,
  sells: 0,
  held: ZERO,
  cost: ZERO,
  realized: ZERO,
  soldAtCost: ZERO,
  costOfSold: ZERO,
});

/** The position after one more trade of its token. */
export function applyTrade(p: Position, t: TokenTrade): Position {
  if (t.side === 'buy')
    return {
      ...p,
      bought: plus(p.bought, t.amount),
      boughtUsd: plus(p.boughtUsd, t.usd),
      buys: p.buys + 1,
      held: plus(p.held, t.amount),
      cost: plus(p.cost, t.usd),
    };
  const sold = { ...p, sold: plus(p.sold, t.amount), soldUsd: plus(p.soldUsd, t.usd), sells: p.sells + 1 };
  const covered = less(t.amount, p.held) ? t.amount : p.held;
  if (covered.num === 0n) return sold;
  // The covered part's cost at the average cost, and its share of the sale's value.
  const cost = times(per(p.cost, p.held)!, covered);
  const proceeds = times(t.usd, per(covered, t.amount)!);
  return {
    ...sold,
    held: minus(p.held, covered),
    cost: minus(p.cost, cost),
    realized: plus(p.realized, minus(proceeds, cost)),
    soldAtCost: plus(p.soldAtCost, covered),
    costOfSold: plus(p.costOfSold, cost),
  };
}

/** Every token's position after `trades` (oldest first), in the order the tokens were first traded. */
export function positions(trades: readonly Pick<Trade, 'bought' | 'sold' | 'valueUsd'>[], role: (token: string) => Role): Position[] {
  const out = new Map<string, Position>();
  for (const trade of trades)
    for (const t of tokenTrades(trade, role)) out.set(t.token, applyTrade(out.get(t.token) ?? opened(t.token), t));
  return [...out.values()];
}

/** What a position comes to at a current price (null: not priced; its held tokens then add nothing). */
export interface Figures {
  trades: number;
  volumeUsd: Ratio;
  avgBuyPrice: Ratio | null;
  avgSellPrice: Ratio | null;
  avgCostOfSold: Ratio | null;
  unrealized: Ratio | null;
  total: Ratio;
}

export function figures(p: Position, priceUsd: Ratio | null): Figures {
  const unrealized = priceUsd === null ? null : minus(times(priceUsd, p.held), p.cost);
  return {
    trades: p.buys + p.sells,
    volumeUsd: plus(p.boughtUsd, p.soldUsd),
    avgBuyPrice: per(p.boughtUsd, p.bought),
    avgSellPrice: per(p.soldUsd, p.sold),
    avgCostOfSold: per(p.costOfSold, p.soldAtCost),
    unrealized,
    total: unrealized === null ? p.realized : plus(p.realized, unrealized),
  };
}

// ---- reading the index ----

/** A time window in Unix seconds, bounds included; absent: open. */
export interface PnlWindow {
  from?: number;
  to?: number;
}

/** One token's PnL on one chain. */
export interface TokenPnl {
  chain: Chain;
  position: Position;
  priceUsd: Ratio | null;
  info: TokenInfo;
  figures: Figures;
}

const rangeOf = (w: PnlWindow) => ({
  ...(w.from === undefined ? {} : { from_date: w.from }),
  ...(w.to === undefined ? {} : { to_date: w.to }),
});

async function rowsOf(deps: DataDeps, chain: Chain, ps: readonly Position[], reader: PriceReader, head: number): Promise<TokenPnl[]> {
  return Promise.all(
    ps.map(async (position) => {
      const priceUsd = reader.valueUsd(position.token, head);
      return { chain, position, priceUsd, info: await metadata(deps, chain.key, position.token), figures: figures(position, priceUsd) };
    }),
  );
}

/** A wallet's PnL per token on one chain from its swaps in the window (`blame`: the parameter a too-wide window is blamed on). */
export async function walletPnl(
  deps: DataDeps,
  chain: Chain,
  wallet: string,
  window: PnlWindow,
  blame: Blame = { field: 'period' },
): Promise<TokenPnl[]> {
  const { trades, reader, head } = await tradesOf(deps, chain.key, { wallet }, rangeOf(window), blame);
  return reader === undefined
    ? []
    : rowsOf(
        deps,
        chain,
        positions(trades, (t) => reader.role(t)),
        reader,
        head,
      );
}

/** A wallet's row of a token's traders. */
export interface TraderPnl {
  wallet: string;
  pnl: TokenPnl;
}

/** Every wallet's PnL in one token on one chain, from the token's swaps in the window; with the token's price at the head and its metadata. */
export async function tokenTradersPnl(
  deps: DataDeps,
  chain: Chain,
  token: string,
  window: PnlWindow,
  blame: Blame = { field: 'days' },
): Promise<{ priceUsd: Ratio | null; info: TokenInfo; traders: TraderPnl[] }> {
  const [{ trades, reader, head }, info] = await Promise.all([
    tradesOf(deps, chain.key, { token }, rangeOf(window), blame),
    metadata(deps, chain.key, token),
  ]);
  if (reader === undefined) return { priceUsd: null, info, traders: [] };
  const byWallet = new Map<string, Trade[]>();
  for (const t of trades) {
    const mine = byWallet.get(t.wallet);
    if (mine === undefined) byWallet.set(t.wallet, [t]);
    else mine.push(t);
  }
  const priceUsd = reader.valueUsd(token, head);
  const traders = [...byWallet].flatMap(([wallet, ts]) => {
    const position = positions(ts, (t) => reader.role(t)).find((p) => p.token === token);
    return position === undefined ? [] : [{ wallet, pnl: { chain, position, priceUsd, info, figures: figures(position, priceUsd) } }];
  });
  return { priceUsd, info, traders };
}

// ---- the parameters ----

export const ms = z
  .string()
  .regex(/^\d{1,15}$/, 'a time in milliseconds since 1970 (a whole number)')
  .transform(Number);
const nonNegative = (what: string) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, what)
    .transform(Number);
/** The periods a window may be asked as (top-traders also takes 1d). */
const PERIOD_DAYS = { '1d': 1, '7d': 7, '30d': 30, '60d': 60, '90d': 90, all: undefined } as const;
type Period = keyof typeof PERIOD_DAYS;
/** `period`: one of `periods`, `all` by default. */
export const periodParam = <P extends Period>(periods: readonly [P, ...P[]]) =>
  z.enum(periods, `one of ${periods.join(', ')}`).default('all' as P);

/** The filters of §3.3: excludeLowLiquidity drops tokens without a current price (no pool passes the side rule). */
export const filterParams = {
  excludeLowLiquidity: bool(false),
  minVolumeUsd: nonNegative('a number of USD, at least 0').optional(),
  minTradeCount: nonNegative('a whole number of trades').pipe(z.number().int('a whole number of trades')).optional(),
};
export const v1PnlSummaryQuery = z.object({
  walletAddress: evmAddress,
  period: periodParam(['7d', '30d', '60d', '90d', 'all']),
  fromTimestamp: ms.optional(),
  toTimestamp: ms.optional(),
  ...filterParams,
});
const SORTS = ['realizedPnl', 'unrealizedPnl', 'totalPnl', 'volume', 'tradeCount'] as const;
export const sortBy = z.enum(SORTS, SORTS.join(', ')).default('totalPnl');
export const v1PnlQuery = v1PnlSummaryQuery.extend({
  tokenAddresses: z.array(evmAddress).max(25).default([]),
  limit: limit(100),
  cursor,
  sortBy,
});

/** The window a v1 query asks: fromTimestamp/toTimestamp (ms) when given, else `period` back from `now` (Unix seconds). */
export function v1Window(
  q: { period: keyof typeof PERIOD_DAYS; fromTimestamp?: number | undefined; toTimestamp?: number | undefined },
  now: number,
): PnlWindow {
  if (q.fromTimestamp !== undefined || q.toTimestamp !== undefined) {
    if (q.fromTimestamp !== undefined && q.toTimestamp !== undefined && q.fromTimestamp > q.toTimestamp)
      throw badRequest('fromTimestamp', 'after toTimestamp');
    // A block at t seconds is in the window when t·1000 is within the bounds.
    return {
      ...(q.fromTimestamp === undefined ? {} : { from: Math.ceil(q.fromTimestamp / 1000) }),
      ...(q.toTimestamp === undefined ? {} : { to: Math.floor(q.toTimestamp / 1000) }),
    };
  }
  return daysWindow(PERIOD_DAYS[q.period], now);
}
const daysWindow = (days: number | undefined, now: number): PnlWindow => (days === undefined ? {} : { from: now - days * 86_400 });

/** The rows the filters keep. */
export const kept =
  (f: z.output<z.ZodObject<typeof filterParams>>) =>
  (r: Pick<TokenPnl, 'priceUsd' | 'figures'>): boolean =>
    (!f.excludeLowLiquidity || r.priceUsd !== null) &&
    (f.minVolumeUsd === undefined || num(r.figures.volumeUsd) >= f.minVolumeUsd) &&
    (f.minTradeCount === undefined || r.figures.trades >= f.minTradeCount);

// ---- the answers ----

/** A token amount as a decimal string, to the token's decimals. */
export const amount = (r: Ratio, info: TokenInfo): string => signedDecimal(r, info.decimals ?? 0);
export const orNull = <T>(r: Ratio | null, f: (r: Ratio) => T): T | null => (r === null ? null : f(r));

/** A token row of GET /v1/wallets/:walletAddress/pnl (U1 getWalletProfitability's item); also the `pnl` of a token balance row. */
export function v1PnlItem(wallet: string, r: TokenPnl) {
  const { position: p, figures: f, info } = r;
  const pc = percentages(r);
  return {
    chain: v1ChainId(r.chain),
    walletAddress: wallet,
    tokenAddress: p.token,
    totalTokensBought: amount(p.bought, info),
    totalTokensSold: amount(p.sold, info),
    totalBoughtVolumeUsd: num(p.boughtUsd),
    totalSoldVolumeUsd: num(p.soldUsd),
    totalTrades: f.trades,
    totalBuys: p.buys,
    totalSells: p.sells,
    avgBuyPriceUsd: orNull(f.avgBuyPrice, num),
    avgSellPriceUsd: orNull(f.avgSellPrice, num),
    avgCostOfQuantitySold: orNull(f.avgCostOfSold, num),
    remainingBalance: amount(p.held, info),
    currentPriceUsd: orNull(r.priceUsd, num),
    realizedProfitUsd: num(p.realized),
    realizedProfitPercentage: pc.realized,
    unrealizedProfitUsd: orNull(f.unrealized, num),
    unrealizedProfitPercentage: pc.unrealized,
    totalPnlUsd: num(f.total),
    totalPnlPercentage: pc.total,
    // U1 leaves roi undefined: the same return on what was bought, as a fraction.
    roi: num(per(f.total, p.boughtUsd) ?? ZERO),
    name: info.name,
    symbol: info.symbol,
    decimals: info.decimals ?? 0,
    logo: null,
    possibleSpam: info.possibleSpam,
    verifiedContract: false,
    securityScore: null,
  };
}

/** A row's profit in percent of cost: realized of the cost of what was sold, unrealized of the cost held (null unpriced), total of all bought. */
export function percentages(r: Pick<TokenPnl, 'position' | 'figures'>) {
  const { position: p, figures: f } = r;
  return {
    realized: percent(p.realized, p.costOfSold),
    unrealized: f.unrealized === null ? null : percent(f.unrealized, p.cost),
    total: percent(f.total, p.boughtUsd),
  };
}

type Ranked = Pick<TokenPnl, 'position' | 'figures'>;
/** The sort keys of `sortBy`, largest first; an unpriced unrealized profit sorts last. */
const SORT_KEY: Record<(typeof SORTS)[number], (r: Ranked) => Ratio | null> = {
  realizedPnl: (r) => r.position.realized,
  unrealizedPnl: (r) => r.figures.unrealized,
  totalPnl: (r) => r.figures.total,
  volume: (r) => r.figures.volumeUsd,
  tradeCount: (r) => ({ num: BigInt(r.figures.trades), den: 1n }),
};
function byKey(key: (r: Ranked) => Ratio | null) {
  return (a: Ranked, b: Ranked): number => {
    const [x, y] = [key(a), key(b)];
    if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
    return less(x, y) ? 1 : less(y, x) ? -1 : 0;
  };
}

/** The order of `sortBy`: largest first. */
export const bySort = (s: (typeof SORTS)[number]) => byKey(SORT_KEY[s]);

/** The wallet's rows over the chains asked, filtered; failures by chain. */
async function overChains(deps: DataDeps, resolved: ResolvedChains, wallet: string, window: PnlWindow, keep: (r: TokenPnl) => boolean) {
  const { parts, failed } = await acrossChains(resolved.chains, (chain) => walletPnl(deps, chain, wallet, window));
  return { rows: parts.flatMap((p) => p.value).filter(keep), meta: v1Meta(resolved, failed, syncedAt(deps)) };
}

/** GET /v1/wallets/:walletAddress/pnl: `raw` the query and path (tokenAddresses as a list); `now` Unix seconds. */
export async function v1Pnl(deps: DataDeps, resolved: ResolvedChains, raw: Record<string, unknown>, now: number) {
  const q = validate(v1PnlQuery, raw, 'query');
  const window = v1Window(q, now);
  const tokens = new Set(q.tokenAddresses);
  const { rows, meta } = await overChains(
    deps,
    resolved,
    q.walletAddress,
    window,
    (r) => (tokens.size === 0 || tokens.has(r.position.token)) && kept(q)(r),
  );
  // Ties: the chains' order, then the token address, so pages never overlap.
  const order = bySort(q.sortBy);
  rows.sort(
    (a, b) =>
      order(a, b) || resolved.chains.indexOf(a.chain) - resolved.chains.indexOf(b.chain) || (a.position.token < b.position.token ? -1 : 1),
  );
  const list = listOf(
    'wallet-pnl',
    q,
    resolved.chains.map((c) => c.key),
  );
  const { page, cursor: next } = offsetPage(rows, { list, limit: q.limit, cursor: q.cursor });
  return { meta, result: page.map((r) => v1PnlItem(q.walletAddress, r)), cursor: next, limit: q.limit };
}

/** Rows summed: the totals both summaries answer. */
function totals(rows: readonly TokenPnl[]) {
  const sum = (f: (r: TokenPnl) => Ratio): Ratio => rows.reduce((s, r) => plus(s, f(r)), ZERO);
  const priced = rows.filter((r) => r.figures.unrealized !== null);
  const sold = rows.filter((r) => r.position.sells > 0);
  return {
    bought: sum((r) => r.position.bought),
    sold: sum((r) => r.position.sold),
    boughtUsd: sum((r) => r.position.boughtUsd),
    soldUsd: sum((r) => r.position.soldUsd),
    buys: rows.reduce((n, r) => n + r.position.buys, 0),
    sells: rows.reduce((n, r) => n + r.position.sells, 0),
    realized: sum((r) => r.position.realized),
    costOfSold: sum((r) => r.position.costOfSold),
    unrealized: priced.reduce((s, r) => plus(s, r.figures.unrealized!), ZERO),
    costHeld: priced.reduce((s, r) => plus(s, r.position.cost), ZERO),
    total: sum((r) => r.figures.total),
    // Of the tokens sold, the share whose sales realized a profit (U1 leaves winRate undefined).
    winRate: sold.length === 0 ? 0 : (100 * sold.filter((r) => ZERO.num < r.position.realized.num).length) / sold.length,
    tokens: rows.length,
  };
}

/** GET /v1/wallets/:walletAddress/pnl/summary (U1 getWalletProfitabilitySummary). */
export async function v1PnlSummary(deps: DataDeps, resolved: ResolvedChains, raw: Record<string, unknown>, now: number) {
  const q = validate(v1PnlSummaryQuery, raw, 'query');
  const { rows, meta } = await overChains(deps, resolved, q.walletAddress, v1Window(q, now), kept(q));
  const t = totals(rows);
  return {
    meta,
    // Whole tokens of different tokens added up, as U1 has them.
    totalTokensBought: signedDecimal(t.bought),
    totalTokensSold: signedDecimal(t.sold),
    totalBoughtVolumeUsd: num(t.boughtUsd),
    totalSoldVolumeUsd: num(t.soldUsd),
    totalTrades: t.buys + t.sells,
    totalBuys: t.buys,
    totalSells: t.sells,
    realizedProfitUsd: num(t.realized),
    realizedProfitPercentage: percent(t.realized, t.costOfSold),
    unrealizedProfitUsd: num(t.unrealized),
    unrealizedProfitPercentage: percent(t.unrealized, t.costHeld),
    totalPnlUsd: num(t.total),
    totalPnlPercentage: percent(t.total, t.boughtUsd),
    roi: num(per(t.total, t.boughtUsd) ?? ZERO),
    winRate: t.winRate,
    tokensTraded: t.tokens,
  };
}

export type V1PnlItem = ReturnType<typeof v1PnlItem>;

/** For GET /v1/wallets/:walletAddressOrPublicKey/tokens?includePnl=true: the wallet's PnL on one chain over all its swaps, token address → v1 item. */
export async function walletTokenPnl(deps: DataDeps, chain: Chain, wallet: string): Promise<Map<string, V1PnlItem>> {
  // All the wallet's swaps are read: past the bound, the token list has no window to narrow, the PnL endpoint has.
  const rows = await walletPnl(
    deps,
    chain,
    wallet.toLowerCase(),
    {},
    { field: 'includePnl', hint: 'ask GET /v1/wallets/:walletAddress/pnl with a period instead' },
  );
  return new Map(rows.map((r) => [r.position.token, v1PnlItem(wallet.toLowerCase(), r)]));
}

// ---- the Data API's names (v2.2) ----

const days = (choices: readonly [string, ...string[]]) => z.enum(choices, choices.join(', ')).default('all');
export const profitabilityQuery = z.object({
  address: evmAddress,
  days: days(['all', '7', '30', '60', '90']),
  token_addresses: z.array(evmAddress).max(25).default([]),
});
export const profitabilitySummaryQuery = z.object({ address: evmAddress, days: days(['all', '7', '30', '60', '90']) });
export const topGainersQuery = z.object({ address: evmAddress, days: days(['all', '7', '30']) });
const windowOfDays = (d: string, now: number): PnlWindow => daysWindow(d === 'all' ? undefined : Number(d), now);
/** A USD amount as a decimal string (the Data API's and top-traders' answers). */
export const usd = (r: Ratio): string => signedDecimal(r, USD_DIGITS);

/** The fields a v2.2 profitability row and a top-gainers row share (WalletProfitabilityTokenData, TopProfitableWalletPerTokenResponse). */
function v22Figures(r: TokenPnl) {
  const { position: p, figures: f, info } = r;
  return {
    avg_buy_price_usd: usd(f.avgBuyPrice ?? ZERO),
    avg_sell_price_usd: usd(f.avgSellPrice ?? ZERO),
    total_usd_invested: usd(p.boughtUsd),
    total_tokens_sold: amount(p.sold, info),
    total_tokens_bought: amount(p.bought, info),
    total_sold_usd: usd(p.soldUsd),
    avg_cost_of_quantity_sold: usd(f.avgCostOfSold ?? ZERO),
    count_of_trades: f.trades,
    realized_profit_usd: usd(p.realized),
    realized_profit_percentage: percent(p.realized, p.costOfSold),
  };
}
const byRealized = (a: TokenPnl, b: TokenPnl): number => byKey((r) => r.position.realized)(a, b);

/** GET /api/v2.2/wallets/:address/profitability: the wallet's tokens, most realized profit first. */
export async function profitability(deps: DataDeps, chain: Chain, q: z.output<typeof profitabilityQuery>, now: number) {
  const tokens = new Set(q.token_addresses);
  const rows = (await walletPnl(deps, chain, q.address, windowOfDays(q.days, now), { field: 'days' }))
    .filter((r) => tokens.size === 0 || tokens.has(r.position.token))
    .sort(byRealized);
  return {
    result: rows.map((r) => ({
      token_address: r.position.token,
      ...v22Figures(r),
      total_buys: r.position.buys,
      total_sells: r.position.sells,
      name: r.info.name,
      symbol: r.info.symbol,
      decimals: String(r.info.decimals ?? 0),
      logo: null,
      possible_spam: r.info.possibleSpam,
    })),
  };
}

/** GET /api/v2.2/wallets/:address/profitability/summary. */
export async function profitabilitySummary(deps: DataDeps, chain: Chain, q: z.output<typeof profitabilitySummaryQuery>, now: number) {
  const t = totals(await walletPnl(deps, chain, q.address, windowOfDays(q.days, now), { field: 'days' }));
  return {
    total_count_of_trades: t.buys + t.sells,
    total_trade_volume: usd(plus(t.boughtUsd, t.soldUsd)),
    total_realized_profit_usd: usd(t.realized),
    total_realized_profit_percentage: percent(t.realized, t.costOfSold),
    total_buys: t.buys,
    total_sells: t.sells,
    total_sold_volume_usd: usd(t.soldUsd),
    total_bought_volume_usd: usd(t.boughtUsd),
  };
}

/** Wallets top-gainers lists at most. */
export const TOP_GAINERS = 100;

/** GET /api/v2.2/erc20/:address/top-gainers: the wallets whose trades of the token realized a profit, most first. */
export async function topGainers(deps: DataDeps, chain: Chain, q: z.output<typeof topGainersQuery>, now: number) {
  const { traders, info } = await tokenTradersPnl(deps, chain, q.address, windowOfDays(q.days, now));
  const gainers = traders
    .filter((r) => ZERO.num < r.pnl.position.realized.num)
    .sort((a, b) => byRealized(a.pnl, b.pnl) || (a.wallet < b.wallet ? -1 : 1));
  return {
    name: info.name,
    symbol: info.symbol,
    decimals: info.decimals ?? 0,
    logo: null,
    possible_spam: info.possibleSpam,
    result: gainers.slice(0, TOP_GAINERS).map((r) => ({ ...v22Figures(r.pnl), address: r.wallet })),
  };
}
