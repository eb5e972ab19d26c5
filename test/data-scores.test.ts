import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAbiItem, parseUnits, type Hex } from 'viem';
import type { Anvil } from '../http/clients/anvil.js';
import { tokenScoreOf, type ScoreInputs } from '../engine/data-api/scores/score.js';
import { DEV_ACCOUNTS, publicClient } from './contracts.js';
import { transferToken, v2ReservesAt, v2RouterSwapExactIn, type Dex } from './dex.js';
import { decimalText, startPricedDevnet, times, type PricedDevnet, type Ratio } from './priced-devnet.js';

/**
 * GET /api/v2.2/tokens/:tokenAddress/score and /score/historical on the priced devnet (test/priced-devnet.ts): TKA
 * (priced in its V2 pool against WETH, WETH against USDC) traded over 25 days of block time (anvil's
 * evm_setNextBlockTimestamp), its supply spread over 15 wallets. Every metric the answer reports (price, its 24 h
 * change, liquidity, volume and swaps per window, supply and the top-10 share) is computed here from the Swap and
 * Transfer logs and the pools' reserves read by eth_call at the block, and the score from those by the documented rule.
 */

type Json = Record<string, any>;

const DAY = 86_400;
const WINDOWS = { '10m': 600, '30m': 1800, '1h': 3600, '4h': 14_400, '12h': 43_200, '1d': DAY, '7d': 7 * DAY, '30d': 30 * DAY } as const;

let net: PricedDevnet;
let anvil: Anvil;
let dex: Dex;
/** Block 0's time: no score point before it. */
let genesis: number;
/** Every block's time, by number (the chain is short). */
let blockTimes: number[];

const lc = (a: string): string => a.toLowerCase();
/** How the answers turn an exact ratio into a number: its decimal text (36 digits, truncated), parsed. */
const asNumber = (r: Ratio): number => Number(decimalText(r, 36));
const add = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });
const whole = (raw: bigint): Ratio => ({ num: raw, den: 10n ** 18n });

const V2_SWAP = parseAbiItem(
  'event Swap(address indexed sender, uint amount0In, uint amount1In, uint amount0Out, uint amount1Out, address indexed to)',
);
const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

beforeAll(async () => {
  net = await startPricedDevnet();
  ({ anvil, dex } = net);
  const at = net.at;
  const { usdc, weth, tka } = dex.tokens;
  const client = publicClient(anvil.url);
  genesis = Number((await client.getBlock({ blockNumber: 0n })).timestamp);
  const t0 = Number((await client.getBlock()).timestamp);
  // A quarter of TKA's supply stays with the deployer; 15 wallets get 5 % each (the top 10: the deployer and 9 of them).
  const supply = (await client.readContract({
    address: tka.address,
    abi: [parseAbiItem('function totalSupply() view returns (uint256)')],
    functionName: 'totalSupply',
  })) as bigint;
  for (let i = 1; i <= 15; i++)
    await transferToken(anvil.url, tka.address, `0x${(0xa000 + i).toString(16).padStart(40, '0')}` as Hex, supply / 20n + BigInt(i));
  const sellTka = (amount: string) => () => v2RouterSwapExactIn(anvil.url, dex, [tka.address, weth.address], parseUnits(amount, 18));
  const buyTka = (eth: string) => () => v2RouterSwapExactIn(anvil.url, dex, [weth.address, tka.address], parseUnits(eth, 18));
  // Swaps 20 days, 3 days, 26 hours, 6 hours, 20 and 5 minutes before the head; at the head ether's USD price quadruples
  // (TKA's with it, and its pool's liquidity): a past point read at the head's price or pools scores otherwise.
  const head = t0 + 25 * DAY;
  await at(head - 20 * DAY, sellTka('40'));
  await at(head - 3 * DAY, buyTka('0.05'));
  await at(head - 26 * 3600, sellTka('25'));
  await at(head - 6 * 3600, buyTka('0.02'));
  await at(head - 1200, sellTka('10'));
  await at(head - 300, sellTka('5'));
  await at(head, () => v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address], net.units('2000000', usdc)));
  const last = await net.indexed();
  blockTimes = [];
  for (let n = 0; n <= last; n++) blockTimes.push(Number((await client.getBlock({ blockNumber: BigInt(n) })).timestamp));
}, 120_000);

afterAll(async () => {
  await net?.stop();
});

/** The last block at or before `t`. */
const blockAt = (t: number): number => blockTimes.findLastIndex((bt) => bt <= t);

/** TKA's USD price at `block`: its price in WETH (getReserves) times WETH's in USDC. */
async function tkaUsd(block: number): Promise<Ratio> {
  const { weth, tka } = dex.tokens;
  return times(await net.v2Price(net.tkaWeth, tka.address, block), await net.v2Price(net.wethUsdc, weth.address, block));
}

/** TKA's top-10 share of its supply in percent (6 decimals, truncated), from every Transfer log. */
async function top10Percent(): Promise<number> {
  const balances = new Map<string, bigint>();
  let supply = 0n;
  for (const l of await publicClient(anvil.url).getLogs({ address: dex.tokens.tka.address, event: TRANSFER, fromBlock: 0n })) {
    const { from, to, value } = l.args as { from: Hex; to: Hex; value: bigint };
    if (BigInt(from) === 0n) supply += value;
    else balances.set(lc(from), (balances.get(lc(from)) ?? 0n) - value);
    balances.set(lc(to), (balances.get(lc(to)) ?? 0n) + value);
  }
  const top = [...balances.values()]
    .sort((a, b) => (b > a ? 1 : b < a ? -1 : 0))
    .slice(0, 10)
    .reduce((a, b) => a + b, 0n);
  return Number((top * 10n ** 8n) / supply) / 1e6;
}

/** The score's metrics at time `t` (its last block at or before), computed here from the logs and reserves. */
async function expectedAt(t: number) {
  const { tka, weth } = dex.tokens;
  const block = blockAt(t);
  const usd = await tkaUsd(block);
  const usdPrice = asNumber(usd);
  const dayAgo = asNumber(await tkaUsd(blockAt(blockTimes[block]! - DAY)));
  const usdPrice24hrPercentChange = (100 * (usdPrice - dayAgo)) / dayAgo;
  // TKA's one pool: both sides in USD, to the cent (TKA's side is its WETH's worth at the pool's own price).
  const [tkaReserve, wethReserve] = await v2ReservesAt(anvil.url, net.tkaWeth, block, tka.address);
  const wethUsd = await net.v2Price(net.wethUsdc, weth.address, block);
  const liquidityUsd = Number(decimalText(add(times(whole(tkaReserve), usd), times(whole(wethReserve), wethUsd)), 2));
  const moved = Object.fromEntries(Object.keys(WINDOWS).map((w) => [w, 0n])) as Record<keyof typeof WINDOWS, bigint>;
  const transactions = Object.fromEntries(Object.keys(WINDOWS).map((w) => [w, 0])) as Record<keyof typeof WINDOWS, number>;
  for (const l of await publicClient(anvil.url).getLogs({
    address: net.tkaWeth.address,
    event: V2_SWAP,
    fromBlock: 0n,
    toBlock: BigInt(block),
  })) {
    const a = l.args as Record<string, bigint>;
    const amount = lc(net.tkaWeth.token0) === lc(tka.address) ? a['amount0In']! + a['amount0Out']! : a['amount1In']! + a['amount1Out']!;
    const time = blockTimes[Number(l.blockNumber)]!;
    for (const [w, seconds] of Object.entries(WINDOWS) as Array<[keyof typeof WINDOWS, number]>)
      if (time >= t - seconds) {
        moved[w] += amount;
        transactions[w]++;
      }
  }
  const volumeUsd = Object.fromEntries(Object.entries(moved).map(([w, raw]) => [w, asNumber(times(whole(raw), usd))]));
  return { usdPrice, usdPrice24hrPercentChange, liquidityUsd, volumeUsd, transactions };
}

const get = (path: string) => net.s.call(`/api/v2.2${path}${path.includes('?') ? '&' : '?'}chain=0x539`);

describe('GET /tokens/:tokenAddress/score', () => {
  it('reports the metrics computed from the swaps and transfers, and the score the documented rule gives them', async () => {
    const tka = lc(dex.tokens.tka.address);
    const r = await get(`/tokens/${tka}/score`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const head = blockTimes.at(-1)!;
    expect(r.body).toMatchObject({ tokenAddress: tka, chainId: '0x539', updatedAt: new Date(head * 1000).toISOString() });
    const want = await expectedAt(head);
    const m: Json = r.body.metrics;
    expect(m['usdPrice']).toBe(want.usdPrice);
    expect(m['usdPrice24hrPercentChange']).toBeCloseTo(want.usdPrice24hrPercentChange, 9);
    expect(want.usdPrice24hrPercentChange).not.toBe(0);
    expect(m['liquidityUsd']).toBeCloseTo(want.liquidityUsd, 6);
    expect(m['transactions']).toEqual(want.transactions);
    // Every window differs from the next but one: the swaps fall between them.
    expect(want.transactions).toEqual({ '10m': 1, '30m': 2, '1h': 2, '4h': 2, '12h': 3, '1d': 3, '7d': 5, '30d': 6 });
    for (const w of Object.keys(WINDOWS)) expect(m['volumeUsd'][w], w).toBe(want.volumeUsd[w]);
    const top10 = await top10Percent();
    expect(top10).toBeGreaterThan(60);
    expect(top10).toBeLessThan(80);
    expect(m['supply']).toEqual({ total: '1000000000000', top10Percent: top10 });
    const inputs: ScoreInputs = {
      liquidityUsd: want.liquidityUsd,
      volumeUsd1d: want.volumeUsd['1d']!,
      transactions1d: want.transactions['1d'],
      usdPricePercentChange1d: want.usdPrice24hrPercentChange,
      top10Percent: top10,
    };
    const scored = tokenScoreOf(inputs);
    expect(r.body.score).toBe(scored.score);
    for (const [k, v] of Object.entries(scored.subScores)) expect(r.body.subScores[k], k).toBeCloseTo(v, 6);
    expect(scored.score).toBeGreaterThan(0);
  });

  it('answers the score at points over 1d, 7d and 30d, each as computed here at its time; the newest the current score', async () => {
    const tka = lc(dex.tokens.tka.address);
    const head = blockTimes.at(-1)!;
    const current = (await get(`/tokens/${tka}/score`)).body.score;
    const top10 = await top10Percent();
    const scoreAt = async (t: number): Promise<number> => {
      const want = await expectedAt(t);
      return tokenScoreOf({
        liquidityUsd: want.liquidityUsd,
        volumeUsd1d: want.volumeUsd['1d']!,
        transactions1d: want.transactions['1d'],
        usdPricePercentChange1d: want.usdPrice24hrPercentChange,
        top10Percent: top10,
      }).score;
    };
    for (const [timeframe, points, step] of [
      ['1d', 24, 3600],
      ['7d', 28, 6 * 3600],
      ['30d', 30, DAY],
    ] as const) {
      const r = await get(`/tokens/${tka}/score/historical?timeframe=${timeframe}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ chainId: '0x539', tokenAddress: tka });
      // Oldest first, `step` apart, ending at the head; none before block 0 (the chain is 25 days old).
      const times = Array.from({ length: points }, (_, i) => head - (points - 1 - i) * step).filter((t) => t >= genesis);
      expect(r.body.timeseries.map((p: Json) => p['timestamp'])).toEqual(times.map((t) => new Date(t * 1000).toISOString()));
      expect(r.body.timeseries.at(-1).score).toBe(current);
      // Two past points each (30d, 7d: one with a swap in its day, one without).
      const checks = timeframe === '1d' ? [12, 20] : timeframe === '7d' ? [4, 13] : [15, 2];
      for (const back of checks) {
        const t = head - back * step;
        expect(
          r.body.timeseries.find((p: Json) => p['timestamp'] === new Date(t * 1000).toISOString()).score,
          `${timeframe} at -${back}`,
        ).toBe(await scoreAt(t));
      }
    }
    const thirty = (await get(`/tokens/${tka}/score/historical?timeframe=30d`)).body.timeseries;
    expect(thirty.length).toBeLessThan(30);
    expect(new Set(thirty.map((p: Json) => p['score'])).size).toBeGreaterThan(1);
  });

  it('answers 400 naming the bad field, 404 for a token the indexes never saw', async () => {
    const tka = lc(dex.tokens.tka.address);
    for (const [path, field] of [
      [`/tokens/0x12/score`, 'tokenAddress'],
      [`/tokens/0x12/score/historical?timeframe=1d`, 'tokenAddress'],
      [`/tokens/${tka}/score/historical`, 'timeframe'],
      [`/tokens/${tka}/score/historical?timeframe=2d`, 'timeframe'],
    ] as const) {
      const r = await get(path);
      expect(r.status, path).toBe(400);
      expect(r.body.details.field, path).toBe(field);
    }
    const unknown = `0x${'5'.repeat(40)}`;
    expect((await get(`/tokens/${unknown}/score`)).status).toBe(404);
    expect((await get(`/tokens/${unknown}/score/historical?timeframe=7d`)).status).toBe(404);
    // A wallet that holds TKA is no token.
    expect((await get(`/tokens/${lc(DEV_ACCOUNTS[0].address)}/score`)).status).toBe(404);
  });
});
