import { unixIso } from '../../../datetime.js';
import type { Kv } from '../../../ports.js';
import type { PoolRow, SwapRow } from './keys.js';
import { hex } from '../../erc20/index/keys.js';
import { div, mul, poolAt, sidePrice, toNumber, type PriceReader, type Ratio, type Role } from './prices.js';

/**
 * Candles of a pool's priced swaps (docs/api.md, Prices), one piece of code for both ways they are built: stored at ingest
 * (engine/data-api/dex/index/candle-writer.ts, `dexCandles`) and read from the swaps (GET /pairs/:address/ohlcv's finest
 * timeframes, engine/data-api/dex/candles.ts). A swap is priced by the pool's state right after it (V3: its own
 * sqrtPriceX96; V2: the Sync just before its Swap) in the quote token, then in USD (or the native token) through the
 * quote token's price marks at that block. Volume is summed exactly (fixed point, VOLUME_DIGITS), so a candle
 * is the same whichever smaller candles it was summed from.
 */

export const TIMEFRAMES = ['1s', '10s', '30s', '1min', '5min', '10min', '30min', '1h', '4h', '12h', '1d', '1w', '1M'] as const;
export type Timeframe = (typeof TIMEFRAMES)[number];
const SECONDS: Record<Exclude<Timeframe, '1w' | '1M'>, number> = {
  '1s': 1,
  '10s': 10,
  '30s': 30,
  '1min': 60,
  '5min': 300,
  '10min': 600,
  '30min': 1800,
  '1h': 3600,
  '4h': 14_400,
  '12h': 43_200,
  '1d': 86_400,
};

export const CURRENCIES = ['usd', 'native'] as const;
export type Currency = (typeof CURRENCIES)[number];

/** The timeframes stored at ingest: every longer one is a sum of one of them (weeks and months of days). */
export const STORED_BASES = ['1min', '1d'] as const;
export type StoredBase = (typeof STORED_BASES)[number];

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

/** The end (exclusive) of the bucket holding `t`. */
export function bucketEnd(t: number, tf: Timeframe): number {
  const start = bucketOf(t, tf);
  if (tf === '1M') {
    const d = new Date(start * 1000);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 1000;
  }
  return start + (tf === '1w' ? 7 * 86_400 : SECONDS[tf]);
}

/** Which token of a pair is its base (lower first): any token before the ones prices route through, a stablecoin last. */
const BASE_RANK: Record<Role, number> = { other: 0, whitelist: 1, native: 2, stable: 3 };
/** Whether a pool's base token is its token0: the quote token is the one that routes to USD (token0 is base when both or neither do). */
export const baseIsToken0 = (reader: Pick<PriceReader, 'role'>, row: PoolRow): boolean =>
  BASE_RANK[reader.role(row[1])] <= BASE_RANK[reader.role(row[2])];

/** The quote token's value at a block in `currency`: its USD by the marks, or that over the wrapped native token's (1 for the wrapped native token itself). */
export function quoteValue(
  reader: Pick<PriceReader, 'usd'>,
  wrappedNative: string,
  quote: string,
  block: number,
  currency: Currency,
): Ratio | null {
  // In the native token, a pair quoted in the wrapped native token needs no USD route at all.
  if (currency === 'native' && quote === wrappedNative) return { num: 1n, den: 1n };
  const usd = reader.usd(quote, block);
  if (usd === null || currency === 'usd') return usd;
  const native = reader.usd(wrappedNative, block);
  return native === null || native.num === 0n ? null : div(usd, native);
}

/** A pool as its swaps are priced: its row, which side is base, both tokens' decimals, the quote token. */
export interface PricedPool {
  chain: string;
  pool: string;
  row: PoolRow;
  baseIs0: boolean;
  decimals: [number, number];
  quote: string;
}

export function pricedPool(
  reader: Pick<PriceReader, 'role'>,
  chain: string,
  pool: string,
  row: PoolRow,
  decimals: [number, number],
): PricedPool {
  const baseIs0 = baseIsToken0(reader, row);
  return { chain, pool, row, baseIs0, decimals, quote: baseIs0 ? row[2] : row[1] };
}

/** Digits after the point of a stored volume. */
const VOLUME_DIGITS = 18;
const VOLUME_SCALE = 10n ** BigInt(VOLUME_DIGITS);

/** One swap priced: its base token's price in the currency, and its volume (|base amount| × price) in 10^-VOLUME_DIGITS units. */
export interface Trade {
  price: number;
  volume: bigint;
}

/** A swap as the pool priced it: its base token in the quote token right after it, and the base amount moved (whole tokens, positive). */
export interface SwapInQuote {
  inQuote: Ratio;
  amount: Ratio;
}

/**
 * The swap at (block, logIndex) by the pool's state right after it; null before the pool's first state or with an
 * empty side. `head`: the indexed head (the price does not depend on it; poolAt's reserves do).
 */
export function swapInQuote(
  kv: Pick<Kv, 'range' | 'get'>,
  p: PricedPool,
  head: number,
  block: number,
  logIndex: number,
  swap: SwapRow,
): SwapInQuote | null {
  const [d0, d1] = p.decimals;
  const state = poolAt(kv, p.chain, p.pool, p.row, block, head, d0, d1, logIndex);
  if (state === null) return null;
  const amount = BigInt(p.baseIs0 ? swap[3] : swap[4]);
  return {
    inQuote: sidePrice(state.price0, p.baseIs0),
    amount: { num: amount < 0n ? -amount : amount, den: 10n ** BigInt(p.baseIs0 ? d0 : d1) },
  };
}

/** The swap in the currency `value` (the quote token's, quoteValue) stands for. */
export function tradeOf(s: SwapInQuote, value: Ratio): Trade {
  const price = mul(s.inQuote, value);
  const volume = mul(s.amount, price);
  return { price: toNumber(price), volume: (volume.num * VOLUME_SCALE) / volume.den };
}

/** One candle: [open, high, low, close, volume (0x, 10^-18 units of the currency), trades]. */
export type CandleRow = [open: number, high: number, low: number, close: number, volume: string, trades: number];
/** `dexCandles` value: the bucket's candle in each currency of CURRENCIES, in that order (null: no swap of it was priced in that currency). One row for both halves the writes of a swap. */
export type CandlesRow = Array<CandleRow | null>;

const candlesPrefix = (chain: string, pool: string, base: StoredBase): string => `${chain}/${pool}/${base}/`;
/** A stored candle's key: its bucket's start as 10 hex digits (Unix seconds). */
export const candleKey = (chain: string, pool: string, base: StoredBase, bucket: number): string =>
  `${candlesPrefix(chain, pool, base)}${bucket.toString(16).padStart(10, '0')}`;
export const candleBucket = (key: string): number => parseInt(key.slice(key.lastIndexOf('/') + 1), 16);

export const tradeCandle = (t: Trade): CandleRow => [t.price, t.price, t.price, t.price, hex(t.volume), 1];

/** Two candles as one: `later`'s trades come after `earlier`'s. */
export function mergeCandles(earlier: CandleRow | null | undefined, later: CandleRow): CandleRow {
  if (earlier === undefined || earlier === null) return later;
  return [
    earlier[0],
    Math.max(earlier[1], later[1]),
    Math.min(earlier[2], later[2]),
    later[3],
    hex(BigInt(earlier[4]) + BigInt(later[4])),
    earlier[5] + later[5],
  ];
}

/** Two stored rows as one, currency by currency. */
export const mergeRows = (earlier: CandlesRow | undefined, later: CandlesRow): CandlesRow =>
  CURRENCIES.map((_, i) => (later[i] == null ? (earlier?.[i] ?? null) : mergeCandles(earlier?.[i], later[i]!)));

/** Candles keyed by bucket start as the endpoint answers them, newest first. */
export function answered(buckets: ReadonlyMap<number, CandleRow>) {
  return [...buckets.entries()]
    .sort((a, b) => b[0] - a[0])
    .map(([at, [open, high, low, close, volume, trades]]) => ({
      timestamp: unixIso(at),
      open,
      high,
      low,
      close,
      volume: toNumber({ num: BigInt(volume), den: VOLUME_SCALE }),
      trades,
    }));
}
