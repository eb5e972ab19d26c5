import { z } from 'zod';
import { factoryOf } from '../chains/pricing.js';
import { ApiError } from '../errors.js';
import { blockAtOrBefore } from './block-times.js';
import type { DataDeps } from './deps.js';
import { poolKey, tokenPoolsPrefix, type PoolRow } from './dex-index.js';
import { indexedHead } from './erc20-common.js';
import { tokenMetadata } from './erc20-tokens.js';
import { blockNumber, date, evmAddress } from './params.js';
import { decimal, isExchange, mul, poolAt, priceReader } from './prices.js';

/**
 * The official SDK's pair calls, from the DEX index: GET /:pair_address/reserves, GET /:token0_address/:token1_address/
 * pairAddress and GET /:token0_address/:token1_address/price. A pair is a pool of a registry factory (V2 or V3);
 * `to_block` or `to_date` (the last indexed block at or before it) set the block, by default the indexed head.
 */

const at = { to_block: blockNumber.optional(), to_date: date.optional() };
export const reservesQuery = z.object({ pair_address: evmAddress, ...at });
export const pairAddressQuery = z.object({ token0_address: evmAddress, token1_address: evmAddress, exchange: z.string().min(1).max(100), ...at });
export const pairPriceQuery = z.object({ token0_address: evmAddress, token1_address: evmAddress, exchange: z.string().min(1).max(100).optional(), ...at });

/** The block a query asks about: to_block, else the last indexed block at or before to_date, else the head; never past the head. */
async function blockOf(deps: DataDeps, chain: string, q: { to_block?: number | undefined; to_date?: number | undefined }): Promise<{ head: number; block: number }> {
  const head = await indexedHead(deps, chain);
  const asked = q.to_block ?? (q.to_date === undefined ? head : blockAtOrBefore(deps.kv, chain, q.to_date));
  if (asked === undefined) throw new ApiError(404, `chain ${chain} has no indexed block at or before ${q.to_date} (to_date)`);
  return { head, block: Math.min(asked, head) };
}

function pool(deps: DataDeps, chain: string, address: string): PoolRow {
  const row = deps.kv.get<PoolRow>('dexPools', poolKey(chain, address));
  if (row === undefined) throw new ApiError(404, `${address} is no DEX pool this server indexes on chain ${chain} (a pool of a factory in CHAINPOST_PRICING)`);
  return row;
}

async function reservesAt(deps: DataDeps, chain: string, address: string, row: PoolRow, block: number, head: number) {
  const reader = priceReader(deps, chain, head);
  const [d0, d1] = reader === undefined ? [0, 0] : await Promise.all([reader.tokenDecimals(row[1]), reader.tokenDecimals(row[2])]);
  return poolAt(deps.kv, chain, address, row, block, head, d0, d1);
}

export async function pairReserves(deps: DataDeps, chain: string, q: z.output<typeof reservesQuery>) {
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

export async function pairAddress(deps: DataDeps, chain: string, q: z.output<typeof pairAddressQuery>) {
  const { head, block } = await blockOf(deps, chain, q);
  const found = await deepest(deps, chain, poolsOf(deps, chain, q.token0_address, q.token1_address, q.exchange), block, head);
  if (found === null) throw new ApiError(404, `no ${q.exchange} pair of ${q.token0_address} and ${q.token1_address} on chain ${chain} at block ${block}`);
  const [token0, token1] = await tokenMetadata(deps, chain, [found.row[1], found.row[2]]);
  return { token0, token1, pairAddress: found.address };
}

export async function pairPrice(deps: DataDeps, chain: string, q: z.output<typeof pairPriceQuery>) {
  const { head, block } = await blockOf(deps, chain, q);
  const found = await deepest(deps, chain, poolsOf(deps, chain, q.token0_address, q.token1_address, q.exchange), block, head);
  if (found === null) throw new ApiError(404, `no pair of ${q.token0_address} and ${q.token1_address} on chain ${chain} at block ${block}${q.exchange === undefined ? '' : ` (${q.exchange})`}`);
  // The base token is the first address asked, the quote token the second: quote_price is the base's price in the quote.
  const baseIs0 = found.row[1] === q.token0_address;
  const p0 = found.state.price0;
  const quote = baseIs0 ? p0 : { num: p0.den, den: p0.num };
  const [base, quoteToken] = await tokenMetadata(deps, chain, [q.token0_address, q.token1_address]);
  // In USD through this pair: its price in the quote token times the quote token's USD price.
  const quoteUsd = (await priceReader(deps, chain, head)?.usd(q.token1_address, block)) ?? null;
  return {
    pair_address: found.address,
    pair_label: `${base!.symbol ?? base!.address}/${quoteToken!.symbol ?? quoteToken!.address}`,
    exchange: factoryOf(deps.pricing?.(chain), found.row[3])!.name,
    quote_price: decimal(quote, 18),
    price_usd: quoteUsd === null ? null : decimal(mul(quote, quoteUsd), 18),
    base_token: base,
    quote_token: quoteToken,
  };
}
