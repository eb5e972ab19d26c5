import { describe, expect, it } from 'vitest';
import { figures, positions, signedDecimal, tokenTrades, v1Window } from '../../../../engine/crosschain/pnl.js';
import type { Ratio, Role } from '../../../../engine/data-api/dex/index/prices.js';
import { ApiError } from '../../../../engine/errors.js';

/** Profit and loss by weighted average cost (engine/crosschain/pnl.ts), on sequences computed by hand. */

const X = '0x00000000000000000000000000000000000000aa';
const Y = '0x00000000000000000000000000000000000000bb';
const USDC = '0x00000000000000000000000000000000000000cc';
const WETH = '0x00000000000000000000000000000000000000dd';
const ROLES: Record<string, Role> = { [USDC]: 'stable', [WETH]: 'native' };
const role = (t: string): Role => ROLES[t] ?? 'other';

const r = (n: number | string): Ratio => {
  const [int, frac = ''] = String(n).split('.');
  return { num: BigInt(int! + frac), den: 10n ** BigInt(frac.length) };
};
/** Buys `amount` of `token` paying `usd` of USDC; sells likewise. */
const buy = (amount: number, usd: number, token = X, paid = USDC) => ({
  bought: { token, amount: r(amount) },
  sold: { token: paid, amount: r(usd) },
  valueUsd: r(usd),
});
const sell = (amount: number, usd: number, token = X, got = USDC) => ({
  bought: { token: got, amount: r(usd) },
  sold: { token, amount: r(amount) },
  valueUsd: r(usd),
});
const text = (x: Ratio | null, digits = 6): string | null => (x === null ? null : signedDecimal(x, digits));

describe('positions: weighted average cost, sale by sale', () => {
  // 1. buy 100 X for $200            held 100, cost 200 (avg 2)
  // 2. buy 300 X for $300            held 400, cost 500 (avg 1.25)
  // 3. sell 200 X for $400           realized 400 − 1.25·200 = 150; held 200, cost 250 (avg 1.25)
  // 4. buy  50 X for $150            held 250, cost 400 (avg 1.6)
  // 5. sell 150 X for $330           realized 330 − 1.6·150 = 90 (240 in all); held 100, cost 160
  // current price $2.5: unrealized 2.5·100 − 160 = 90; total 240 + 90 = 330.
  // bought 450 X for $650 (avg 1.444444…); sold 350 X for $730 (avg 2.085714…); cost of the sold 250 + 240 = 490,
  // so the average cost of the quantity sold is 490 / 350 = 1.4. (Averaging all buys first instead would give
  // (730/350 − 650/450) · 350 = 224.444…: the order of the trades matters.)
  const [p] = positions([buy(100, 200), buy(300, 300), sell(200, 400), buy(50, 150), sell(150, 330)], role);
  const f = figures(p!, r(2.5));

  it('sums the trades', () => {
    expect(p!.token).toBe(X);
    expect([p!.buys, p!.sells, f.trades]).toEqual([3, 2, 5]);
    expect([text(p!.bought), text(p!.sold), text(p!.boughtUsd), text(p!.soldUsd), text(f.volumeUsd)]).toEqual([
      '450',
      '350',
      '650',
      '730',
      '1380',
    ]);
    expect([text(f.avgBuyPrice), text(f.avgSellPrice), text(f.avgCostOfSold)]).toEqual(['1.444444', '2.085714', '1.4']);
  });

  it('realizes each sale against the average cost at the time', () => {
    expect(text(p!.realized)).toBe('240');
    expect([text(p!.held), text(p!.cost), text(p!.costOfSold)]).toEqual(['100', '160', '490']);
    expect([text(f.unrealized), text(f.total)]).toEqual(['90', '330']);
  });

  it('counts a loss, and unrealized is null without a current price (total is then the realized part)', () => {
    // buy 10 X for $50 (avg 5), sell 4 X for $8: realized 8 − 5·4 = −12; held 6 at cost 30.
    const [q] = positions([buy(10, 50), sell(4, 8)], role);
    expect(text(q!.realized)).toBe('-12');
    expect(text(figures(q!, r(4)).unrealized)).toBe('-6'); // 4·6 − 30
    const unpriced = figures(q!, null);
    expect([unpriced.unrealized, text(unpriced.total)]).toEqual([null, '-12']);
  });

  it('a sale beyond the position realizes only the part of known cost', () => {
    // buy 10 X for $10 (avg 1); sell 40 X for $80: 10 are covered, their share of the sale 80·10/40 = 20, realized 20 − 10 = 10.
    const [q] = positions([buy(10, 10), sell(40, 80)], role);
    expect([text(q!.realized), text(q!.held), text(q!.sold), text(q!.soldAtCost), text(q!.costOfSold)]).toEqual([
      '10',
      '0',
      '40',
      '10',
      '10',
    ]);
    // Nothing bought at all: the sale counts, realizes nothing.
    const [z] = positions([sell(5, 5, Y)], role);
    expect([z!.sells, text(z!.realized), text(figures(z!, r(1)).avgCostOfSold)]).toEqual([1, '0', null]);
  });
});

describe('tokenTrades: which legs count', () => {
  it('stablecoins get none; the wrapped native token only against a stablecoin; both legs of a token/token swap count', () => {
    expect(tokenTrades(buy(1, 2), role).map((t) => [t.token, t.side])).toEqual([[X, 'buy']]);
    expect(tokenTrades(buy(1, 2, WETH), role).map((t) => [t.token, t.side])).toEqual([[WETH, 'buy']]);
    // X bought with WETH: X's buy counts, WETH's sale does not.
    expect(tokenTrades(buy(1, 2, X, WETH), role).map((t) => [t.token, t.side])).toEqual([[X, 'buy']]);
    const xy = tokenTrades(buy(1, 2, X, Y), role);
    expect(xy.map((t) => [t.token, t.side, text(t.usd)])).toEqual([
      [X, 'buy', '2'],
      [Y, 'sell', '2'],
    ]);
  });

  it('a swap without a USD value counts for nothing', () => {
    expect(tokenTrades({ ...buy(1, 2), valueUsd: null }, role)).toEqual([]);
    expect(positions([{ ...buy(1, 2), valueUsd: null }], role)).toEqual([]);
  });
});

describe('v1Window', () => {
  const now = 1_800_000_000;
  it('period counts back from now; timestamps (ms) take precedence and are inclusive', () => {
    expect(v1Window({ period: 'all' }, now)).toEqual({});
    expect(v1Window({ period: '7d' }, now)).toEqual({ from: now - 7 * 86_400 });
    expect(v1Window({ period: '30d' }, now)).toEqual({ from: now - 30 * 86_400 });
    expect(v1Window({ period: '1d' }, now)).toEqual({ from: now - 86_400 }); // top-traders' period
    expect(v1Window({ period: '7d', fromTimestamp: 1_000_500, toTimestamp: 2_000_999 }, now)).toEqual({ from: 1001, to: 2000 });
    expect(v1Window({ period: 'all', toTimestamp: 5_000 }, now)).toEqual({ to: 5 });
  });
  it('fromTimestamp after toTimestamp is a 400 naming it', () => {
    let err: unknown;
    try {
      v1Window({ period: 'all', fromTimestamp: 2_000, toTimestamp: 1_000 }, now);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    expect((err as ApiError).message).toMatch(/^fromTimestamp:/);
  });
});
