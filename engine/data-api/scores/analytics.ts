import { z } from 'zod';
import { offChain } from '../common/answer-parts.js';
import { posAt, pos } from '../../evm/store.js';
import { blockTime } from '../common/block-times.js';
import type { DataDeps } from '../common/deps.js';
import { poolKey, poolRowsPrefix, tokenSwapsPrefix, type PoolRow, type SwapRow } from '../dex/index/keys.js';
import { tokenFacts } from '../erc20/reads.js';
import { DAY } from '../erc20/index/keys.js';
import { evmAddress } from '../common/params.js';
import { totalLiquidity, weighPools } from '../dex/pairs.js';
import { decimal, mul, priceReader, MIN_SIDE_USD, LAST_LOG } from '../dex/index/prices.js';
import { newestFirst } from '../common/newest-first.js';
import { blockTimes, keyed, tally, usdNumber, type TokenSwap } from '../dex/activity.js';
import { indexedHead } from '../common/pages.js';

/**
 * GET /tokens/:tokenAddress/analytics: the token's swaps in every pool the DEX index holds (`dexTokenSwaps`), over
 * the last 5 minutes, hour, 6 hours and day of block time before the indexed head (its newest SCAN swaps at most,
 * POOL_SWAPS of a pool). A buy takes the token out of a pool (the pool's balance of it falls), a sell puts it in;
 * buyers and sellers are distinct traders (the transactions' senders); volumes are the token amounts valued at its
 * current USD price, summed in the order read. totalLiquidity: both sides of its pools in USD (the first 1,000
 * pools); totalFullyDilutedValuation: its supply at that price.
 */

export const analyticsQuery = z.object({ tokenAddress: evmAddress });

const WINDOWS = [
  ['5m', 300],
  ['1h', 3_600],
  ['6h', 21_600],
  ['24h', DAY],
] as const;
type WindowName = (typeof WINDOWS)[number][0];

const WINDOW_NAMES = WINDOWS.map(([name]) => name);
const usdPerWindow = keyed(WINDOW_NAMES, z.number());
const countPerWindow = keyed(WINDOW_NAMES, z.number().int());
/** The reference's TokenAnalyticsData: the windows back from the indexed head's block time. */
export const analyticsAnswer = z.object({
  categoryId: offChain,
  totalBuyVolume: usdPerWindow,
  totalSellVolume: usdPerWindow,
  totalBuyers: countPerWindow,
  totalSellers: countPerWindow,
  totalBuys: countPerWindow,
  totalSells: countPerWindow,
  totalLiquidity: z.string().meta({ description: "Both sides of the token's pools in USD" }),
  totalFullyDilutedValuation: z.string().nullable(),
});

/** Swaps counted per pool at most in one scan (a day's figures, or a score's 30 days). */
const POOL_SWAPS = 10_000;
/**
 * Entries of the token's swaps (in all its pools) read at most in one scan: one request's work stays bounded (each
 * entry is an index read, a swap read and a block time) even for a token a bot trades all day in many pools. Past
 * it the older swaps are not counted.
 */
export const SCAN = 100_000;
/**
 * The token's swaps in all its pools at or before block `head`, newest first, back to block time `since` (the first
 * older swap ends the scan), reading SCAN index entries and counting POOL_SWAPS swaps of a pool at most.
 */
export function* tokenSwapsSince(
  deps: Pick<DataDeps, 'kv'>,
  chain: string,
  token: string,
  head: number,
  since: number,
): Generator<TokenSwap> {
  const timeOf = blockTimes(deps, chain);
  // Each pool seen: whether the token is its token0 (a V4 pool of the native coin holds the wrapped native token where
  // the coin sorted first), and how many of its swaps were counted (at most POOL_SWAPS).
  const pools = new Map<string, { isToken0: boolean; counted: number }>();
  const poolOf = (pool: string) =>
    pools.get(pool) ??
    pools.set(pool, { isToken0: deps.kv.get<PoolRow>('dexPools', poolKey(chain, pool))?.[1] === token, counted: 0 }).get(pool)!;
  const prefix = tokenSwapsPrefix(chain, token);
  let read = 0;
  for (const { key, value: pool } of newestFirst<string>(deps.kv, 'dexTokenSwaps', prefix + pos(head, LAST_LOG), prefix)) {
    if (read++ === SCAN) return;
    const { blockNumber, logIndex } = posAt(key);
    const time = timeOf(blockNumber);
    if (time === undefined || time < since) return;
    const p = poolOf(pool);
    if (p.counted === POOL_SWAPS) continue;
    const swap = deps.kv.get<SwapRow>('dexSwaps', poolRowsPrefix(chain, pool) + pos(blockNumber, logIndex));
    if (swap === undefined) continue;
    p.counted++;
    yield { time, delta: BigInt(p.isToken0 ? swap[3] : swap[4]), trader: swap[2] };
  }
}

export async function tokenAnalytics(
  deps: DataDeps,
  chain: string,
  q: z.output<typeof analyticsQuery>,
): Promise<z.infer<typeof analyticsAnswer>> {
  const token = q.tokenAddress;
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  const now = blockTime(deps.kv, chain, head);
  const price = reader === undefined ? null : await reader.price(token, head, { minSideUsd: MIN_SIDE_USD });
  const decimals = reader === undefined ? 0 : await reader.tokenDecimals(token);
  // The day's swaps, counted as they are read (volumes are summed in this order).
  const t = tally<WindowName>(
    WINDOWS,
    now ?? 0,
    now === undefined ? [] : tokenSwapsSince(deps, chain, token, head, now - DAY),
    usdNumber(decimals, price?.now.usd ?? null),
  );
  const pairs = await weighPools(deps, chain, reader, head, token);
  const supply = (await tokenFacts(deps, chain, token)).totalSupply;
  return {
    categoryId: null,
    totalBuyVolume: t.buyVolume,
    totalSellVolume: t.sellVolume,
    totalBuyers: t.buyers,
    totalSellers: t.sellers,
    totalBuys: t.buys,
    totalSells: t.sells,
    totalLiquidity: String(totalLiquidity(pairs)),
    totalFullyDilutedValuation:
      price === null || supply === null ? null : decimal(mul({ num: BigInt(supply), den: 10n ** BigInt(decimals) }, price.now.usd), 2),
  };
}
