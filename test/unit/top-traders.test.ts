import { describe, expect, it } from 'vitest';
import { connect, traderRows, type SwapItem } from '../../engine/crosschain/trades.js';

/** A swap of the token by `wallet`: `amount` tokens for `usd` dollars. */
const swap = (wallet: string, type: 'buy' | 'sell', amount: number, usd: number | null): SwapItem => ({
  walletAddress: wallet,
  transactionType: type,
  totalValueUsd: usd,
  bought: { amount: type === 'buy' ? String(amount) : '1' },
  sold: { amount: type === 'sell' ? String(amount) : '1' },
});

describe('top traders: weighted average cost over the swaps seen', () => {
  it('realizes only the part of a sale its earlier buys account for, and holds the rest at the price given', () => {
    // A: buys 2 for $20 (cost $10 each), sells 3 for $45 (2 of them matched: proceeds $30, cost $20), buys 1 for $20;
    // at $25 the one held is $5 up. B: buys 4 for $8, sells 1 for $5 ($3 realized), holds 3 costing $6, now $75.
    const swaps = [swap('0xA', 'buy', 2, 20), swap('0xb', 'buy', 4, 8), swap('0xa', 'sell', 3, 45), swap('0xB', 'sell', 1, 5), swap('0xa', 'buy', 1, 20)];
    const [first, second] = traderRows(swaps, 25, { sortBy: 'totalPnl', minTradeCount: undefined, minVolumeUsd: undefined });
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
    expect(second).toMatchObject({ walletAddress: '0xa', totalTokensBought: '3', totalTokensSold: '3', totalTrades: 3, avgCostOfQuantitySold: '10', realizedProfitUsd: '10', realizedProfitPercentage: 50, unrealizedProfitUsd: '5', totalPnlUsd: '15', totalPnlPercentage: 37.5 });
    // Other orders and filters.
    expect(traderRows(swaps, 25, { sortBy: 'realizedPnl', minTradeCount: undefined, minVolumeUsd: undefined }).map((r) => r.walletAddress)).toEqual(['0xa', '0xb']);
    expect(traderRows(swaps, 25, { sortBy: 'volume', minTradeCount: 3, minVolumeUsd: undefined }).map((r) => r.walletAddress)).toEqual(['0xa']);
    expect(traderRows(swaps, 25, { sortBy: 'volume', minTradeCount: undefined, minVolumeUsd: 14 }).map((r) => r.walletAddress)).toEqual(['0xa']);
    // No price: nothing unrealized.
    expect(traderRows(swaps, null, { sortBy: 'totalPnl', minTradeCount: undefined, minVolumeUsd: undefined }).find((r) => r.walletAddress === '0xa')?.unrealizedProfitUsd).toBe('0');
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
