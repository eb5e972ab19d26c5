import { decodeFunctionResult, encodeFunctionData, parseAbi, type Hex } from 'viem';
import { factoryOf, type FactoryKind, type Pricing } from '../chains/pricing.js';
import { pos } from '../evm/store.js';
import type { ChainCall } from '../evm/token-metadata.js';
import type { Kv } from '../ports.js';
import { pairCreated, poolCreated, v2Swap, v2Sync, v3Initialize, v3Swap, V2_SWAP, V2_SYNC, V3_INITIALIZE, V3_SWAP, type PoolCreated } from './dex-events.js';
import type { DataIndex, IndexedBlock, IndexWriter } from './indexer.js';

/**
 * The DEX index (issue 18): pools of the pricing registry's factories, each pool's state after every event that
 * moves its price, and its swaps. Tables (storage/README.md):
 * - `dexPools`: `chain/p/pool` → PoolRow; `chain/t/token/pool` → the pool's other token (a token's pools);
 *   `chain/x/address` → 0, an address that logged a pool's events but is no pool of a registry factory (not asked again).
 * - `dexStates`: `chain/pool/number/logIndex` → StateRow, after each V2 Sync and each V3 Initialize and Swap.
 * - `dexSwaps`: `chain/pool/number/logIndex` → SwapRow.
 * A pool is known from its factory's creation event, or, when it was created before the indexes' first block, from
 * its first event here: its token0(), token1() and factory() are read then (immutable, so at the node's latest).
 */

/** [kind, token0, token1, factory, fee (V3; V2 null)]: the exchange's name is the registry's entry for the factory. */
export type PoolRow = [kind: FactoryKind, token0: string, token1: string, factory: string, fee: number | null];
/** V2: the reserves after a Sync (0x quantities); V3: sqrtPriceX96, liquidity (null at Initialize) and tick. */
export type StateRow = [reserve0: string, reserve1: string] | [sqrtPriceX96: string, liquidity: string | null, tick: number];
/** [transaction hash, its index, trader (the transaction's sender), amount0, amount1]: the pool's balance changes, decimal, signed (positive: into the pool). */
export type SwapRow = [tx: string, ti: number, trader: string, amount0: string, amount1: string];

export const poolKey = (chain: string, pool: string): string => `${chain}/p/${pool}`;
const notPoolKey = (chain: string, address: string): string => `${chain}/x/${address}`;
export const tokenPoolsPrefix = (chain: string, token: string): string => `${chain}/t/${token}/`;
export const poolRowsPrefix = (chain: string, pool: string): string => `${chain}/${pool}/`;

const hex = (n: bigint): string => `0x${n.toString(16)}`;

const ABI = parseAbi(['function token0() view returns (address)', 'function token1() view returns (address)', 'function factory() view returns (address)', 'function fee() view returns (uint24)']);
type View = 'token0' | 'token1' | 'factory' | 'fee';

/** The event versions: which kind of factory a pool logging them must come from. */
const KIND_OF: Record<string, FactoryKind> = { [V2_SYNC]: 'v2', [V2_SWAP]: 'v2', [V3_SWAP]: 'v3', [V3_INITIALIZE]: 'v3' };

/** Pools found in a batch by their first event: address → row, or null (no pool of a registry factory). */
type Prepared = Map<string, PoolRow | null>;

export interface DexIndexDeps {
  call: ChainCall;
  pricing(chain: string): Pricing | undefined;
}

/** A view of `address` at the node's latest block; null when it reverts or answers no such value. */
async function view(call: ChainCall, chain: string, address: string, fn: View): Promise<unknown> {
  const out = await call(chain, address, encodeFunctionData({ abi: ABI, functionName: fn }) as Hex, 'latest');
  if (out === null || out === '0x') return null;
  try {
    return decodeFunctionResult({ abi: ABI, functionName: fn, data: out });
  } catch {
    return null;
  }
}

/** What a pool's own views say it is, if a registry factory of the events' kind made it. */
async function discover(deps: DexIndexDeps, pricing: Pricing, chain: string, address: string, kind: FactoryKind): Promise<PoolRow | null> {
  const factory = await view(deps.call, chain, address, 'factory');
  const f = typeof factory === 'string' ? factoryOf(pricing, factory.toLowerCase()) : undefined;
  if (f === undefined || f.kind !== kind) return null;
  const [token0, token1, fee] = await Promise.all([view(deps.call, chain, address, 'token0'), view(deps.call, chain, address, 'token1'), kind === 'v3' ? view(deps.call, chain, address, 'fee') : null]);
  if (typeof token0 !== 'string' || typeof token1 !== 'string') return null;
  return [kind, token0.toLowerCase(), token1.toLowerCase(), f.address, typeof fee === 'number' ? fee : null];
}

/** A batch's pool creations by the registry's factories: pool → row. */
function created(pricing: Pricing, blocks: readonly IndexedBlock[]): Map<string, PoolRow> {
  const out = new Map<string, PoolRow>();
  for (const b of blocks)
    for (const t of b.record.txs)
      for (const l of t.logs) {
        const made = poolCreation(pricing, l);
        if (made !== undefined) out.set(made[0], made[1]);
      }
  return out;
}

function poolCreation(pricing: Pricing, l: { address: string; topics: string[]; data: string }): [string, PoolRow] | undefined {
  const f = factoryOf(pricing, l.address.toLowerCase());
  if (f === undefined) return undefined;
  const c: PoolCreated | undefined = f.kind === 'v2' ? pairCreated(l) : f.kind === 'v3' ? poolCreated(l) : undefined;
  return c === undefined ? undefined : [c.pool, [f.kind, c.token0, c.token1, f.address, c.fee]];
}

export function dexIndex(deps: DexIndexDeps): DataIndex<Prepared> {
  return {
    name: 'dex',
    async prepare(blocks, kv: Kv) {
      const found: Prepared = new Map();
      const chain = blocks[0]?.chain;
      const pricing = chain === undefined ? undefined : deps.pricing(chain);
      if (chain === undefined || pricing === undefined || pricing.factories.length === 0) return found;
      const made = created(pricing, blocks);
      const asks = new Map<string, FactoryKind>();
      for (const b of blocks)
        for (const t of b.record.txs)
          for (const l of t.logs) {
            const kind = KIND_OF[l.topics[0]?.toLowerCase() ?? ''];
            const address = l.address.toLowerCase();
            if (kind === undefined || made.has(address) || asks.has(address)) continue;
            if (kv.has('dexPools', poolKey(chain, address)) || kv.has('dexPools', notPoolKey(chain, address))) continue;
            asks.set(address, kind);
          }
      await Promise.all([...asks].map(async ([address, kind]) => found.set(address, await discover(deps, pricing, chain, address, kind))));
      return found;
    },
    apply(w, block, found) {
      const pricing = deps.pricing(block.chain);
      if (pricing === undefined || pricing.factories.length === 0) return;
      block.record.txs.forEach((t, ti) => {
        const txHash = String(t.tx['hash']).toLowerCase();
        const trader = String(t.tx['from']).toLowerCase();
        for (const l of t.logs) {
          const made = poolCreation(pricing, l);
          if (made !== undefined) writePool(w, block.chain, made[0], made[1]);
          const address = l.address.toLowerCase();
          const kind = KIND_OF[l.topics[0]?.toLowerCase() ?? ''];
          if (kind === undefined) continue;
          const pool = knownPool(w, block.chain, address, found);
          if (pool === undefined || pool[0] !== kind) continue;
          const at = `${poolRowsPrefix(block.chain, address)}${pos(block.number, Number(l.logIndex))}`;
          const topics = l.topics.map((x) => x.toLowerCase());
          const log = { topics, data: l.data };
          const sync = v2Sync(log);
          if (sync !== undefined) w.put('dexStates', at, [hex(sync.reserve0), hex(sync.reserve1)] satisfies StateRow);
          const init = v3Initialize(log);
          if (init !== undefined) w.put('dexStates', at, [hex(init.sqrtPriceX96), null, init.tick] satisfies StateRow);
          const v3 = v3Swap(log);
          const swap = v3 ?? v2Swap(log);
          if (swap === undefined) continue;
          w.put('dexSwaps', at, [txHash, ti, trader, swap.amount0.toString(), swap.amount1.toString()] satisfies SwapRow);
          if (v3 !== undefined) w.put('dexStates', at, [hex(v3.sqrtPriceX96), v3.liquidity === null ? null : hex(v3.liquidity), v3.tick] satisfies StateRow);
        }
      });
    },
  };
}

/** The pool row of `address`: stored, or found by this batch (and then stored, or marked as no pool). */
function knownPool(w: IndexWriter, chain: string, address: string, found: Prepared): PoolRow | undefined {
  const stored = w.get<PoolRow>('dexPools', poolKey(chain, address));
  if (stored !== undefined) return stored;
  const row = found.get(address);
  if (row === undefined) return undefined;
  if (row === null) {
    if (!w.has('dexPools', notPoolKey(chain, address))) w.put('dexPools', notPoolKey(chain, address), 0);
    return undefined;
  }
  writePool(w, chain, address, row);
  return row;
}

function writePool(w: IndexWriter, chain: string, pool: string, row: PoolRow): void {
  w.put('dexPools', poolKey(chain, pool), row);
  w.put('dexPools', `${tokenPoolsPrefix(chain, row[1])}${pool}`, row[2]);
  w.put('dexPools', `${tokenPoolsPrefix(chain, row[2])}${pool}`, row[1]);
}
