import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pricing } from '../../../../../engine/chains/pricing.js';
import { ServiceClock } from '../../../../../engine/clock.js';
import { ohlcvQuery, pairCandles } from '../../../../../engine/data-api/dex/candles.js';
import type { DataDeps } from '../../../../../engine/data-api/common/deps.js';
import { poolKey, type PoolRow } from '../../../../../engine/data-api/dex/index/keys.js';
import { DataIndexer, type IndexState } from '../../../../../engine/data-api/common/indexer.js';
import { candleKey, type CandleRow, type CandlesRow } from '../../../../../engine/data-api/dex/index/swap-candles.js';
import { TokenMetadata } from '../../../../../engine/evm/token-metadata.js';
import { ApiError } from '../../../../../engine/errors.js';
import { openStore, type Store } from '../../../../../storage/env.js';
import { tempDir } from '../../../../helpers.js';
import { noNode } from '../../../../kit/no-node.js';
import { quietLog } from '../../../../kit/quiet-log.js';

/**
 * GET /pairs/:address/ohlcv's sums of stored candles (engine/data-api/dex/candles.ts) on a real LMDB store holding
 * `dexCandles` rows written here: 1min…12h from the 1 min rows, 1d/1w/1M from the 1 d rows; open the first,
 * close the last, high/low the extremes, volume summed exactly (10^-18 units), trades summed; a currency's null
 * half left out; and the cap on rows read for one answer (400 naming fromDate).
 */

const CHAIN = '0x539';
const POOL = `0x${'aa'.repeat(20)}`;
const BASE = `0x${'01'.repeat(20)}`;
const WETH = `0x${'02'.repeat(20)}`;
const FACTORY = `0x${'03'.repeat(20)}`;
const PRICING: Pricing = {
  wrappedNative: WETH,
  stablecoins: [],
  whitelist: [],
  factories: [{ address: FACTORY, kind: 'v2', name: 'Test' }],
};
/** 2026-11-02 00:00 UTC, a Monday. */
const MONDAY = Date.UTC(2026, 10, 2) / 1000;
const E18 = 10n ** 18n;

let dir: string;
let store: Store;
let deps: DataDeps;

beforeAll(() => {
  dir = tempDir();
  store = openStore(dir);
  const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, Date.parse('2026-11-24T00:00:00Z'));
  const tokens = new TokenMetadata(store, noNode.call);
  const indexer = new DataIndexer(
    store,
    [],
    clock,
    quietLog(() => clock.now()),
  );
  deps = { kv: store, tokens, reads: noNode, indexer, follower: () => undefined, pricing: () => PRICING };
  store.transact(() => {
    store.put('dexPools', poolKey(CHAIN, POOL), ['v2', BASE, WETH, FACTORY, null] satisfies PoolRow);
    store.put('indexState', CHAIN, { number: 10, hash: '0x10', start: 0 } satisfies IndexState);
    store.put('chainState', CHAIN, { head: 10, confirmed: 10, tracer: null, pruned: -1 });
  });
});

afterAll(() => {
  store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const candle = (open: number, high: number, low: number, close: number, volume: bigint, trades: number): CandleRow => [
  open,
  high,
  low,
  close,
  `0x${volume.toString(16)}`,
  trades,
];
const iso = (t: number): string => new Date(t * 1000).toISOString();

function answer(timeframe: string, currency: string, from: number, to: number) {
  return pairCandles(
    deps,
    CHAIN,
    ohlcvQuery.parse({ address: POOL, timeframe, currency, fromDate: String(from), toDate: String(to), limit: '100' }),
  );
}

describe('stored candles summed into longer timeframes', () => {
  it('sums 1 min rows into hours: first open, last close, extremes, exact volume, trades; a null half left out', async () => {
    const hour = MONDAY + 3600 * 5;
    // Volumes summed exactly: 0.1 + 0.2 + 5·10^-18 is written 0.3 (as floats, 0.1 + 0.2 is 0.30000000000000004).
    const rows: Array<[number, CandlesRow]> = [
      [hour + 60, [candle(10, 12, 9, 11, E18 / 10n, 2), null]],
      [hour + 600, [candle(11, 15, 11, 14, (E18 * 2n) / 10n, 3), candle(1, 1, 1, 1, E18, 3)]],
      [hour + 3540, [candle(14, 14, 8, 9, 5n, 1), null]],
      // The next hour.
      [hour + 3600, [candle(20, 20, 20, 20, E18, 1), candle(2, 2, 2, 2, E18, 1)]],
    ];
    store.transact(() => {
      for (const [t, r] of rows) store.put('dexCandles', candleKey(CHAIN, POOL, '1min', t), r);
    });
    // A range from inside the first hour: whole hours.
    const usd = await answer('1h', 'usd', hour + 700, hour + 3600);
    expect(usd.tokenAddress).toBe(BASE);
    expect(usd.result).toEqual([
      { timestamp: iso(hour + 3600), open: 20, high: 20, low: 20, close: 20, volume: 1, trades: 1 },
      { timestamp: iso(hour), open: 10, high: 15, low: 8, close: 9, volume: 0.3, trades: 6 },
    ]);
    expect((await answer('1h', 'native', hour, hour)).result).toEqual([
      { timestamp: iso(hour), open: 1, high: 1, low: 1, close: 1, volume: 1, trades: 3 },
    ]);
    // Minutes as stored, newest first.
    expect((await answer('1min', 'usd', hour, hour + 3599)).result.map((c) => c.trades)).toEqual([1, 3, 2]);
    expect((await answer('4h', 'usd', hour, hour)).result).toEqual([
      { timestamp: iso(MONDAY + 4 * 3600), open: 10, high: 20, low: 8, close: 20, volume: 1.3, trades: 7 },
    ]);
  });

  it('sums 1 d rows into weeks from Monday and months from their first day', async () => {
    const day = (n: number): number => MONDAY + n * 86_400;
    store.transact(() => {
      // Sunday 1 Nov, Monday 2 Nov, Sunday 8 Nov, Monday 9 Nov, Tuesday 1 Dec.
      for (const [n, p] of [
        [-1, 1],
        [0, 2],
        [6, 3],
        [7, 4],
        [29, 5],
      ] as const)
        store.put('dexCandles', candleKey(CHAIN, POOL, '1d', day(n)), [candle(p, p, p, p, E18 * BigInt(p), p), null] satisfies CandlesRow);
    });
    const weeks = await answer('1w', 'usd', day(-1), day(29));
    expect(weeks.result.map((c) => [c.timestamp.slice(0, 10), c.open, c.close, c.trades])).toEqual([
      ['2026-11-30', 5, 5, 5],
      ['2026-11-09', 4, 4, 4],
      ['2026-11-02', 2, 3, 5],
      ['2026-10-26', 1, 1, 1],
    ]);
    const months = await answer('1M', 'usd', day(0), day(29));
    expect(months.result.map((c) => [c.timestamp.slice(0, 10), c.open, c.high, c.low, c.close, c.volume, c.trades])).toEqual([
      ['2026-12-01', 5, 5, 5, 5, 5, 5],
      ['2026-11-01', 1, 4, 1, 4, 10, 10],
    ]);
  });

  it('reads at most 100,000 stored rows for one answer, and names fromDate past that', async () => {
    const start = Date.UTC(2020, 0, 1) / 1000;
    const row: CandlesRow = [candle(1, 1, 1, 1, 1n, 1), null];
    store.transact(() => {
      for (let i = 0; i <= 100_000; i++) store.put('dexCandles', candleKey(CHAIN, POOL, '1min', start + i * 60), row);
    });
    const wide = answer('12h', 'usd', start, start + 100_000 * 60);
    await expect(wide).rejects.toBeInstanceOf(ApiError);
    await expect(wide).rejects.toMatchObject({ status: 400, details: { field: 'fromDate' } });
    // Up to the end of the 12 h bucket before the last row's: 138 buckets of 720 minutes, within the cap.
    const within = await answer('12h', 'usd', start, start + 138 * 43_200 - 1);
    expect(within.result).toHaveLength(100);
    expect(within.cursor).not.toBeNull();
    expect(within.result[0]).toMatchObject({ timestamp: iso(start + 137 * 43_200), trades: 720 });
  });
});
