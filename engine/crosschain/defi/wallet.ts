import { z } from 'zod';
import type { DataDeps } from '../../data-api/common/deps.js';
import { cursor, evmAddress, limit } from '../../data-api/common/params.js';
import { v1ChainId, type ResolvedChains } from '../chains.js';
import { listOf, offsetPage } from '../cursor.js';
import { acrossChains, syncedAt, v1Meta } from '../fan-out.js';
import type { DefiAdapter } from './adapter.js';
import { chainPositions, v1PositionItem, v1ProtocolResult, v1Summary } from './positions.js';
import { ADAPTERS, adapterOf, protocolFactories } from './registry.js';

/**
 * The /v1 DeFi endpoints over the chains asked (EVM; the others are unsupported here): each chain's positions
 * on their own (acrossChains: a chain whose node fails is named in meta.failedChains, the rest answer).
 */

export const v1DefiSummaryQuery = z.object({ walletAddress: evmAddress });
export const v1DefiPositionsQuery = z.object({ walletAddress: evmAddress, limit: limit(25), cursor });
export const v1DefiProtocolQuery = v1DefiPositionsQuery.extend({ protocol: z.string().max(100) });
export const v1ProtocolsQuery = z.object({ limit: limit(), cursor });

async function walletPositions(deps: DataDeps, resolved: ResolvedChains, adapters: readonly DefiAdapter[], wallet: string) {
  const { parts, failed } = await acrossChains(resolved.chains, (chain) => chainPositions(deps, chain, adapters, wallet));
  return { positions: parts.flatMap((p) => p.value), meta: v1Meta(resolved, failed, syncedAt(deps)) };
}

/** Positions computed whole (a wallet holds few), answered `limit` at a time; the cursor is of `name`, the query and the chains. */
function paged<T>(all: readonly T[], name: string, resolved: ResolvedChains, q: { limit: number; cursor: string | null }) {
  return offsetPage(all, {
    list: listOf(
      name,
      q,
      resolved.chains.map((c) => c.key),
    ),
    limit: q.limit,
    cursor: q.cursor,
  });
}

/** GET /v1/wallets/:walletAddress/defi/positions. */
export async function v1DefiPositions(deps: DataDeps, resolved: ResolvedChains, q: z.output<typeof v1DefiPositionsQuery>) {
  const { positions, meta } = await walletPositions(deps, resolved, ADAPTERS, q.walletAddress);
  const { page, cursor: next } = paged(positions, 'defi-positions', resolved, q);
  return { result: page.map(v1PositionItem), cursor: next, meta };
}

/** GET /v1/wallets/:walletAddress/defi/:protocol/positions: an unknown protocol is a 400 naming `protocol`. */
export async function v1DefiProtocolPositions(deps: DataDeps, resolved: ResolvedChains, q: z.output<typeof v1DefiProtocolQuery>) {
  const adapter = adapterOf(q.protocol);
  const { positions, meta } = await walletPositions(deps, resolved, [adapter], q.walletAddress);
  const { page, cursor: next } = paged(positions, 'defi-protocol-positions', resolved, q);
  return { result: v1ProtocolResult(adapter, resolved.chains, positions, page), cursor: next, meta };
}

/** GET /v1/wallets/:walletAddress/defi/summary. */
export async function v1DefiSummary(deps: DataDeps, resolved: ResolvedChains, q: z.output<typeof v1DefiSummaryQuery>) {
  const { positions, meta } = await walletPositions(deps, resolved, ADAPTERS, q.walletAddress);
  return { result: v1Summary(positions), meta };
}

/** GET /v1/defi/protocols: every adapter, with the chains asked on which its protocol's factories are in the pricing registry. */
export function v1DefiProtocols(deps: DataDeps, resolved: ResolvedChains, q: z.output<typeof v1ProtocolsQuery>) {
  const all = ADAPTERS.map((a) => ({
    protocolId: a.protocol.id,
    protocolName: a.protocol.name,
    protocolUrl: a.protocol.url,
    protocolLogo: null,
    chains: resolved.chains.filter((c) => protocolFactories(deps.pricing?.(c.key), a).length > 0).map(v1ChainId),
  }));
  const { page, cursor: next } = paged(all, 'defi-protocols', resolved, q);
  return { cursor: next, result: page, meta: v1Meta(resolved, [], syncedAt(deps)) };
}
