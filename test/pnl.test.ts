import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUnits, type Hex } from 'viem';
import { deploy, DEV_ACCOUNTS, publicClient } from './contracts.js';
import { addV2Liquidity, createV2Pair, transferToken, v2SwapExactIn, type Created } from './dex.js';
import { startPricedDevnet, type PricedDevnet } from './priced-devnet.js';

/**
 * Profit and loss end to end (engine/crosschain/pnl.ts): a trader buys and sells through real Uniswap V2 pairs on
 * anvil, the real server indexes the swaps, and GET /v1/wallets/:walletAddress/pnl, /pnl/summary, and the Data API's
 * /wallets/:address/profitability, /profitability/summary and /erc20/:address/top-gainers answer figures computed
 * here by hand. Every swap takes a round output below what the pair would give (getAmountOut, checked in the
 * comments), so every price is exact; USDC is the stablecoin ($1), so each trade's value is its USDC leg.
 */

let net: PricedDevnet;
let tkp: Hex;
let tkq: Hex;
let usdc: Hex;
/** The trader, and the whale who pumps TKP between the trader's buys and sale (the deployer, account 0). */
const A = DEV_ACCOUNTS[1];
const C = DEV_ACCOUNTS[0];
const a = A.address.toLowerCase();
const c = C.address.toLowerCase();
/** Block times (seconds) of the trader's second buy, and of the pump after it. */
let t2: number;
let t3: number;

const lc = (x: string): string => x.toLowerCase();
const call = (path: string) => net.s.call(path);
async function ok(path: string): Promise<Record<string, any>> {
  const r = await call(path);
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
}
const usd = (n: string): bigint => parseUnits(n, 6);
const e18 = (n: string): bigint => parseUnits(n, 18);

beforeAll(async () => {
  net = await startPricedDevnet();
  const url = net.anvil.url;
  usdc = net.dex.tokens.usdc.address;
  const token = async (name: string, symbol: string) => (await deploy(url, 'TestToken', [name, symbol, 18, e18('1000000000')], C)).address;
  tkp = await token('Token P', 'TKP');
  tkq = await token('Token Q', 'TKQ');
  // TKP/USDC: 20,000 TKP and 10,000 USDC ($0.5 a TKP). TKQ/USDC: 10 and 10, under $50 a side: no price.
  const pool = async (t: Hex, amount: string, usdcAmount: string): Promise<Created> => {
    const pair = await createV2Pair(url, net.dex, t, usdc);
    await addV2Liquidity(
      url,
      pair,
      ...((lc(pair.token0) === lc(t) ? [e18(amount), usd(usdcAmount)] : [usd(usdcAmount), e18(amount)]) as [bigint, bigint]),
    );
    return pair;
  };
  const tkpUsdc = await pool(tkp, '20000', '10000');
  const tkqUsdc = await pool(tkq, '10', '10');
  await transferToken(url, usdc, A.address, usd('1502'), C);
  // 1. A pays 500 USDC for 800 TKP (getAmountOut: 500·997·20000 / (10000·1000 + 500·997) = 949.68 ≥ 800).
  //    Reserves 19,200 TKP / 10,500 USDC.
  await v2SwapExactIn(url, tkpUsdc, usdc, usd('500'), { account: A, amountOut: e18('800') });
  // 2. A pays 1,000 USDC for 1,200 TKP (1000·997·19200 / (10500·1000 + 1000·997) = 1665.0 ≥ 1200).
  //    Reserves 18,000 / 11,500. A holds 2,000 TKP at a cost of $1,500: $0.75 each.
  const second = await v2SwapExactIn(url, tkpUsdc, usdc, usd('1000'), { account: A, amountOut: e18('1200') });
  t2 = Number((await publicClient(url).getBlock({ blockNumber: second.receipt.blockNumber })).timestamp);
  t3 = t2 + 3_600;
  await publicClient(url).request({ method: 'evm_setNextBlockTimestamp' as never, params: [t3] as never });
  // 3. An hour later C pays 11,500 USDC for 8,000 TKP (11500·997·18000 / (11500·1000 + 11500·997) = 8986.5 ≥ 8000).
  //    Reserves 10,000 / 23,000.
  await v2SwapExactIn(url, tkpUsdc, usdc, usd('11500'), { account: C, amountOut: e18('8000') });
  // 4. A sells 1,500 TKP for 2,300 USDC (1500·997·23000 / (10000·1000 + 1500·997) = 2992.2 ≥ 2300).
  //    Reserves 11,500 TKP / 20,700 USDC: TKP's price is now 20700 / 11500 = $1.8.
  await v2SwapExactIn(url, tkpUsdc, tkp, e18('1500'), { account: A, amountOut: usd('2300') });
  // 5. A pays 2 USDC for 1 TKQ (2·997·10 / (10·1000 + 2·997) = 1.66 ≥ 1). Reserves 9 TKQ / 12 USDC: under $50 a side.
  await v2SwapExactIn(url, tkqUsdc, usdc, usd('2'), { account: A, amountOut: e18('1') });
  await net.indexed();
}, 120_000);

afterAll(async () => {
  await net?.stop();
});

/**
 * A's TKP by weighted average cost:
 *   bought 800 + 1,200 = 2,000 TKP for 500 + 1,000 = $1,500: average cost 1500 / 2000 = $0.75;
 *   sold 1,500 TKP for $2,300 (2300 / 1500 = $1.5333… each): realized 2300 − 0.75·1500 = 2300 − 1125 = $1,175,
 *   that is 1175 / 1125 = 104.444…% of the cost of what was sold;
 *   holds 500 TKP at cost 0.75·500 = $375, worth 1.8·500 = $900: unrealized 900 − 375 = $525 (525 / 375 = 140%);
 *   total 1175 + 525 = $1,700, 1700 / 1500 = 113.333…% of what was bought.
 * A's TKQ: bought 1 TKQ for $2; no current price (its pool is under $50 a side): unrealized null, total 0.
 */
const TKP_ROW = {
  chain: '0x539',
  totalTokensBought: '2000',
  totalTokensSold: '1500',
  totalBoughtVolumeUsd: 1500,
  totalSoldVolumeUsd: 2300,
  totalTrades: 3,
  totalBuys: 2,
  totalSells: 1,
  avgBuyPriceUsd: 0.75,
  avgCostOfQuantitySold: 0.75,
  remainingBalance: '500',
  currentPriceUsd: 1.8,
  realizedProfitUsd: 1175,
  unrealizedProfitUsd: 525,
  unrealizedProfitPercentage: 140,
  totalPnlUsd: 1700,
  name: 'Token P',
  symbol: 'TKP',
  decimals: 18,
};

describe('GET /v1/wallets/:walletAddress/pnl', () => {
  it("answers A's tokens by weighted average cost, largest total first, and pages them", async () => {
    const all = await ok(`/v1/wallets/${a}/pnl`);
    expect(all.result).toHaveLength(2);
    const [p, q] = all.result;
    expect(p).toMatchObject({ ...TKP_ROW, walletAddress: a, tokenAddress: lc(tkp) });
    expect(p.avgSellPriceUsd).toBeCloseTo(2300 / 1500, 12);
    expect(p.realizedProfitPercentage).toBeCloseTo((1175 / 1125) * 100, 10);
    expect(p.totalPnlPercentage).toBeCloseTo((1700 / 1500) * 100, 10);
    expect(p.roi).toBeCloseTo(1700 / 1500, 12);
    expect(q).toMatchObject({
      tokenAddress: lc(tkq),
      totalTokensBought: '1',
      totalBoughtVolumeUsd: 2,
      totalTrades: 1,
      currentPriceUsd: null,
      unrealizedProfitUsd: null,
      realizedProfitUsd: 0,
      totalPnlUsd: 0,
      remainingBalance: '1',
      avgSellPriceUsd: null,
    });
    expect(all.meta.syncedAt['0x539']).toBeGreaterThan(0);
    expect(all.cursor).toBeNull();
    // One a page: TKP, then TKQ by the cursor.
    const first = await ok(`/v1/wallets/${a}/pnl?limit=1`);
    expect(first.result.map((r: any) => r.tokenAddress)).toEqual([lc(tkp)]);
    const second = await ok(`/v1/wallets/${a}/pnl?limit=1&cursor=${first.cursor}`);
    expect([second.result.map((r: any) => r.tokenAddress), second.cursor]).toEqual([[lc(tkq)], null]);
    // The cursor is of that query only.
    expect((await call(`/v1/wallets/${a}/pnl?limit=1&sortBy=volume&cursor=${first.cursor}`)).body.details.field).toBe('cursor');
  });

  it('sorts, filters and narrows by token', async () => {
    // An unpriced unrealized profit sorts last; by volume TKP's 3,800 comes before TKQ's 2.
    expect((await ok(`/v1/wallets/${a}/pnl?sortBy=unrealizedPnl`)).result.map((r: any) => r.tokenAddress)).toEqual([lc(tkp), lc(tkq)]);
    expect((await ok(`/v1/wallets/${a}/pnl?sortBy=volume`)).result.map((r: any) => r.tokenAddress)).toEqual([lc(tkp), lc(tkq)]);
    const tokens = async (query: string) => (await ok(`/v1/wallets/${a}/pnl?${query}`)).result.map((r: any) => r.tokenAddress);
    expect(await tokens('excludeLowLiquidity=true')).toEqual([lc(tkp)]);
    expect(await tokens('excludeLowLiquidity=false')).toEqual([lc(tkp), lc(tkq)]);
    // TKP's volume: 1500 + 2300 = 3800.
    expect(await tokens('minVolumeUsd=3800')).toEqual([lc(tkp)]);
    expect(await tokens('minVolumeUsd=3800.01')).toEqual([]);
    expect(await tokens('minTradeCount=3')).toEqual([lc(tkp)]);
    expect(await tokens('minTradeCount=4')).toEqual([]);
    expect(await tokens(`tokenAddresses=${tkq}`)).toEqual([lc(tkq)]);
    expect(await tokens(`tokenAddresses[]=${tkq}&tokenAddresses[]=${tkp}`)).toEqual([lc(tkp), lc(tkq)]);
  });

  it('takes a window: fromTimestamp/toTimestamp in ms, bounds included, over period', async () => {
    // Up to the second buy (its block's second, to its last ms): the two buys, 2,000 TKP for $1,500, nothing sold;
    // unrealized at today's $1.8: 1.8·2000 − 1500 = $2,100.
    const early = await ok(`/v1/wallets/${a}/pnl?period=7d&toTimestamp=${t2 * 1000 + 999}`);
    expect(early.result).toHaveLength(1);
    expect(early.result[0]).toMatchObject({
      tokenAddress: lc(tkp),
      totalTokensBought: '2000',
      totalBoughtVolumeUsd: 1500,
      totalSells: 0,
      realizedProfitUsd: 0,
      unrealizedProfitUsd: 2100,
      totalPnlUsd: 2100,
      remainingBalance: '2000',
    });
    // From 1 ms after it: only the sale of 1,500 TKP for $2,300, bought outside the window: no known cost, nothing realized.
    const late = await ok(`/v1/wallets/${a}/pnl?fromTimestamp=${t2 * 1000 + 1}&tokenAddresses=${tkp}`);
    expect(late.result).toHaveLength(1);
    expect(late.result[0]).toMatchObject({
      totalBuys: 0,
      totalSells: 1,
      totalTokensSold: '1500',
      totalSoldVolumeUsd: 2300,
      realizedProfitUsd: 0,
      remainingBalance: '0',
      avgCostOfQuantitySold: null,
    });
    // The swaps are minutes old on the server's clock: 7d and 30d see them all.
    expect((await ok(`/v1/wallets/${a}/pnl?period=30d`)).result[0]).toMatchObject(TKP_ROW);
  });

  it('C, who only bought: 8,000 TKP for $11,500, worth 1.8·8000 = $14,400 now: unrealized $2,900', async () => {
    const r = await ok(`/v1/wallets/${c}/pnl`);
    expect(r.result).toHaveLength(1);
    expect(r.result[0]).toMatchObject({
      tokenAddress: lc(tkp),
      totalTokensBought: '8000',
      totalBoughtVolumeUsd: 11500,
      realizedProfitUsd: 0,
      unrealizedProfitUsd: 2900,
      totalPnlUsd: 2900,
    });
  });

  it('a chain the server does not follow is named in meta; bad parameters are 400 naming the field', async () => {
    const btc = await ok(`/v1/wallets/${a}/pnl?chains=bitcoin`);
    expect(btc.result).toEqual([]);
    expect(btc.meta.unsupportedChains).toEqual(['bitcoin']);
    const bad: Array<[string, string]> = [
      ['period=1y', 'period'],
      ['fromTimestamp=yesterday', 'fromTimestamp'],
      [`fromTimestamp=2000&toTimestamp=1000`, 'fromTimestamp'],
      ['sortBy=luck', 'sortBy'],
      ['minTradeCount=1.5', 'minTradeCount'],
      ['minVolumeUsd=-1', 'minVolumeUsd'],
      ['excludeLowLiquidity=yes', 'excludeLowLiquidity'],
      ['tokenAddresses=0x12', 'tokenAddresses.0'],
      ['chains=atlantis', 'chains'],
      ['limit=101', 'limit'],
    ];
    for (const [query, field] of bad) {
      for (const path of query.startsWith('sortBy') || query.startsWith('token') || query.startsWith('limit')
        ? ['pnl']
        : ['pnl', 'pnl/summary']) {
        const r = await call(`/v1/wallets/${a}/${path}?${query}`);
        expect([r.status, r.body.details?.field], `${path}?${query}: ${JSON.stringify(r.body)}`).toEqual([400, field]);
      }
    }
    expect((await call('/v1/wallets/0x12/pnl')).body.details.field).toBe('walletAddress');
    expect((await call('/v1/wallets/0x12/pnl/summary')).body.details.field).toBe('walletAddress');
  });
});

describe('GET /v1/wallets/:walletAddressOrPublicKey/tokens?includePnl=true', () => {
  it("gives each of A's token rows its PnL row, the native row null; without it the rows have none", async () => {
    const rows = (await ok(`/v1/wallets/${a}/tokens?chains=0x539&includePnl=true`)).result;
    const p = rows.find((r: any) => r.tokenAddress?.toLowerCase() === lc(tkp));
    expect(p.balanceRaw).toBe(String(500n * 10n ** 18n));
    expect(p.pnl).toMatchObject({ ...TKP_ROW, walletAddress: a, tokenAddress: lc(tkp) });
    expect(rows.find((r: any) => r.nativeToken).pnl).toBeNull();
    const plain = (await ok(`/v1/wallets/${a}/tokens?chains=0x539`)).result;
    expect(plain.length).toBe(rows.length);
    expect(plain.some((r: any) => 'pnl' in r)).toBe(false);
  });
});

describe('GET /v1/wallets/:walletAddress/pnl/summary', () => {
  it("sums A's tokens", async () => {
    // TKP and TKQ: bought 2000 + 1 TKP and TKQ for 1500 + 2 = $1,502; sold $2,300; 3 + 1 trades; realized $1,175;
    // unrealized of the priced TKP only: $525 on its $375 cost (140%); total 1,700 + 0 = $1,700, 1700/1502 of the cost.
    const s = await ok(`/v1/wallets/${a}/pnl/summary`);
    expect(s).toMatchObject({
      totalTokensBought: '2001',
      totalTokensSold: '1500',
      totalBoughtVolumeUsd: 1502,
      totalSoldVolumeUsd: 2300,
      totalTrades: 4,
      totalBuys: 3,
      totalSells: 1,
      realizedProfitUsd: 1175,
      unrealizedProfitUsd: 525,
      unrealizedProfitPercentage: 140,
      totalPnlUsd: 1700,
      winRate: 100,
      tokensTraded: 2,
    });
    expect(s.realizedProfitPercentage).toBeCloseTo((1175 / 1125) * 100, 10);
    expect(s.totalPnlPercentage).toBeCloseTo((1700 / 1502) * 100, 10);
    expect(s.roi).toBeCloseTo(1700 / 1502, 12);
    expect(s.meta.syncedAt['0x539']).toBeGreaterThan(0);
    // Without the unpriced TKQ: TKP alone.
    const liquid = await ok(`/v1/wallets/${a}/pnl/summary?excludeLowLiquidity=true`);
    expect(liquid).toMatchObject({
      totalTokensBought: '2000',
      totalBoughtVolumeUsd: 1500,
      totalTrades: 3,
      tokensTraded: 1,
      totalPnlUsd: 1700,
    });
    // Up to the second buy: nothing sold, no win rate.
    expect(await ok(`/v1/wallets/${a}/pnl/summary?toTimestamp=${t2 * 1000 + 999}`)).toMatchObject({
      totalTrades: 2,
      totalSells: 0,
      realizedProfitUsd: 0,
      unrealizedProfitUsd: 2100,
      winRate: 0,
      tokensTraded: 1,
    });
  });
});

describe('the Data API names: GET /api/v2.2/wallets/:address/profitability, /profitability/summary, /erc20/:address/top-gainers', () => {
  const v22 = (path: string, query = '') => ok(`/api/v2.2${path}?chain=0x539${query}`);

  it("answers A's tokens, most realized profit first", async () => {
    const r = await v22(`/wallets/${a}/profitability`);
    expect(r.result).toHaveLength(2);
    expect(r.result[0]).toEqual({
      token_address: lc(tkp),
      avg_buy_price_usd: '0.75',
      // 2300 / 1500, truncated to 18 decimals.
      avg_sell_price_usd: '1.533333333333333333',
      total_usd_invested: '1500',
      total_tokens_sold: '1500',
      total_tokens_bought: '2000',
      total_sold_usd: '2300',
      avg_cost_of_quantity_sold: '0.75',
      count_of_trades: 3,
      realized_profit_usd: '1175',
      realized_profit_percentage: expect.closeTo((1175 / 1125) * 100, 10),
      total_buys: 2,
      total_sells: 1,
      name: 'Token P',
      symbol: 'TKP',
      decimals: '18',
      logo: null,
      possible_spam: false,
    });
    expect(r.result[1]).toMatchObject({ token_address: lc(tkq), total_usd_invested: '2', realized_profit_usd: '0', count_of_trades: 1 });
    expect((await v22(`/wallets/${a}/profitability`, `&token_addresses=${tkq}`)).result.map((x: any) => x.token_address)).toEqual([
      lc(tkq),
    ]);
    // The swaps are minutes old on the server's clock: the last 7 days hold them all.
    expect((await v22(`/wallets/${a}/profitability`, '&days=7')).result[0].realized_profit_usd).toBe('1175');
  });

  it('sums them', async () => {
    const summary = {
      total_count_of_trades: 4,
      // 1502 bought + 2300 sold.
      total_trade_volume: '3802',
      total_realized_profit_usd: '1175',
      total_realized_profit_percentage: expect.closeTo((1175 / 1125) * 100, 10),
      total_buys: 3,
      total_sells: 1,
      total_sold_volume_usd: '2300',
      total_bought_volume_usd: '1502',
    };
    expect(await v22(`/wallets/${a}/profitability/summary`)).toEqual(summary);
    expect(await v22(`/wallets/${a}/profitability/summary`, '&days=90')).toEqual(summary);
  });

  it("lists TKP's profitable wallets: A, not C (who only bought)", async () => {
    const r = await v22(`/erc20/${tkp}/top-gainers`);
    expect(r).toMatchObject({ name: 'Token P', symbol: 'TKP', decimals: 18, logo: null, possible_spam: false });
    expect(r.result).toHaveLength(1);
    expect(r.result[0]).toMatchObject({
      address: a,
      realized_profit_usd: '1175',
      total_tokens_bought: '2000',
      total_tokens_sold: '1500',
      total_usd_invested: '1500',
      total_sold_usd: '2300',
      avg_cost_of_quantity_sold: '0.75',
      count_of_trades: 3,
    });
    // TKQ: one buy, nothing realized.
    expect((await v22(`/erc20/${tkq}/top-gainers`)).result).toEqual([]);
  });

  it('bad parameters are 400 naming the field', async () => {
    const bad: Array<[string, string]> = [
      [`/wallets/${a}/profitability?days=14`, 'days'],
      [`/wallets/${a}/profitability/summary?days=7d`, 'days'],
      [`/erc20/${tkp}/top-gainers?days=60`, 'days'],
      [`/wallets/${a}/profitability?token_addresses=0x1`, 'token_addresses.0'],
      ['/wallets/0x12/profitability?chain=0x539', 'address'],
      ['/erc20/0x12/top-gainers?chain=0x539', 'address'],
    ];
    for (const [path, field] of bad) {
      const r = await call(`/api/v2.2${path}${path.includes('chain=') ? '' : '&chain=0x539'}`);
      expect([r.status, r.body.details?.field], `${path}: ${JSON.stringify(r.body)}`).toEqual([400, field]);
    }
  });
});
