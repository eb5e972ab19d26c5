import { unixIso } from '../../datetime.js';
import { z } from 'zod';
import { findChain } from '../../chains/registry.js';
import { badRequest } from '../../errors.js';
import type { DataDeps } from '../common/deps.js';
import { tokenFacts } from './reads.js';
import { tokenKey, type TokenState } from './index/keys.js';
import { bool, evmAddress } from '../common/params.js';
import { MIN_SIDE_USD, priceReader, toNumber, usdCents, type PriceReader } from '../dex/index/prices.js';
import { dayChange, fdvOf } from '../dex/index/usd.js';
import { BATCH } from '../../size-limits.js';
import { indexedHead } from '../common/pages.js';
import { formatted } from '../common/values.js';
import { offChain } from '../common/answer-parts.js';

/**
 * GET /erc20/metadata (name, symbol and decimals by eth_call once per
 * contract, the supply the indexes keep, creation block and time when the
 * indexes saw it) and GET /tokens/search (the `erc20Search` terms, ranked by
 * holders); each with the token's USD price at the indexed head as
 * GET /erc20/:address/price gives it (default options), and its supply at that
 * price (fully diluted valuation); null where no pool prices it.
 */

/** The token's price at the head as the price endpoint answers it by default; null when no pool prices it. */
const priceAt = async (reader: PriceReader | undefined, token: string, head: number) =>
  (await reader?.price(token, head, { minSideUsd: MIN_SIDE_USD })) ?? null;

/** At most this many addresses per metadata request (the hosted service's limit). */
export const MAX_ADDRESSES = BATCH.erc20Addresses;
/** Search reads at most this many matching tokens before ranking them. */
const SEARCH_SCAN = 1_000;

export const addressList = z.array(evmAddress).min(1, 'at least one address').max(MAX_ADDRESSES, `at most ${MAX_ADDRESSES} addresses`);

/** GET /erc20/metadata: `addresses`, a list (as the route reads lists). */
export const metadataQuery = z.object({ addresses: addressList });

/** The platforms of the hosted service's token links (its discoveryTokenLinks), every one present in an answer. */
const LINK_PLATFORMS = [
  'bitbucket',
  'discord',
  'facebook',
  'github',
  'instagram',
  'linkedin',
  'medium',
  'reddit',
  'telegram',
  'tiktok',
  'twitter',
  'website',
  'youtube',
] as const;
type Links = Record<(typeof LINK_PLATFORMS)[number], null>;
/** A token's links: off chain, so each platform null (this server keeps none). */
const NO_LINKS = Object.freeze(Object.fromEntries(LINK_PLATFORMS.map((p) => [p, null])) as Links);
const linksAnswer = z
  .object(Object.fromEntries(LINK_PLATFORMS.map((p) => [p, offChain])) as Record<(typeof LINK_PLATFORMS)[number], typeof offChain>)
  .meta({ description: "The token's pages by platform: off-chain links this server does not keep, each null" });

export const metadataAnswer = z.array(
  z.object({
    address: z.string(),
    address_label: offChain,
    name: z.string(),
    symbol: z.string(),
    decimals: z.string(),
    logo: offChain,
    logo_hash: offChain,
    thumbnail: offChain,
    total_supply: z.string().nullable(),
    total_supply_formatted: z.string().nullable(),
    fully_diluted_valuation: z
      .string()
      .nullable()
      .meta({ description: 'USD, at the price GET /erc20/:address/price gives; null without one' }),
    block_number: z.string().nullable().meta({ description: 'The creation block, when the indexes saw it' }),
    validated: z.int(),
    created_at: z.string().nullable(),
    possible_spam: z.boolean(),
    verified_contract: z.boolean(),
    categories: z.array(z.string()),
    links: linksAnswer,
    circulating_supply: offChain,
    market_cap: offChain,
  }),
);

export async function tokenMetadata(deps: DataDeps, chain: string, addresses: readonly string[]) {
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  return Promise.all(
    addresses.map(async (address) => {
      const [t, found] = await Promise.all([tokenFacts(deps, chain, address), priceAt(reader, address, head)]);
      const fdv = fdvOf(t.totalSupply, t.decimals, found?.now.usd ?? null);
      return {
        address,
        address_label: null,
        name: t.name,
        symbol: t.symbol,
        decimals: String(t.decimals ?? 0),
        logo: null,
        logo_hash: null,
        thumbnail: null,
        total_supply: t.totalSupply,
        total_supply_formatted: t.totalSupply === null ? null : formatted(BigInt(t.totalSupply), t.decimals),
        fully_diluted_valuation: fdv === null ? null : usdCents(fdv),
        block_number: t.state?.createdBlock === undefined ? null : String(t.state.createdBlock),
        validated: 0,
        created_at: t.state?.createdAt === undefined ? null : unixIso(t.state.createdAt),
        possible_spam: t.possibleSpam,
        verified_contract: false,
        categories: [],
        links: { ...NO_LINKS },
        circulating_supply: null,
        market_cap: null,
      };
    }),
  );
}

const notKept = z.null().meta({ description: 'Off-chain or market data this server does not keep: null' });
export const searchAnswer = z.object({
  total: z.int(),
  result: z.array(
    z.object({
      tokenAddress: z.string(),
      chainId: z.string(),
      name: z.string(),
      symbol: z.string(),
      blockNumber: z.int().nullable(),
      blockTimestamp: z.int().nullable(),
      usdPrice: z.number().nullable(),
      marketCap: notKept,
      experiencedNetBuyers: notKept,
      netVolumeUsd: notKept,
      liquidityChangeUSD: notKept,
      usdPricePercentChange: z.object({ oneDay: z.number() }).nullable(),
      volumeUsd: notKept,
      securityScore: notKept,
      logo: offChain,
      isVerifiedContract: z.boolean(),
      fullyDilutedValuation: z.number().nullable(),
      totalHolders: z.int(),
      totalLiquidityUsd: notKept,
    }),
  ),
});

export const searchQuery = z.object({
  query: z.string().trim().min(1, 'what to search for').max(100, 'at most 100 characters'),
  limit: z
    .string()
    .regex(/^\d+$/, 'a whole number from 1 to 100')
    .transform(Number)
    .refine((n) => n >= 1 && n <= 100, 'from 1 to 100')
    .optional()
    .transform((n) => n ?? 100),
  isVerifiedContract: bool(false),
  chains: z.string().optional(),
});

/** The chains to search: `chains` (comma-separated, hex, decimal or slug), each followed here; or the request's chain. */
export function searchChains(deps: DataDeps, raw: string | undefined, fallback: string): string[] {
  if (raw === undefined) {
    if (deps.follower(fallback) === undefined)
      throw badRequest('chains', `${fallback} is not followed by this server; name the chains to search`);
    return [fallback];
  }
  return raw.split(',').map((c) => {
    const chain = findChain(c.trim());
    if (chain === undefined) throw badRequest('chains', `${c} is not a chain this API knows`);
    if (deps.follower(chain.key) === undefined) throw badRequest('chains', `${chain.key} is not followed by this server`);
    return chain.key;
  });
}

export async function searchTokens(deps: DataDeps, chains: readonly string[], q: z.output<typeof searchQuery>) {
  // verified_contract is never true here (no verified list): asking for verified tokens only finds none.
  if (q.isVerifiedContract) return { total: 0, result: [] };
  const term = q.query.toLowerCase().replaceAll('/', ' ');
  const found: Array<{ chain: string; token: string; holders: number }> = [];
  // One price reader per chain, at its indexed head.
  const prices = new Map<string, { reader: PriceReader | undefined; head: number }>();
  for (const chain of chains) {
    const head = await indexedHead(deps, chain);
    prices.set(chain, { reader: priceReader(deps, chain, head), head });
    const start = `${chain}/${term}`;
    const seen = new Set<string>();
    for (const { key } of deps.kv.range<unknown>('erc20Search', { start, end: `${start}\uffff`, limit: SEARCH_SCAN })) {
      const token = key.slice(key.lastIndexOf('/') + 1);
      if (seen.has(token)) continue;
      seen.add(token);
      found.push({ chain, token, holders: deps.kv.get<TokenState>('erc20Tokens', tokenKey(chain, token))?.holders ?? 0 });
    }
  }
  found.sort((a, b) => b.holders - a.holders || (a.token < b.token ? -1 : 1));
  const result = await Promise.all(
    found.slice(0, q.limit).map(async ({ chain, token, holders }) => {
      const { reader, head } = prices.get(chain)!;
      const [t, priced] = await Promise.all([tokenFacts(deps, chain, token), priceAt(reader, token, head)]);
      const day = priced === null ? null : dayChange(priced);
      const fdv = fdvOf(t.totalSupply, t.decimals, priced?.now.usd ?? null);
      return {
        tokenAddress: token,
        chainId: chain,
        name: t.name,
        symbol: t.symbol,
        blockNumber: t.state?.createdBlock ?? null,
        blockTimestamp: t.state?.createdAt ?? null,
        usdPrice: day?.usdPrice ?? null,
        marketCap: null,
        experiencedNetBuyers: null,
        netVolumeUsd: null,
        liquidityChangeUSD: null,
        usdPricePercentChange: day === null || day.percent === null ? null : { oneDay: day.percent },
        volumeUsd: null,
        securityScore: null,
        logo: null,
        isVerifiedContract: false,
        fullyDilutedValuation: fdv === null ? null : toNumber(fdv),
        totalHolders: holders,
        totalLiquidityUsd: null,
      };
    }),
  );
  return { total: found.length, result };
}
