import { z } from 'zod';
import { ApiError, badRequest } from '../../errors.js';
import { pos, posAt } from '../../evm/store.js';
import { blockAtOrAfter, blockAtOrBefore, blockTime } from '../common/block-times.js';
import type { DataDeps } from '../common/deps.js';
import { poolKey, poolRowsPrefix, type PoolRow, type SwapRow } from './index/keys.js';
import { offsetCursor, readOffsetCursor, indexedHead } from '../common/pages.js';
import { cursor, date, limit, poolAddress } from '../common/params.js';
import { priceReader, type PriceReader } from './index/prices.js';
import {
  answered,
  baseIsToken0,
  bucketEnd,
  bucketOf,
  candleBucket,
  candleKey,
  CURRENCIES,
  mergeCandles,
  pricedPool,
  quoteValue,
  swapInQuote,
  TIMEFRAMES,
  tradeCandle,
  tradeOf,
  type CandleRow,
  type CandlesRow,
  type StoredBase,
  type Timeframe,
} from './index/swap-candles.js';

/**
 * GET /pairs/:address/ohlcv: candles of a pair's base token from its priced swaps (data-api-notes.md §3.5). Each
 * swap is priced by the pool's state right after it (V3, V4: its own sqrtPriceX96; V2: the Sync just before its Swap),
 * in the quote token, then in USD (or the native token) through the quote token's price at that block. open/close:
 * the first/last swap of the bucket, high/low: max/min, volume: Σ |base amount| × price, trades: the count. The base
 * token is the pair's token that is no stablecoin or wrapped native token (the wrapped native token against a
 * stablecoin; token0 when neither or both are). Newest candle first, paged by `limit`. Every bucket that meets
 * [fromDate, toDate] is answered whole. Timeframes of a minute or more sum the candles stored at ingest
 * (engine/data-api/dex/index/candle-writer.ts: 1 min and 1 d); 1s, 10s and 30s price the range's swaps one by one, the same way.
 */

export const ohlcvQuery = z.object({
  address: poolAddress,
  timeframe: z.enum(TIMEFRAMES, `one of ${TIMEFRAMES.join(', ')}`).default('1h'),
  currency: z.enum(CURRENCIES, 'usd or native').default('usd'),
  fromDate: date,
  toDate: date,
  limit: limit(),
  cursor,
});

/** The reference's getPairCandlesticks answer: newest candle first. */
export const ohlcvAnswer = z.object({
  page: z.number().int(),
  cursor: z.string().nullable(),
  pairAddress: z.string(),
  tokenAddress: z.string().meta({ description: "The pair's base token, whose price the candles are" }),
  timeframe: z.enum(TIMEFRAMES),
  currency: z.enum(CURRENCIES),
  result: z.array(
    z.object({
      timestamp: z.string().meta({ description: "The bucket's start" }),
      open: z.number(),
      high: z.number(),
      low: z.number(),
      close: z.number(),
      volume: z.number(),
      trades: z.number().int(),
    }),
  ),
});

/** Swaps read for one answer at most from the swaps (each is priced on the event loop): a wider range asks for a narrower one. */
const MAX_SWAPS = 20_000;
/** Stored candles read for one answer at most (100,000 minutes: 69 days of a pool that trades every minute). */
const MAX_ROWS = 100_000;
/** The stored timeframe each longer one sums; the others are built from the swaps. */
const BASE_OF: Partial<Record<Timeframe, StoredBase>> = {
  '1min': '1min',
  '5min': '1min',
  '10min': '1min',
  '30min': '1min',
  '1h': '1min',
  '4h': '1min',
  '12h': '1min',
  '1d': '1d',
  '1w': '1d',
  '1M': '1d',
};

type Query = z.output<typeof ohlcvQuery>;

export async function pairCandles(deps: DataDeps, chain: string, q: Query): Promise<z.infer<typeof ohlcvAnswer>> {
  if (q.fromDate > q.toDate) throw badRequest('fromDate', 'after toDate');
  const head = await indexedHead(deps, chain);
  const row = deps.kv.get<PoolRow>('dexPools', poolKey(chain, q.address));
  const reader = priceReader(deps, chain, head);
  if (row === undefined || reader === undefined)
    throw new ApiError(404, `${q.address} is no DEX pool this server indexes on chain ${chain} (a pool of a factory in CHAINPOST_PRICING)`);
  const candles = answered(await build(deps, chain, reader, q, row, head));
  const start = q.cursor === null ? 0 : readOffsetCursor(q.cursor);
  const page = candles.slice(start, start + q.limit);
  return {
    page: Math.floor(start / q.limit),
    cursor: start + q.limit < candles.length ? offsetCursor(start + q.limit) : null,
    pairAddress: q.address,
    tokenAddress: baseIsToken0(reader, row) ? row[1] : row[2],
    timeframe: q.timeframe,
    currency: q.currency,
    result: page,
  };
}

/**
 * The candles of the buckets from fromDate's through toDate's, whole (a bucket's candle does not depend on where the
 * range cuts it): stored ones summed, or for timeframes under a minute the swaps priced one by one.
 */
async function build(
  deps: DataDeps,
  chain: string,
  reader: PriceReader,
  q: Query,
  row: PoolRow,
  head: number,
): Promise<Map<number, CandleRow>> {
  // Nothing is older than 1970, and a negative bucket would not sort among the stored ones.
  const start = bucketOf(Math.max(0, q.fromDate), q.timeframe);
  const end = bucketEnd(q.toDate, q.timeframe);
  const buckets = new Map<number, CandleRow>();
  const add = (t: number, c: CandleRow): void => {
    const at = bucketOf(t, q.timeframe);
    buckets.set(at, mergeCandles(buckets.get(at), c));
  };
  const base = BASE_OF[q.timeframe];
  if (base !== undefined) fromStored(deps, chain, q, base, start, end, add);
  else await fromSwaps(deps, chain, reader, q, row, head, start, end, add);
  return buckets;
}

/** The stored candles of `base` whose buckets start in [start, end), oldest first. */
function fromStored(
  deps: DataDeps,
  chain: string,
  q: Query,
  base: StoredBase,
  start: number,
  end: number,
  add: (t: number, c: CandleRow) => void,
): void {
  const rows = deps.kv.range<CandlesRow>('dexCandles', {
    start: candleKey(chain, q.address, base, start),
    end: candleKey(chain, q.address, base, end),
    limit: MAX_ROWS + 1,
  });
  if (rows.length > MAX_ROWS)
    throw badRequest(
      'fromDate',
      `more than ${MAX_ROWS} stored ${base} candles between fromDate and toDate: ask for a narrower range or a longer timeframe`,
    );
  const currency = CURRENCIES.indexOf(q.currency);
  for (const { key, value } of rows) {
    const c = value[currency];
    if (c != null) add(candleBucket(key), c);
  }
}

/** The pool's swaps in the blocks of [start, end), each priced as the candle index prices it, oldest first. */
async function fromSwaps(
  deps: DataDeps,
  chain: string,
  reader: PriceReader,
  q: Query,
  row: PoolRow,
  head: number,
  start: number,
  end: number,
  add: (t: number, c: CandleRow) => void,
): Promise<void> {
  const from = blockAtOrAfter(deps.kv, chain, start);
  const to = Math.min(blockAtOrBefore(deps.kv, chain, end - 1) ?? -1, head);
  if (from === undefined || to < from) return;
  const prefix = poolRowsPrefix(chain, q.address);
  const swaps = deps.kv.range<SwapRow>('dexSwaps', { start: prefix + pos(from, 0), end: prefix + pos(to + 1, 0), limit: MAX_SWAPS + 1 });
  if (swaps.length > MAX_SWAPS)
    throw badRequest(
      'fromDate',
      `more than ${MAX_SWAPS} swaps between fromDate and toDate: ask for a narrower range or a timeframe of a minute or more`,
    );
  const pool = pricedPool(reader, chain, q.address, row, await Promise.all([reader.tokenDecimals(row[1]), reader.tokenDecimals(row[2])]));
  const wrappedNative = deps.pricing!(chain)!.wrappedNative;
  for (const { key, value } of swaps) {
    const { blockNumber, logIndex } = posAt(key);
    const v = quoteValue(reader, wrappedNative, pool.quote, blockNumber, q.currency);
    const s = v === null ? null : swapInQuote(deps.kv, pool, head, blockNumber, logIndex, value);
    const time = blockTime(deps.kv, chain, blockNumber);
    if (v !== null && s !== null && time !== undefined) add(time, tradeCandle(tradeOf(s, v)));
  }
}
