import { z } from 'zod';
import { posAt, pos } from '../evm/store.js';
import type { Entry, Kv, Table } from '../ports.js';
import { blockTime } from './block-times.js';
import type { DataDeps } from './deps.js';
import { poolKey, poolRowsPrefix, tokenSwapsPrefix, type PoolRow, type SwapRow } from './dex-index.js';
import { indexedHead, tokenFacts } from './erc20-common.js';
import { DAY } from './erc20-keys.js';
import { evmAddress } from './params.js';
import { weighPools } from './pairs.js';
import { decimal, mul, priceReader, toNumber, MIN_SIDE_USD } from './prices.js';

/**
 * GET /tokens/:tokenAddress/analytics: the token's swaps in every pool the DEX index holds (`dexTokenSwaps`), over the last 5 minutes,
 * hour, 6 hours and day of block time before the indexed head. A buy takes the token out of a pool (the pool's
 * balance of it falls), a sell puts it in; buyers and sellers are distinct traders (the transactions' senders);
 * volumes are the token amounts valued at its current USD price. totalLiquidity: both sides of its pools in USD (the
 * first 1,000 pools);
 * totalFullyDilutedValuation: its supply at that price.
 */

export const analyticsQuery = z.object({ tokenAddress: evmAddress });

const WINDOWS = [['5m', 300], ['1h', 3_600], ['6h', 21_600], ['24h', DAY]] as const;
type Windowed = Record<(typeof WINDOWS)[number][0], number>;
const zero = (): Windowed => ({ '5m': 0, '1h': 0, '6h': 0, '24h': 0 });
/** Swaps counted per pool at most for a day's figures. */
const DAY_SWAPS = 10_000;
/** Entries of the token's swaps read at a time. */
const CHUNK = 1_000;

/** A table's entries from `start` down to `end` (exclusive), newest first, read a chunk at a time (a day of a busy token's swaps is long). */
function* newestFirst<T>(kv: Kv, table: Table, start: string, end: string): Generator<Entry<T>> {
  for (let from = start, last: string | undefined; ; ) {
    const rows = kv.range<T>(table, { start: from, end, reverse: true, limit: CHUNK });
    for (const r of rows) if (r.key !== last) yield r;
    if (rows.length < CHUNK) return;
    last = from = rows[rows.length - 1]!.key;
  }
}

export async function tokenAnalytics(deps: DataDeps, chain: string, q: z.output<typeof analyticsQuery>) {
  const token = q.tokenAddress;
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  const now = blockTime(deps.kv, chain, head);
  const price = reader === undefined ? null : await reader.price(token, head, { minSideUsd: MIN_SIDE_USD });
  const decimals = reader === undefined ? 0 : await reader.tokenDecimals(token);
  const counts = { buys: zero(), sells: zero(), buyVolume: zero(), sellVolume: zero() };
  const traders = { buyers: WINDOWS.map(() => new Set<string>()), sellers: WINDOWS.map(() => new Set<string>()) };
  const times = new Map<number, number | undefined>();
  const timeOf = (block: number): number | undefined => (times.has(block) ? times.get(block) : times.set(block, blockTime(deps.kv, chain, block)).get(block));
  // Each pool's swaps of the day, newest first, at most DAY_SWAPS of them.
  const byPool = new Map<string, Array<{ t: number; swap: SwapRow }>>();
  const prefix = tokenSwapsPrefix(chain, token);
  // The token's swaps in all its pools, newest first: stop at the first swap older than a day.
  for (const { key, value: pool } of now === undefined ? [] : newestFirst<string>(deps.kv, 'dexTokenSwaps', prefix + pos(head, 0xffffff), prefix)) {
    const { blockNumber, logIndex } = posAt(key);
    const t = timeOf(blockNumber);
    if (t === undefined || t < now! - DAY) break;
    const swaps = byPool.get(pool) ?? byPool.set(pool, []).get(pool)!;
    const swap = swaps.length < DAY_SWAPS ? deps.kv.get<SwapRow>('dexSwaps', poolRowsPrefix(chain, pool) + pos(blockNumber, logIndex)) : undefined;
    if (swap !== undefined) swaps.push({ t, swap });
  }
  // Summed pool by pool in the order of the token's pools (by the other token, then the pool): float sums keep one order.
  const pools = [...byPool.keys()].map((pool) => ({ pool, row: deps.kv.get<PoolRow>('dexPools', poolKey(chain, pool)) }));
  const other = (row: PoolRow | undefined): string => (row?.[1] === token ? row[2] : (row?.[1] ?? ''));
  pools.sort((a, b) => (`${other(a.row)}/${a.pool}` < `${other(b.row)}/${b.pool}` ? -1 : 1));
  for (const { pool, row } of pools) {
    // The row's order: a V4 pool of the native coin holds the wrapped native token where the coin sorted first.
    const isToken0 = row?.[1] === token;
    for (const { t, swap: value } of byPool.get(pool)!) {
      const delta = BigInt(isToken0 ? value[3] : value[4]);
      const bought = delta < 0n;
      const usd = price === null ? 0 : toNumber(mul({ num: bought ? -delta : delta, den: 10n ** BigInt(decimals) }, price.now.usd));
      WINDOWS.forEach(([name, seconds], i) => {
        if (t < now! - seconds) return;
        if (bought) {
          counts.buys[name]++;
          counts.buyVolume[name] += usd;
          traders.buyers[i]!.add(value[2]);
        } else {
          counts.sells[name]++;
          counts.sellVolume[name] += usd;
          traders.sellers[i]!.add(value[2]);
        }
      });
    }
  }
  const distinct = (sets: Array<Set<string>>): Windowed => Object.fromEntries(WINDOWS.map(([name], i) => [name, sets[i]!.size])) as Windowed;
  const pairs = await weighPools(deps, chain, reader, head, token);
  const supply = (await tokenFacts(deps, chain, token)).totalSupply;
  return {
    categoryId: null,
    totalBuyVolume: counts.buyVolume,
    totalSellVolume: counts.sellVolume,
    totalBuyers: distinct(traders.buyers),
    totalSellers: distinct(traders.sellers),
    totalBuys: counts.buys,
    totalSells: counts.sells,
    totalLiquidity: String(pairs.reduce((sum, p) => sum + (p.liquidity ?? 0), 0)),
    totalFullyDilutedValuation: price === null || supply === null ? null : decimal(mul({ num: BigInt(supply), den: 10n ** BigInt(decimals) }, price.now.usd), 2),
  };
}
