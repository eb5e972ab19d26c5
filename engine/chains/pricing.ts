import { z } from 'zod';
import { findEvmChain } from './registry.js';

/**
 * The pricing registry: per EVM chain, what USD prices are derived from (docs/api.md,
 * Prices): the wrapped native token (priced from its deepest stable pool), the stablecoins (counted at $1), the
 * routing whitelist, and the DEX factories whose pools are indexed, each with the name prices and swaps give as
 * `exchangeName`. CHAINPOST_PRICING adds to or replaces an entry (a devnet is priced that way).
 */

/** A factory's kind: Uniswap V2 (PairCreated, Sync, Swap; forks emit the same), V3 (PoolCreated, Swap), V4 (the PoolManager: Initialize, Swap, ModifyLiquidity). */
export type FactoryKind = 'v2' | 'v3' | 'v4';

export interface Factory {
  /** Lower case. */
  readonly address: string;
  readonly kind: FactoryKind;
  /** The `exchangeName` of prices and swaps. */
  readonly name: string;
  /** V3: the NonfungiblePositionManager whose NFTs are the factory's liquidity positions (the DeFi positions read them). */
  readonly positionManager?: string;
}

export interface Pricing {
  /** Lower case, as every address below. */
  readonly wrappedNative: string;
  readonly stablecoins: readonly string[];
  readonly whitelist: readonly string[];
  readonly factories: readonly Factory[];
  /** Tokens that are wrapped bitcoin (WBTC, cbBTC): Bitcoin's USD price is theirs (the cross-chain API), Bitcoin having no DEX of its own. */
  readonly wrappedBtc?: readonly string[];
}

/**
 * Ethereum mainnet: WETH9; USDC, USDT, DAI; WBTC routes too; Uniswap V2 and V3 and SushiSwap. Uniswap V4's
 * PoolManager (0x000000000004444c5dc75cb358380d2e3de08a90) is left out until a V4 pool's sides are its real amounts:
 * its sides are weighed as the active liquidity's virtual reserves, which a position of a few ticks inflates by
 * hundreds to thousands of times (a few cents could pass the $50 rule); CHAINPOST_PRICING adds it.
 */
const ETHEREUM: Pricing = {
  wrappedNative: '0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2',
  stablecoins: [
    '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48',
    '0xdac17f958d2ee523a2206206994597c13d831ec7',
    '0x6b175474e89094c44da98b954eedeac495271d0f',
  ],
  whitelist: ['0x2260fac5e5542a773aa44fbcfedf7c193bc2c599'],
  // WBTC and Coinbase's cbBTC.
  wrappedBtc: ['0x2260fac5e5542a773aa44fbcfedf7c193bc2c599', '0xcbb7c0000ab88b473b1f5afd9ef808440eed33bf'],
  factories: [
    { address: '0x5c69bee701ef814a2b6a3edd4b1652cb9cc5aa6f', kind: 'v2', name: 'Uniswap v2' },
    {
      address: '0x1f98431c8ad98523631ae4a59f267346ea31f984',
      kind: 'v3',
      name: 'Uniswap v3',
      positionManager: '0xc36442b4a4522e871399cd717abdd847ab11fe88',
    },
    { address: '0xc0aee478e3658e2610c5f7a4a2e1777ce9e4f2ac', kind: 'v2', name: 'SushiSwap v2' },
  ],
};

/** The registry's entries, keyed by hex chain id. */
export const PRICING: ReadonlyMap<string, Pricing> = new Map([['0x1', ETHEREUM]]);

const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'expected a 0x address of 40 hex digits')
  .transform((a) => a.toLowerCase());

const entry = z
  .object({
    wrappedNative: address,
    stablecoins: z.array(address).default([]),
    whitelist: z.array(address).default([]),
    factories: z
      .array(
        z
          .object({ address, kind: z.enum(['v2', 'v3', 'v4']), name: z.string().min(1).max(100), positionManager: address.optional() })
          .strict(),
      )
      .default([]),
    wrappedBtc: z.array(address).default([]),
  })
  .strict();

/** Why CHAINPOST_PRICING was refused: the path of the bad field and what is wrong with it. */
export class PricingError extends Error {
  override name = 'PricingError';
}

/**
 * CHAINPOST_PRICING: JSON keyed by chain (hex id, decimal id or slug), each value a whole entry; the result is the
 * registry with those entries added or replaced. A bad value throws a PricingError naming the field.
 */
export function parsePricing(json: string | undefined): ReadonlyMap<string, Pricing> {
  const out = new Map(PRICING);
  if (json === undefined) return out;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new PricingError(`not JSON (${(err as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new PricingError('expected a JSON object keyed by chain, e.g. {"0x539":{"wrappedNative":"0x…"}}');
  const given = new Set<string>();
  for (const [id, value] of Object.entries(raw)) {
    const chain = findEvmChain(id);
    if (chain === undefined) throw new PricingError(`unknown EVM chain "${id}"`);
    if (given.has(chain.key)) throw new PricingError(`chain ${chain.key} is given twice`);
    given.add(chain.key);
    const parsed = entry.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new PricingError(`${[id, ...issue.path].join('.')}: ${issue.message}`);
    }
    const p = parsed.data;
    if (p.stablecoins.includes(p.wrappedNative))
      throw new PricingError(`${id}.stablecoins: the wrapped native token is priced, not counted at $1`);
    const seen = new Set<string>();
    p.factories.forEach((f, i) => {
      if (seen.has(f.address)) throw new PricingError(`${id}.factories.${i}.address: ${f.address} is listed twice`);
      if (f.positionManager !== undefined && f.kind !== 'v3')
        throw new PricingError(`${id}.factories.${i}.positionManager: only a v3 factory has a NonfungiblePositionManager`);
      seen.add(f.address);
    });
    out.set(chain.key, p);
  }
  return out;
}

/** The factory `address` is in a chain's entry; undefined when prices do not count its pools. */
export const factoryOf = (pricing: Pricing | undefined, address: string): Factory | undefined =>
  pricing?.factories.find((f) => f.address === address);
