import { v2Swap, v2Sync } from '../engine/data-api/dex/index/events.js';
import { poolRowsPrefix, tokenSwapsPrefix, walletSwapsPrefix, type StateRow, type SwapRow } from '../engine/data-api/dex/index/keys.js';
import { hex } from '../engine/data-api/erc20/index/keys.js';
import { pos } from '../engine/evm/store.js';
import type { Table } from '../engine/ports.js';
import type { Store } from '../storage/env.js';
import { dexBlock, poolOf, poolTokens, type DexShape } from './dex-chain.js';

/**
 * bench:prices' baseline for swapsIndexedPerSec: the least a swap's indexing can cost in this store. The rows the
 * DEX index writes for each swap of the bench's chain (its Sync's state, the swap, the trader's and both tokens'
 * entries: five), with the same keys and values, put through the same store (msgpack values, hex keys, lmdb-js
 * putSync) in transactions of the same size, committed as durably; everything else (reading the logs, knowing
 * the pool, the price marks, the candles) done before the clock starts. No index can write those rows faster.
 */
export async function swapWriteFloor(
  store: Store,
  chain: string,
  shape: DexShape,
  blocks: number,
  batch: number,
): Promise<{ swaps: number; seconds: number }> {
  const tokens = new Map<string, [string, string]>();
  for (let i = 0; i < shape.pools; i++) {
    const p = poolTokens(shape, i);
    tokens.set(poolOf(i), [p.token0, p.token1]);
  }
  let swaps = 0;
  let ms = 0;
  // From block 1: block 0 creates the pools (no swaps).
  for (let n = 1; n <= blocks; n += batch) {
    const rows: Array<[Table, string, unknown]> = [];
    for (let b = n; b < Math.min(n + batch, blocks + 1); b++)
      for (const t of dexBlock(chain, shape, b).record.txs) {
        const [sync, swap] = t.logs;
        const pool = swap!.address;
        const reserves = v2Sync(sync!)!;
        const delta = v2Swap(swap!)!;
        const trader = String(t.tx['from']);
        const place = pos(b, Number(swap!.logIndex));
        const [token0, token1] = tokens.get(pool)!;
        rows.push([
          'dexStates',
          poolRowsPrefix(chain, pool) + pos(b, Number(sync!.logIndex)),
          [hex(reserves.reserve0), hex(reserves.reserve1)] satisfies StateRow,
        ]);
        rows.push([
          'dexSwaps',
          poolRowsPrefix(chain, pool) + place,
          [String(t.tx['hash']), 0, trader, delta.amount0.toString(), delta.amount1.toString()] satisfies SwapRow,
        ]);
        rows.push(['dexWalletSwaps', walletSwapsPrefix(chain, trader) + place, pool]);
        rows.push(['dexTokenSwaps', tokenSwapsPrefix(chain, token0) + place, pool]);
        rows.push(['dexTokenSwaps', tokenSwapsPrefix(chain, token1) + place, pool]);
        swaps++;
      }
    const t0 = performance.now();
    await store.transactAsync(() => {
      for (const [table, key, value] of rows) store.put(table, key, value);
    });
    ms += performance.now() - t0;
  }
  return { swaps, seconds: ms / 1000 };
}
