import type { Pricing } from '../../../chains/pricing.js';
import type { TokenMetadata } from '../../../evm/token-metadata.js';
import type { Kv } from '../../../ports.js';
import { V2_SYNC, V3_INITIALIZE, V3_SWAP } from './events.js';
import { poolCreation } from './writer.js';
import { V4_EVENTS } from './v4.js';
import type { DataIndex, IndexedBlock, IndexWriter } from '../../common/indexer.js';
import { inBatches } from '../../common/node-reads.js';
import {
  boundedCache,
  latestMarkKey,
  markKey,
  poolsCache,
  PriceReader,
  ROLE_ORDER,
  type LatestMarkRow,
  type MarkRow,
  type PoolsCache,
} from './prices.js';
import { poolKey, type PoolRow } from './keys.js';

/**
 * Price marks (docs/api.md, Prices): at the end of each block where one of a token's pools moved, the token's price as its
 * pricing pool gives it then (engine/data-api/dex/index/prices.ts, `markOf`), kept in `priceMarks` (`chain/token/block` →
 * MarkRow, and the last one under `chain/l/token`). Written through the IndexWriter after the DEX index, so a reorg
 * takes a mark back with the swap that made it. A pool moves with its state rows (V2 Sync, V3 Swap and Initialize,
 * V4 Initialize, Swap and ModifyLiquidity: those name the pool by topic1, and count only from its PoolManager)
 * and, for a V3 pool whose reserves are its balances, with any ERC-20 transfer in or out (a mint, a burn); it marks
 * the tokens it may price (a token against ether, not ether: ether's price is read through its own marks).
 */

/** The events after which a pool's price or reserves are new. */
const MOVES = new Set([V2_SYNC, V3_SWAP, V3_INITIALIZE, ...V4_EVENTS]);

/** The pool a log of one of those events moves, with its row, if the store holds it: [pool, row]. */
function movedPool(kv: Pick<Kv, 'get'>, chain: string, l: { address: string; topics: readonly string[] }): [string, PoolRow] | undefined {
  const topic0 = l.topics[0]?.toLowerCase() ?? '';
  if (!MOVES.has(topic0)) return undefined;
  const address = l.address.toLowerCase();
  // A V4 PoolManager names the pool by its PoolId; a V4 pool's row names its PoolManager (a V2/V3 key is 20 bytes, no PoolId).
  const pool = V4_EVENTS.has(topic0) ? (l.topics[1]?.toLowerCase() ?? '') : address;
  const row = kv.get<PoolRow>('dexPools', poolKey(chain, pool));
  return row === undefined || (row[0] === 'v4' && row[3] !== address) ? undefined : [pool, row];
}

export interface PriceMarksDeps {
  tokens: TokenMetadata;
  pricing(chain: string): Pricing | undefined;
}

/** The block's pools that moved, by the pool rows the DEX index holds once it applied the block. */
function movedPools(w: Pick<IndexWriter, 'get'>, block: IndexedBlock): Map<string, PoolRow> {
  const out = new Map<string, PoolRow>();
  const seen = new Set<string>();
  const consider = (address: string): void => {
    if (seen.has(address)) return;
    seen.add(address);
    const row = w.get<PoolRow>('dexPools', poolKey(block.chain, address));
    if (row !== undefined) out.set(address, row);
  };
  for (const t of block.record.txs)
    for (const l of t.logs) {
      const moved = movedPool(w, block.chain, l);
      if (moved !== undefined) out.set(...moved);
    }
  for (const t of block.transfers) if (t.kind === 'erc20') [t.from, t.to].forEach(consider);
  return out;
}

/** The tokens of the pools the batch's state events name that the store knows or the batch makes, with the registry's (their decimals are read before the write). */
function tokensToRead(kv: Pick<Kv, 'get'>, pricing: Pricing, blocks: readonly IndexedBlock[]): Set<string> {
  const tokens = new Set([pricing.wrappedNative, ...pricing.stablecoins, ...pricing.whitelist]);
  for (const b of blocks)
    for (const t of b.record.txs)
      for (const l of t.logs) {
        // A pool made in the batch too (a V4 pool's tokens need not move before its first swap).
        const row = movedPool(kv, b.chain, l)?.[1] ?? poolCreation(pricing, l)?.[1];
        if (row !== undefined) [row[1], row[2]].forEach((token) => tokens.add(token));
      }
  return tokens;
}

export function priceMarksIndex(deps: PriceMarksDeps): DataIndex<void> {
  // Per chain: each token's pools and decimals, read once across blocks (prices.ts, PoolsCache).
  const caches = new Map<string, PoolsCache>();
  return {
    name: 'priceMarks',
    async prepare(blocks, kv) {
      const chain = blocks[0]?.chain;
      const pricing = chain === undefined ? undefined : deps.pricing(chain);
      if (chain === undefined || pricing === undefined || pricing.factories.length === 0) return;
      // A pool's tokens moved in, so the ERC-20 index's batch reads their metadata; these are the rest (a pool
      // known before the indexes began whose tokens have not moved since, the registry's tokens).
      const missing = [...tokensToRead(kv, pricing, blocks)].filter((t) => deps.tokens.stored(chain, t) === undefined);
      await inBatches(missing.map((t) => async () => void (await deps.tokens.get(chain, t))));
    },
    apply(w, block) {
      const pricing = deps.pricing(block.chain);
      if (pricing === undefined || pricing.factories.length === 0) return;
      const moved = movedPools(w, block);
      if (moved.size === 0) return;
      let cache = caches.get(block.chain);
      if (cache === undefined) caches.set(block.chain, (cache = poolsCache()));
      const reader = new PriceReader({ kv: w, tokens: deps.tokens }, block.chain, pricing, block.number, boundedCache(cache));
      for (const [pool, [, t0, t1]] of moved) {
        reader.knowPool(t0, pool, t1);
        reader.knowPool(t1, pool, t0);
      }
      // A pool prices only a token whose route it is (a token against ether, not ether).
      const tokens = [
        ...new Set(
          [...moved.values()].flatMap(([, t0, t1]) => [...(reader.pricedBy(t0, t1) ? [t0] : []), ...(reader.pricedBy(t1, t0) ? [t1] : [])]),
        ),
      ];
      // Each role routes only through roles before it: their marks of this block are written first.
      tokens.sort((a, b) => ROLE_ORDER[reader.role(a)] - ROLE_ORDER[reader.role(b)]);
      for (const token of tokens) {
        const mark = reader.markOf(token, block.number);
        // No price from here on: said only where a price stood before.
        if (mark === null && (w.get<LatestMarkRow>('priceMarks', latestMarkKey(block.chain, token))?.[1] ?? null) === null) continue;
        w.put('priceMarks', markKey(block.chain, token, block.number), mark satisfies MarkRow);
        w.put('priceMarks', latestMarkKey(block.chain, token), [block.number, mark] satisfies LatestMarkRow);
      }
    },
  };
}
