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
import { decimal, mul, priceReader, toNumber, MIN_SIDE_USD, LAST_LOG } from './prices.js';

/**
 * GET /tokens/:tokenAddress/analytics: the token's swaps in every pool the DEX index holds (`dexTokenSwaps`), over
 * the last 5 minutes, hour, 6 hours and day of block time before the indexed head (its newest SCAN swaps at most,
 * DAY_SWAPS of a pool). A buy takes the token out of a pool (the pool's balance of it falls), a sell puts it in;
 * buyers and sellers are distinct traders (the transactions' senders); volumes are the token amounts valued at its
 * current USD price, summed in the order read. totalLiquidity: both sides of its pools in USD (the first 1,000
 * pools); totalFullyDilutedValuation: its supply at that price.
 */

export const analyticsQuery = z.object({ tokenAddress: evmAddress });

const WINDOWS = [['5m', 300], ['1h', 3_600], ['6h', 21_600], ['24h', DAY]] as const;
type Windowed = Record<(typeof WINDOWS)[number][0], number>;
const zero = (): Windowed => ({ '5m': 0, '1h': 0, '6h': 0, '24h': 0 });
/** Swaps counted per pool at most for a day's figures. */
const DAY_SWAPS = 10_000;
/**
 * Entries of the token's day of swaps (in all its pools) read at most: one request's work stays bounded (each entry is
 * an index read, a swap read and a block time) even for a token a bot trades all day in many pools. Past it the
 * older swaps of the day are not counted.
 */
export const SCAN = 100_000;
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
  // Each pool seen: whether the token is its token0 (a V4 pool of the native coin holds the wrapped native token where
  // the coin sorted first), and how many of its swaps were counted (at most DAY_SWAPS).
  const pools = new Map<string, { isToken0: boolean; counted: number }>();
  const poolOf = (pool: string) => pools.get(pool) ?? pools.set(pool, { isToken0: deps.kv.get<PoolRow>('dexPools', poolKey(chain, pool))?.[1] === token, counted: 0 }).get(pool)!;
  const count = (t: number, isToken0: boolean, value: SwapRow): void => {
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
  };
  const prefix = tokenSwapsPrefix(chain, token);
  // The token's swaps in all its pools, newest first, counted as they are read (volumes are summed in this order):
  // stop at the first swap older than a day, or after SCAN entries.
  let read = 0;
  for (const { key, value: pool } of now === undefined ? [] : newestFirst<string>(deps.kv, 'dexTokenSwaps', prefix + pos(head, LAST_LOG), prefix)) {
    if (read++ === SCAN) break;
    const { blockNumber, logIndex } = posAt(key);
    const t = timeOf(blockNumber);
    if (t === undefined || t < now! - DAY) break;
    const p = poolOf(pool);
    if (p.counted === DAY_SWAPS) continue;
    const swap = deps.kv.get<SwapRow>('dexSwaps', poolRowsPrefix(chain, pool) + pos(blockNumber, logIndex));
    if (swap === undefined) continue;
    p.counted++;
    count(t, p.isToken0, swap);
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
