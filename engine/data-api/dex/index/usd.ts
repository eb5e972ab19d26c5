import { z } from 'zod';
import { decimal, MIN_SIDE_USD, mul, toNumber, usdCents, type PriceOptions, type PriceReader, type Priced, type Ratio } from './prices.js';

/**
 * Prices as the endpoints answer them in USD, wherever they do (tokens, wallets, NFT sales, scores): values, changes
 * and shares from the price reader (prices.ts), and the query parameters that set how a price is found.
 */

const usdAmount = z
  .string()
  .regex(/^\d{1,15}(\.\d{1,18})?$/, 'a USD amount such as 50 or 0.5')
  .transform(Number);
const days = z
  .string()
  .regex(/^\d{1,6}(\.\d{1,6})?$/, 'a number of days such as 1 or 0.5')
  .transform(Number)
  .refine((d) => d > 0, 'more than 0 days');

/** The query parameters that set how a price is found, wherever prices are answered. */
export const priceParams = {
  max_token_inactivity: days.optional(),
  min_pair_side_liquidity_usd: usdAmount.optional(),
};
/** The same under the cross-chain API's names. */
export const v1PriceParams = {
  maxTokenInactivity: days.optional(),
  liquidityThreshold: usdAmount.optional(),
};

export const optionsOf = (
  q: { min_pair_side_liquidity_usd?: number | undefined; max_token_inactivity?: number | undefined },
  exchangeName?: string,
): PriceOptions => ({
  minSideUsd: q.min_pair_side_liquidity_usd ?? MIN_SIDE_USD,
  ...(exchangeName === undefined ? {} : { exchange: exchangeName }),
  ...(q.max_token_inactivity === undefined ? {} : { maxInactivityDays: q.max_token_inactivity }),
});

/** A price as numbers: now, 24 h before (null: none that old), the change, and the percent change (100 × change / then; null from 0). */
export function dayChange({ now, dayAgo }: Priced) {
  const usdPrice = toNumber(now.usd);
  const usd24h = dayAgo === null ? null : toNumber(dayAgo.usd);
  const change = usd24h === null ? null : usdPrice - usd24h;
  return { usdPrice, usd24h, change, percent: change === null || usd24h === 0 ? null : (100 * change) / usd24h! };
}

/** `raw` smallest units of a token with `decimals`, at `usd` per whole token: their USD value, exact. */
export const usdOf = (raw: bigint, decimals: number, usd: Ratio): Ratio => mul({ num: raw, den: 10n ** BigInt(decimals) }, usd);

/** A token's fully diluted valuation: its total supply at `usd` per whole token; null without either. */
export const fdvOf = (supply: string | null, decimals: number | null, usd: Ratio | null): Ratio | null =>
  supply === null || usd === null ? null : usdOf(BigInt(supply), decimals ?? 0, usd);

/** The same as the answers' USD amount strings write it (to the cent, as usdCents); null without a price (never 0). */
export const centsOf = (raw: bigint, decimals: number, usd: Ratio | null): string | null =>
  usd === null ? null : usdCents(usdOf(raw, decimals, usd));

/**
 * A balance's USD fields as the wallet endpoints answer them (the reference's types: the price and the changes as
 * decimal strings, the value a number), all null when no pool prices its token; and the exact value, for sums.
 */
export async function balanceUsd(
  reader: PriceReader | undefined,
  token: string,
  block: number,
  balance: bigint,
  decimals: number,
  opts: PriceOptions,
) {
  const found = (await reader?.price(token, block, opts)) ?? null;
  if (found === null)
    return {
      fields: {
        usd_price: null,
        usd_price_24hr_percent_change: null,
        usd_price_24hr_usd_change: null,
        usd_value: null,
        usd_value_24hr_usd_change: null,
      },
      value: null,
    };
  const value = usdOf(balance, decimals, found.now.usd);
  const usdValue = toNumber(value);
  const then = found.dayAgo?.usd ?? null;
  // Changes may be negative: differences of the numbers.
  const { change, percent } = dayChange(found);
  const fields = {
    usd_price: decimal(found.now.usd, 18),
    usd_price_24hr_percent_change: percent === null ? null : String(percent),
    usd_price_24hr_usd_change: change === null ? null : String(change),
    usd_value: usdValue,
    usd_value_24hr_usd_change: then === null ? null : String(usdValue - toNumber(usdOf(balance, decimals, then))),
  };
  return { fields, value };
}

/** Each item's share of the items' summed usd_value, in percent; null for an item without one. */
export function withPortfolio<T extends { usd_value: number | null }>(items: T[]): Array<T & { portfolio_percentage: number | null }> {
  const total = items.reduce((sum, i) => sum + (i.usd_value ?? 0), 0);
  return items.map((i) =>
    Object.assign(i, { portfolio_percentage: i.usd_value === null || total === 0 ? null : (100 * i.usd_value) / total }),
  );
}
