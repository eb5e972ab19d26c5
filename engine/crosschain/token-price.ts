import { z } from 'zod';
import { findChain, type Chain } from '../chains/registry.js';
import { unixIso } from '../datetime.js';
import { indexedBlockAt } from '../data-api/common/block-times.js';
import type { DataDeps } from '../data-api/common/deps.js';
import { blockNumber, evmAddress } from '../data-api/common/params.js';
import { tokenPrice } from '../data-api/dex/token-prices.js';
import { ApiError, badRequest } from '../errors.js';
import { validate } from '../schema.js';
import { v1ChainId, type ResolvedChains } from './chains.js';
import { acrossChains, syncedAt, v1Meta, type FailedChain, type V1Meta } from './fan-out.js';
import { v1PriceParams } from '../data-api/dex/index/usd.js';
import type { v1Price } from './responses.js';

/**
 * GET /v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price: the Data API's price of an EVM token
 * (engine/data-api/dex/token-prices.ts) in the Universal API's shape; `native` is the chain's wrapped native
 * token. Bitcoin has no DEX: its `native` price is that of the wrapped bitcoin tokens (the pricing
 * registry's wrappedBtc: WBTC, cbBTC) on the followed EVM chains, the deepest pool's; null when none prices.
 */

export const v1PriceQuery = z.object({
  chainAlias: z.string(),
  tokenAliasOrTokenAddress: z.string(),
  toBlock: blockNumber.optional(),
  ...v1PriceParams,
});
type Query = z.output<typeof v1PriceQuery>;

const NATIVE = 'native';
const TOKEN_FIELD = 'tokenAliasOrTokenAddress';

/** The v2.2 answer this module reads: tokenPrice's. */
type Erc20Price = Awaited<ReturnType<typeof tokenPrice>>;

/** The answer (responses.ts). */
export type V1Price = z.output<typeof v1Price>;

/** The chains whose sync points the answer names: the asked one, and for Bitcoin the EVM chains its price is read on. */
export const metaOf = (deps: DataDeps, chains: readonly Chain[], failed: readonly FailedChain[] = []): V1Meta =>
  v1Meta({ chains, unsupported: [] } satisfies ResolvedChains, failed, syncedAt(deps));

function shaped(deps: DataDeps, chain: Chain, p: Erc20Price, source: Chain): Omit<V1Price, 'meta'> {
  const block = indexedBlockAt(deps.kv, source.key, Number(p.toBlock));
  return {
    chain: v1ChainId(chain),
    tokenName: p.tokenName,
    tokenSymbol: p.tokenSymbol,
    tokenAddress: p.tokenAddress,
    tokenLogo: null,
    tokenDecimals: Number(p.tokenDecimals),
    usdPrice: p.usdPrice,
    '24hrChangeUsd': p.usdPrice24hrUsdChange,
    '24hrChangePercent': p.usdPrice24hrPercentChange,
    nativePrice: p.nativePrice,
    verifiedContract: p.verifiedContract,
    securityScore: null,
    possibleSpam: p.possibleSpam,
    updatedAt: block === undefined ? null : unixIso(block.timestamp),
    dexInformation: {
      chainId: v1ChainId(source),
      exchangeName: p.exchangeName,
      exchangeAddress: p.exchangeAddress,
      pairAddress: p.pairAddress,
      pairTotalLiquidityUsd: p.pairTotalLiquidityUsd,
      tokenAddress: p.tokenAddress,
      toBlock: p.toBlock,
    },
  };
}

/** The cross-chain names of the price options as the Data API's price takes them. */
const priceOptions = (q: { maxTokenInactivity?: number | undefined; liquidityThreshold?: number | undefined }) => ({
  max_token_inactivity: q.maxTokenInactivity,
  min_pair_side_liquidity_usd: q.liquidityThreshold,
});

/** The EVM token a path names: `native` is the chain's wrapped native token; else an address (400 naming the field). */
export function evmToken(deps: DataDeps, chain: Chain, alias: string): string {
  const token = alias.toLowerCase();
  if (token !== NATIVE) return validate(z.object({ [TOKEN_FIELD]: evmAddress }), { [TOKEN_FIELD]: token }, 'path')[TOKEN_FIELD];
  const pricing = deps.pricing?.(chain.key);
  if (pricing === undefined)
    throw new ApiError(404, `no pricing on chain ${chain.key}: its wrapped native token is not known (CHAINPOST_PRICING)`);
  return pricing.wrappedNative;
}

/** `chain`: the path's chain (EVM, or Bitcoin); `evmChains`: the followed EVM chains, where Bitcoin's price is looked for. */
export async function v1TokenPrice(
  deps: DataDeps,
  chain: Chain,
  raw: Record<string, string>,
  evmChains: readonly Chain[],
): Promise<V1Price> {
  const q = validate(v1PriceQuery, raw, 'query');
  const token = q.tokenAliasOrTokenAddress.toLowerCase();
  if (chain.family === 'bitcoin') return bitcoinPrice(deps, chain, token, q, evmChains);
  const address = evmToken(deps, chain, token);
  const p = await tokenPrice(deps, chain.key, { address, ...(q.toBlock === undefined ? {} : { to_block: q.toBlock }), ...priceOptions(q) });
  return { ...shaped(deps, chain, p, chain), meta: metaOf(deps, [chain]) };
}

/** A Bitcoin path's token: native (or btc), else 400 naming the field. */
export function bitcoinToken(alias: string): void {
  const token = alias.toLowerCase();
  if (token !== NATIVE && token !== 'btc') throw badRequest(TOKEN_FIELD, `Bitcoin has one token: native (or btc), not "${alias}"`);
}

export interface WrappedBtc {
  /** The followed EVM chains that list wrapped bitcoin tokens. */
  chains: Chain[];
  /** The one with the deepest pool, and its price at the head; undefined when none is priced. */
  best: { chain: Chain; address: string; price: Erc20Price } | undefined;
  /** Chains whose node failed while their wrapped bitcoin was priced: the others still answer. */
  failed: FailedChain[];
}

/** Bitcoin's price source: of the followed EVM chains' wrapped bitcoin tokens, the one whose pricing pool is deepest. */
export async function wrappedBtc(
  deps: DataDeps,
  evmChains: readonly Chain[],
  opts: { maxTokenInactivity?: number | undefined; liquidityThreshold?: number | undefined } = {},
): Promise<WrappedBtc> {
  const chains = evmChains.filter((c) => (deps.pricing?.(c.key)?.wrappedBtc ?? []).length > 0);
  const { parts, failed } = await acrossChains(chains, (chain) =>
    Promise.all(
      deps.pricing!(chain.key)!.wrappedBtc!.map(async (address) => {
        try {
          return { chain, address, price: await tokenPrice(deps, chain.key, { address, ...priceOptions(opts) }) };
        } catch (err) {
          // Not priced there (no pool deep enough): another wrapped bitcoin may be.
          if (err instanceof ApiError && err.status === 404) return undefined;
          throw err;
        }
      }),
    ),
  );
  // The deepest pool's price, as a token's own price takes its deepest pool.
  const best = parts
    .flatMap((p) => p.value)
    .filter((f) => f !== undefined)
    .sort((a, b) => Number(b.price.pairTotalLiquidityUsd) - Number(a.price.pairTotalLiquidityUsd))[0];
  return { chains, best, failed };
}

async function bitcoinPrice(deps: DataDeps, chain: Chain, token: string, q: Query, evmChains: readonly Chain[]): Promise<V1Price> {
  bitcoinToken(token);
  if (q.toBlock !== undefined)
    throw badRequest('toBlock', 'a Bitcoin price is read on EVM chains at their latest indexed block; toBlock is for EVM tokens');
  const { chains, best, failed } = await wrappedBtc(deps, evmChains, q);
  const meta = metaOf(deps, [chain, ...chains], failed);
  const bitcoin = {
    chain: v1ChainId(chain),
    tokenName: 'Bitcoin',
    tokenSymbol: 'BTC',
    tokenAddress: null,
    tokenLogo: null,
    tokenDecimals: 8,
    verifiedContract: false,
    securityScore: null,
    possibleSpam: false,
    nativePrice: null,
  } as const;
  if (best === undefined)
    return { ...bitcoin, usdPrice: null, '24hrChangeUsd': null, '24hrChangePercent': null, updatedAt: null, dexInformation: null, meta };
  const p = shaped(deps, chain, best.price, best.chain);
  return { ...p, ...bitcoin, meta };
}

/** Bitcoin's price needs no Bitcoin node: the price path takes it whether or not this server follows it. */
export const BITCOIN = findChain('bitcoin')!;
