import type { Chain } from '../../chains/registry.js';
import type { DataDeps } from '../../data-api/common/deps.js';
import { tokenFacts } from '../../data-api/erc20/reads.js';
import { add, priceReader, toNumber, type Ratio } from '../../data-api/dex/index/prices.js';
import { usdOf } from '../../data-api/dex/index/usd.js';
import { v1ChainId } from '../chains.js';
import type { DefiAdapter, DefiProtocol, PositionToken, RawPosition } from './adapter.js';
import { protocolFactories } from './registry.js';
import { indexedHead } from '../../data-api/common/pages.js';
import { formatted } from '../../data-api/common/values.js';

/**
 * A wallet's DeFi positions on one chain, valued: every adapter asked reads its positions at the indexed head,
 * and each token amount is valued at the token's USD price then (the Data API's prices: a token no pool prices
 * has none, and its amount counts for nothing). Then the answers' shapes: the Universal API's (/v1, camelCase)
 * and the Data API's (/api/v2.2, snake_case), from the same valued positions.
 */

export interface ValuedToken extends PositionToken {
  name: string | null;
  symbol: string | null;
  decimals: number;
  usdPrice: Ratio | null;
  usdValue: Ratio | null;
}

export interface ValuedPosition {
  chain: Chain;
  protocol: DefiProtocol;
  label: RawPosition['label'];
  address: string;
  tokens: ValuedToken[];
  details: Record<string, unknown>;
  /** The supplied tokens' value; the reward tokens' (claimable) apart. */
  balanceUsd: Ratio;
  unclaimedUsd: Ratio;
  /** Some token of the position has no price: its value is left out of the sums. */
  noPrice: boolean;
}

const ZERO: Ratio = { num: 0n, den: 1n };

/** The wallet's positions on `chain` in the adapters' protocols (none: a chain without a pricing entry or factories of theirs). */
export async function chainPositions(
  deps: DataDeps,
  chain: Chain,
  adapters: readonly DefiAdapter[],
  wallet: string,
): Promise<ValuedPosition[]> {
  const pricing = deps.pricing?.(chain.key);
  const asked = adapters.map((a) => ({ adapter: a, factories: protocolFactories(pricing, a) })).filter((a) => a.factories.length > 0);
  if (asked.length === 0) return [];
  const block = await indexedHead(deps, chain.key);
  // Nothing indexed yet: no balance or NFT is known, and there is no block to read the contracts at.
  if (block < 0) return [];
  const reader = priceReader(deps, chain.key, block);
  const found = await Promise.all(
    asked.map(async ({ adapter, factories }) =>
      (await adapter.positions({ deps, chain: chain.key, block, factories }, wallet)).map((raw) => ({ adapter, raw })),
    ),
  );
  return Promise.all(
    found.flat().map(async ({ adapter, raw }) => {
      const tokens = await Promise.all(
        raw.tokens.map(async (t): Promise<ValuedToken> => {
          const facts = await tokenFacts(deps, chain.key, t.address);
          const decimals = facts.decimals ?? 0;
          // The LP token is the position itself: its worth is the supplied tokens'.
          const usdPrice = t.tokenType === 'lp' ? null : (reader?.valueUsd(t.address, block) ?? null);
          return {
            ...t,
            name: facts.name,
            symbol: facts.symbol,
            decimals,
            usdPrice,
            usdValue: usdPrice === null ? null : usdOf(t.amount, decimals, usdPrice),
          };
        }),
      );
      const sum = (type: PositionToken['tokenType']): Ratio =>
        tokens.reduce((s, t) => (t.tokenType === type && t.usdValue !== null ? add(s, t.usdValue) : s), ZERO);
      return {
        chain,
        protocol: adapter.protocol,
        label: raw.label,
        address: raw.address,
        tokens,
        details: raw.details,
        balanceUsd: sum('supplied'),
        unclaimedUsd: sum('reward'),
        noPrice: tokens.some((t) => t.tokenType !== 'lp' && t.usdPrice === null),
      };
    }),
  );
}

/** A protocol's positions on a chain, summed: what the summaries list, one row per protocol and chain. */
export interface ProtocolTotal {
  protocol: DefiProtocol;
  chain: Chain;
  positions: number;
  totalUsd: Ratio;
  totalUnclaimedUsd: Ratio;
}

export function byProtocol(positions: readonly ValuedPosition[]): ProtocolTotal[] {
  const out = new Map<string, ProtocolTotal>();
  for (const p of positions) {
    const key = `${p.chain.key}/${p.protocol.id}`;
    const t = out.get(key) ?? { protocol: p.protocol, chain: p.chain, positions: 0, totalUsd: ZERO, totalUnclaimedUsd: ZERO };
    out.set(key, {
      ...t,
      positions: t.positions + 1,
      totalUsd: add(t.totalUsd, p.balanceUsd),
      totalUnclaimedUsd: add(t.totalUnclaimedUsd, p.unclaimedUsd),
    });
  }
  return [...out.values()];
}

const total = (rows: ReadonlyArray<{ totalUsd: Ratio; totalUnclaimedUsd: Ratio }>) => ({
  totalUsd: toNumber(rows.reduce((s, r) => add(s, r.totalUsd), ZERO)),
  totalUnclaimedUsd: toNumber(rows.reduce((s, r) => add(s, r.totalUnclaimedUsd), ZERO)),
});

const numberOrNull = (r: Ratio | null): number | null => (r === null ? null : toNumber(r));

// ---- /v1 (the Universal API's fields, data-api-notes §4.2) ----

const v1Protocol = (p: DefiProtocol) => ({ protocolId: p.id, protocolName: p.name, protocolUrl: p.url, protocolLogo: null });

export function v1Position(p: ValuedPosition) {
  return {
    label: p.label,
    address: p.address,
    tokens: p.tokens.map((t) => ({
      tokenType: t.tokenType,
      name: t.name,
      symbol: t.symbol,
      address: t.address,
      decimals: t.decimals,
      logo: null,
      balance: t.amount.toString(),
      balanceFormatted: formatted(t.amount, t.decimals),
      usdPrice: numberOrNull(t.usdPrice),
      usdValue: numberOrNull(t.usdValue),
    })),
    balanceUsd: toNumber(p.balanceUsd),
    unclaimedUsd: toNumber(p.unclaimedUsd),
    details: { type: p.label, isDebt: false, lending: null, liquidity: { ...p.details, noPriceAvailable: p.noPrice } },
  };
}

/** GET /v1/wallets/:walletAddress/defi/positions: one item per position. */
export const v1PositionItem = (p: ValuedPosition) => ({ chainId: v1ChainId(p.chain), ...v1Protocol(p.protocol), position: v1Position(p) });

/**
 * GET /v1/wallets/:walletAddress/defi/:protocol/positions: the protocol's totals over all its positions on the chains
 * asked (chainId: the one chain, or null over several), and the page's positions.
 */
export function v1ProtocolResult(
  adapter: DefiAdapter,
  chains: readonly Chain[],
  all: readonly ValuedPosition[],
  page: readonly ValuedPosition[],
) {
  return {
    ...v1Protocol(adapter.protocol),
    chainId: chains.length === 1 ? v1ChainId(chains[0]!) : null,
    ...total(byProtocol(all)),
    positions: page.map((p) => ({ chainId: v1ChainId(p.chain), ...v1Position(p) })),
  };
}

/** GET /v1/wallets/:walletAddress/defi/summary. */
export function v1Summary(positions: readonly ValuedPosition[]) {
  const rows = byProtocol(positions);
  return {
    activeProtocols: new Set(rows.map((r) => r.protocol.id)).size,
    totalPositions: positions.length,
    ...total(rows),
    protocols: rows.map((r) => ({
      ...v1Protocol(r.protocol),
      chainId: v1ChainId(r.chain),
      totalUsd: toNumber(r.totalUsd),
      totalUnclaimedUsd: toNumber(r.totalUnclaimedUsd),
      positionCount: r.positions,
    })),
  };
}

// ---- /api/v2.2 (the Data API's fields, data-api-openapi-2.2.json) ----

const snake = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const snakeKeys = (o: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [snake(k), v]));
const v22Protocol = (p: DefiProtocol) => ({ protocol_name: p.name, protocol_id: p.id, protocol_url: p.url, protocol_logo: null });

export function v22Position(p: ValuedPosition) {
  return {
    label: p.label,
    tokens: p.tokens.map((t) => ({
      // The hosted service's token types: the LP token is a `defi-token`.
      token_type: t.tokenType === 'lp' ? 'defi-token' : t.tokenType,
      name: t.name,
      symbol: t.symbol,
      contract_address: t.address,
      decimals: t.decimals,
      logo: null,
      thumbnail: null,
      balance: t.amount.toString(),
      balance_formatted: formatted(t.amount, t.decimals),
      usd_price: numberOrNull(t.usdPrice),
      usd_value: numberOrNull(t.usdValue),
    })),
    address: p.address,
    balance_usd: toNumber(p.balanceUsd),
    total_unclaimed_usd_value: toNumber(p.unclaimedUsd),
    position_details: { ...snakeKeys(p.details), no_price_available: p.noPrice },
  };
}

/** GET /api/v2.2/wallets/:address/defi/positions: a bare array, one item per position. */
export const v22Positions = (positions: readonly ValuedPosition[]) =>
  positions.map((p) => ({ ...v22Protocol(p.protocol), position: v22Position(p) }));

/** GET /api/v2.2/wallets/:address/defi/:protocol/positions. */
export function v22ProtocolPositions(adapter: DefiAdapter, positions: readonly ValuedPosition[]) {
  const { totalUsd, totalUnclaimedUsd } = total(byProtocol(positions));
  return {
    ...v22Protocol(adapter.protocol),
    total_usd_value: totalUsd,
    total_unclaimed_usd_value: totalUnclaimedUsd,
    positions: positions.map(v22Position),
  };
}

/** GET /api/v2.2/wallets/:address/defi/summary. */
export function v22Summary(positions: readonly ValuedPosition[]) {
  const s = v1Summary(positions);
  return {
    active_protocols: s.activeProtocols,
    total_positions: s.totalPositions,
    total_usd_value: s.totalUsd,
    total_unclaimed_usd_value: s.totalUnclaimedUsd,
    protocols: byProtocol(positions).map((r) => ({
      ...v22Protocol(r.protocol),
      total_usd_value: toNumber(r.totalUsd),
      total_unclaimed_usd_value: toNumber(r.totalUnclaimedUsd),
      positions: r.positions,
    })),
  };
}
