import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEventLogs, parseUnits, type Hex, type TransactionReceipt } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { deploy, publicClient, type Deployed } from './contracts.js';
import {
  deployDex,
  formatted,
  FULL_RANGE,
  getV4Pool,
  initializeV4Pool,
  isqrt,
  modifyV4Liquidity,
  NATIVE,
  priceCalls,
  sqrtPriceOf,
  v4SwapAtLiquidity,
  type Dex,
  type Ratio,
  type V4Pool,
} from './dex.js';
import { startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { serverEnv } from './streams-harness.js';

/**
 * Uniswap V4 pools end to end: the PoolManager stand-in (test/contracts/TestDexV4.sol, v4-core's events) on a real
 * anvil, registered as a v4 factory in CHAINPOST_PRICING, followed by the real server from block 0. Every price is
 * checked against one computed here from the sqrtPriceX96 the manager holds (getSlot0 at the block) or its Swap
 * event logged; a pool's liquidity in USD against the virtual reserves of its active liquidity.
 */

let anvil: Anvil;
let s: Running;
let dex: Dex;
let manager: Deployed;
/** A second registry PoolManager. */
let other: Deployed;
/** TKA/USDC at $2, full range. */
let tkaUsdc: V4Pool;
/** The native coin against USDC at $2,000: the wrapped native token's price. */
let ethUsdc: V4Pool;

const lc = (a: string): string => a.toLowerCase();
const addr = (d: { address: Hex }): string => lc(d.address);
const rpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;
const { indexed, price, priced } = priceCalls(
  () => s,
  () => anvil.url,
);
const DECIMALS = new Map<string, number>([[lc(NATIVE), 18]]);
const units = (amount: string, token: { address: Hex }): bigint => parseUnits(amount, DECIMALS.get(addr(token))!);

/** A V4 pool's price of `token` in its other currency (whole units), from a sqrtPriceX96. */
function sidePrice(pool: V4Pool, token: Hex, sqrt: bigint): Ratio {
  return sqrtPriceOf(sqrt, token, pool.key.currency0, DECIMALS.get(lc(pool.key.currency0))!, DECIMALS.get(lc(pool.key.currency1))!);
}
/** The same from the manager's getSlot0 at `block`. */
const v4Price = async (pool: V4Pool, token: Hex, block: number): Promise<Ratio> =>
  sidePrice(pool, token, (await getV4Pool(anvil.url, pool, block)).sqrtPriceX96);
/** The sqrtPriceX96 a swap's receipt logged in the manager's Swap event. */
function swapPrice(receipt: TransactionReceipt): bigint {
  const [log] = parseEventLogs({ abi: manager.abi, logs: receipt.logs, eventName: 'Swap' });
  return (log!.args as { sqrtPriceX96: bigint }).sqrtPriceX96;
}

/** Liquidity L for virtual reserves (x, y): √(x·y). */
const liquidityOf = (x: bigint, y: bigint): bigint => isqrt(x * y);

/** A pool at the price `a`:`b` (whole amounts) with full-range liquidity of those virtual reserves. */
async function fullRange(a: { address: Hex }, amountA: string, b: { address: Hex }, amountB: string, on = manager): Promise<V4Pool> {
  const [x, y] = [units(amountA, a), units(amountB, b)];
  const pool = await initializeV4Pool(anvil.url, on, a.address, x, b.address, y);
  const [x0, y0] = lc(pool.key.currency0) === addr(a) ? [x, y] : [y, x];
  await modifyV4Liquidity(anvil.url, pool, FULL_RANGE, liquidityOf(x, y), x0, y0);
  return pool;
}

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  dex = await deployDex(anvil.url);
  manager = await deploy(anvil.url, 'TestV4PoolManager', []);
  other = await deploy(anvil.url, 'TestV4PoolManager', []);
  const { usdc, weth, tka, tkb } = dex.tokens;
  for (const [t, d] of [
    [usdc, 6],
    [weth, 18],
    [tka, 18],
    [tkb, 8],
  ] as const)
    DECIMALS.set(addr(t), d);
  const pricing = {
    '0x539': {
      wrappedNative: weth.address,
      stablecoins: [usdc.address],
      factories: [
        { address: manager.address, kind: 'v4', name: 'MiniSwap v4' },
        { address: other.address, kind: 'v4', name: 'OtherSwap v4' },
      ],
    },
  };
  s = await startChainpost(serverEnv(anvil, { CHAINPOST_START_BLOCKS: '0x539=0', CHAINPOST_PRICING: JSON.stringify(pricing) }));
  tkaUsdc = await fullRange(tka, '50000', usdc, '100000');
  ethUsdc = await fullRange({ address: NATIVE }, '100', usdc, '200000');
  await indexed();
}, 120_000);

afterAll(async () => {
  await stopAndClean(s);
  await anvil?.stop();
});

describe('Uniswap V4 pools', () => {
  it("price a token from its pool's sqrtPriceX96: the PoolManager is the exchange, the PoolId the pair", async () => {
    const block = await indexed();
    const { tka } = dex.tokens;
    const usd = await v4Price(tkaUsdc, tka.address, block);
    const p = await priced(addr(tka));
    expect(p).toMatchObject({
      usdPriceFormatted: formatted(usd),
      exchangeName: 'MiniSwap v4',
      exchangeAddress: addr(manager),
      pairAddress: lc(tkaUsdc.id),
      toBlock: String(block),
      tokenDecimals: '18',
    });
    expect(p.usdPrice).toBeCloseTo(2, 9);
    // Both sides as the virtual reserves of the active liquidity: 50,000 TKA at $2 and 100,000 USDC.
    expect(Number(p.pairTotalLiquidityUsd)).toBeCloseTo(200_000, 0);
  });

  it("price the native coin's pool (currency address 0) as the wrapped native token", async () => {
    const block = await indexed();
    const { weth, tka } = dex.tokens;
    const usd = await v4Price(ethUsdc, NATIVE, block);
    const p = await priced(addr(weth));
    expect(p).toMatchObject({
      usdPriceFormatted: formatted(usd),
      pairAddress: lc(ethUsdc.id),
      exchangeName: 'MiniSwap v4',
      nativePrice: { value: '1000000000000000000', address: addr(weth) },
    });
    expect(p.usdPrice).toBeCloseTo(2000, 6);
    // The pool's pairs list it as the wrapped token's; a token's native price goes through it.
    const pairs = await s.call(`/api/v2.2/erc20/${addr(weth)}/pairs?chain=0x539`);
    expect(pairs.body.pairs.map((x: Record<string, unknown>) => x['pair_address'])).toEqual([lc(ethUsdc.id)]);
    const a = await priced(addr(tka));
    const tkaUsd = await v4Price(tkaUsdc, tka.address, block);
    expect(a.nativePrice.value).toBe(((tkaUsd.num * usd.den * 10n ** 18n) / (tkaUsd.den * usd.num)).toString());
    // Selling ether moves it, to the price its Swap logged.
    const { receipt } = await v4SwapAtLiquidity(anvil.url, ethUsdc, NATIVE, parseUnits('1', 18));
    await indexed();
    const after = await priced(addr(weth));
    expect(after.usdPriceFormatted).toBe(formatted(sidePrice(ethUsdc, NATIVE, swapPrice(receipt))));
    expect(after.usdPrice).toBeLessThan(p.usdPrice);
  });

  it('move with swaps both ways, each to the sqrtPriceX96 its Swap event logged; swaps count as buys and sells; candles and reserves by PoolId', async () => {
    const { tka, usdc } = dex.tokens;
    const start = await priced(addr(tka));
    const swaps: Array<[Hex, string]> = [
      [usdc.address, '1000'],
      [usdc.address, '500'],
      [tka.address, '300'],
    ];
    let last = start;
    for (const [tokenIn, amount] of swaps) {
      const { receipt } = await v4SwapAtLiquidity(anvil.url, tkaUsdc, tokenIn, units(amount, { address: tokenIn }));
      const block = await indexed();
      const sqrt = swapPrice(receipt);
      expect(sqrt).toBe((await getV4Pool(anvil.url, tkaUsdc, block)).sqrtPriceX96);
      const p = await priced(addr(tka));
      expect(p.usdPriceFormatted).toBe(formatted(sidePrice(tkaUsdc, tka.address, sqrt)));
      // Buying TKA (USDC in) raises its price, selling lowers it.
      if (tokenIn === usdc.address) expect(p.usdPrice).toBeGreaterThan(last.usdPrice);
      else expect(p.usdPrice).toBeLessThan(last.usdPrice);
      last = p;
    }
    // The pool's side of each swap: USDC in is TKA out, a buy.
    const analytics = await s.call(`/api/v2.2/tokens/${addr(tka)}/analytics?chain=0x539`);
    expect(analytics.status, JSON.stringify(analytics.body)).toBe(200);
    expect(analytics.body.totalBuys['24h']).toBe(2);
    expect(analytics.body.totalSells['24h']).toBe(1);
    const now = Number((await publicClient(anvil.url).getBlock()).timestamp);
    const candles = await s.call(
      `/api/v2.2/pairs/${lc(tkaUsdc.id)}/ohlcv?chain=0x539&timeframe=1d&currency=usd&fromDate=${now - 86_400}&toDate=${now + 3_600}`,
    );
    expect(candles.status, JSON.stringify(candles.body)).toBe(200);
    expect(candles.body).toMatchObject({ pairAddress: lc(tkaUsdc.id), tokenAddress: addr(tka) });
    expect((candles.body.result as Array<{ trades: number; close: number }>).reduce((n, c) => n + c.trades, 0)).toBe(3);
    expect(candles.body.result[0].close).toBeCloseTo(last.usdPrice, 9);
    // Reserves: the active liquidity's virtual reserves, L·2^96/√P and L·√P/2^96.
    const { sqrtPriceX96, liquidity } = await getV4Pool(anvil.url, tkaUsdc);
    const reserves = await s.call(`/api/v2.2/${lc(tkaUsdc.id)}/reserves?chain=0x539`);
    expect(reserves.body).toEqual({
      reserve0: ((liquidity << 96n) / sqrtPriceX96).toString(),
      reserve1: ((liquidity * sqrtPriceX96) >> 96n).toString(),
    });
    expect((await s.call('/api/v2.2/0x1234/reserves?chain=0x539')).body.details.field).toBe('pair_address');
  });

  it('weigh the side rule with the virtual reserves of the active liquidity: a position out of range counts for nothing', async () => {
    const { tkb, usdc } = dex.tokens;
    // TKB at $50; a large position above the current tick (all of it TKB, held by the manager) is not active.
    const pool = await initializeV4Pool(anvil.url, manager, tkb.address, units('1', tkb), usdc.address, units('50', usdc));
    const tick = (await getV4Pool(anvil.url, pool)).tick;
    const above = [Math.ceil((tick + 600) / 60) * 60, Math.ceil((tick + 6000) / 60) * 60] as const;
    const tkbIs0 = lc(pool.key.currency0) === addr(tkb);
    const big = units('100000', tkb);
    await modifyV4Liquidity(anvil.url, pool, above, 10n ** 15n, tkbIs0 ? big : 0n, tkbIs0 ? 0n : big);
    await indexed();
    expect((await getV4Pool(anvil.url, pool)).liquidity).toBe(0n);
    expect((await price(addr(tkb))).status).toBe(404);
    // In range, $30 a side (0.6 TKB and 30 USDC of virtual reserves): under the default $50, over $20.
    const [x, y] = [units('0.6', tkb), units('30', usdc)];
    const around = [Math.floor((tick - 600) / 60) * 60, Math.ceil((tick + 600) / 60) * 60] as const;
    await modifyV4Liquidity(anvil.url, pool, around, liquidityOf(x, y), tkbIs0 ? x : y, tkbIs0 ? y : x);
    const block = await indexed();
    expect((await price(addr(tkb))).status).toBe(404);
    const thin = await priced(addr(tkb), 'min_pair_side_liquidity_usd=20');
    expect(thin).toMatchObject({ pairAddress: lc(pool.id), usdPriceFormatted: formatted(await v4Price(pool, tkb.address, block)) });
    expect(Number(thin.pairTotalLiquidityUsd)).toBeCloseTo(60, 0);
    // More in range: $50 a side passes.
    await modifyV4Liquidity(anvil.url, pool, around, liquidityOf(x, y), tkbIs0 ? x : y, tkbIs0 ? y : x);
    await indexed();
    expect((await priced(addr(tkb))).pairAddress).toBe(lc(pool.id));
  });

  it("move a pool only by its own PoolManager's events: the same PoolKey on another one is another pool", async () => {
    const { tka, usdc } = dex.tokens;
    const block = await indexed();
    const kept = await priced(addr(tka));
    // The same key, so the same PoolId, at ten times the price, on the other registry manager; and a swap there.
    const twin = await fullRange(tka, '1000', usdc, '20000', other);
    expect(twin.id).toBe(tkaUsdc.id);
    await v4SwapAtLiquidity(anvil.url, twin, usdc.address, units('100', usdc));
    await indexed();
    const p = await priced(addr(tka));
    expect(p).toMatchObject({ usdPriceFormatted: kept.usdPriceFormatted, exchangeAddress: addr(manager), pairAddress: lc(tkaUsdc.id) });
    expect(p.usdPriceFormatted).toBe(formatted(await v4Price(tkaUsdc, tka.address, block)));
    // Read from the pool's state rows (not a mark) too.
    expect((await priced(addr(tka), 'min_pair_side_liquidity_usd=49')).usdPriceFormatted).toBe(kept.usdPriceFormatted);
  });

  it('take back a swap a reorg removes: its price mark and its candle entry', async () => {
    const { tka, usdc } = dex.tokens;
    const block = await indexed();
    const kept = await priced(addr(tka));
    const trades = async (): Promise<number> => {
      const now = Number((await publicClient(anvil.url).getBlock()).timestamp);
      const r = await s.call(
        `/api/v2.2/pairs/${lc(tkaUsdc.id)}/ohlcv?chain=0x539&timeframe=1d&currency=usd&fromDate=${now - 86_400 * 3}&toDate=${now + 3_600}`,
      );
      return (r.body.result as Array<{ trades: number }>).reduce((n, c) => n + c.trades, 0);
    };
    const tradesBefore = await trades();
    const snapshot = await rpc<string>('evm_snapshot', []);
    await v4SwapAtLiquidity(anvil.url, tkaUsdc, usdc.address, units('5000', usdc));
    const swapped = await indexed();
    expect((await priced(addr(tka))).usdPrice).toBeGreaterThan(kept.usdPrice);
    expect(await trades()).toBe(tradesBefore + 1);
    await rpc('evm_revert', [snapshot]);
    // A longer chain without the swap.
    await rpc('anvil_mine', ['0x4']);
    const reorged = await indexed();
    expect(await until(async () => (await priced(addr(tka))).toBlock === String(reorged), 10_000, 20)).toBe(true);
    const back = await priced(addr(tka));
    expect(back.usdPriceFormatted).toBe(kept.usdPriceFormatted);
    expect(back.usdPriceFormatted).toBe(formatted(await v4Price(tkaUsdc, tka.address, block)));
    expect((await priced(addr(tka), `to_block=${swapped}`)).usdPriceFormatted).toBe(kept.usdPriceFormatted);
    expect(await trades()).toBe(tradesBefore);
  });
});
