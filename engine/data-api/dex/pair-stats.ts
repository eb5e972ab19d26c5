import { z } from 'zod';
import { factoryOf } from '../../chains/pricing.js';
import { ApiError } from '../../errors.js';
import { offChain } from '../common/answer-parts.js';
import { blockTime } from '../common/block-times.js';
import type { DataDeps } from '../common/deps.js';
import { metadata } from '../common/node-reads.js';
import { indexedHead } from '../common/pages.js';
import { poolAddress } from '../common/params.js';
import { DAY } from '../erc20/index/keys.js';
import { keyed, perWindow, percentChange, poolSwapsSince, tally, usdNumber } from './activity.js';
import { poolKey, type PoolRow } from './index/keys.js';
import { baseIsToken0 } from './index/swap-candles.js';
import { decimal, div, priceReader, toNumber, usdCents, type Ratio } from './index/prices.js';
import { weighPool } from './pairs.js';

/**
 * GET /pairs/:address/stats: one pool (a pair address or a V4 PoolId) at the indexed head, seen from its base token
 * (the token that does not route to USD, as GET /pairs/:address/swaps names it): its price through the pool in USD
 * and in the native token, both sides in USD, and by window (5 min, 1 h, 4 h, 24 h of block time back from the head)
 * the changes of that price and liquidity, and the pool's swaps as /tokens/:tokenAddress/analytics counts a token's
 * (activity.ts): buys (the base token left the pool), sells, their USD volumes (the base amounts at the current
 * price through the pool) and distinct buyers and sellers. The newest POOL_SWAPS swaps of the day at most.
 */

export const pairStatsQuery = z.object({ address: poolAddress });

const WINDOWS = [
  ['5min', 300],
  ['1h', 3_600],
  ['4h', 14_400],
  ['24h', DAY],
] as const;
type WindowName = (typeof WINDOWS)[number][0];
/** The reference's candleSummary: a figure per window, null where it has none (no price then, no swap priced). */
const summary = keyed(
  WINDOWS.map(([name]) => name),
  z.number().nullable(),
);

/** The reference's pairStatsResponse. */
export const pairStatsAnswer = z.object({
  tokenAddress: z.string().meta({ description: "The pair's base token" }),
  tokenName: z.string().nullable(),
  tokenSymbol: z.string().nullable(),
  tokenLogo: offChain,
  pairCreated: z.string().nullable().meta({ description: 'null: the DEX index keeps no creation time of a pool' }),
  pairLabel: z.string(),
  pairAddress: z.string(),
  exchange: z.string().nullable(),
  exchangeAddress: z.string().meta({ description: "The pool's factory (a V4 pool: its PoolManager)" }),
  exchangeLogo: offChain,
  exchangeUrl: offChain,
  currentUsdPrice: z.string().nullable(),
  currentNativePrice: z.string().nullable(),
  totalLiquidityUsd: z.string().nullable(),
  pricePercentChange: summary,
  liquidityPercentChange: summary,
  buys: summary,
  sells: summary,
  totalVolume: summary,
  buyVolume: summary,
  sellVolume: summary,
  buyers: summary,
  sellers: summary,
});

/** Swaps of the pool counted at most (the newest of the day), as a token's analytics counts a pool's. */
const POOL_SWAPS = 10_000;

export async function pairStats(
  deps: DataDeps,
  chain: string,
  q: z.output<typeof pairStatsQuery>,
): Promise<z.infer<typeof pairStatsAnswer>> {
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  const row = deps.kv.get<PoolRow>('dexPools', poolKey(chain, q.address));
  const factory = row === undefined ? undefined : factoryOf(deps.pricing?.(chain), row[3]);
  if (row === undefined || reader === undefined || factory === undefined)
    throw new ApiError(404, `${q.address} is no DEX pool this server indexes on chain ${chain} (a pool of a factory in CHAINPOST_PRICING)`);
  const baseIs0 = baseIsToken0(reader, row);
  const [base, quote] = baseIs0 ? [row[1], row[2]] : [row[2], row[1]];
  const at = (block: number) => weighPool(deps, chain, reader, head, base, q.address, row, block);
  const now = await at(head);
  // The base token's price through the pool and the pool's liquidity, in USD, `seconds` of block time before the head.
  const then = async (seconds: number) => {
    const block = reader.blockBefore(head, seconds);
    return block === undefined ? null : at(block);
  };
  type Weighed = Awaited<ReturnType<typeof at>>;
  const usdOf = (w: Weighed): number | null => (w === null || w.usd === null ? null : toNumber(w.usd));
  const liquidityOf = (w: Weighed): number | null => w?.liquidity ?? null;
  const before = await Promise.all(WINDOWS.map(([, seconds]) => then(seconds)));
  const time = blockTime(deps.kv, chain, head);
  const usd = now?.usd ?? null;
  const t = tally<WindowName>(
    WINDOWS,
    time ?? 0,
    time === undefined ? [] : poolSwapsSince(deps, chain, q.address, baseIs0, head, time - DAY, POOL_SWAPS),
    usdNumber(now?.dMine ?? 0, usd),
  );
  // Volumes need the base token's price; counts do not.
  const volume = (f: (w: WindowName) => number) => perWindow(WINDOWS, (w) => (usd === null ? null : f(w)));
  const wrapped = deps.pricing?.(chain)?.wrappedNative;
  const nativeUsd = wrapped === undefined ? null : reader.usd(wrapped, head);
  const native: Ratio | null =
    now === null
      ? null
      : quote === wrapped
        ? now.inOther
        : usd === null || nativeUsd === null || nativeUsd.num === 0n
          ? null
          : div(usd, nativeUsd);
  const [baseInfo, quoteInfo] = await Promise.all([metadata(deps, chain, base), metadata(deps, chain, quote)]);
  return {
    tokenAddress: base,
    tokenName: baseInfo.name,
    tokenSymbol: baseInfo.symbol,
    tokenLogo: null,
    pairCreated: null,
    pairLabel: `${baseInfo.symbol || base}/${quoteInfo.symbol || quote}`,
    pairAddress: q.address,
    exchange: factory.name,
    exchangeAddress: row[3],
    exchangeLogo: null,
    exchangeUrl: null,
    currentUsdPrice: usd === null ? null : decimal(usd, 18),
    currentNativePrice: native === null ? null : decimal(native, 18),
    totalLiquidityUsd: now === null || now.liquidityUsd === null ? null : usdCents(now.liquidityUsd),
    pricePercentChange: perWindow(WINDOWS, (_, __, i) => percentChange(usdOf(now), usdOf(before[i]!))),
    liquidityPercentChange: perWindow(WINDOWS, (_, __, i) => percentChange(liquidityOf(now), liquidityOf(before[i]!))),
    buys: t.buys,
    sells: t.sells,
    totalVolume: volume((w) => t.buyVolume[w] + t.sellVolume[w]),
    buyVolume: volume((w) => t.buyVolume[w]),
    sellVolume: volume((w) => t.sellVolume[w]),
    buyers: t.buyers,
    sellers: t.sellers,
  };
}
