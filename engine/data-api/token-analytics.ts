import { z } from 'zod';
import { posAt, pos } from '../evm/store.js';
import { blockTime } from './block-times.js';
import type { DataDeps } from './deps.js';
import { poolKey, poolRowsPrefix, tokenPoolsPrefix, type PoolRow, type SwapRow } from './dex-index.js';
import { indexedHead, tokenFacts } from './erc20-common.js';
import { DAY } from './erc20-keys.js';
import { evmAddress } from './params.js';
import { weighPools } from './pairs.js';
import { decimal, mul, priceReader, toNumber, MIN_SIDE_USD } from './prices.js';

/**
 * GET /tokens/:tokenAddress/analytics: the token's swaps in every pool the DEX index holds, over the last 5 minutes,
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
/** Swaps read per pool at most for a day's figures. */
const DAY_SWAPS = 10_000;

export async function tokenAnalytics(deps: DataDeps, chain: string, q: z.output<typeof analyticsQuery>) {
  const token = q.tokenAddress;
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  const now = blockTime(deps.kv, chain, head);
  const price = reader === undefined ? null : await reader.price(token, head, { minSideUsd: MIN_SIDE_USD });
  const decimals = reader === undefined ? 0 : await reader.tokenDecimals(token);
  const counts = { buys: zero(), sells: zero(), buyVolume: zero(), sellVolume: zero() };
  const traders = { buyers: WINDOWS.map(() => new Set<string>()), sellers: WINDOWS.map(() => new Set<string>()) };
  const prefix = tokenPoolsPrefix(chain, token);
  const times = new Map<number, number | undefined>();
  const timeOf = (block: number): number | undefined => (times.has(block) ? times.get(block) : times.set(block, blockTime(deps.kv, chain, block)).get(block));
  for (const { key } of now === undefined ? [] : deps.kv.range<number>('dexPools', { start: prefix, end: `${prefix}\uffff` })) {
    const pool = key.slice(prefix.length).split('/')[1]!;
    // The row's order: a V4 pool of the native coin holds the wrapped native token where the coin sorted first.
    const isToken0 = deps.kv.get<PoolRow>('dexPools', poolKey(chain, pool))?.[1] === token;
    const rows = poolRowsPrefix(chain, pool);
    // Newest first: stop at the first swap older than a day.
    for (const { key: at, value } of deps.kv.range<SwapRow>('dexSwaps', { start: rows + pos(head, 0xffffff), end: rows, reverse: true, limit: DAY_SWAPS })) {
      const t = timeOf(posAt(at).blockNumber);
      if (t === undefined || t < now! - DAY) break;
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
