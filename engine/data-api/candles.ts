import { z } from 'zod';
import { unixIso } from '../datetime.js';
import { ApiError, badRequest } from '../errors.js';
import { pos, posAt } from '../evm/store.js';
import { blockAtOrAfter, blockAtOrBefore, blockTime } from './block-times.js';
import type { DataDeps } from './deps.js';
import { poolKey, poolRowsPrefix, type PoolRow, type SwapRow } from './dex-index.js';
import { offsetCursor, readOffsetCursor, indexedHead } from './erc20-common.js';
import { cursor, date, limit, poolAddress } from './params.js';
import { div, mul, poolAt, priceReader, sidePrice, toNumber, type PriceReader, type Ratio, type Role } from './prices.js';

/**
 * GET /pairs/:address/ohlcv: candles of a pair's base token from its priced swaps (data-api-notes.md §3.5). Each
 * swap is priced by the pool's state right after it (V3, V4: its own sqrtPriceX96; V2: the Sync just before its Swap),
 * in the quote token, then in USD (or the native token) through the quote token's price at that block. open/close:
 * the first/last swap of the bucket, high/low: max/min, volume: Σ |base amount| × price, trades: the count. The base
 * token is the pair's token that is no stablecoin or wrapped native token (the wrapped native token against a
 * stablecoin; token0 when neither or both are). Newest candle first, paged by `limit`.
 */

const TIMEFRAMES = ['1s', '10s', '30s', '1min', '5min', '10min', '30min', '1h', '4h', '12h', '1d', '1w', '1M'] as const;
type Timeframe = (typeof TIMEFRAMES)[number];
const SECONDS: Record<Exclude<Timeframe, '1w' | '1M'>, number> = { '1s': 1, '10s': 10, '30s': 30, '1min': 60, '5min': 300, '10min': 600, '30min': 1800, '1h': 3600, '4h': 14_400, '12h': 43_200, '1d': 86_400 };

export const ohlcvQuery = z.object({
  address: poolAddress,
  timeframe: z.enum(TIMEFRAMES, `one of ${TIMEFRAMES.join(', ')}`).default('1h'),
  currency: z.enum(['usd', 'native'], 'usd or native').default('usd'),
  fromDate: date,
  toDate: date,
  limit: limit(),
  cursor,
});

/** Which token of a pair is its base (lower first): any token before the ones prices route through, a stablecoin last. */
const BASE_RANK: Record<Role, number> = { other: 0, whitelist: 1, native: 2, stable: 3 };
/** Whether a pool's base token is its token0: the quote token is the one that routes to USD (token0 is base when both or neither do). */
export const baseIsToken0 = (reader: Pick<PriceReader, 'role'>, row: PoolRow): boolean => BASE_RANK[reader.role(row[1])] <= BASE_RANK[reader.role(row[2])];

/** Swaps read for one answer at most (each is priced on the event loop): a wider range asks for a narrower one. */
const MAX_SWAPS = 20_000;

/** The start of the bucket holding `t` (Unix seconds): weeks from Monday, months from their first day, UTC. */
export function bucketOf(t: number, tf: Timeframe): number {
  if (tf === '1M') {
    const d = new Date(t * 1000);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
  }
  if (tf === '1w') {
    const day = Math.floor(t / 86_400);
    // 1970-01-01 was a Thursday: Monday is 3 days before day 0's week start.
    return (day - ((day + 3) % 7)) * 86_400;
  }
  return Math.floor(t / SECONDS[tf]) * SECONDS[tf];
}

interface Candle {
  timestamp: string;
  open: number;
  high: number;
  low: number;
  close: number;
  volume: number;
  trades: number;
}

export async function pairCandles(deps: DataDeps, chain: string, q: z.output<typeof ohlcvQuery>) {
  if (q.fromDate > q.toDate) throw badRequest('fromDate', 'after toDate');
  const head = await indexedHead(deps, chain);
  const row = deps.kv.get<PoolRow>('dexPools', poolKey(chain, q.address));
  const reader = priceReader(deps, chain, head);
  if (row === undefined || reader === undefined) throw new ApiError(404, `${q.address} is no DEX pool this server indexes on chain ${chain} (a pool of a factory in CHAINPOST_PRICING)`);
  const baseIs0 = baseIsToken0(reader, row);
  const [base, quote] = baseIs0 ? [row[1], row[2]] : [row[2], row[1]];
  const from = blockAtOrAfter(deps.kv, chain, q.fromDate);
  const to = Math.min(blockAtOrBefore(deps.kv, chain, q.toDate) ?? -1, head);
  const candles = from === undefined || to < from ? [] : await build(deps, chain, reader, q, row, baseIs0, quote, from, to, head);
  const start = q.cursor === null ? 0 : readOffsetCursor(q.cursor);
  const page = candles.slice(start, start + q.limit);
  return {
    page: Math.floor(start / q.limit),
    cursor: start + q.limit < candles.length ? offsetCursor(start + q.limit) : null,
    pairAddress: q.address,
    tokenAddress: base,
    timeframe: q.timeframe,
    currency: q.currency,
    result: page,
  };
}

async function build(deps: DataDeps, chain: string, reader: PriceReader, q: z.output<typeof ohlcvQuery>, row: PoolRow, baseIs0: boolean, quote: string, from: number, to: number, head: number): Promise<Candle[]> {
  const prefix = poolRowsPrefix(chain, q.address);
  const swaps = deps.kv.range<SwapRow>('dexSwaps', { start: prefix + pos(from, 0), end: prefix + pos(to + 1, 0), limit: MAX_SWAPS + 1 });
  if (swaps.length > MAX_SWAPS) throw badRequest('fromDate', `more than ${MAX_SWAPS} swaps between fromDate and toDate: ask for a narrower range`);
  const [d0, d1] = await Promise.all([reader.tokenDecimals(row[1]), reader.tokenDecimals(row[2])]);
  const quoteValue = new Map<number, Promise<Ratio | null>>();
  // The quote token's value at a block, in the currency asked.
  const valueOf = (block: number): Promise<Ratio | null> => {
    let v = quoteValue.get(block);
    if (v === undefined) {
      v = (async () => {
        // In the native token, a pair quoted in the wrapped native token needs no USD route at all.
        if (q.currency === 'native' && quote === deps.pricing!(chain)!.wrappedNative) return { num: 1n, den: 1n };
        const usd = await reader.usd(quote, block);
        if (usd === null || q.currency === 'usd') return usd;
        const native = await reader.usd(deps.pricing!(chain)!.wrappedNative, block);
        return native === null || native.num === 0n ? null : div(usd, native);
      })();
      quoteValue.set(block, v);
    }
    return v;
  };
  const buckets = new Map<number, Candle>();
  for (const { key, value } of swaps) {
    const { blockNumber, logIndex } = posAt(key);
    const state = poolAt(deps.kv, chain, q.address, row, blockNumber, head, d0, d1, logIndex);
    const value0 = await valueOf(blockNumber);
    const time = blockTime(deps.kv, chain, blockNumber);
    if (state === null || value0 === null || time === undefined) continue;
    const inQuote = sidePrice(state.price0, baseIs0);
    const price = toNumber(mul(inQuote, value0));
    const amount = BigInt(baseIs0 ? value[3] : value[4]);
    const volume = toNumber(mul({ num: amount < 0n ? -amount : amount, den: 10n ** BigInt(baseIs0 ? d0 : d1) }, mul(inQuote, value0)));
    const at = bucketOf(time, q.timeframe);
    const c = buckets.get(at);
    // Swaps come oldest first: the first of a bucket opens it, each later one closes it.
    if (c === undefined) buckets.set(at, { timestamp: unixIso(at), open: price, high: price, low: price, close: price, volume, trades: 1 });
    else Object.assign(c, { high: Math.max(c.high, price), low: Math.min(c.low, price), close: price, volume: c.volume + volume, trades: c.trades + 1 });
  }
  return [...buckets.entries()].sort((a, b) => b[0] - a[0]).map(([, c]) => c);
}
