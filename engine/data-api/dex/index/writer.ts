import { decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem/utils';
import type { Hex } from 'viem';
import { factoryOf, type FactoryKind, type Pricing } from '../../../chains/pricing.js';
import { pos } from '../../../evm/store.js';
import type { ChainCall } from '../../../evm/token-metadata.js';
import type { Kv } from '../../../ports.js';
import { balanceKey, hex } from '../../erc20/index/keys.js';
import { inBatches } from '../../common/node-reads.js';
import {
  pairCreated,
  poolCreated,
  v2Swap,
  v2Sync,
  v3Initialize,
  v3Swap,
  V2_SWAP,
  V2_SYNC,
  V3_INITIALIZE,
  V3_SWAP,
  type PoolCreated,
  type SwapDelta,
} from './events.js';
import type { DataIndex, IndexedBlock, IndexWriter } from '../../common/indexer.js';
import { v4Move, v4PoolCreated, V4_EVENTS } from './v4.js';
import {
  notPoolKey,
  poolKey,
  poolRowsPrefix,
  tokenPoolsPrefix,
  tokenSwapsPrefix,
  walletSwapsPrefix,
  type NotPool,
  type PoolRow,
  type StateRow,
  type SwapRow,
  type V4StateRow,
} from './keys.js';

/**
 * The DEX index (docs/api.md, Prices): pools of the pricing registry's factories, each pool's state after every event that
 * moves its price, and its swaps. Tables (storage/README.md):
 * - `dexPools`: `chain/p/pool` → PoolRow; `chain/t/token/other/pool` → 0 (a token's pools, by the other token: the
 *   pools of the wrapped native token against one stablecoin are one range); `chain/x/address` → NotPool.
 * - `dexStates`: `chain/pool/number/logIndex` → StateRow, after each V2 Sync and each V3 Initialize and Swap.
 * - `dexSwaps`: `chain/pool/number/logIndex` → SwapRow.
 * - `dexWalletSwaps`: `chain/trader/number/logIndex` → pool: a trader's swaps, one range (GET /wallets/:address/swaps).
 * - `dexTokenSwaps`: `chain/token/number/logIndex` → pool: the swaps of each of the pool's two tokens, one range per token
 *   (GET /erc20/:address/swaps, GET /tokens/:tokenAddress/analytics and /score).
 * A pool is known from its factory's creation event, or, when it was created before the indexes' first block, from
 * its first event here: its factory(), token0(), token1() (and V3 fee()) are read then (immutable, so at the node's
 * latest block), and the factory is asked whether it made that pool (getPair, getPool): a contract's own word that a
 * registry factory made it proves nothing (anyone can emit Sync and Swap).
 * A Uniswap V4 pool (engine/data-api/dex/index/v4.ts) is its PoolId, made at its PoolManager's Initialize; only the
 * registry PoolManager's own logs move it.
 */

/** Blocks after which an address whose factory() could not be read is asked again. */
const ASK_AGAIN_BLOCKS = 10_000;

const ABI = parseAbi([
  'function token0() view returns (address)',
  'function token1() view returns (address)',
  'function factory() view returns (address)',
  'function fee() view returns (uint24)',
  'function getPair(address, address) view returns (address)',
  'function getPool(address, address, uint24) view returns (address)',
]);
type View = 'token0' | 'token1' | 'factory' | 'fee' | 'getPair' | 'getPool';

/** The event versions: which kind of factory a pool logging them must come from. */
const KIND_OF: Record<string, FactoryKind> = { [V2_SYNC]: 'v2', [V2_SWAP]: 'v2', [V3_SWAP]: 'v3', [V3_INITIALIZE]: 'v3' };

/** Pools found in a batch by their first event: address → row, or NotPool. */
type Prepared = Map<string, PoolRow | NotPool>;

export interface DexIndexDeps {
  call: ChainCall;
  pricing(chain: string): Pricing | undefined;
}

/** A view of `address` at the node's latest block; null when it reverts, answers no such value, or the node refuses. */
async function view(call: ChainCall, chain: string, address: string, fn: View, args: readonly unknown[] = []): Promise<unknown> {
  const out = await call(chain, address, encodeFunctionData({ abi: ABI, functionName: fn, args } as never) as Hex, 'latest');
  if (out === null || out === '0x') return null;
  try {
    return decodeFunctionResult({ abi: ABI, functionName: fn, data: out });
  } catch {
    return null;
  }
}

const lowerAddress = (v: unknown): string | undefined => (typeof v === 'string' ? v.toLowerCase() : undefined);

/** What a pool's own views say it is, if a registry factory of the events' kind says it made it; else NotPool. */
async function discover(
  deps: DexIndexDeps,
  pricing: Pricing,
  chain: string,
  address: string,
  kind: FactoryKind,
  block: number,
): Promise<PoolRow | NotPool> {
  const factory = lowerAddress(await view(deps.call, chain, address, 'factory'));
  if (factory === undefined) return block + ASK_AGAIN_BLOCKS;
  const f = factoryOf(pricing, factory);
  if (f === undefined || f.kind !== kind) return 0;
  const [token0, token1, fee] = await Promise.all([
    view(deps.call, chain, address, 'token0'),
    view(deps.call, chain, address, 'token1'),
    kind === 'v3' ? view(deps.call, chain, address, 'fee') : null,
  ]);
  const [t0, t1] = [lowerAddress(token0), lowerAddress(token1)];
  if (t0 === undefined || t1 === undefined || (kind === 'v3' && typeof fee !== 'number')) return block + ASK_AGAIN_BLOCKS;
  const made = lowerAddress(
    await (kind === 'v2'
      ? view(deps.call, chain, f.address, 'getPair', [t0, t1])
      : view(deps.call, chain, f.address, 'getPool', [t0, t1, fee])),
  );
  if (made === undefined) return block + ASK_AGAIN_BLOCKS;
  return made === address ? [kind, t0, t1, f.address, kind === 'v3' ? (fee as number) : null] : 0;
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

/** A registry factory's log that makes a pool: [pool, row]. */
export function poolCreation(pricing: Pricing, l: { address: string; topics: string[]; data: string }): [string, PoolRow] | undefined {
  const f = factoryOf(pricing, l.address.toLowerCase());
  if (f === undefined) return undefined;
  const log = { topics: l.topics.map((t) => t.toLowerCase()), data: l.data };
  if (f.kind === 'v4') return v4PoolCreated(pricing, f, log);
  const c: PoolCreated | undefined = f.kind === 'v2' ? pairCreated(log) : poolCreated(log);
  return c === undefined ? undefined : [c.pool, [f.kind, c.token0, c.token1, f.address, c.fee]];
}

/** Whether `address` is to be asked about now: no pool row, and no NotPool row that stands at `block`. */
function unknownAt(kv: Pick<Kv, 'has' | 'get'>, chain: string, address: string, block: number): boolean {
  if (kv.has('dexPools', poolKey(chain, address))) return false;
  const not = kv.get<NotPool>('dexPools', notPoolKey(chain, address));
  return not === undefined || (not !== 0 && not <= block);
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
      const asks = new Map<string, [FactoryKind, number]>();
      for (const b of blocks)
        for (const t of b.record.txs)
          for (const l of t.logs) {
            const kind = KIND_OF[l.topics[0]?.toLowerCase() ?? ''];
            const address = l.address.toLowerCase();
            if (kind === undefined || made.has(address) || asks.has(address) || !unknownAt(kv, chain, address, b.number)) continue;
            asks.set(address, [kind, b.number]);
          }
      // A backfill's batch may meet hundreds of pools: the node is asked a few at a time.
      await inBatches(
        [...asks].map(
          ([address, [kind, block]]) =>
            async () =>
              void found.set(address, await discover(deps, pricing, chain, address, kind, block)),
        ),
      );
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
          const moved = poolMove(w, block, pricing, l, found);
          if (moved === undefined) continue;
          const { pool, row, state, swap } = moved;
          const place = pos(block.number, Number(l.logIndex));
          const at = `${poolRowsPrefix(block.chain, pool)}${place}`;
          if (state !== undefined) w.put('dexStates', at, state);
          if (swap === undefined) continue;
          w.put('dexSwaps', at, [txHash, ti, trader, swap.amount0.toString(), swap.amount1.toString()] satisfies SwapRow);
          w.put('dexWalletSwaps', `${walletSwapsPrefix(block.chain, trader)}${place}`, pool);
          w.put('dexTokenSwaps', `${tokenSwapsPrefix(block.chain, row[1])}${place}`, pool);
          w.put('dexTokenSwaps', `${tokenSwapsPrefix(block.chain, row[2])}${place}`, pool);
        }
      });
    },
  };
}

/**
 * What a log does to a pool of the index: the pool (its address; V4 its PoolId) and its row, its state after the
 * log if it moved, its swap; undefined for a log of no pool here (a V4 event counts only from the pool's own PoolManager).
 */
function poolMove(
  w: IndexWriter,
  block: IndexedBlock,
  pricing: Pricing,
  l: { address: string; topics: string[]; data: string; logIndex: unknown },
  found: Prepared,
): { pool: string; row: PoolRow; state?: StateRow; swap?: SwapDelta } | undefined {
  const log = { topics: l.topics.map((x) => x.toLowerCase()), data: l.data };
  const address = l.address.toLowerCase();
  if (V4_EVENTS.has(log.topics[0] ?? '') && factoryOf(pricing, address)?.kind === 'v4') {
    const prefix = (pool: string): string => poolRowsPrefix(block.chain, pool);
    // The pool's last state before this log (earlier logs of the block are written already).
    const before = (pool: string): V4StateRow | undefined =>
      w.range<V4StateRow>('dexStates', {
        start: prefix(pool) + pos(block.number, Number(l.logIndex)),
        end: prefix(pool),
        reverse: true,
        limit: 1,
      })[0]?.value;
    const moved = v4Move(log, before);
    const row = moved === undefined ? undefined : w.get<PoolRow>('dexPools', poolKey(block.chain, moved.pool));
    return moved !== undefined && row?.[0] === 'v4' && row[3] === address ? { ...moved, row } : undefined;
  }
  const kind = KIND_OF[log.topics[0] ?? ''];
  if (kind === undefined) return undefined;
  const pool = knownPool(w, block.chain, address, found);
  if (pool === undefined || pool[0] !== kind) return undefined;
  const sync = v2Sync(log);
  const v3swap = v3Swap(log);
  const v3 = v3swap ?? v3Initialize(log);
  const state: StateRow | undefined =
    sync !== undefined
      ? [hex(sync.reserve0), hex(sync.reserve1)]
      : v3 !== undefined
        ? [hex(v3.sqrtPriceX96), v3.liquidity === null ? null : hex(v3.liquidity), v3.tick, ...balances(w, block.chain, address, pool)]
        : undefined;
  const swap = v3swap ?? v2Swap(log);
  return { pool: address, row: pool, ...(state === undefined ? {} : { state }), ...(swap === undefined ? {} : { swap }) };
}

/** A V3 pool's token balances as the ERC-20 index holds them (0x quantities). */
const balances = (w: IndexWriter, chain: string, pool: string, row: PoolRow): [string, string] => [
  w.get<string>('erc20Balances', balanceKey(chain, pool, row[1])) ?? '0x0',
  w.get<string>('erc20Balances', balanceKey(chain, pool, row[2])) ?? '0x0',
];

/** The pool row of `address`: stored, or found by this batch (and then stored, or marked NotPool). */
function knownPool(w: IndexWriter, chain: string, address: string, found: Prepared): PoolRow | undefined {
  const stored = w.get<PoolRow>('dexPools', poolKey(chain, address));
  if (stored !== undefined) return stored;
  const row = found.get(address);
  if (row === undefined) return undefined;
  if (typeof row === 'number') {
    if (w.get<NotPool>('dexPools', notPoolKey(chain, address)) !== row) w.put('dexPools', notPoolKey(chain, address), row);
    return undefined;
  }
  writePool(w, chain, address, row);
  return row;
}

function writePool(w: IndexWriter, chain: string, pool: string, row: PoolRow): void {
  // The first kept: a V4 PoolId (the PoolKey's hash, not the manager's) initialized again by another registry PoolManager.
  if (w.has('dexPools', poolKey(chain, pool))) return;
  w.put('dexPools', poolKey(chain, pool), row);
  w.put('dexPools', `${tokenPoolsPrefix(chain, row[1], row[2])}${pool}`, 0);
  w.put('dexPools', `${tokenPoolsPrefix(chain, row[2], row[1])}${pool}`, 0);
}
