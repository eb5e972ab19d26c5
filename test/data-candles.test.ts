import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAbiItem, parseUnits, type Hex } from 'viem';
import type { Anvil } from '../http/clients/anvil.js';
import { publicClient } from './contracts.js';
import { v2RouterSwapExactIn, v3SwapAtReserves, type Created, type Dex } from './dex.js';
import { decimalText, startPricedDevnet, times, type PricedDevnet, type Ratio } from './priced-devnet.js';

/**
 * GET /pairs/:address/ohlcv over hours of block time (anvil's evm_setNextBlockTimestamp): the candles stored at
 * ingest (1 min and 1 d, summed into every timeframe of a minute or more) and the ones priced swap by swap at
 * request time (under a minute) are each equal, field for field, to candles computed here from every Swap log and
 * the pools' reserves or slot0 read by eth_call at the swap's block: V2 and V3 pools, quoted in a stablecoin and in
 * the wrapped native token, in USD and in the native token.
 */

type Json = Record<string, any>;

let net: PricedDevnet;
let anvil: Anvil;
let dex: Dex;
/** The first day boundary the swaps cross (Unix seconds). */
let day: number;

const lc = (a: string): string => a.toLowerCase();
const div = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.den, den: a.den * b.num });
const ONE: Ratio = { num: 1n, den: 1n };
/** How the answers turn an exact ratio into a number: its decimal text (36 digits, truncated), parsed. */
const asNumber = (r: Ratio): number => Number(decimalText(r, 36));
const SCALE = 10n ** 18n;

const V2_SWAP = parseAbiItem(
  'event Swap(address indexed sender, uint amount0In, uint amount1In, uint amount0Out, uint amount1Out, address indexed to)',
);
const V3_SWAP = parseAbiItem(
  'event Swap(address indexed sender, address indexed recipient, int256 amount0, int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)',
);

beforeAll(async () => {
  net = await startPricedDevnet();
  ({ anvil, dex } = net);
  const at = net.at;
  const { usdc, weth, tka, tkb } = dex.tokens;
  const { tkbUsdc } = net;
  const now = Number((await publicClient(anvil.url).getBlock()).timestamp);
  day = Math.ceil((now + 3 * 3600) / 86_400) * 86_400;
  const buyEth = (usd: string) => () => v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address], net.units(usd, usdc));
  const sellEth = (eth: string) => () => v2RouterSwapExactIn(anvil.url, dex, [weth.address, usdc.address], parseUnits(eth, 18));
  // Three swaps of WETH/USDC and one of each other pool in one minute two hours before the day ends; then a minute,
  // an hour and a day later, and three hours into the next day.
  const start = day - 7200 + 5;
  await at(start, buyEth('10000'));
  await at(start + 12, sellEth('3'));
  await at(start + 24, buyEth('2500'));
  await at(start + 36, () => v2RouterSwapExactIn(anvil.url, dex, [tka.address, weth.address], parseUnits('40', 18)));
  await at(start + 46, () => v3SwapAtReserves(anvil.url, tkbUsdc, usdc.address, net.units('700', usdc)));
  await at(start + 65, sellEth('1.5'));
  await at(day - 3600 - 40, buyEth('777'));
  await at(day - 3600 + 10, sellEth('0.25'));
  await at(day + 10, buyEth('123456'));
  await at(day + 30, () => v2RouterSwapExactIn(anvil.url, dex, [weth.address, tka.address], parseUnits('0.02', 18)));
  await at(day + 3 * 3600 + 7, sellEth('9'));
  await at(day + 3 * 3600 + 20, () => v3SwapAtReserves(anvil.url, tkbUsdc, tkb.address, net.units('3', tkb)));
  await net.indexed();
}, 180_000);

afterAll(async () => {
  await net?.stop();
});

/** One swap as the test prices it: its time, its base token's price (exact) and its volume in 10^-18 units. */
interface Trade {
  time: number;
  price: Ratio;
  volume: bigint;
}

/** The pool's swaps from the node, priced here: base in quote from reserves (V2) or slot0 (V3) at the swap's block, times the quote's value. */
async function trades(pool: Created, base: Hex, quote: Hex, kind: 'v2' | 'v3', currency: 'usd' | 'native'): Promise<Trade[]> {
  const client = publicClient(anvil.url);
  const { weth } = dex.tokens;
  const logs = await client.getLogs({ address: pool.address, event: kind === 'v2' ? V2_SWAP : V3_SWAP, fromBlock: 0n });
  const baseIs0 = lc(pool.token0) === lc(base);
  const out: Trade[] = [];
  for (const l of logs) {
    const block = Number(l.blockNumber);
    const inQuote = kind === 'v2' ? await net.v2Price(pool, base, block) : await net.v3Price(pool, base, block);
    const ethUsd = await net.v2Price(net.wethUsdc, weth.address, block);
    // The quote token's USD: a stablecoin $1, ether by its pool; in ether: that over ether's USD.
    const quoteUsd = lc(quote) === lc(weth.address) ? ethUsd : ONE;
    const value = currency === 'usd' ? quoteUsd : lc(quote) === lc(weth.address) ? ONE : div(quoteUsd, ethUsd);
    const price = times(inQuote, value);
    const a = l.args as Record<string, bigint>;
    const moved =
      kind === 'v3'
        ? baseIs0
          ? a['amount0']!
          : a['amount1']!
        : baseIs0
          ? a['amount0In']! - a['amount0Out']!
          : a['amount1In']! - a['amount1Out']!;
    const volume = times({ num: moved < 0n ? -moved : moved, den: 10n ** BigInt(net.decimalsOf(base)) }, price);
    const time = Number((await client.getBlock({ blockNumber: BigInt(block) })).timestamp);
    out.push({ time, price, volume: (volume.num * SCALE) / volume.den });
  }
  return out;
}

/** Bucket starts, computed apart from the server's: weeks from Monday, months from their first day (UTC). */
function bucket(t: number, tf: string): number {
  const seconds: Record<string, number> = { '30s': 30, '1min': 60, '5min': 300, '1h': 3600, '4h': 14_400, '1d': 86_400 };
  if (tf === '1w') {
    const d = new Date(t * 1000);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7)) / 1000;
  }
  if (tf === '1M') {
    const d = new Date(t * 1000);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
  }
  return Math.floor(t / seconds[tf]!) * seconds[tf]!;
}

/** The candles the answer should hold, newest first, numbers as the answer writes them. */
function expectedCandles(list: readonly Trade[], tf: string): Json[] {
  const buckets = new Map<number, { prices: Ratio[]; volume: bigint }>();
  for (const t of list) {
    const b = bucket(t.time, tf);
    const c = buckets.get(b) ?? { prices: [], volume: 0n };
    c.prices.push(t.price);
    c.volume += t.volume;
    buckets.set(b, c);
  }
  return [...buckets.entries()]
    .sort((a, b) => b[0] - a[0])
    .map(([b, c]) => {
      const prices = c.prices.map(asNumber);
      return {
        timestamp: new Date(b * 1000).toISOString(),
        open: prices[0],
        high: Math.max(...prices),
        low: Math.min(...prices),
        close: prices.at(-1),
        volume: asNumber({ num: c.volume, den: SCALE }),
        trades: prices.length,
      };
    });
}

async function ohlcv(pool: Created, query: string): Promise<{ status: number; body: Json }> {
  return net.s.call(`/api/v2.2/pairs/${lc(pool.address)}/ohlcv?chain=0x539&${query}`);
}

async function candles(pool: Created, tf: string, currency: string, from: number, to: number): Promise<Json[]> {
  const r = await ohlcv(pool, `timeframe=${tf}&currency=${currency}&fromDate=${from}&toDate=${to}&limit=100`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body.cursor).toBeNull();
  return r.body.result;
}

describe('GET /pairs/:address/ohlcv over hours of block time', () => {
  const TIMEFRAMES = ['30s', '1min', '5min', '1h', '4h', '1d', '1w', '1M'];

  it('answers each timeframe, stored or priced swap by swap, exactly as the swaps priced here', async () => {
    const { usdc, weth, tka, tkb } = dex.tokens;
    const pools: Array<[string, Created, Hex, Hex, 'v2' | 'v3']> = [
      ['WETH/USDC', net.wethUsdc, weth.address, usdc.address, 'v2'],
      ['TKA/WETH', net.tkaWeth, tka.address, weth.address, 'v2'],
      ['TKB/USDC', net.tkbUsdc, tkb.address, usdc.address, 'v3'],
    ];
    const from = day - 3 * 3600;
    const to = day + 4 * 3600;
    for (const [name, pool, base, quote, kind] of pools)
      for (const currency of ['usd', 'native'] as const) {
        const list = await trades(pool, base, quote, kind, currency);
        expect(list.length, name).toBeGreaterThanOrEqual(2);
        for (const tf of TIMEFRAMES)
          expect(await candles(pool, tf, currency, from, to), `${name} ${currency} ${tf}`).toEqual(expectedCandles(list, tf));
      }
    // The day boundary is crossed, several swaps share a minute, and hours hold more than one minute.
    const eth = expectedCandles(await trades(net.wethUsdc, weth.address, usdc.address, 'v2', 'usd'), '1d');
    expect(eth.length).toBe(2);
    expect((await candles(net.wethUsdc, '1min', 'usd', from, to)).some((c) => c.trades >= 3)).toBe(true);
    expect((await candles(net.wethUsdc, '1h', 'usd', from, to)).some((c) => c.trades >= 4)).toBe(true);
  });

  it('answers whole buckets, however the range cuts them', async () => {
    // A range inside the first swaps' minute and hour: the candles of that minute and hour, all their swaps.
    const inside = day - 7200 + 30;
    const minute = await candles(net.wethUsdc, '1min', 'usd', inside, inside + 1);
    expect(minute).toHaveLength(1);
    expect(minute[0]!.trades).toBe(3);
    // The hour holds a fifth swap, 40 s before the next hour.
    const hour = await candles(net.wethUsdc, '1h', 'usd', inside, inside);
    expect(hour).toHaveLength(1);
    expect(hour[0]).toMatchObject({ timestamp: new Date((day - 7200) * 1000).toISOString(), trades: 5 });
    // Swaps priced one by one: 10 s into the first 30 s, after its first swap.
    const seconds = await candles(net.wethUsdc, '30s', 'usd', day - 7200 + 10, day - 7200 + 10);
    const { weth, usdc } = dex.tokens;
    const first = expectedCandles(await trades(net.wethUsdc, weth.address, usdc.address, 'v2', 'usd'), '30s').find(
      (c) => c.timestamp === new Date((day - 7200) * 1000).toISOString(),
    );
    expect(first?.trades).toBeGreaterThanOrEqual(1);
    expect(seconds).toEqual([first]);
  });

  it('reads decades of stored days, and years of seconds from the swaps', async () => {
    const months = await ohlcv(net.wethUsdc, `timeframe=1M&fromDate=0&toDate=${day + 86_400}`);
    expect(months.status, JSON.stringify(months.body)).toBe(200);
    expect(months.body.result.reduce((n: number, c: Json) => n + c.trades, 0)).toBe(8);
    const seconds = await ohlcv(net.wethUsdc, `timeframe=1s&fromDate=${day - 86_400 * 365 * 2}&toDate=${day + 86_400}&limit=100`);
    expect(seconds.status, JSON.stringify(seconds.body)).toBe(200);
    expect(seconds.body.result).toHaveLength(8);
  });
});

/**
 * The same pairs under /v1 (engine/crosschain/trades.ts): ohlcv (with connectedCandles computed here from the
 * expected candles), the pair's and a token's swaps against the pools' Swap logs, and TKB's top traders against
 * its V3 Swap logs valued in USDC ($1) and its pool's price at the head.
 */
describe('GET /v1/chains/:chainAlias/pairs and tokens', () => {
  const v1 = (path: string) => net.s.call(`/v1/chains/0x539/${path}`);
  const from = () => day - 3 * 3600;
  const to = () => day + 4 * 3600;

  it('answers ohlcv as v2.2 does, and connected: each candle opening at the close before it', async () => {
    const { weth, usdc } = dex.tokens;
    const expected = expectedCandles(await trades(net.wethUsdc, weth.address, usdc.address, 'v2', 'usd'), '1h');
    expect(expected.length).toBeGreaterThanOrEqual(3);
    const plain = await v1(`pairs/${lc(net.wethUsdc.address)}/ohlcv?timeframe=1h&currency=usd&fromDate=${from()}&toDate=${to()}`);
    expect(plain.status, JSON.stringify(plain.body)).toBe(200);
    expect(plain.body).toMatchObject({
      cursor: null,
      page: 0,
      pairAddress: lc(net.wethUsdc.address),
      tokenAddress: lc(weth.address),
      timeframe: '1h',
      currency: 'usd',
      meta: { syncedAt: { '0x539': expect.any(Number) } },
    });
    expect(plain.body.result).toEqual(expected);
    const connected = expected.map((c, i) => {
      const before = expected[i + 1];
      return before === undefined
        ? c
        : { ...c, open: before.close, high: Math.max(c.high, before.close), low: Math.min(c.low, before.close) };
    });
    // The hours' prices moved between candles: connecting changes something.
    expect(connected).not.toEqual(expected);
    const pages: Json[] = [];
    let cursor: string | null = null;
    const query = `timeframe=1h&fromDate=${from()}&toDate=${to()}&connectedCandles=true&limit=2`;
    do {
      const r = await v1(`pairs/${lc(net.wethUsdc.address)}/ohlcv?${query}${cursor === null ? '' : `&cursor=${cursor}`}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      pages.push(...r.body.result);
      // The cursor is of these candles only: unconnected ones are another list.
      if (r.body.cursor !== null)
        expect(
          (
            await v1(
              `pairs/${lc(net.wethUsdc.address)}/ohlcv?${query.replace('connectedCandles=true', 'connectedCandles=false')}&cursor=${r.body.cursor}`,
            )
          ).body.details,
        ).toEqual({ field: 'cursor' });
      cursor = r.body.cursor;
    } while (cursor !== null);
    expect(pages).toEqual(connected);
  });

  it("answers the pair's and the token's swaps as the Swap logs have them, newest first", async () => {
    const { tkb } = dex.tokens;
    const client = publicClient(anvil.url);
    for (const [path, pool, kind] of [
      [`pairs/${lc(net.wethUsdc.address)}/swaps`, net.wethUsdc, 'v2'],
      [`tokens/${lc(tkb.address)}/swaps`, net.tkbUsdc, 'v3'],
    ] as const) {
      const logs = await client.getLogs({ address: pool.address, event: kind === 'v2' ? V2_SWAP : V3_SWAP, fromBlock: 0n });
      const r = await v1(`${path}?limit=100`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.meta.syncedAt['0x539']).toEqual(expect.any(Number));
      expect(r.body.result.map((s: Json) => [s.transactionHash, s.blockNumber])).toEqual(
        logs.map((l) => [l.transactionHash, Number(l.blockNumber)]).reverse(),
      );
    }
    const asc = await v1(`tokens/${lc(tkb.address)}/swaps?order=ASC&transactionTypes=sell`);
    expect(asc.body.result.map((s: Json) => s.transactionType)).toEqual(['sell']);
    for (const [path, field] of [
      ['pairs/0x12/swaps', 'pairAddress'],
      ['tokens/0x12/swaps', 'tokenAddress'],
      [`pairs/${lc(net.wethUsdc.address)}/ohlcv?fromDate=1&toDate=2&connectedCandles=maybe`, 'connectedCandles'],
      [`tokens/${lc(tkb.address)}/top-traders?sortBy=luck`, 'sortBy'],
    ]) {
      const bad = await v1(path!);
      expect(bad.status, path).toBe(400);
      expect(bad.body.details.field, path).toBe(field);
    }
    const notDex = await net.s.call(`/v1/chains/bitcoin/pairs/${lc(net.wethUsdc.address)}/swaps`);
    expect(notDex.status).toBe(400);
    expect(notDex.body.details.field).toBe('chainAlias');
  });

  it("ranks TKB's traders with volumes and weighted-average-cost profit from its Swap logs", async () => {
    const { tkb, usdc } = dex.tokens;
    const client = publicClient(anvil.url);
    const tkbIs0 = lc(net.tkbUsdc.token0) === lc(tkb.address);
    const logs = await client.getLogs({ address: net.tkbUsdc.address, event: V3_SWAP, fromBlock: 0n });
    expect(logs.length).toBeGreaterThanOrEqual(2);
    const w = { bought: 0, sold: 0, boughtUsd: 0, soldUsd: 0, held: 0, heldCost: 0, matchedCost: 0, proceeds: 0, trades: 0, wallet: '' };
    for (const l of logs) {
      const a = l.args as Record<string, bigint>;
      // The pool's view: positive = paid into the pool (the trader sold it).
      const tkbMoved = Number(tkbIs0 ? a['amount0']! : a['amount1']!) / 10 ** net.decimalsOf(tkb.address);
      const usd = Math.abs(Number(tkbIs0 ? a['amount1']! : a['amount0']!)) / 10 ** net.decimalsOf(usdc.address);
      w.wallet = lc((await client.getTransaction({ hash: l.transactionHash! })).from);
      w.trades++;
      if (tkbMoved < 0) {
        w.bought += -tkbMoved;
        w.boughtUsd += usd;
        w.held += -tkbMoved;
        w.heldCost += usd;
      } else {
        const matched = Math.min(tkbMoved, w.held);
        const cost = (w.heldCost * matched) / w.held;
        w.sold += tkbMoved;
        w.soldUsd += usd;
        w.matchedCost += cost;
        w.proceeds += (usd * matched) / tkbMoved;
        w.held -= matched;
        w.heldCost -= cost;
      }
    }
    expect(w.bought).toBeGreaterThan(0);
    expect(w.sold).toBeGreaterThan(0);
    const head = Number(await client.getBlockNumber());
    const price = asNumber(await net.v3Price(net.tkbUsdc, tkb.address, head));
    const indexed = await net.indexed();
    const r = await v1(`tokens/${lc(tkb.address)}/top-traders`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.meta).toEqual({ syncedAt: { '0x539': indexed } });
    expect(r.body.token).toMatchObject({ chain: '0x539', tokenAddress: lc(tkb.address), decimals: net.decimalsOf(tkb.address) });
    expect(r.body.token.currentPriceUsd).toBeCloseTo(price, 6);
    expect(r.body.result).toHaveLength(1);
    const t = r.body.result[0];
    const realized = w.proceeds - w.matchedCost;
    const unrealized = w.held * price - w.heldCost;
    expect(t).toMatchObject({ walletAddress: w.wallet, totalTrades: w.trades });
    for (const [field, value] of [
      ['totalTokensBought', w.bought],
      ['totalTokensSold', w.sold],
      ['totalBoughtVolumeUsd', w.boughtUsd],
      ['totalSoldVolumeUsd', w.soldUsd],
      ['realizedProfitUsd', realized],
      ['unrealizedProfitUsd', unrealized],
      ['totalPnlUsd', realized + unrealized],
    ] as const) {
      expect(Number(t[field]), field).toBeCloseTo(value, 4);
    }
    expect(realized).not.toBeCloseTo(0, 4);
    // A window before the swaps holds no trader; minTradeCount above the wallet's count drops it.
    expect((await v1(`tokens/${lc(tkb.address)}/top-traders?fromTimestamp=0&toTimestamp=1000`)).body.result).toEqual([]);
    expect((await v1(`tokens/${lc(tkb.address)}/top-traders?minTradeCount=${w.trades + 1}`)).body.result).toEqual([]);
  });
});
