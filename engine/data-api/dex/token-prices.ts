import { z } from 'zod';
import { offChain } from '../common/answer-parts.js';
import { ApiError } from '../../errors.js';
import type { DataDeps } from '../common/deps.js';
import { indexedHead } from '../common/pages.js';
import { metadata } from '../common/node-reads.js';
import { blockNumber, evmAddress } from '../common/params.js';
import { decimal, MIN_SIDE_USD, priceReader, usdCents, type PriceOptions, type PriceReader } from './index/prices.js';
import { dayChange, optionsOf, priceParams } from './index/usd.js';
import { NATIVE } from '../common/values.js';
import { BATCH } from '../../size-limits.js';

/**
 * GET /erc20/:address/price and POST /erc20/prices: a token's USD price derived from the DEX pools this server
 * indexed (engine/data-api/dex/index/prices.ts), in the hosted service's `erc20Price` shape. No pricing pool: 404 for
 * one token, left out of the batch.
 */

/** POST /erc20/prices takes at most this many tokens. */
export const MAX_PRICES = BATCH.tokenPrices;

const exchange = z.string().min(1).max(100);

const options = {
  ...priceParams,
  // Deprecated upstream: the percent changes are always answered.
  include: z.enum(['percent_change'], 'percent_change').optional(),
};

export const tokenPriceQuery = z.object({
  address: evmAddress,
  exchange: exchange.optional(),
  to_block: blockNumber.optional(),
  ...options,
});
export const tokenPricesQuery = z.object(options);
export const tokenPricesBody = z.object({
  tokens: z
    .array(
      z
        .object({
          token_address: evmAddress,
          exchange: exchange.optional(),
          to_block: z
            .union([
              blockNumber,
              z
                .number()
                .int()
                .nonnegative()
                .max(2 ** 48),
            ])
            .optional(),
        })
        .strict(),
    )
    .min(1, 'at least one token')
    .max(MAX_PRICES, `at most ${MAX_PRICES} tokens`),
});

type Options = z.output<typeof tokenPricesQuery>;

/** A token's price: the hosted service's `erc20Price` (GET /erc20/:address/price, and each item of POST /erc20/prices). */
export const tokenPriceAnswer = z.object({
  tokenName: z.string(),
  tokenSymbol: z.string(),
  tokenLogo: offChain,
  tokenDecimals: z.string(),
  nativePrice: z
    .object({ value: z.string(), decimals: z.number().int(), name: z.string(), symbol: z.string(), address: z.string() })
    .nullable()
    .meta({
      description: 'The price in the native currency (wei per whole token, through the wrapped native token); null without its USD price',
    }),
  usdPrice: z.number(),
  usdPriceFormatted: z.string(),
  '24hrPercentChange': z.string().nullable(),
  exchangeName: z.string(),
  exchangeAddress: z.string().meta({ description: "The pricing pool's factory" }),
  tokenAddress: z.string(),
  toBlock: z.string(),
  possibleSpam: z.boolean(),
  verifiedContract: z.boolean(),
  pairAddress: z.string(),
  pairTotalLiquidityUsd: z.string(),
  usdPrice24h: z.number().nullable(),
  usdPrice24hrUsdChange: z.number().nullable(),
  usdPrice24hrPercentChange: z.number().nullable(),
  securityScore: z.null(),
});
type TokenPriceAnswer = z.infer<typeof tokenPriceAnswer>;
export const tokenPricesAnswer = z.array(tokenPriceAnswer);

/** One token's erc20Price; null when no pool prices it. */
async function price(
  deps: DataDeps,
  reader: PriceReader | undefined,
  chain: string,
  head: number,
  token: string,
  toBlock: number | undefined,
  opts: PriceOptions,
): Promise<TokenPriceAnswer | null> {
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
        : {
            value: ((now.usd.num * nativeUsd.den * 10n ** 18n) / (now.usd.den * nativeUsd.num)).toString(),
            decimals: NATIVE.decimals,
            name: NATIVE.name,
            symbol: NATIVE.symbol,
            address: deps.pricing!(chain)!.wrappedNative,
          },
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

export async function tokenPrice(deps: DataDeps, chain: string, q: z.output<typeof tokenPriceQuery>): Promise<TokenPriceAnswer> {
  const head = await indexedHead(deps, chain);
  const out = await price(deps, priceReader(deps, chain, head), chain, head, q.address, q.to_block, optionsOf(q, q.exchange));
  if (out === null)
    throw new ApiError(
      404,
      `no pool this server indexed prices ${q.address} on chain ${chain}${q.to_block === undefined ? '' : ` at block ${q.to_block}`}: a pool against a stablecoin, the wrapped native token or a whitelisted token, each side holding at least $${q.min_pair_side_liquidity_usd ?? MIN_SIDE_USD} (min_pair_side_liquidity_usd)`,
    );
  return out;
}

/** The tokens a pool prices, in the order asked; the others are left out. One reader: the routes' prices are computed once. */
export async function tokenPrices(
  deps: DataDeps,
  chain: string,
  q: Options,
  body: z.output<typeof tokenPricesBody>,
): Promise<z.infer<typeof tokenPricesAnswer>> {
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  const out = await Promise.all(
    body.tokens.map((t) => price(deps, reader, chain, head, t.token_address, t.to_block, optionsOf(q, t.exchange))),
  );
  return out.filter((p): p is TokenPriceAnswer => p !== null);
}
