import { z } from 'zod';
import { ApiError } from '../../errors.js';
import type { DataDeps } from '../common/deps.js';
import { indexedHead } from '../erc20/reads.js';
import { metadata } from '../nft/transfers.js';
import { blockNumber, evmAddress } from '../common/params.js';
import { decimal, MIN_SIDE_USD, mul, priceReader, toNumber, usdCents, type PriceOptions, type PriceReader, type Priced, type Ratio } from './index/prices.js';
import { NATIVE } from '../common/values.js';
import { BATCH } from '../../size-limits.js';

/**
 * GET /erc20/:address/price and POST /erc20/prices: a token's USD price derived from the DEX pools this server
 * indexed (engine/data-api/dex/index/prices.ts), in the hosted service's `erc20Price` shape. No pricing pool: 404 for
 * one token, left out of the batch.
 */

/** POST /erc20/prices takes at most this many tokens. */
export const MAX_PRICES = BATCH.tokenPrices;

const usdAmount = z
  .string()
  .regex(/^\d{1,15}(\.\d{1,18})?$/, 'a USD amount such as 50 or 0.5')
  .transform(Number);
const days = z
  .string()
  .regex(/^\d{1,6}(\.\d{1,6})?$/, 'a number of days such as 1 or 0.5')
  .transform(Number)
  .refine((d) => d > 0, 'more than 0 days');
const exchange = z.string().min(1).max(100);

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
const options = {
  ...priceParams,
  // Deprecated upstream: the percent changes are always answered.
  include: z.enum(['percent_change'], 'percent_change').optional(),
};

export const tokenPriceQuery = z.object({ address: evmAddress, exchange: exchange.optional(), to_block: blockNumber.optional(), ...options });
export const tokenPricesQuery = z.object(options);
export const tokenPricesBody = z.object({
  tokens: z
    .array(z.object({ token_address: evmAddress, exchange: exchange.optional(), to_block: z.union([blockNumber, z.number().int().nonnegative().max(2 ** 48)]).optional() }).strict())
    .min(1, 'at least one token')
    .max(MAX_PRICES, `at most ${MAX_PRICES} tokens`),
});

type Options = z.output<typeof tokenPricesQuery>;

export const optionsOf = (q: { min_pair_side_liquidity_usd?: number | undefined; max_token_inactivity?: number | undefined }, exchangeName?: string): PriceOptions => ({
  minSideUsd: q.min_pair_side_liquidity_usd ?? MIN_SIDE_USD,
  ...(exchangeName === undefined ? {} : { exchange: exchangeName }),
  ...(q.max_token_inactivity === undefined ? {} : { maxInactivityDays: q.max_token_inactivity }),
});


/** One token's erc20Price; null when no pool prices it. */
async function price(deps: DataDeps, reader: PriceReader | undefined, chain: string, head: number, token: string, toBlock: number | undefined, opts: PriceOptions) {
  const block = toBlock === undefined ? head : Math.min(toBlock, head);
  const [found, info] = await Promise.all([reader?.price(token, block, opts) ?? null, metadata(deps, chain, token)]);
  if (found === null) return null;
  const { now, nativeUsd } = found;
  const { usdPrice, usd24h, change, percent } = dayChange(found);
  return {
    tokenName: info.name,
    tokenSymbol: info.symbol,
    tokenLogo: null,
    tokenDecimals: String(info.decimals ?? 0),
    nativePrice:
      nativeUsd === null || nativeUsd.num === 0n
        ? null
        : { value: ((now.usd.num * nativeUsd.den * 10n ** 18n) / (now.usd.den * nativeUsd.num)).toString(), decimals: NATIVE.decimals, name: NATIVE.name, symbol: NATIVE.symbol, address: deps.pricing!(chain)!.wrappedNative },
    usdPrice,
    usdPriceFormatted: decimal(now.usd, 18),
    '24hrPercentChange': percent === null ? null : String(percent),
    exchangeName: now.exchangeName,
    exchangeAddress: now.factory,
    tokenAddress: token,
    toBlock: String(block),
    possibleSpam: info.possibleSpam,
    verifiedContract: false,
    pairAddress: now.pool,
    pairTotalLiquidityUsd: usdCents(now.liquidityUsd),
    usdPrice24h: usd24h,
    usdPrice24hrUsdChange: change,
    usdPrice24hrPercentChange: percent,
    securityScore: null,
  };
}

export async function tokenPrice(deps: DataDeps, chain: string, q: z.output<typeof tokenPriceQuery>) {
  const head = await indexedHead(deps, chain);
  const out = await price(deps, priceReader(deps, chain, head), chain, head, q.address, q.to_block, optionsOf(q, q.exchange));
  if (out === null) throw new ApiError(404, `no pool this server indexed prices ${q.address} on chain ${chain}${q.to_block === undefined ? '' : ` at block ${q.to_block}`}: a pool against a stablecoin, the wrapped native token or a whitelisted token, each side holding at least $${q.min_pair_side_liquidity_usd ?? MIN_SIDE_USD} (min_pair_side_liquidity_usd)`);
  return out;
}

/** The tokens a pool prices, in the order asked; the others are left out. One reader: the routes' prices are computed once. */
export async function tokenPrices(deps: DataDeps, chain: string, q: Options, body: z.output<typeof tokenPricesBody>) {
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  const out = await Promise.all(body.tokens.map((t) => price(deps, reader, chain, head, t.token_address, t.to_block, optionsOf(q, t.exchange))));
  return out.filter((p) => p !== null);
}

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
export const fdvOf = (supply: string | null, decimals: number | null, usd: Ratio | null): Ratio | null => (supply === null || usd === null ? null : usdOf(BigInt(supply), decimals ?? 0, usd));

/** The same as the answers' USD amount strings write it (to the cent, as usdCents); null without a price (never 0). */
export const centsOf = (raw: bigint, decimals: number, usd: Ratio | null): string | null => (usd === null ? null : usdCents(usdOf(raw, decimals, usd)));

/**
 * A balance's USD fields as the wallet endpoints answer them (the reference's types: the price and the changes as
 * decimal strings, the value a number), all null when no pool prices its token; and the exact value, for sums.
 */
export async function balanceUsd(reader: PriceReader | undefined, token: string, block: number, balance: bigint, decimals: number, opts: PriceOptions) {
  const found = (await reader?.price(token, block, opts)) ?? null;
  if (found === null) return { fields: { usd_price: null, usd_price_24hr_percent_change: null, usd_price_24hr_usd_change: null, usd_value: null, usd_value_24hr_usd_change: null }, value: null };
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
  return items.map((i) => Object.assign(i, { portfolio_percentage: i.usd_value === null || total === 0 ? null : (100 * i.usd_value) / total }));
}
