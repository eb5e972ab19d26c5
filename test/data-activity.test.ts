import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAbiItem, parseUnits, type Hex } from 'viem';
import type { Anvil } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, publicClient } from './contracts.js';
import { transferToken, v2RouterSwapExactIn, v2ReservesAt, v3SwapAtReserves, type Dex } from './dex.js';
import { decimalText, startPricedDevnet, times, type PricedDevnet, type Ratio } from './priced-devnet.js';

/**
 * The DEX activity endpoints on the priced devnet (test/priced-devnet.ts): GET /latestBlockNumber/:chain,
 * GET /pairs/:address/stats, POST /tokens/analytics, POST /tokens/analytics/timeseries and GET /tokens/trending,
 * and the entities endpoints (501). TKA is traded in its V2 pool against WETH by two wallets over 30 hours of block
 * time (anvil's evm_setNextBlockTimestamp), TKB once in its V3 pool; every figure is computed here from the pools'
 * Swap logs, their transactions' senders and the reserves read by eth_call at the block.
 */

type Json = Record<string, any>;

const DAY = 86_400;
const [K0, K1] = DEV_ACCOUNTS;

let net: PricedDevnet;
let anvil: Anvil;
let dex: Dex;
/** Every block's time, by number (the chain is short). */
let blockTimes: number[];
let headBlock: number;

const lc = (a: string): string => a.toLowerCase();
const asNumber = (r: Ratio): number => Number(decimalText(r, 36));
const add = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });
const whole = (raw: bigint, decimals = 18): Ratio => ({ num: raw, den: 10n ** BigInt(decimals) });
/** A USD amount as the answers' strings write it: truncated to the cent, two decimals. */
const cents = (r: Ratio): string => {
  const [int, frac = ''] = decimalText(r, 2).split('.');
  return `${int}.${frac.padEnd(2, '0')}`;
};

const V2_SWAP = parseAbiItem(
  'event Swap(address indexed sender, uint amount0In, uint amount1In, uint amount0Out, uint amount1Out, address indexed to)',
);
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

const get = (path: string) => net.s.call(`/api/v2.2${path}${path.includes('?') ? '&' : '?'}chain=0x539`);
const post = (path: string, json: unknown) => net.s.call(`/api/v2.2${path}`, { method: 'POST', json });

beforeAll(async () => {
  net = await startPricedDevnet();
  ({ anvil, dex } = net);
  const { usdc, weth, tka, tkb } = dex.tokens;
  const client = publicClient(anvil.url);
  // The second trader's tokens.
  await transferToken(anvil.url, tka.address, K1.address, parseUnits('1000', 18));
  await transferToken(anvil.url, weth.address, K1.address, parseUnits('10', 18));
  const t0 = Number((await client.getBlock()).timestamp);
  const head = t0 + 3 * DAY;
  const sell =
    (amount: string, account = K0) =>
    () =>
      v2RouterSwapExactIn(anvil.url, dex, [tka.address, weth.address], parseUnits(amount, 18), { account });
  const buy =
    (eth: string, account = K0) =>
    () =>
      v2RouterSwapExactIn(anvil.url, dex, [weth.address, tka.address], parseUnits(eth, 18), { account });
  // TKA: 30 h (outside the day), 20 h, 3 h, 30 min and 2 min before the head; TKB once, an hour before; at the head
  // ether's price moves (TKA's with it).
  await net.at(head - 30 * 3600, sell('25'));
  await net.at(head - 20 * 3600, buy('0.02', K1));
  await net.at(head - 3 * 3600, sell('10'));
  await net.at(head - 3600, () => v3SwapAtReserves(anvil.url, net.tkbUsdc, usdc.address, net.units('100', usdc)));
  await net.at(head - 1800, sell('5', K1));
  await net.at(head - 120, buy('0.01'));
  await net.at(head, () => v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address], net.units('500000', usdc)));
  headBlock = await net.indexed();
  blockTimes = [];
  for (let n = 0; n <= headBlock; n++) blockTimes.push(Number((await client.getBlock({ blockNumber: BigInt(n) })).timestamp));
  void tkb;
}, 180_000);

afterAll(async () => {
  await net?.stop();
});

/** The last block at or before `t`. */
const blockAt = (t: number): number => blockTimes.findLastIndex((bt) => bt <= t);
const headTime = (): number => blockTimes[headBlock]!;

/** TKA's price in WETH and in USD at `block` (the pools' reserves). */
async function tkaPrices(block: number): Promise<{ inWeth: Ratio; usd: Ratio; wethUsd: Ratio }> {
  const { weth, tka } = dex.tokens;
  const inWeth = await net.v2Price(net.tkaWeth, tka.address, block);
  const wethUsd = await net.v2Price(net.wethUsdc, weth.address, block);
  return { inWeth, usd: times(inWeth, wethUsd), wethUsd };
}

/** TKA/WETH's two sides in USD at `block`, exact. */
async function tkaPoolLiquidity(block: number): Promise<Ratio> {
  const { tka } = dex.tokens;
  const [tkaReserve, wethReserve] = await v2ReservesAt(anvil.url, net.tkaWeth, block, tka.address);
  const { usd, wethUsd } = await tkaPrices(block);
  return add(times(whole(tkaReserve), usd), times(whole(wethReserve), wethUsd));
}

/** TKA's swaps in its pool, newest first: block time, the pool's TKA change (positive: in), the transaction's sender. */
async function tkaSwaps(): Promise<Array<{ block: number; time: number; delta: bigint; trader: string }>> {
  const client = publicClient(anvil.url);
  const tkaIs0 = lc(net.tkaWeth.token0) === lc(dex.tokens.tka.address);
  const swaps = [];
  for (const l of await client.getLogs({ address: net.tkaWeth.address, event: V2_SWAP, fromBlock: 0n, toBlock: BigInt(headBlock) })) {
    const a = l.args as Record<string, bigint>;
    const delta = tkaIs0 ? a['amount0In']! - a['amount0Out']! : a['amount1In']! - a['amount1Out']!;
    const tx = await client.getTransaction({ hash: l.transactionHash! });
    swaps.push({ block: Number(l.blockNumber), time: blockTimes[Number(l.blockNumber)]!, delta, trader: lc(tx.from) });
  }
  return swaps.reverse();
}

/** The swaps counted per window back from the head, as the answers count them; volumes at `usd` per TKA. */
async function counted(windows: Record<string, number>, usd: Ratio) {
  const swaps = await tkaSwaps();
  const out: Record<string, Record<string, number>> = { buys: {}, sells: {}, buyers: {}, sellers: {}, buyVolume: {}, sellVolume: {} };
  for (const [w, seconds] of Object.entries(windows)) {
    const inside = swaps.filter((s) => s.time >= headTime() - seconds);
    const bought = inside.filter((s) => s.delta < 0n);
    const sold = inside.filter((s) => s.delta > 0n);
    out['buys']![w] = bought.length;
    out['sells']![w] = sold.length;
    out['buyers']![w] = new Set(bought.map((s) => s.trader)).size;
    out['sellers']![w] = new Set(sold.map((s) => s.trader)).size;
    out['buyVolume']![w] = bought.reduce((v, s) => v + asNumber(times(whole(-s.delta), usd)), 0);
    out['sellVolume']![w] = sold.reduce((v, s) => v + asNumber(times(whole(s.delta), usd)), 0);
  }
  return out;
}

describe('GET /latestBlockNumber/:chain', () => {
  it("answers the indexed head as the hosted string, the node's head in x-node-block-number", async () => {
    const node = Number(await publicClient(anvil.url).getBlockNumber({ cacheTime: 0 }));
    for (const chain of ['0x539', '1337']) {
      const r = await net.s.call(`/api/v2.2/latestBlockNumber/${chain}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toBe(String(headBlock));
      expect(r.headers.get('x-node-block-number')).toBe(String(node));
    }
    // A chain known but not followed here, and one unknown: 400 naming `chain`.
    for (const chain of ['eth', 'nochain']) {
      const r = await net.s.call(`/api/v2.2/latestBlockNumber/${chain}`);
      expect([r.status, r.body.details?.field], chain).toEqual([400, 'chain']);
    }
  });
});

describe('GET /pairs/:address/stats', () => {
  it("answers the pair from its base token: price, liquidity and their changes, swaps, volumes and traders by window, as the pool's logs and reserves say", async () => {
    const { tka, weth } = dex.tokens;
    const r = await get(`/pairs/${lc(net.tkaWeth.address)}/stats`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const now = await tkaPrices(headBlock);
    expect(r.body).toMatchObject({
      tokenAddress: lc(tka.address),
      tokenName: 'Token A',
      tokenSymbol: 'TKA',
      tokenLogo: null,
      pairCreated: null,
      pairLabel: 'TKA/WETH',
      pairAddress: lc(net.tkaWeth.address),
      exchange: 'MiniSwap',
      exchangeAddress: lc(dex.v2Factory.address),
      exchangeLogo: null,
      exchangeUrl: null,
      currentUsdPrice: decimalText(now.usd, 18),
      // Quoted in the wrapped native token: its price in it.
      currentNativePrice: decimalText(now.inWeth, 18),
      totalLiquidityUsd: cents(await tkaPoolLiquidity(headBlock)),
    });
    const windows = { '5min': 300, '1h': 3600, '4h': 14_400, '24h': DAY };
    const want = await counted(windows, now.usd);
    for (const k of ['buys', 'sells', 'buyers', 'sellers'] as const) expect(r.body[k], k).toEqual(want[k]);
    // Every window differs from the next: the swaps fall between them.
    expect(want['buys']).toEqual({ '5min': 1, '1h': 1, '4h': 1, '24h': 2 });
    expect(want['sells']).toEqual({ '5min': 0, '1h': 1, '4h': 2, '24h': 2 });
    expect(want['sellers']!['4h']).toBe(2);
    for (const w of Object.keys(windows)) {
      expect(r.body.buyVolume[w], w).toBeCloseTo(want['buyVolume']![w]!, 9);
      expect(r.body.sellVolume[w], w).toBeCloseTo(want['sellVolume']![w]!, 9);
      expect(r.body.totalVolume[w], w).toBeCloseTo(want['buyVolume']![w]! + want['sellVolume']![w]!, 9);
      // The price and liquidity `w` before the head: at the last block at or before then.
      const then = blockAt(headTime() - windows[w as keyof typeof windows]);
      const [usdNow, usdThen] = [asNumber(now.usd), asNumber((await tkaPrices(then)).usd)];
      expect(r.body.pricePercentChange[w], w).toBeCloseTo((100 * (usdNow - usdThen)) / usdThen, 9);
      const [liqNow, liqThen] = [Number(cents(await tkaPoolLiquidity(headBlock))), Number(cents(await tkaPoolLiquidity(then)))];
      expect(r.body.liquidityPercentChange[w], w).toBeCloseTo((100 * (liqNow - liqThen)) / liqThen, 9);
    }
    // Ether's move at the head moved TKA's USD price within every window.
    expect(r.body.pricePercentChange['5min']).not.toBe(0);
    void weth;
  });

  it('answers 404 for an address that is no indexed pool, 400 naming a malformed one', async () => {
    expect((await get(`/pairs/${lc(dex.tokens.tka.address)}/stats`)).status).toBe(404);
    const bad = await get('/pairs/0x12/stats');
    expect([bad.status, bad.body.details.field]).toEqual([400, 'address']);
  });
});

describe('POST /tokens/analytics', () => {
  it('answers GET /tokens/:tokenAddress/analytics for each token, in the order asked, naming its chain and token', async () => {
    const { tka, tkb } = dex.tokens;
    const r = await post('/tokens/analytics', {
      tokens: [
        { chain: '0x539', tokenAddress: tka.address },
        { chain: '1337', tokenAddress: lc(tkb.address) },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const one = async (token: string) => ({
      chainId: '0x539',
      tokenAddress: lc(token),
      ...(await get(`/tokens/${lc(token)}/analytics`)).body,
    });
    expect(r.body).toEqual({ categories: [await one(tka.address), await one(tkb.address)] });
    // TKA's day: the swaps counted here.
    const want = await counted({ '24h': DAY }, (await tkaPrices(headBlock)).usd);
    expect(r.body.categories[0].totalBuys['24h']).toBe(want['buys']!['24h']);
    expect(r.body.categories[1].totalSells['24h'] + r.body.categories[1].totalBuys['24h']).toBe(1);
  });

  it('answers 400 naming `tokens` for a chain not followed here, one that is no EVM chain, and more than 30 tokens', async () => {
    const token = lc(dex.tokens.tka.address);
    for (const tokens of [
      [{ chain: 'eth', tokenAddress: token }],
      [{ chain: 'solana', tokenAddress: token }],
      Array.from({ length: 31 }, () => ({ chain: '0x539', tokenAddress: token })),
      [],
    ]) {
      const r = await post('/tokens/analytics', { tokens });
      expect([r.status, r.body.details?.field], JSON.stringify(r.body)).toEqual([400, expect.stringMatching(/^tokens/)]);
    }
  });
});

describe('POST /tokens/analytics/timeseries', () => {
  it("answers each token's volumes per hour of the last day at each hour's price, and its liquidity and valuation then", async () => {
    const { tka } = dex.tokens;
    const r = await net.s.call('/api/v2.2/tokens/analytics/timeseries?timeframe=1d', {
      method: 'POST',
      json: { tokens: [{ chain: '0x539', tokenAddress: tka.address }] },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const [series] = r.body.result;
    expect(series).toMatchObject({ chainId: '0x539', tokenAddress: lc(tka.address) });
    const last = Math.floor(headTime() / 3600) * 3600;
    const starts = Array.from({ length: 24 }, (_, i) => last - (23 - i) * 3600);
    expect(series.timeseries.map((p: Json) => p['timestamp'])).toEqual(starts.map((t) => new Date(t * 1000).toISOString()));
    const swaps = await tkaSwaps();
    const supply = 1_000_000_000_000n * 10n ** 18n;
    let withSwaps = 0;
    for (const [i, start] of starts.entries()) {
      const block = blockAt(Math.min(start + 3599, headTime()));
      const { usd } = await tkaPrices(block);
      const inside = swaps.filter((s) => s.time >= start && s.time < start + 3600);
      withSwaps += inside.length > 0 ? 1 : 0;
      const sum = (xs: typeof inside) => xs.reduce((a, s) => a + (s.delta < 0n ? -s.delta : s.delta), 0n);
      const p = series.timeseries[i];
      expect(p.buyVolume, p.timestamp).toBeCloseTo(asNumber(times(whole(sum(inside.filter((s) => s.delta < 0n))), usd)), 9);
      expect(p.sellVolume, p.timestamp).toBeCloseTo(asNumber(times(whole(sum(inside.filter((s) => s.delta > 0n))), usd)), 9);
      expect(p.liquidityUsd, p.timestamp).toBeCloseTo(Number(cents(await tkaPoolLiquidity(block))), 6);
      expect(p.fullyDilutedValuation, p.timestamp).toBeCloseTo(asNumber(times(whole(supply), usd)), 3);
    }
    expect(withSwaps).toBeGreaterThanOrEqual(3);
  });

  it('answers 7d in 6-hour steps and 30d in days, leaving out the steps before the first block; 400 naming a bad timeframe', async () => {
    const body = { tokens: [{ chain: '0x539', tokenAddress: dex.tokens.tka.address }] };
    const seven = await net.s.call('/api/v2.2/tokens/analytics/timeseries?timeframe=7d', { method: 'POST', json: body });
    const stamps = seven.body.result[0].timeseries.map((p: Json) => Date.parse(p['timestamp']) / 1000);
    const genesis = blockTimes[0]!;
    const first = Math.floor(headTime() / 21_600) * 21_600 - 27 * 21_600;
    expect(stamps).toEqual(Array.from({ length: 28 }, (_, i) => first + i * 21_600).filter((t) => t + 21_600 - 1 >= genesis));
    const thirty = await net.s.call('/api/v2.2/tokens/analytics/timeseries?timeframe=30d', { method: 'POST', json: body });
    const days = thirty.body.result[0].timeseries.map((p: Json) => p['timestamp']);
    expect(days.length).toBeLessThan(30);
    expect(days.every((t: string) => t.endsWith('T00:00:00.000Z'))).toBe(true);
    const bad = await net.s.call('/api/v2.2/tokens/analytics/timeseries?timeframe=2d', { method: 'POST', json: body });
    expect([bad.status, bad.body.details.field]).toEqual([400, 'timeframe']);
  });
});

describe('GET /tokens/trending', () => {
  it('ranks the tokens by their swaps in the last day, leaving out the stablecoins and the wrapped native token, each with its activity', async () => {
    const { tka, tkb } = dex.tokens;
    const r = await get('/tokens/trending');
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.map((t: Json) => t['tokenAddress'])).toEqual([lc(tka.address), lc(tkb.address)]);
    // Without `chain`: every chain followed here (one).
    expect((await net.s.call('/api/v2.2/tokens/trending')).body).toEqual(r.body);
    expect((await get('/tokens/trending?limit=1')).body).toEqual(r.body.slice(0, 1));
    const now = await tkaPrices(headBlock);
    const windows = { '1h': 3600, '4h': 14_400, '12h': 43_200, '24h': DAY };
    const want = await counted(windows, now.usd);
    const a = r.body[0];
    const firstMint = (await publicClient(anvil.url).getLogs({ address: tka.address, event: TRANSFER, fromBlock: 0n }))[0]!;
    const balances = new Map<string, bigint>();
    for (const l of await publicClient(anvil.url).getLogs({
      address: tka.address,
      event: TRANSFER,
      fromBlock: 0n,
      toBlock: BigInt(headBlock),
    })) {
      const { from, to, value } = l.args as { from: Hex; to: Hex; value: bigint };
      if (BigInt(from) !== 0n) balances.set(lc(from), (balances.get(lc(from)) ?? 0n) - value);
      balances.set(lc(to), (balances.get(lc(to)) ?? 0n) + value);
    }
    expect(a).toMatchObject({
      chainId: '0x539',
      name: 'Token A',
      symbol: 'TKA',
      uniqueName: null,
      decimals: 18,
      logo: null,
      usdPrice: asNumber(now.usd),
      createdAt: blockTimes[Number(firstMint.blockNumber)],
      marketCap: null,
      liquidityUsd: Math.floor(Number(cents(await tkaPoolLiquidity(headBlock)))),
      holders: [...balances.values()].filter((b) => b > 0n).length,
      buyTransactions: want['buys'],
      sellTransactions: want['sells'],
      buyers: want['buyers'],
      sellers: want['sellers'],
    });
    expect(a.transactions).toEqual({ '1h': 2, '4h': 3, '12h': 3, '24h': 4 });
    for (const [w, seconds] of Object.entries(windows)) {
      expect(a.totalVolume[w], w).toBe(Math.floor(want['buyVolume']![w]! + want['sellVolume']![w]!));
      const then = asNumber((await tkaPrices(blockAt(headTime() - seconds))).usd);
      expect(a.pricePercentChange[w], w).toBeCloseTo((100 * (asNumber(now.usd) - then)) / then, 9);
    }
    expect(r.body[1].transactions['24h']).toBe(1);
  });

  it('answers 400 naming `chain` for a chain not followed here', async () => {
    const r = await net.s.call('/api/v2.2/tokens/trending?chain=eth');
    expect([r.status, r.body.details.field]).toEqual([400, 'chain']);
  });
});

describe('the entities endpoints', () => {
  it('answer 501: labels of people and companies are an off-chain dataset this server does not have', async () => {
    for (const path of ['/entities/search?query=binance', '/entities/categories', '/entities/categories/exchanges', '/entities/binance']) {
      const r = await net.s.call(`/api/v2.2${path}`);
      expect([r.status, r.body.message], path).toEqual([
        501,
        expect.stringMatching(
          /^GET \/api\/v2\.2\/entities.*: labels of people and companies .* off-chain dataset this server does not have/,
        ),
      ]);
    }
  });
});
