import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAbiItem, parseUnits, type Hex } from 'viem';
import type { Anvil } from '../http/clients/anvil.js';
import { compileContracts, deploy, DEV_ACCOUNTS, publicClient, write } from './contracts.js';
import { balanceOf, priceCalls, v2RouterSwapExactIn, v3SwapAtReserves, type Created, type Dex } from './dex.js';
import { startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { decimalText, startPricedDevnet, times, type PricedDevnet, type Ratio } from './priced-devnet.js';
import { moralisFor } from './sdk.js';
import { serverEnv } from './streams-harness.js';

/**
 * GET /erc20/:address/price and POST /erc20/prices end to end: Uniswap V2 and V3 stand-ins (test/dex.ts) on a
 * real anvil, followed by the real server from block 0 with a devnet pricing entry (test/priced-devnet.ts). Every
 * price is checked against one computed here, in integers, from the pools' reserves (getReserves) or slot0 read by
 * eth_call at the block asked.
 */

type Json = Record<string, any>;

let net: PricedDevnet;
let anvil: Anvil;
let s: Running;
let dex: Dex;
/** WETH/USDC (V2): WETH's pricing pool. */
let wethUsdc: Created;
/** TKA/WETH (V2): TKA's. */
let tkaWeth: Created;
/** TKB/USDC (V3, fee 3000), deep; TKB/WETH (V2), shallow (under $50 a side) and busier. */
let tkbUsdc: Created;
let tkbWeth: Created;

const lc = (a: string): string => a.toLowerCase();
const rpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;
const addr = (d: { address: Hex }): string => lc(d.address);

const v2Price = (pair: Created, token: Hex, block: number): Promise<Ratio> => net.v2Price(pair, token, block);
const v3Price = (pool: Created, token: Hex, block: number): Promise<Ratio> => net.v3Price(pool, token, block);
const units = (amount: string, token: { address: Hex }): bigint => net.units(amount, token);
const { indexed, price, priced } = priceCalls(
  () => s,
  () => anvil.url,
);

/** The ratio truncated to 18 decimals, without trailing zeros: how usdPriceFormatted is written. */
const formatted = (r: Ratio): string => decimalText(r, 18);

beforeAll(async () => {
  net = await startPricedDevnet();
  ({ anvil, s, dex, wethUsdc, tkaWeth, tkbUsdc } = net);
  const { usdc, weth, tkb } = dex.tokens;
  // $2,000 an ether; TKA 0.001 ether ($2); TKB $50 in a deep V3 pool, and in a shallow V2 pool ($5 a side).
  tkbWeth = await net.v2Pool(tkb, weth, '0.1', '0.0025');
  // The shallow pool is the busier one: two swaps in it, one in the deep one.
  await v2RouterSwapExactIn(anvil.url, dex, [weth.address, tkb.address], parseUnits('0.0001', 18));
  await v2RouterSwapExactIn(anvil.url, dex, [tkb.address, weth.address], parseUnits('0.001', 8));
  await v3SwapAtReserves(anvil.url, tkbUsdc, usdc.address, units('500', usdc));
  await indexed();
}, 120_000);

afterAll(async () => {
  await net?.stop();
});

describe('GET /erc20/:address/price', () => {
  it('prices the wrapped native token from its stable pool, exactly as its reserves say', async () => {
    const block = await indexed();
    const { weth } = dex.tokens;
    const usd = await v2Price(wethUsdc, weth.address, block);
    const p = await priced(addr(weth));
    expect(p).toMatchObject({
      tokenName: 'Wrapped Ether',
      tokenSymbol: 'WETH',
      tokenLogo: null,
      tokenDecimals: '18',
      usdPriceFormatted: formatted(usd),
      usdPrice: Number(formatted(usd)),
      exchangeName: 'MiniSwap',
      exchangeAddress: addr(dex.v2Factory),
      tokenAddress: addr(weth),
      toBlock: String(block),
      possibleSpam: false,
      verifiedContract: false,
      pairAddress: lc(wethUsdc.address),
      nativePrice: { value: '1000000000000000000', decimals: 18, name: 'Ether', symbol: 'ETH', address: addr(weth) },
    });
    expect(p.usdPrice).toBe(2000);
    // Each side: 1,000 ether at $2,000 and 2,000,000 USDC.
    expect(p.pairTotalLiquidityUsd).toBe('4000000.00');
  });

  it("routes a token through the wrapped native token, and through a V3 pool's slot0", async () => {
    const block = await indexed();
    const { weth, tka, tkb } = dex.tokens;
    const ethUsd = await v2Price(wethUsdc, weth.address, block);
    const tkaUsd = times(await v2Price(tkaWeth, tka.address, block), ethUsd);
    const a = await priced(addr(tka));
    expect(a).toMatchObject({
      usdPriceFormatted: formatted(tkaUsd),
      pairAddress: lc(tkaWeth.address),
      exchangeName: 'MiniSwap',
      tokenDecimals: '18',
    });
    // Native price: whole ether per token in wei.
    expect(a.nativePrice.value).toBe(((tkaUsd.num * ethUsd.den * 10n ** 18n) / (tkaUsd.den * ethUsd.num)).toString());
    const tkbUsd = await v3Price(tkbUsdc, tkb.address, block);
    const b = await priced(addr(tkb));
    expect(b).toMatchObject({
      usdPriceFormatted: formatted(tkbUsd),
      pairAddress: lc(tkbUsdc.address),
      exchangeName: 'MiniSwap v3',
      exchangeAddress: addr(dex.v3Factory),
      tokenDecimals: '8',
    });
  });

  it('counts a pool only when each side holds $50 (min_pair_side_liquidity_usd), then picks the busiest of the last 24 h', async () => {
    const block = await indexed();
    const { weth, tkb } = dex.tokens;
    // Default $50: the shallow pool is out, though busier.
    expect((await priced(addr(tkb))).pairAddress).toBe(lc(tkbUsdc.address));
    // $1 a side: both count, and the busier wins.
    const shallow = await priced(addr(tkb), 'min_pair_side_liquidity_usd=1');
    expect(shallow.pairAddress).toBe(lc(tkbWeth.address));
    expect(shallow.usdPriceFormatted).toBe(
      formatted(times(await v2Price(tkbWeth, tkb.address, block), await v2Price(wethUsdc, weth.address, block))),
    );
    // More than either pool holds: no price.
    const none = await price(addr(tkb), 'min_pair_side_liquidity_usd=10000000');
    expect(none.status).toBe(404);
    expect(none.body.message).toMatch(/min_pair_side_liquidity_usd/);
  });

  it('keeps the pools of one exchange name (exchange)', async () => {
    const { tkb } = dex.tokens;
    expect((await priced(addr(tkb), 'exchange=minisWAP%20v3&min_pair_side_liquidity_usd=1')).pairAddress).toBe(lc(tkbUsdc.address));
    expect((await priced(addr(tkb), 'exchange=MiniSwap&min_pair_side_liquidity_usd=1')).pairAddress).toBe(lc(tkbWeth.address));
    expect((await price(addr(tkb), 'exchange=Nowhere')).status).toBe(404);
    // The factory's address, or the name without its version.
    expect((await priced(addr(tkb), `exchange=${addr(dex.v3Factory)}&min_pair_side_liquidity_usd=1`)).pairAddress).toBe(
      lc(tkbUsdc.address),
    );
    expect((await priced(addr(tkb), `exchange=${addr(dex.v2Factory)}&min_pair_side_liquidity_usd=1`)).pairAddress).toBe(
      lc(tkbWeth.address),
    );
  });

  it('answers at to_block as the pool stood then, and moves with each swap', async () => {
    const before = await indexed();
    const { weth, usdc, tka } = dex.tokens;
    const old = await priced(addr(weth));
    await v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address], units('100000', usdc));
    const after = await indexed();
    const now = await priced(addr(weth));
    expect(now.usdPriceFormatted).toBe(formatted(await v2Price(wethUsdc, weth.address, after)));
    expect(now.usdPrice).toBeGreaterThan(old.usdPrice);
    // TKA's own pool did not move, its dollar price did (through ether).
    const tkaNow = await priced(addr(tka));
    expect(tkaNow.usdPriceFormatted).toBe(
      formatted(times(await v2Price(tkaWeth, tka.address, after), await v2Price(wethUsdc, weth.address, after))),
    );
    const then = await priced(addr(weth), `to_block=${before}`);
    expect(then).toMatchObject({ usdPriceFormatted: old.usdPriceFormatted, toBlock: String(before) });
    // A V3 pool before the head: its price and balances as its last state row kept them.
    const { tkb } = dex.tokens;
    const tkbThen = await priced(addr(tkb), `to_block=${before}`);
    expect(tkbThen).toMatchObject({
      usdPriceFormatted: formatted(await v3Price(tkbUsdc, tkb.address, before)),
      pairAddress: lc(tkbUsdc.address),
    });
  });

  it('takes back a swap a reorg removes: its price mark and its candle entry', async () => {
    const { weth, usdc } = dex.tokens;
    const block = await indexed();
    const kept = await priced(addr(weth));
    /** The pair's trades in candles of a day around now. */
    const trades = async (): Promise<number> => {
      const now = Number((await publicClient(anvil.url).getBlock()).timestamp);
      const r = await s.call(
        `/api/v2.2/pairs/${lc(wethUsdc.address)}/ohlcv?chain=0x539&timeframe=1d&currency=usd&fromDate=${now - 86_400 * 3}&toDate=${now + 3_600}`,
      );
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return (r.body.result as Json[]).reduce((n, c) => n + c.trades, 0);
    };
    const tradesBefore = await trades();
    const t0 = Number((await publicClient(anvil.url).getBlock()).timestamp);
    /** The pair's stored 1 min and 1 d candles of the days around t0 (the swap below's too). */
    const stored = async (): Promise<Json[][]> =>
      Promise.all(
        ['1min', '1d'].map(
          async (tf) =>
            (
              await s.call(
                `/api/v2.2/pairs/${lc(wethUsdc.address)}/ohlcv?chain=0x539&timeframe=${tf}&currency=usd&fromDate=${t0 - 86_400}&toDate=${t0 + 86_400}&limit=100`,
              )
            ).body.result as Json[],
        ),
      );
    const storedBefore = await stored();
    const snapshot = await rpc<string>('evm_snapshot', []);
    const { receipt } = await v2RouterSwapExactIn(anvil.url, dex, [weth.address, usdc.address], parseUnits('50', 18));
    const swapped = await indexed();
    const swapTime = Number((await publicClient(anvil.url).getBlock({ blockNumber: receipt.blockNumber })).timestamp);
    expect((await priced(addr(weth))).usdPrice).toBeLessThan(kept.usdPrice);
    expect(await trades()).toBe(tradesBefore + 1);
    // The swap's minute and day: one more trade, more volume.
    const withSwap = await stored();
    for (const [i, size] of [60, 86_400].entries()) {
      const at = new Date(Math.floor(swapTime / size) * size * 1000).toISOString();
      const [was, now] = [storedBefore, withSwap].map((list) => list[i]!.find((c) => c.timestamp === at));
      expect(now?.trades, at).toBe((was?.trades ?? 0) + 1);
      expect(now!.volume).toBeGreaterThan(was?.volume ?? 0);
    }
    await rpc('evm_revert', [snapshot]);
    // A longer chain without the swap.
    await rpc('anvil_mine', ['0x4']);
    const reorged = await indexed();
    await until(async () => (await priced(addr(weth))).toBlock === String(reorged), 10_000, 20);
    const back = await priced(addr(weth));
    expect(back.toBlock).toBe(String(reorged));
    expect(back.usdPriceFormatted).toBe(kept.usdPriceFormatted);
    expect(back.usdPriceFormatted).toBe(formatted(await v2Price(wethUsdc, weth.address, block)));
    // At the height the swap had: the mark it made is gone with it.
    expect((await priced(addr(weth), `to_block=${swapped}`)).usdPriceFormatted).toBe(kept.usdPriceFormatted);
    expect(await trades()).toBe(tradesBefore);
    // The stored candles lose the swap's trade and volume: as they were before it.
    expect(await stored()).toEqual(storedBefore);
  });

  it('gives the price 24 h of block time before, and its changes', async () => {
    const { weth, usdc } = dex.tokens;
    await indexed();
    const dayAgo = await priced(addr(weth));
    const last = await publicClient(anvil.url).getBlock();
    // Two hours later a swap moves the price; 24 h after `last` another one. 24 h before the end is before the first.
    await rpc('evm_setNextBlockTimestamp', [Number(last.timestamp) + 7_200]);
    await v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address], units('20000', usdc));
    await indexed();
    const twoHoursOn = await priced(addr(weth));
    expect(twoHoursOn.usdPrice).not.toBe(dayAgo.usdPrice);
    await rpc('evm_setNextBlockTimestamp', [Number(last.timestamp) + 86_400 + 60]);
    await v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address], units('50000', usdc));
    await indexed();
    const p = await priced(addr(weth));
    expect(p.usdPrice24h).toBe(dayAgo.usdPrice);
    expect(p.usdPrice24hrUsdChange).toBeCloseTo(p.usdPrice - dayAgo.usdPrice, 9);
    expect(p.usdPrice24hrPercentChange).toBeCloseTo((100 * (p.usdPrice - dayAgo.usdPrice)) / dayAgo.usdPrice, 9);
    expect(Number(p['24hrPercentChange'])).toBeCloseTo(p.usdPrice24hrPercentChange, 9);
    // Nothing that old before the first blocks: null, not a guess.
    const first = await priced(addr(weth), `to_block=${Number(dayAgo.toBlock)}`);
    expect(first.usdPrice24h).toBeNull();
  });

  it('prices a stablecoin at $1 from a pool against the wrapped native token', async () => {
    const { usdc } = dex.tokens;
    expect(await priced(addr(usdc))).toMatchObject({
      usdPrice: 1,
      usdPriceFormatted: '1',
      pairAddress: lc(wethUsdc.address),
      tokenDecimals: '6',
    });
  });

  it("never reads a contract that only claims to be a registry factory's pool", async () => {
    const { weth, usdc } = dex.tokens;
    const kept = await priced(addr(weth));
    const [t0, t1] = lc(weth.address) < lc(usdc.address) ? [weth.address, usdc.address] : [usdc.address, weth.address];
    const fake = await deploy(anvil.url, 'TestFakePair', [dex.v2Factory.address, t0, t1]);
    // Reserves that would make ether worth a million dollars in the deepest pool by far, and more swaps than any real pool here.
    const [r0, r1] = lc(t0) === addr(weth) ? [10n ** 24n, 10n ** 18n] : [10n ** 18n, 10n ** 24n];
    await write(anvil.url, { address: fake.address, abi: fake.abi, functionName: 'fake', args: [r0, r1, 50n] });
    await indexed();
    const after = await priced(addr(weth));
    expect(after.pairAddress).toBe(lc(wethUsdc.address));
    expect(after.usdPriceFormatted).toBe(kept.usdPriceFormatted);
  });

  it('answers 404 for a token no pool prices, 400 naming a bad parameter', async () => {
    expect((await price(addr(dex.v2Factory))).status).toBe(404);
    for (const [query, field] of [
      ['min_pair_side_liquidity_usd=lots', 'min_pair_side_liquidity_usd'],
      ['max_token_inactivity=0', 'max_token_inactivity'],
      ['to_block=yesterday', 'to_block'],
      ['include=everything', 'include'],
    ] as const) {
      const r = await price(addr(dex.tokens.weth), query);
      expect(r.status, query).toBe(400);
      expect(JSON.stringify(r.body), query).toContain(field);
    }
    const r = await s.call('/api/v2.2/erc20/0x12/price?chain=0x539');
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain('address');
  });
});

describe('GET /wallets/:address/tokens', () => {
  it("fills each balance's USD fields from the same prices, the native balance as its wrapped token", async () => {
    await indexed();
    const wallet = lc(DEV_ACCOUNTS[0].address);
    const r = await s.call(`/api/v2.2/wallets/${wallet}/tokens?chain=0x539`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const items = r.body.result as Json[];
    const { weth, usdc, tka, tkb } = dex.tokens;
    for (const t of [weth, usdc, tka, tkb]) {
      const item = items.find((i) => i['token_address'] === addr(t))!;
      const p = await priced(addr(t));
      // The reference's types: the price and its changes as decimal strings, the value a number.
      expect(item['usd_price'], t.address).toBe(p.usdPriceFormatted);
      const value = Number(item['balance_formatted']) * p.usdPrice;
      expect(Math.abs(item['usd_value'] - value) / value, t.address).toBeLessThan(1e-12);
      // The 24 h test above moved the chain a day on: every token has a price a day before.
      expect(p.usdPrice24h, t.address).not.toBeNull();
      expect(Number(item['usd_price_24hr_usd_change'])).toBeCloseTo(p.usdPrice24hrUsdChange, 9);
      expect(Number(item['usd_price_24hr_percent_change'])).toBeCloseTo(p.usdPrice24hrPercentChange, 9);
      const valueThen = Number(item['balance_formatted']) * p.usdPrice24h;
      expect(Math.abs(Number(item['usd_value_24hr_usd_change']) - (value - valueThen)) / value).toBeLessThan(1e-9);
    }
    const native = items.find((i) => i['native_token'] === true)!;
    expect(native['usd_price']).toBe((await priced(addr(weth))).usdPriceFormatted);
    const shares = items.filter((i) => i['portfolio_percentage'] !== null).map((i) => i['portfolio_percentage'] as number);
    expect(shares.length).toBeGreaterThanOrEqual(5);
    expect(shares.reduce((a, b) => a + b, 0)).toBeCloseTo(100, 6);
    // A token no pool prices here: nulls, as before prices came (the pair's LP token).
    const lp = items.find((i) => i['token_address'] === lc(wethUsdc.address))!;
    expect(lp).toMatchObject({ usd_price: null, usd_value: null, portfolio_percentage: null });
    // The side rule reaches the balances too.
    const strict = await s.call(`/api/v2.2/wallets/${wallet}/tokens?chain=0x539&min_pair_side_liquidity_usd=100000000000`);
    // No pool holds that much a side: nothing is priced, not even the stablecoin (its $1 needs a pool too).
    expect((strict.body.result as Json[]).map((i) => i['usd_price'])).toEqual(items.map(() => null));
  });
});

describe('GET /wallets/:address/net-worth', () => {
  it('sums the native balance and the priced tokens in USD per chain asked; a chain not followed is unsupported', async () => {
    await indexed();
    const wallet = lc(DEV_ACCOUNTS[0].address);
    const tokens = (await s.call(`/api/v2.2/wallets/${wallet}/tokens?chain=0x539`)).body.result as Json[];
    const native = tokens.find((i) => i['native_token'] === true)!;
    const tokenUsd = tokens.filter((i) => i['native_token'] === false).reduce((sum, i) => sum + (i['usd_value'] ?? 0), 0);
    const r = await s.call(`/api/v2.2/wallets/${wallet}/net-worth?chains=devnet,eth`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const wei = await publicClient(anvil.url).getBalance({ address: DEV_ACCOUNTS[0].address });
    const ethUsd = (await priced(addr(dex.tokens.weth))).usdPrice;
    expect(r.body.unsupported_chain_ids).toEqual(['0x1']);
    expect(r.body.chains).toHaveLength(1);
    const c = r.body.chains[0];
    expect(c).toMatchObject({ chain: 'devnet', native_balance: wei.toString(), native_balance_formatted: native['balance_formatted'] });
    // Strings to the cent, truncated: within a cent of the sum (and of the float arithmetic here, relative 1e-12).
    const near = (text: string, want: number): void => expect(Math.abs(Number(text) - want)).toBeLessThanOrEqual(0.01 + want * 1e-12);
    near(c.native_balance_usd, (Number(wei) / 1e18) * ethUsd);
    near(c.token_balance_usd, tokenUsd);
    near(c.networth_usd, (Number(wei) / 1e18) * ethUsd + tokenUsd);
    expect(r.body.total_networth_usd).toBe(c.networth_usd);
    expect(c.networth_usd).toMatch(/^\d+\.\d{2}$/);
    // The SDK's array form, and the request's chain by default, answer the same.
    expect((await s.call(`/api/v2.2/wallets/${wallet}/net-worth?chains[]=0x539&chains[]=1337`)).body.chains).toEqual(r.body.chains);
    expect((await s.call(`/api/v2.2/wallets/${wallet}/net-worth?chain=0x539`)).body.chains).toEqual(r.body.chains);
    const bad = await s.call(`/api/v2.2/wallets/${wallet}/net-worth?chains=nowhere`);
    expect(bad.status).toBe(400);
    expect(bad.body.details.field).toBe('chains');
    expect((await s.call(`/api/v2.2/wallets/${wallet}/net-worth?chains=eth`)).body.details.field).toBe('chains');
  });
});

describe('GET /erc20/:token_address/pairs', () => {
  it("lists the token's pools deepest first, each with its price, liquidity and 24 h volume through it", async () => {
    const block = await indexed();
    const { weth, tkb } = dex.tokens;
    const r = await s.call(`/api/v2.2/erc20/${addr(tkb)}/pairs?chain=0x539`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const pairs = r.body.pairs as Json[];
    expect(pairs.map((p) => p['pair_address'])).toEqual([lc(tkbUsdc.address), lc(tkbWeth.address)]);
    const [deep, shallow] = pairs as [Json, Json];
    expect(deep).toMatchObject({
      exchange_name: 'MiniSwap v3',
      exchange_address: addr(dex.v3Factory),
      pair_label: 'TKB/USDC',
      base_token: addr(tkb),
      quote_token: addr(dex.tokens.usdc),
    });
    expect(deep['usd_price']).toBeCloseTo(Number(formatted(await v3Price(tkbUsdc, tkb.address, block))), 9);
    const ethUsd = await v2Price(wethUsdc, weth.address, block);
    const viaWeth = times(await v2Price(tkbWeth, tkb.address, block), ethUsd);
    expect(shallow['usd_price']).toBeCloseTo(Number(formatted(viaWeth)), 9);
    // Liquidity: each side's balance at the token's price through the pool (TKB 8 decimals, USDC 6).
    const [b0, b1] = [
      await balanceOf(anvil.url, tkbUsdc.token0, tkbUsdc.address),
      await balanceOf(anvil.url, tkbUsdc.token1, tkbUsdc.address),
    ];
    const [tkbHeld, usdcHeld] = lc(tkbUsdc.token0) === addr(tkb) ? [b0, b1] : [b1, b0];
    expect(deep['liquidity_usd']).toBeCloseTo((Number(tkbHeld) / 1e8) * deep['usd_price'] + Number(usdcHeld) / 1e6, 1);
    expect((deep['pair'] as Json[]).map((t) => [t['token_address'], t['pair_token_type']])).toEqual([
      [lc(tkbUsdc.token0), 'token0'],
      [lc(tkbUsdc.token1), 'token1'],
    ]);
    const usdcSide = (deep['pair'] as Json[]).find((t) => t['token_address'] === addr(dex.tokens.usdc))!;
    expect(usdcSide['liquidity_usd']).toBe((Number(usdcHeld) / 1e6).toFixed(2));
    // The skew: the thinner side over the deeper; the shallow pool holds about $5 a side.
    const tkbSide = (Number(tkbHeld) / 1e8) * deep['usd_price'];
    expect(deep['liquidity_skew']).toBeCloseTo(Math.min(tkbSide, Number(usdcHeld) / 1e6) / Math.max(tkbSide, Number(usdcHeld) / 1e6), 6);
    // Pages of one.
    const first = await s.call(`/api/v2.2/erc20/${addr(tkb)}/pairs?chain=0x539&limit=1`);
    expect(first.body.pairs.map((p: Json) => p['pair_address'])).toEqual([lc(tkbUsdc.address)]);
    const second = await s.call(`/api/v2.2/erc20/${addr(tkb)}/pairs?chain=0x539&limit=1&cursor=${first.body.cursor}`);
    expect(second.body).toMatchObject({ page: 1, cursor: null });
    expect(second.body.pairs.map((p: Json) => p['pair_address'])).toEqual([lc(tkbWeth.address)]);
    // The 24 h since the chain moved a day on saw no TKB swap: inactive, no volume.
    expect(deep).toMatchObject({ inactive_pair: true, volume_24h_usd: 0 });
    // Ether's stable pair swapped in the last day: active, its volume the ether moved at ether's price.
    const eth = ((await s.call(`/api/v2.2/erc20/${addr(weth)}/pairs?chain=0x539`)).body.pairs as Json[]).find(
      (p) => p['pair_address'] === lc(wethUsdc.address),
    )!;
    expect(eth['inactive_pair']).toBe(false);
    // The ether the pair's swaps moved in the day before the head, from its Swap logs.
    const now = Number((await publicClient(anvil.url).getBlock({ blockNumber: BigInt(block) })).timestamp);
    let moved = 0n;
    for (const l of await publicClient(anvil.url).getLogs({
      address: wethUsdc.address,
      event: parseAbiItem(
        'event Swap(address indexed sender, uint amount0In, uint amount1In, uint amount0Out, uint amount1Out, address indexed to)',
      ),
      fromBlock: 0n,
      toBlock: BigInt(block),
    })) {
      if (Number((await publicClient(anvil.url).getBlock({ blockNumber: l.blockNumber! })).timestamp) <= now - 86_400) continue;
      const a = l.args as { amount0In: bigint; amount1In: bigint; amount0Out: bigint; amount1Out: bigint };
      moved += lc(wethUsdc.token0) === addr(weth) ? a.amount0In + a.amount0Out : a.amount1In + a.amount1Out;
    }
    expect(moved).toBeGreaterThan(0n);
    expect(eth['volume_24h_usd']).toBeCloseTo((Number(moved) / 1e18) * eth['usd_price'], 3);
    expect((await s.call(`/api/v2.2/erc20/0x12/pairs?chain=0x539`)).body.details.field).toBe('token_address');
  });
});

describe('GET /tokens/:tokenAddress/analytics', () => {
  it("counts the token's buys and sells in every pool over the last 5 m, 1 h, 6 h and 24 h, as the pools' Swap logs say", async () => {
    const last = await indexed();
    const { weth } = dex.tokens;
    const now = Number((await publicClient(anvil.url).getBlock({ blockNumber: BigInt(last) })).timestamp);
    const swap = parseAbiItem(
      'event Swap(address indexed sender, uint amount0In, uint amount1In, uint amount0Out, uint amount1Out, address indexed to)',
    );
    const want = { buys: { '5m': 0, '1h': 0, '6h': 0, '24h': 0 }, sells: { '5m': 0, '1h': 0, '6h': 0, '24h': 0 } } as Record<
      'buys' | 'sells',
      Record<string, number>
    >;
    for (const pool of [wethUsdc, tkaWeth, tkbWeth]) {
      for (const l of await publicClient(anvil.url).getLogs({ address: pool.address, event: swap, fromBlock: 0n, toBlock: BigInt(last) })) {
        const t = Number((await publicClient(anvil.url).getBlock({ blockNumber: l.blockNumber! })).timestamp);
        const a = l.args as { amount0In: bigint; amount1In: bigint; amount0Out: bigint; amount1Out: bigint };
        const wethIs0 = lc(pool.token0) === addr(weth);
        // The pool's ether: out is a buy, in a sell.
        const side = (wethIs0 ? a.amount0Out : a.amount1Out) > 0n ? 'buys' : 'sells';
        for (const [name, seconds] of [
          ['5m', 300],
          ['1h', 3600],
          ['6h', 21600],
          ['24h', 86400],
        ] as const)
          if (t >= now - seconds) want[side]![name]!++;
      }
    }
    const r = await s.call(`/api/v2.2/tokens/${addr(weth)}/analytics?chain=0x539`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.totalBuys).toEqual(want.buys);
    expect(r.body.totalSells).toEqual(want.sells);
    expect(want.buys['24h']! + want.sells['24h']!).toBeGreaterThan(0);
    // One trader here (the first dev account): one buyer wherever there was a buy.
    for (const name of ['5m', '1h', '6h', '24h']) expect(r.body.totalBuyers[name]).toBe(want.buys[name]! > 0 ? 1 : 0);
    expect(Number(r.body.totalLiquidity)).toBeGreaterThan(0);
    expect((await s.call('/api/v2.2/tokens/0x12/analytics?chain=0x539')).body.details.field).toBe('tokenAddress');
  });
});

describe("the SDK's pair calls", () => {
  const get = (path: string, query = '') => s.call(`/api/v2.2${path}?chain=0x539${query === '' ? '' : `&${query}`}`);

  it("GET /:pair_address/reserves: a V2 pair's reserves as getReserves says, at a block too; a V3 pool's balances", async () => {
    const block = await indexed();
    const now = await get(`/${lc(wethUsdc.address)}/reserves`);
    expect(now.status, JSON.stringify(now.body)).toBe(200);
    const [r0, r1] = (await publicClient(anvil.url).readContract({
      address: wethUsdc.address,
      abi: compileContracts().TestV2Pair.abi,
      functionName: 'getReserves',
      blockNumber: BigInt(block),
    })) as [bigint, bigint];
    expect(now.body).toEqual({ reserve0: r0.toString(), reserve1: r1.toString() });
    const early = Number(wethUsdc.receipt.blockNumber) + 3;
    const [e0, e1] = (await publicClient(anvil.url).readContract({
      address: wethUsdc.address,
      abi: compileContracts().TestV2Pair.abi,
      functionName: 'getReserves',
      blockNumber: BigInt(early),
    })) as [bigint, bigint];
    expect((await get(`/${lc(wethUsdc.address)}/reserves`, `to_block=${early}`)).body).toEqual({
      reserve0: e0.toString(),
      reserve1: e1.toString(),
    });
    const v3 = await get(`/${lc(tkbUsdc.address)}/reserves`);
    expect(v3.body).toEqual({
      reserve0: (await balanceOf(anvil.url, tkbUsdc.token0, tkbUsdc.address)).toString(),
      reserve1: (await balanceOf(anvil.url, tkbUsdc.token1, tkbUsdc.address)).toString(),
    });
    expect((await get(`/${addr(dex.tokens.weth)}/reserves`)).status).toBe(404);
    expect((await get(`/${lc(wethUsdc.address)}/reserves`, 'to_date=yesterday')).body.details.field).toBe('to_date');
  });

  it("GET /:token0_address/:token1_address/pairAddress: the exchange's pair of two tokens, in either order", async () => {
    const { weth, usdc, tkb } = dex.tokens;
    for (const [a, b] of [
      [weth, usdc],
      [usdc, weth],
    ]) {
      const r = await get(`/${addr(a!)}/${addr(b!)}/pairAddress`, 'exchange=miniswap');
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.pairAddress).toBe(lc(wethUsdc.address));
      expect([r.body.token0.address, r.body.token1.address]).toEqual([lc(wethUsdc.token0), lc(wethUsdc.token1)]);
      expect(r.body.token0.symbol).toBe(lc(wethUsdc.token0) === addr(weth) ? 'WETH' : 'USDC');
    }
    expect((await get(`/${addr(tkb)}/${addr(usdc)}/pairAddress`, 'exchange=MiniSwap%20v3')).body.pairAddress).toBe(lc(tkbUsdc.address));
    expect((await get(`/${addr(tkb)}/${addr(usdc)}/pairAddress`, 'exchange=MiniSwap')).body.pairAddress).toBe(lc(tkbUsdc.address));
    expect((await get(`/${addr(tkb)}/${addr(usdc)}/pairAddress`, 'exchange=uniswapv2')).status).toBe(404);
    expect((await get(`/${addr(tkb)}/${addr(usdc)}/pairAddress`)).body.details.field).toBe('exchange');
  });

  it("GET /:token0_address/:token1_address/price: the first token's price in the second, and in USD", async () => {
    const block = await indexed();
    const { weth, tka } = dex.tokens;
    const r = await get(`/${addr(tka)}/${addr(weth)}/price`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      pair_address: lc(tkaWeth.address),
      pair_label: 'TKA/WETH',
      exchange: 'MiniSwap',
      quote_price: formatted(await v2Price(tkaWeth, tka.address, block)),
      price_usd: (await priced(addr(tka))).usdPriceFormatted,
    });
    expect(r.body.base_token.address).toBe(addr(tka));
    expect(r.body.quote_token.address).toBe(addr(weth));
    const back = await get(`/${addr(weth)}/${addr(tka)}/price`);
    expect(back.body.quote_price).toBe(formatted(await v2Price(tkaWeth, weth.address, block)));
  });

  it('answers EvmApi.defi.getPairReserves', async () => {
    const moralis = await moralisFor(s.url, s.key);
    const reserves = (await moralis.EvmApi.defi.getPairReserves({ chain: '0x539', pairAddress: wethUsdc.address })).toJSON();
    expect(reserves).toEqual((await get(`/${lc(wethUsdc.address)}/reserves`)).body);
  });

  it('answers EvmApi.defi.getPairAddress and getPairPrice, and EvmApi.wallets.getWalletNetWorth and getWalletTokenBalancesPrice, as the HTTP API does', async () => {
    const moralis = await moralisFor(s.url, s.key);
    const { weth, usdc, tka } = dex.tokens;
    const pair = (
      await moralis.EvmApi.defi.getPairAddress({
        chain: '0x539',
        token0Address: weth.address,
        token1Address: usdc.address,
        exchange: 'MiniSwap' as never,
      })
    ).toJSON() as Json;
    const rawPair = (await get(`/${addr(weth)}/${addr(usdc)}/pairAddress`, 'exchange=MiniSwap')).body;
    expect(lc(pair['pairAddress'])).toBe(lc(wethUsdc.address));
    expect(lc(pair['pairAddress'])).toBe(rawPair.pairAddress);
    const price = (
      await moralis.EvmApi.defi.getPairPrice({ chain: '0x539', token0Address: tka.address, token1Address: weth.address })
    ).toJSON();
    expect(price).toEqual((await get(`/${addr(tka)}/${addr(weth)}/price`)).body);
    const wallet = lc(DEV_ACCOUNTS[0].address);
    const worth = (await moralis.EvmApi.wallets.getWalletNetWorth({ chains: ['0x539'], address: wallet })).toJSON();
    expect(worth).toEqual((await s.call(`/api/v2.2/wallets/${wallet}/net-worth?chains=0x539`)).body);
    const tokens = (await moralis.EvmApi.wallets.getWalletTokenBalancesPrice({ chain: '0x539', address: wallet })).toJSON() as Json;
    const rawTokens = (await s.call(`/api/v2.2/wallets/${wallet}/tokens?chain=0x539`)).body;
    expect(tokens['result']).toEqual(rawTokens.result);
    expect((rawTokens.result as Json[]).some((t) => t['usd_price'] !== null)).toBe(true);
  });
});

describe('GET /pairs/:address/ohlcv', () => {
  it("buckets the pair's swaps, each priced by the reserves right after it, newest candle first", async () => {
    const { weth } = dex.tokens;
    const last = await indexed();
    // Every Swap of the pair, from the node: each in its own block (anvil mines one transaction a block).
    const logs = await publicClient(anvil.url).getLogs({
      address: wethUsdc.address,
      event: parseAbiItem(
        'event Swap(address indexed sender, uint amount0In, uint amount1In, uint amount0Out, uint amount1Out, address indexed to)',
      ),
      fromBlock: 0n,
      toBlock: BigInt(last),
    });
    expect(logs.length).toBeGreaterThanOrEqual(3);
    const wethIs0 = lc(wethUsdc.token0) === addr(weth);
    const expected = new Map<number, { open: number; high: number; low: number; close: number; volume: number; trades: number }>();
    for (const l of logs) {
      const block = Number(l.blockNumber);
      const price = await v2Price(wethUsdc, weth.address, block);
      const usd = Number(price.num) / Number(price.den);
      const a = l.args as { amount0In: bigint; amount1In: bigint; amount0Out: bigint; amount1Out: bigint };
      const moved = wethIs0 ? a.amount0In - a.amount0Out : a.amount1In - a.amount1Out;
      const volume = (Number(moved < 0n ? -moved : moved) / 1e18) * usd;
      const t = Number((await publicClient(anvil.url).getBlock({ blockNumber: BigInt(block) })).timestamp);
      const hour = Math.floor(t / 3600) * 3600;
      const c = expected.get(hour);
      if (c === undefined) expected.set(hour, { open: usd, high: usd, low: usd, close: usd, volume, trades: 1 });
      else
        Object.assign(c, {
          high: Math.max(c.high, usd),
          low: Math.min(c.low, usd),
          close: usd,
          volume: c.volume + volume,
          trades: c.trades + 1,
        });
    }
    const first = Number((await publicClient(anvil.url).getBlock({ blockNumber: 0n })).timestamp);
    const lastTime = Number((await publicClient(anvil.url).getBlock({ blockNumber: BigInt(last) })).timestamp);
    const r = await s.call(
      `/api/v2.2/pairs/${lc(wethUsdc.address)}/ohlcv?chain=0x539&timeframe=1h&currency=usd&fromDate=${first}&toDate=${lastTime}`,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      page: 0,
      cursor: null,
      pairAddress: lc(wethUsdc.address),
      tokenAddress: addr(weth),
      timeframe: '1h',
      currency: 'usd',
    });
    const want = [...expected.entries()].sort((a, b) => b[0] - a[0]);
    expect(r.body.result.map((c: Json) => c.timestamp)).toEqual(want.map(([h]) => new Date(h * 1000).toISOString()));
    r.body.result.forEach((c: Json, i: number) => {
      const w = want[i]![1];
      for (const k of ['open', 'high', 'low', 'close', 'volume'] as const) expect(c[k], `${c.timestamp} ${k}`).toBeCloseTo(w[k], 6);
      expect(c.trades).toBe(w.trades);
    });
    // In ether: the same candles divided by ether's price, which is this pair's own: 1 each.
    const native = await s.call(
      `/api/v2.2/pairs/${lc(wethUsdc.address)}/ohlcv?chain=0x539&timeframe=1d&currency=native&fromDate=${first}&toDate=${lastTime}`,
    );
    expect(native.status, JSON.stringify(native.body)).toBe(200);
    expect(native.body.result.length).toBe(new Set([...expected.keys()].map((h) => Math.floor(h / 86_400))).size);
    for (const c of native.body.result as Json[]) expect(c.close).toBeCloseTo(1, 9);
    for (const [query, field] of [
      ['timeframe=2h', 'timeframe'],
      ['currency=eur', 'currency'],
      ['toDate=soon', 'toDate'],
      [`fromDate=${lastTime}&toDate=${first}`, 'fromDate'],
    ] as const) {
      const bad = await s.call(`/api/v2.2/pairs/${lc(wethUsdc.address)}/ohlcv?chain=0x539&fromDate=${first}&toDate=${lastTime}&${query}`);
      expect(bad.status, query).toBe(400);
      expect(bad.body.details.field, query).toBe(field);
    }
    expect((await s.call(`/api/v2.2/pairs/${addr(weth)}/ohlcv?chain=0x539&fromDate=${first}&toDate=${lastTime}`)).status).toBe(404);
  });
});

describe('a server started after the pools were created', () => {
  it('knows a pool by its first event, reading factory(), token0() and token1()', async () => {
    const { weth, usdc } = dex.tokens;
    const from = (await indexed()) + 1;
    const late = await startChainpost(
      serverEnv(anvil, {
        CHAINPOST_START_BLOCKS: `0x539=${from}`,
        CHAINPOST_PRICING: JSON.stringify({
          '0x539': {
            wrappedNative: weth.address,
            stablecoins: [usdc.address],
            factories: [{ address: dex.v2Factory.address, kind: 'v2', name: 'MiniSwap' }],
          },
        }),
      }),
    );
    try {
      const none = await late.call(`/api/v2.2/erc20/${addr(weth)}/price?chain=0x539`);
      expect(none.status, 'no pool event seen yet').toBe(404);
      await v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address], units('1000', usdc));
      const block = await indexed();
      expect(
        await until(
          async () => ((await late.call('/health')).body.chains as Json[]).find((c) => c['chain'] === '0x539')?.['head'] >= block,
          10_000,
          20,
        ),
      ).toBe(true);
      const r = await late.call(`/api/v2.2/erc20/${addr(weth)}/price?chain=0x539`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({
        usdPriceFormatted: formatted(await v2Price(wethUsdc, weth.address, block)),
        pairAddress: lc(wethUsdc.address),
        exchangeAddress: addr(dex.v2Factory),
      });
      expect(r.body.usdPriceFormatted).toBe((await priced(addr(weth))).usdPriceFormatted);
    } finally {
      await stopAndClean(late);
    }
  });
});

describe('POST /erc20/prices', () => {
  const post = (body: unknown, query = '') => s.call(`/api/v2.2/erc20/prices?chain=0x539${query}`, { method: 'POST', json: body });

  it('answers the priced tokens in the order asked and leaves the others out', async () => {
    const { weth, tka, tkb } = dex.tokens;
    const r = await post({
      tokens: [
        { token_address: addr(tka) },
        { token_address: addr(dex.v2Factory) },
        { token_address: addr(weth) },
        { token_address: addr(tkb), exchange: 'MiniSwap v3' },
      ],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.map((p: Json) => p.tokenAddress)).toEqual([addr(tka), addr(weth), addr(tkb)]);
    for (const p of r.body)
      expect(p.usdPriceFormatted).toBe(
        (await priced(p.tokenAddress, p.tokenAddress === addr(tkb) ? 'exchange=MiniSwap%20v3' : '')).usdPriceFormatted,
      );
  });

  it('refuses a body it cannot read, naming the field', async () => {
    const many = Array.from({ length: 101 }, () => ({ token_address: addr(dex.tokens.weth) }));
    for (const [body, field] of [
      [{}, 'tokens'],
      [{ tokens: [] }, 'tokens'],
      [{ tokens: many }, 'tokens'],
      [{ tokens: [{ token_address: 'weth' }] }, 'tokens.0.token_address'],
      [{ tokens: [{ token_address: addr(dex.tokens.weth), x: 1 }] }, 'tokens.0'],
    ] as const) {
      const r = await post(body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(JSON.stringify(r.body)).toContain(field);
    }
  });
});

describe('the official SDK', () => {
  it('reads prices with EvmApi.token.getTokenPrice and getMultipleTokenPrices', async () => {
    const moralis = await moralisFor(s.url, s.key);
    const { weth, tka } = dex.tokens;
    const one = (await moralis.EvmApi.token.getTokenPrice({ chain: '0x539', address: weth.address })).toJSON();
    const ours = await priced(addr(weth));
    expect(one.usdPrice).toBe(ours.usdPrice);
    expect(lc(one.pairAddress)).toBe(lc(wethUsdc.address));
    const many = (
      await moralis.EvmApi.token.getMultipleTokenPrices(
        { chain: '0x539' },
        { tokens: [{ tokenAddress: tka.address }, { tokenAddress: weth.address }] },
      )
    ).toJSON();
    expect(many.map((p: Json) => lc(p.tokenAddress))).toEqual([addr(tka), addr(weth)]);
    expect(many[1].usdPrice).toBe(ours.usdPrice);
  });
});

describe('GET /v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price', () => {
  const v1 = (path: string) => s.call(`/v1/chains/${path}`);

  it('answers the Data API price of an EVM token in the Universal API shape, with the chain synced to the block priced', async () => {
    const block = await indexed();
    const { tka } = dex.tokens;
    const v2 = await priced(addr(tka));
    const r = await v1(`devnet/tokens/${tka.address}/price`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      chain: '0x539',
      tokenName: v2.tokenName,
      tokenSymbol: v2.tokenSymbol,
      tokenAddress: addr(tka),
      tokenLogo: null,
      tokenDecimals: 18,
      usdPrice: v2.usdPrice,
      '24hrChangeUsd': v2.usdPrice24hrUsdChange,
      '24hrChangePercent': v2.usdPrice24hrPercentChange,
      nativePrice: v2.nativePrice,
      verifiedContract: false,
      securityScore: null,
      possibleSpam: false,
      updatedAt: new Date(
        Number((await rpc<{ timestamp: Hex }>('eth_getBlockByNumber', [`0x${block.toString(16)}`, false])).timestamp) * 1000,
      ).toISOString(),
      dexInformation: {
        chainId: '0x539',
        exchangeName: v2.exchangeName,
        exchangeAddress: v2.exchangeAddress,
        pairAddress: v2.pairAddress,
        pairTotalLiquidityUsd: v2.pairTotalLiquidityUsd,
        tokenAddress: addr(tka),
        toBlock: String(block),
      },
      meta: { syncedAt: { '0x539': block } },
    });
    // An older block, by the cross-chain name of to_block.
    const older = await v1(`0x539/tokens/${tka.address}/price?toBlock=${block - 1}`);
    expect(older.body.dexInformation.toBlock).toBe(String(block - 1));
    expect(older.body.usdPrice).toBe((await priced(addr(tka), `to_block=${block - 1}`)).usdPrice);
  });

  it('prices `native` as the wrapped native token, and Bitcoin as the wrapped bitcoin of the followed EVM chains', async () => {
    await indexed();
    const { weth, tkb } = dex.tokens;
    const native = await v1('devnet/tokens/native/price');
    expect(native.status).toBe(200);
    expect(native.body).toMatchObject({ tokenAddress: addr(weth), usdPrice: (await priced(addr(weth))).usdPrice });
    const wbtc = await priced(addr(tkb));
    for (const alias of ['bitcoin', 'btc', 'bitcoin-mainnet']) {
      const btc = await v1(`${alias}/tokens/native/price`);
      expect(btc.status, JSON.stringify(btc.body)).toBe(200);
      expect(btc.body).toMatchObject({
        chain: 'bitcoin',
        tokenName: 'Bitcoin',
        tokenSymbol: 'BTC',
        tokenAddress: null,
        tokenDecimals: 8,
        nativePrice: null,
        usdPrice: wbtc.usdPrice,
        '24hrChangeUsd': wbtc.usdPrice24hrUsdChange,
        dexInformation: { chainId: '0x539', tokenAddress: addr(tkb), pairAddress: wbtc.pairAddress },
      });
      // This server follows no Bitcoin node: its sync point is null; the EVM chain the price came from is named too.
      expect(btc.body.meta.syncedAt).toEqual({ bitcoin: null, '0x539': Number(wbtc.toBlock) });
    }
  });

  it('refuses what it cannot answer, naming the field', async () => {
    const cases: Array<[string, number, string | undefined]> = [
      [`nowhere/tokens/native/price`, 400, 'chainAlias'],
      [`all/tokens/native/price`, 400, 'chainAlias'],
      [`base/tokens/native/price`, 400, 'chainAlias'],
      [`sol/tokens/native/price`, 400, 'chainAlias'],
      [`devnet/tokens/0x1234/price`, 400, 'tokenAliasOrTokenAddress'],
      [`bitcoin/tokens/${dex.tokens.tkb.address}/price`, 400, 'tokenAliasOrTokenAddress'],
      [`bitcoin/tokens/native/price?toBlock=5`, 400, 'toBlock'],
      [`devnet/tokens/native/price?liquidityThreshold=lots`, 400, 'liquidityThreshold'],
      [`devnet/tokens/native/price?maxTokenInactivity=-1`, 400, 'maxTokenInactivity'],
      [`devnet/tokens/native/price?toBlock=tomorrow`, 400, 'toBlock'],
      // No pool prices it.
      [`devnet/tokens/${dex.v2Factory.address}/price`, 404, undefined],
    ];
    for (const [path, status, field] of cases) {
      const r = await v1(path);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(status);
      if (field !== undefined) expect(r.body.details?.field, path).toBe(field);
    }
  });
});

describe('GET /v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price/timeseries and /sparkline', () => {
  const HOUR = 3600;
  const sync = parseAbiItem('event Sync(uint112 reserve0, uint112 reserve1)');
  /** Every block's timestamp, 0 … head, as anvil has them. */
  const times = async (head: number): Promise<number[]> =>
    Promise.all(
      Array.from({ length: head + 1 }, async (_, n) =>
        Number((await rpc<{ timestamp: Hex }>('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])).timestamp),
      ),
    );
  const hourOf = (t: number): number => Math.floor(t / HOUR) * HOUR;
  const iso = (t: number): string => new Date(t * 1000).toISOString();
  let head: number;
  let at: number[];

  beforeAll(async () => {
    // Two more TKA swaps, one and three hours of block time later: TKA's price moves in three distinct hours.
    const { tka, weth } = dex.tokens;
    const t0 = Number((await rpc<{ timestamp: Hex }>('eth_getBlockByNumber', ['latest', false])).timestamp);
    for (const later of [HOUR, 3 * HOUR]) {
      await rpc('evm_setNextBlockTimestamp', [`0x${(t0 + later).toString(16)}`]);
      await v2RouterSwapExactIn(anvil.url, dex, [weth.address, tka.address], parseUnits('0.01', 18));
    }
    head = await indexed();
    at = await times(head);
  }, 60_000);

  /** The expected series of TKA between two times in buckets of `step` seconds (hourly by default): each bucket's close (its last block), priced by the Data API at that block. */
  async function expected(
    from: number,
    to: number,
    forwardFill: boolean,
    step = HOUR,
  ): Promise<Array<{ timestamp: string; price: number }>> {
    const moved = new Set(
      (await publicClient(anvil.url).getLogs({ address: tkaWeth.address, event: sync, fromBlock: 0n, toBlock: BigInt(head) })).map((l) =>
        Number(l.blockNumber),
      ),
    );
    const out: Array<{ timestamp: string; price: number }> = [];
    for (let h = Math.floor(from / step) * step; h <= to; h += step) {
      const blocks = at.flatMap((t, n) => (t >= h && t < h + step && t <= to ? [n] : []));
      const close = at.reduce((last, t, n) => (t < Math.min(h + step, to + 1) ? n : last), -1);
      if (close < 0 || (!forwardFill && !blocks.some((n) => moved.has(n)))) continue;
      const r = await price(addr(dex.tokens.tka), `to_block=${close}`);
      if (r.status === 200) out.push({ timestamp: iso(h), price: r.body.usdPrice });
    }
    return out;
  }

  it('lists each hour the token was marked in, at its close, and every hour from the first with forwardFill', async () => {
    const from = at[0]!;
    const to = at[head]!;
    const base = `devnet/tokens/${dex.tokens.tka.address}/price/timeseries?interval=hourly&fromDate=${from}&toDate=${to}`;
    const r = await s.call(`/v1/chains/${base}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const marked = await expected(from, to, false);
    expect(marked.length).toBe(3);
    expect(r.body).toEqual({
      cursor: null,
      chain: '0x539',
      fromDate: iso(from),
      toDate: iso(to),
      interval: 'hourly',
      page: 0,
      result: marked,
      meta: { syncedAt: { '0x539': head } },
    });
    const filled = await s.call(`/v1/chains/${base}&forwardFill=true`);
    expect(filled.body.result).toEqual(await expected(from, to, true));
    expect(filled.body.result.length).toBeGreaterThan(marked.length);
    // Pages of two, each cursor going on where the last stopped.
    const pages: unknown[] = [];
    let cursor: string | null = null;
    do {
      const p: { body: { result: unknown[]; cursor: string | null } } = await s.call(
        `/v1/chains/${base}&forwardFill=true&limit=2${cursor === null ? '' : `&cursor=${cursor}`}`,
      );
      pages.push(...p.body.result);
      cursor = p.body.cursor;
    } while (cursor !== null && pages.length < 50);
    expect(pages).toEqual(filled.body.result);
    // Bitcoin's series is its wrapped bitcoin's (TKB here).
    const btc = await s.call(
      `/v1/chains/bitcoin/tokens/native/price/timeseries?interval=hourly&fromDate=${from}&toDate=${to}&forwardFill=true`,
    );
    const tkb = await s.call(
      `/v1/chains/devnet/tokens/${dex.tokens.tkb.address}/price/timeseries?interval=hourly&fromDate=${from}&toDate=${to}&forwardFill=true`,
    );
    expect(btc.body.result.length).toBeGreaterThan(0);
    expect(btc.body.result).toEqual(tkb.body.result);
  });

  it('draws a sparkline over the range ending at the last indexed block, a point per bucket from the first priced', async () => {
    const r = await s.call(`/v1/chains/devnet/tokens/${dex.tokens.tka.address}/price/sparkline?range=7d`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const to = at[head]!;
    expect(r.body).toMatchObject({ chain: '0x539', range: '7d', fromDate: iso(to - 7 * 86_400), toDate: iso(to), page: 0, cursor: null });
    expect(r.body.result).toEqual(await expected(to - 7 * 86_400, to, true));
    expect(r.body.meta).toEqual({ syncedAt: { '0x539': head } });
  });

  it('answers every interval and range: fixed-size buckets, Monday weeks and calendar months; ranges back from the last block', async () => {
    const [from, to] = [at[0]!, at[head]!];
    const tka = dex.tokens.tka.address;
    const series = async (query: string): Promise<Json> => {
      const r = await s.call(`/v1/chains/devnet/tokens/${tka}/price/${query}`);
      expect(r.status, `${query}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body.meta, query).toEqual({ syncedAt: { '0x539': head } });
      return r.body;
    };
    for (const [interval, step] of [
      ['5m', 300],
      ['daily', 86_400],
    ] as const) {
      const body = await series(`timeseries?interval=${interval}&fromDate=${from}&toDate=${to}&forwardFill=true`);
      // The first page: the default limit of 100 points.
      const all = await expected(from, to, true, step);
      expect(body.result, interval).toEqual(all.slice(0, 100));
      expect(body.cursor === null, interval).toBe(all.length <= 100);
    }
    // The last block's price closes the last week and month; their buckets start on a Monday and a month's first day, at 00:00 UTC.
    const last = (await price(addr(dex.tokens.tka), `to_block=${head}`)).body.usdPrice;
    for (const [interval, first] of [
      ['weekly', (d: Date) => d.getUTCDay() === 1],
      ['monthly', (d: Date) => d.getUTCDate() === 1],
    ] as const) {
      const points = (await series(`timeseries?interval=${interval}&fromDate=${from}&toDate=${to}&forwardFill=true`)).result as Array<{
        timestamp: string;
        price: number;
      }>;
      expect(points.length, interval).toBeGreaterThan(0);
      for (const p of points)
        expect([p.timestamp.endsWith('T00:00:00.000Z'), first(new Date(p.timestamp))], `${interval} ${p.timestamp}`).toEqual([true, true]);
      expect(Date.parse(points[0]!.timestamp) / 1000, interval).toBeLessThanOrEqual(from);
      expect(points.at(-1)!.price, interval).toBe(last);
    }
    for (const [range, seconds, step] of [
      ['24h', 86_400, 300],
      ['30d', 30 * 86_400, HOUR],
      ['90d', 90 * 86_400, 86_400],
      ['1y', 365 * 86_400, 86_400],
    ] as const) {
      const body = await series(`sparkline?range=${range}`);
      expect([body.fromDate, body.toDate], range).toEqual([iso(to - seconds), iso(to)]);
      expect(body.result, range).toEqual(await expected(to - seconds, to, true, step));
    }
  });

  it('keeps a window ending at the last indexed block while another block arrives: its cursor goes on with the same window', async () => {
    const base = `/v1/chains/devnet/tokens/${dex.tokens.tka.address}/price/timeseries?interval=hourly&fromDate=${at[0]!}&forwardFill=true&limit=2`;
    const first = await s.call(base);
    expect(first.body.toDate).toBe(iso(at[head]!));
    expect(first.body.cursor).not.toBeNull();
    // A block two hours later is indexed: a first page asked now would end there.
    await rpc('evm_setNextBlockTimestamp', [`0x${(at[head]! + 2 * HOUR).toString(16)}`]);
    await rpc('evm_mine', []);
    const later = await indexed();
    expect(later).toBe(head + 1);
    expect((await s.call(base)).body.toDate).toBe(iso(at[head]! + 2 * HOUR));
    const second = await s.call(`${base}&cursor=${first.body.cursor}`);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect([second.body.toDate, second.body.page]).toEqual([iso(at[head]!), 1]);
    expect([...first.body.result, ...second.body.result]).toEqual((await expected(at[0]!, at[head]!, true)).slice(0, 4));
  });

  it('refuses a bad interval, range, date order or cursor, naming the field', async () => {
    const tka = dex.tokens.tka.address;
    const cases: Array<[string, string]> = [
      [`devnet/tokens/${tka}/price/timeseries?interval=2m`, 'interval'],
      [`devnet/tokens/${tka}/price/timeseries?fromDate=2030-01-01&toDate=2029-01-01`, 'fromDate'],
      [`devnet/tokens/${tka}/price/timeseries?cursor=nonsense`, 'cursor'],
      [`devnet/tokens/${tka}/price/timeseries?limit=101`, 'limit'],
      [`devnet/tokens/${tka}/price/timeseries?forwardFill=yes`, 'forwardFill'],
      [`devnet/tokens/${tka}/price/sparkline`, 'range'],
      [`devnet/tokens/${tka}/price/sparkline?range=2d`, 'range'],
      [`bitcoin/tokens/${tka}/price/sparkline?range=7d`, 'tokenAliasOrTokenAddress'],
    ];
    for (const [path, field] of cases) {
      const r = await s.call(`/v1/chains/${path}`);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.details?.field, path).toBe(field);
    }
  });
});
