import { z } from 'zod';
import { offChain } from '../common/answer-parts.js';
import { factoryOf } from '../../chains/pricing.js';
import { ApiError } from '../../errors.js';
import { blockAtOrBefore } from '../common/block-times.js';
import type { DataDeps } from '../common/deps.js';
import { poolKey, poolRowsPrefix, tokenPoolsPrefix, type PoolRow, type SwapRow } from './index/keys.js';
import { indexedHead, offsetCursor, readOffsetCursor } from '../common/pages.js';
import { DAY } from '../erc20/index/keys.js';
import { pos } from '../../evm/store.js';
import { metadataAnswer, tokenMetadata } from '../erc20/tokens.js';
import { blockNumber, cursor, date, evmAddress, limit, poolAddress } from '../common/params.js';
import {
  add,
  decimal,
  div,
  isExchange,
  mul,
  poolAt,
  priceReader,
  sidePrice,
  toNumber,
  usdCents,
  type PriceReader,
  type Ratio,
  LAST_LOG,
} from './index/prices.js';

/**
 * The official SDK's pair calls, from the DEX index: GET /:pair_address/reserves, GET /:token0_address/:token1_address/
 * pairAddress and GET /:token0_address/:token1_address/price. A pair is a pool of a registry factory (V2, V3, or V4
 * by its PoolId, whose reserves are the virtual reserves of its active liquidity);
 * `to_block` or `to_date` (the last indexed block at or before it) set the block, by default the indexed head.
 */

const at = { to_block: blockNumber.optional(), to_date: date.optional() };
export const reservesQuery = z.object({ pair_address: poolAddress, ...at });
export const pairAddressQuery = z.object({
  token0_address: evmAddress,
  token1_address: evmAddress,
  exchange: z.string().min(1).max(100),
  ...at,
});
export const pairPriceQuery = z.object({
  token0_address: evmAddress,
  token1_address: evmAddress,
  exchange: z.string().min(1).max(100).optional(),
  ...at,
});

export const reservesAnswer = z.object({ reserve0: z.string(), reserve1: z.string() });
/** A token of a pair: GET /erc20/metadata's item. */
const tokenMetadataAnswer = metadataAnswer.element;
export const pairAddressAnswer = z.object({ token0: tokenMetadataAnswer, token1: tokenMetadataAnswer, pairAddress: z.string() });
export const pairPriceAnswer = z.object({
  pair_address: z.string(),
  pair_label: z.string(),
  exchange: z.string(),
  quote_price: z.string().meta({ description: 'The base token (token0_address) in the quote token (token1_address)' }),
  price_usd: z
    .string()
    .nullable()
    .meta({ description: "The base token in USD through this pair; null without the quote token's USD price" }),
  base_token: tokenMetadataAnswer,
  quote_token: tokenMetadataAnswer,
});

/** The block a query asks about: to_block, else the last indexed block at or before to_date, else the head; never past the head. */
async function blockOf(
  deps: DataDeps,
  chain: string,
  q: { to_block?: number | undefined; to_date?: number | undefined },
): Promise<{ head: number; block: number }> {
  const head = await indexedHead(deps, chain);
  const asked = q.to_block ?? (q.to_date === undefined ? head : blockAtOrBefore(deps.kv, chain, q.to_date));
  if (asked === undefined) throw new ApiError(404, `chain ${chain} has no indexed block at or before ${q.to_date} (to_date)`);
  return { head, block: Math.min(asked, head) };
}

function pool(deps: DataDeps, chain: string, address: string): PoolRow {
  const row = deps.kv.get<PoolRow>('dexPools', poolKey(chain, address));
  if (row === undefined)
    throw new ApiError(404, `${address} is no DEX pool this server indexes on chain ${chain} (a pool of a factory in CHAINPOST_PRICING)`);
  return row;
}

async function reservesAt(deps: DataDeps, chain: string, address: string, row: PoolRow, block: number, head: number) {
  const reader = priceReader(deps, chain, head);
  const [d0, d1] = reader === undefined ? [0, 0] : await Promise.all([reader.tokenDecimals(row[1]), reader.tokenDecimals(row[2])]);
  return poolAt(deps.kv, chain, address, row, block, head, d0, d1);
}

export async function pairReserves(
  deps: DataDeps,
  chain: string,
  q: z.output<typeof reservesQuery>,
): Promise<z.infer<typeof reservesAnswer>> {
  const { head, block } = await blockOf(deps, chain, q);
  const row = pool(deps, chain, q.pair_address);
  const state = await reservesAt(deps, chain, q.pair_address, row, block, head);
  if (state === null) throw new ApiError(404, `pair ${q.pair_address} has no reserves at block ${block} on chain ${chain}`);
  return { reserve0: state.reserves[0].toString(), reserve1: state.reserves[1].toString() };
}

/** The pools of two tokens whose factory is `exchange` (any, without one). */
function poolsOf(deps: DataDeps, chain: string, a: string, b: string, exchange: string | undefined): Array<[string, PoolRow]> {
  const prefix = tokenPoolsPrefix(chain, a, b);
  const pricing = deps.pricing?.(chain);
  return deps.kv.range<number>('dexPools', { start: prefix, end: `${prefix}\uffff` }).flatMap(({ key }): Array<[string, PoolRow]> => {
    const address = key.slice(prefix.length);
    const row = deps.kv.get<PoolRow>('dexPools', poolKey(chain, address));
    const factory = row === undefined ? undefined : factoryOf(pricing, row[3]);
    return row !== undefined && factory !== undefined && (exchange === undefined || isExchange(factory, exchange)) ? [[address, row]] : [];
  });
}

/** The most liquid of the pools (the larger product of reserves), with its reserves at `block`. */
async function deepest(deps: DataDeps, chain: string, pools: Array<[string, PoolRow]>, block: number, head: number) {
  let best: { address: string; row: PoolRow; depth: bigint; state: NonNullable<Awaited<ReturnType<typeof reservesAt>>> } | null = null;
  for (const [address, row] of pools) {
    const state = await reservesAt(deps, chain, address, row, block, head);
    const depth = state === null ? -1n : state.reserves[0] * state.reserves[1];
    if (state !== null && (best === null || depth > best.depth)) best = { address, row, depth, state };
  }
  return best;
}

export async function pairAddress(
  deps: DataDeps,
  chain: string,
  q: z.output<typeof pairAddressQuery>,
): Promise<z.infer<typeof pairAddressAnswer>> {
  const { head, block } = await blockOf(deps, chain, q);
  const found = await deepest(deps, chain, poolsOf(deps, chain, q.token0_address, q.token1_address, q.exchange), block, head);
  if (found === null)
    throw new ApiError(404, `no ${q.exchange} pair of ${q.token0_address} and ${q.token1_address} on chain ${chain} at block ${block}`);
  const [token0, token1] = await tokenMetadata(deps, chain, [found.row[1], found.row[2]]);
  return { token0: token0!, token1: token1!, pairAddress: found.address };
}

export async function pairPrice(
  deps: DataDeps,
  chain: string,
  q: z.output<typeof pairPriceQuery>,
): Promise<z.infer<typeof pairPriceAnswer>> {
  const { head, block } = await blockOf(deps, chain, q);
  const found = await deepest(deps, chain, poolsOf(deps, chain, q.token0_address, q.token1_address, q.exchange), block, head);
  if (found === null)
    throw new ApiError(
      404,
      `no pair of ${q.token0_address} and ${q.token1_address} on chain ${chain} at block ${block}${q.exchange === undefined ? '' : ` (${q.exchange})`}`,
    );
  // The base token is the first address asked, the quote token the second: quote_price is the base's price in the quote.
  const baseIs0 = found.row[1] === q.token0_address;
  const p0 = found.state.price0;
  const quote = sidePrice(p0, baseIs0);
  const [base, quoteToken] = await tokenMetadata(deps, chain, [q.token0_address, q.token1_address]);
  // In USD through this pair: its price in the quote token times the quote token's USD price.
  const quoteUsd = (await priceReader(deps, chain, head)?.usd(q.token1_address, block)) ?? null;
  return {
    pair_address: found.address,
    pair_label: `${base!.symbol ?? base!.address}/${quoteToken!.symbol ?? quoteToken!.address}`,
    exchange: factoryOf(deps.pricing?.(chain), found.row[3])!.name,
    quote_price: decimal(quote, 18),
    price_usd: quoteUsd === null ? null : decimal(mul(quote, quoteUsd), 18),
    base_token: base!,
    quote_token: quoteToken!,
  };
}

export const tokenPairsQuery = z.object({ token_address: evmAddress, limit: limit(), cursor });

const usdNumber = z.number().nullable();
/** GET /erc20/:token_address/pairs: the reference's tokenPairsResponse (liquidity_skew beside its fields). */
export const tokenPairsAnswer = z.object({
  pairs: z.array(
    z.object({
      exchange_address: z.string(),
      exchange_name: z.string(),
      exchange_logo: offChain,
      pair_label: z.string(),
      pair_address: z.string(),
      usd_price: usdNumber.meta({ description: "The token's USD price through this pool" }),
      usd_price_24hr: usdNumber,
      usd_price_24hr_percent_change: usdNumber,
      usd_price_24hr_usd_change: usdNumber,
      liquidity_usd: usdNumber,
      liquidity_skew: z
        .number()
        .nullable()
        .meta({ description: "The thinner side's USD over the deeper's (0 below 0.005); null without both sides' prices" }),
      inactive_pair: z.boolean().meta({ description: 'No swap in the last 24 hours' }),
      base_token: z.string(),
      quote_token: z.string(),
      volume_24h_native: usdNumber,
      volume_24h_usd: usdNumber,
      pair: z.array(
        z.object({
          token_address: z.string(),
          token_name: z.string(),
          token_symbol: z.string(),
          token_logo: offChain,
          token_decimals: z.string(),
          pair_token_type: z.enum(['token0', 'token1']),
          liquidity_usd: z.string().nullable(),
        }),
      ),
    }),
  ),
  cursor: z.string().nullable(),
  page_size: z.number().int(),
  page: z.number().int(),
});

/** A pool's USD amount as the pairs list answers it: a number, to the cent. */
const cents = (r: Ratio): number => Number(decimal(r, 2));

/** Pools of one token the list weighs at most (in address order of the other token): past them, it is cut. */
const MAX_TOKEN_PAIRS = 1_000;
/** Swaps summed for a pool's 24 h volume at most, newest first. */
const VOLUME_SWAPS = 10_000;
/** data-api-notes.md §3.3: a skew below this counts as no liquidity on the thin side. */
const MIN_SKEW = 0.005;

/**
 * GET /erc20/:token_address/pairs: the token's pools at the indexed head, deepest first (the first 1,000 of them).
 * Through each pool: the token's USD price (its price in the other token times that token's USD price) now and 24 h
 * of block time before, each side's liquidity in USD and their skew (the thinner over the deeper), and the 24 h
 * volume: the token amounts its swaps moved in that time (up to 10,000, newest first), valued at the current
 * price. A pool whose other token has no USD route has null USD fields and sorts last. Only the page's pools get
 * their 24 h figures.
 */
export async function tokenPairs(
  deps: DataDeps,
  chain: string,
  q: z.output<typeof tokenPairsQuery>,
): Promise<z.infer<typeof tokenPairsAnswer>> {
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  // First what the order needs: each pool's price and sides now.
  const weighed = await weighPools(deps, chain, reader, head, q.token_address);
  const start = q.cursor === null ? 0 : readOffsetCursor(q.cursor);
  const page = weighed.slice(start, start + q.limit);
  const dayAgo = reader?.blockBefore(head, DAY);
  const wrapped = deps.pricing?.(chain)?.wrappedNative;
  const native = reader === undefined || wrapped === undefined ? null : await reader.usd(wrapped, head);
  const [info] = await tokenMetadata(deps, chain, [q.token_address]);
  const pairs = [];
  for (const p of page) {
    const then = dayAgo === undefined ? null : poolAt(deps.kv, chain, p.address, p.row, dayAgo, head, p.d0, p.d1);
    const otherThen = then === null || dayAgo === undefined ? null : await reader!.usd(p.other, dayAgo);
    const usd24h = then === null || otherThen === null ? null : mul(sidePrice(then.price0, p.isToken0), otherThen);
    // The last day's swaps, newest first, down to the first block past the one a day before.
    const rowsPrefix = poolRowsPrefix(chain, p.address);
    const swaps = deps.kv.range<SwapRow>('dexSwaps', {
      start: rowsPrefix + pos(head, LAST_LOG),
      end: rowsPrefix + pos((dayAgo ?? -1) + 1, 0),
      reverse: true,
      limit: VOLUME_SWAPS,
    });
    const [mineMoved, theirsMoved] = swaps.reduce(
      ([m, t], { value }) => {
        const a = BigInt(p.isToken0 ? value[3] : value[4]);
        const b = BigInt(p.isToken0 ? value[4] : value[3]);
        return [m + (a < 0n ? -a : a), t + (b < 0n ? -b : b)];
      },
      [0n, 0n],
    );
    const volumeUsd = p.usd === null ? null : mul({ num: mineMoved, den: 10n ** BigInt(p.dMine) }, p.usd);
    // In the native token: a pool against the wrapped native token needs no USD route (the amounts of it moved).
    const volumeNative =
      p.other === wrapped
        ? { num: theirsMoved, den: 10n ** BigInt(p.dTheirs) }
        : volumeUsd === null || native === null || native.num === 0n
          ? null
          : div(volumeUsd, native);
    const [otherInfo] = await tokenMetadata(deps, chain, [p.other]);
    const side = (t: typeof info, type: 'token0' | 'token1', liquidity: Ratio | null) => ({
      token_address: t!.address,
      token_name: t!.name,
      token_symbol: t!.symbol,
      token_logo: null,
      token_decimals: t!.decimals,
      pair_token_type: type,
      // A string here, a number on the pair (the reference's types).
      liquidity_usd: liquidity === null ? null : usdCents(liquidity),
    });
    const usdPrice = p.usd === null ? null : toNumber(p.usd);
    const usdPrice24h = usd24h === null ? null : toNumber(usd24h);
    const [thin, deep] =
      p.mineUsd === null || p.theirsUsd === null ? [null, null] : [toNumber(p.mineUsd), toNumber(p.theirsUsd)].sort((a, b) => a - b);
    const skew = thin === null || deep === null || deep === 0 ? null : thin! / deep!;
    pairs.push({
      exchange_address: p.factory.address,
      exchange_name: p.factory.name,
      exchange_logo: null,
      pair_label: `${info!.symbol ?? info!.address}/${otherInfo!.symbol ?? otherInfo!.address}`,
      pair_address: p.address,
      usd_price: usdPrice,
      usd_price_24hr: usdPrice24h,
      usd_price_24hr_percent_change:
        usdPrice === null || usdPrice24h === null || usdPrice24h === 0 ? null : (100 * (usdPrice - usdPrice24h)) / usdPrice24h,
      usd_price_24hr_usd_change: usdPrice === null || usdPrice24h === null ? null : usdPrice - usdPrice24h,
      liquidity_usd: p.liquidity,
      liquidity_skew: skew === null ? null : skew < MIN_SKEW ? 0 : skew,
      inactive_pair: swaps.length === 0,
      base_token: q.token_address,
      quote_token: p.other,
      volume_24h_native: volumeNative === null ? null : toNumber(volumeNative),
      volume_24h_usd: volumeUsd === null ? null : toNumber(volumeUsd),
      pair: p.isToken0
        ? [side(info, 'token0', p.mineUsd), side(otherInfo, 'token1', p.theirsUsd)]
        : [side(otherInfo, 'token0', p.theirsUsd), side(info, 'token1', p.mineUsd)],
    });
  }
  return {
    pairs,
    cursor: start + q.limit < weighed.length ? offsetCursor(start + q.limit) : null,
    page_size: q.limit,
    page: Math.floor(start / q.limit),
  };
}

/** A token's pools (the first MAX_TOKEN_PAIRS) with its price through each and each side in USD at `block` (default: now, the indexed head), deepest first. */
export async function weighPools(
  deps: DataDeps,
  chain: string,
  reader: PriceReader | undefined,
  head: number,
  token: string,
  block = head,
) {
  const prefix = tokenPoolsPrefix(chain, token);
  const rows =
    reader === undefined ? [] : deps.kv.range<number>('dexPools', { start: prefix, end: `${prefix}\uffff`, limit: MAX_TOKEN_PAIRS });
  const weighed = [];
  for (const { key } of rows) {
    const address = key.slice(prefix.length).split('/')[1]!;
    const row = deps.kv.get<PoolRow>('dexPools', poolKey(chain, address));
    const pool = row === undefined ? null : await weighPool(deps, chain, reader!, head, token, address, row, block);
    if (pool !== null) weighed.push(pool);
  }
  return weighed.sort((a, b) => (b.liquidity ?? -1) - (a.liquidity ?? -1));
}

/**
 * One pool of `token` at `block` (at most the head): the token's USD price through it (its price in the other token
 * times that token's USD price), each side and both in USD; null for a pool of no registry factory or without a state then.
 */
export async function weighPool(
  deps: DataDeps,
  chain: string,
  reader: PriceReader,
  head: number,
  token: string,
  address: string,
  row: PoolRow,
  block = head,
) {
  const factory = factoryOf(deps.pricing?.(chain), row[3]);
  if (factory === undefined) return null;
  const isToken0 = row[1] === token;
  const other = isToken0 ? row[2] : row[1];
  const [d0, d1] = await Promise.all([reader.tokenDecimals(row[1]), reader.tokenDecimals(row[2])]);
  const now = poolAt(deps.kv, chain, address, row, block, head, d0, d1);
  if (now === null) return null;
  const otherUsd = await reader.usd(other, block);
  const usd = otherUsd === null ? null : mul(sidePrice(now.price0, isToken0), otherUsd);
  const [mine, theirs] = isToken0 ? now.reserves : [now.reserves[1], now.reserves[0]];
  const [dMine, dTheirs] = isToken0 ? [d0, d1] : [d1, d0];
  const mineUsd = usd === null ? null : mul({ num: mine, den: 10n ** BigInt(dMine) }, usd);
  const theirsUsd = otherUsd === null ? null : mul({ num: theirs, den: 10n ** BigInt(dTheirs) }, otherUsd);
  const liquidity = mineUsd === null || theirsUsd === null ? null : add(mineUsd, theirsUsd);
  return {
    other,
    address,
    row,
    factory,
    isToken0,
    d0,
    d1,
    dMine,
    dTheirs,
    /** The token's price in the other token through the pool. */
    inOther: sidePrice(now.price0, isToken0),
    usd,
    mineUsd,
    theirsUsd,
    liquidityUsd: liquidity,
    liquidity: liquidity === null ? null : cents(liquidity),
  };
}

/** The pools' sides in USD, summed (each pool to the cent; one without a price counts 0). */
export const totalLiquidity = (pools: ReadonlyArray<{ liquidity: number | null }>): number =>
  pools.reduce((sum, p) => sum + (p.liquidity ?? 0), 0);
