import { describe, expect, it } from 'vitest';
import { figures, positions } from '../../../../engine/crosschain/pnl.js';
import { connect, traderRows, type Trader } from '../../../../engine/crosschain/trades.js';
import type { Ratio, Role } from '../../../../engine/data-api/dex/index/prices.js';

/** Top traders rank each wallet's position in the token as pnl.ts counts it (weighted average cost). */

const X = '0x00000000000000000000000000000000000000aa';
const USDC = '0x00000000000000000000000000000000000000cc';
const role = (t: string): Role => (t === USDC ? 'stable' : 'other');
const r = (n: number): Ratio => ({ num: BigInt(n), den: 1n });
const INFO = { name: 'X', symbol: 'X', decimals: 18, nftStandard: '' as const, possibleSpam: false };
/** `amount` X bought or sold for `usd` USDC. */
const buy = (amount: number, usd: number) => ({
  bought: { token: X, amount: r(amount) },
  sold: { token: USDC, amount: r(usd) },
  valueUsd: r(usd),
});
const sell = (amount: number, usd: number) => ({
  bought: { token: USDC, amount: r(usd) },
  sold: { token: X, amount: r(amount) },
  valueUsd: r(usd),
});
/** A wallet's row from its swaps of X (oldest first) at the current price. */
const trader = (wallet: string, swaps: ReturnType<typeof buy>[], price: Ratio | null): Trader => {
  const position = positions(swaps, role).find((p) => p.token === X)!;
  return { wallet, pnl: { position, priceUsd: price, info: INFO, figures: figures(position, price) } };
};
const ANY = { sortBy: 'totalPnl', minTradeCount: undefined, minVolumeUsd: undefined, excludeLowLiquidity: false } as const;

describe('top traders: the ranking of the positions', () => {
  it('answers each wallet as its position comes to, best first, filtered', () => {
    // a: buys 2 for $20 (cost $10 each), sells 3 for $45 (2 of them covered: proceeds $30, cost $20), buys 1 for $20;
    // at $25 the one held is $5 up. b: buys 4 for $8, sells 1 for $5 ($3 realized), holds 3 costing $6, now $75.
    const swapsA = [buy(2, 20), sell(3, 45), buy(1, 20)];
    const swapsB = [buy(4, 8), sell(1, 5)];
    const traders = [trader('0xa', swapsA, r(25)), trader('0xb', swapsB, r(25))];
    const [first, second] = traderRows(traders, ANY);
    expect(first).toEqual({
      walletAddress: '0xb',
      totalTokensBought: '4',
      totalTokensSold: '1',
      totalBoughtVolumeUsd: '8',
      totalSoldVolumeUsd: '5',
      totalTrades: 2,
      avgBuyPriceUsd: '2',
      avgSellPriceUsd: '5',
      avgCostOfQuantitySold: '2',
      realizedProfitUsd: '3',
      realizedProfitPercentage: 150,
      unrealizedProfitUsd: '69',
      totalPnlUsd: '72',
      totalPnlPercentage: 900,
      roi: 900,
    });
    expect(second).toMatchObject({
      walletAddress: '0xa',
      totalTokensBought: '3',
      totalTokensSold: '3',
      totalTrades: 3,
      avgCostOfQuantitySold: '10',
      realizedProfitUsd: '10',
      realizedProfitPercentage: 50,
      unrealizedProfitUsd: '5',
      totalPnlUsd: '15',
      totalPnlPercentage: 37.5,
    });
    // Other orders and filters.
    expect(traderRows(traders, { ...ANY, sortBy: 'realizedPnl' }).map((t) => t.walletAddress)).toEqual(['0xa', '0xb']);
    expect(traderRows(traders, { ...ANY, sortBy: 'volume', minTradeCount: 3 }).map((t) => t.walletAddress)).toEqual(['0xa']);
    expect(traderRows(traders, { ...ANY, sortBy: 'volume', minVolumeUsd: 14 }).map((t) => t.walletAddress)).toEqual(['0xa']);
    // No price: unrealized is null (pnl.ts' rule), the total the realized part, and unrealizedPnl sorts it last.
    const unpriced = [trader('0xa', swapsA, null), trader('0xb', swapsB, r(25))];
    expect(traderRows(unpriced, ANY).find((t) => t.walletAddress === '0xa')).toMatchObject({
      unrealizedProfitUsd: null,
      totalPnlUsd: '10',
    });
    expect(traderRows(unpriced, { ...ANY, sortBy: 'unrealizedPnl' }).map((t) => t.walletAddress)).toEqual(['0xb', '0xa']);
    // excludeLowLiquidity leaves out a row with no price now.
    expect(traderRows(unpriced, { ...ANY, excludeLowLiquidity: true }).map((t) => t.walletAddress)).toEqual(['0xb']);
  });

  it('connects candles: each opens at the close of the one before it (newest first), its high and low widened', () => {
    const candles = [
      { open: 5, high: 6, low: 4, close: 5.5 },
      { open: 1, high: 7, low: 1, close: 7 },
      { open: 9, high: 9, low: 2, close: 0.5 },
    ];
    expect(connect(candles)).toEqual([{ open: 7, high: 7, low: 4, close: 5.5 }, { open: 0.5, high: 7, low: 0.5, close: 7 }, candles[2]]);
  });
});
