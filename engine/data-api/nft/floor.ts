import { formatUnits } from 'viem/utils';
import { z } from 'zod';
import { unixIso as iso } from '../../datetime.js';
import { nftTokenPrefix } from '../../evm/store.js';
import { centsOf } from '../dex/index/usd.js';
import { offsetCursor, readOffsetCursor } from '../common/pages.js';
import { cursor, evmAddress } from '../common/params.js';
import { format, indexedUpTo, withTokenId, type NftDeps } from './common.js';
import type { Trade } from './index/writer.js';
import { nativeSales, tradesSince } from './trades.js';
import { NATIVE_PAYMENT, salePrices, usdAt, type SalePrices } from './transfers.js';

/**
 * NFT floor prices from sales (docs/api.md, "NFT floor prices"): listings live off chain (on each marketplace's
 * servers), so this server's floor is the lowest sale paid in the native currency over a window: the last
 * FLOOR_DAYS days for a collection or a token, each UTC day for the historical series. `floor_price_basis` says
 * which window and which sale.
 */

/** The window of GET /nft/:address/floor-price and /nft/:address/:token_id/floor-price. */
const FLOOR_DAYS = 7;
const DAY = 86_400;
const PAGE = 100;

export const floorQuery = z.object({ address: evmAddress });
export const tokenFloorQuery = z.object({ address: evmAddress, token_id: z.string(), format }).transform(withTokenId);
const INTERVAL_DAYS = { '1d': 1, '7d': 7, '30d': 30, '60d': 60, '90d': 90, '1y': 365, all: Infinity } as const;
export const historicalFloorQuery = z.object({
  address: evmAddress,
  interval: z.enum(Object.keys(INTERVAL_DAYS) as Array<keyof typeof INTERVAL_DAYS>, '1d, 7d, 30d, 60d, 90d, 1y or all').default('1d'),
  cursor,
});

const basisAnswer = z
  .object({
    rule: z
      .literal('lowest_sale')
      .meta({ description: 'The lowest sale paid in the native currency over the window (listings are off chain)' }),
    window_start: z.string(),
    window_end: z.string(),
    transaction_hash: z.string().nullable().meta({ description: 'The sale that sets the floor; null when the window has none' }),
    token_id: z.string().nullable(),
    marketplace_address: z.string().nullable().meta({ description: "The sale transaction's receiver (the marketplace contract)" }),
  })
  .meta({ description: "chainpost's own: how the floor was found (docs/api.md, NFT floor prices)" });

const price = {
  floor_price: z.string().nullable().meta({ description: 'In the native currency (ether, not wei); null without a sale in the window' }),
  floor_price_usd: z
    .string()
    .nullable()
    .meta({ description: 'In USD to the cent; null without a sale or a pool pricing the native currency' }),
  currency: z.string().nullable().meta({ description: "The native currency's symbol, lower case; null without a sale" }),
};
const marketplace = z
  .null()
  .meta({ description: "Marketplace names and logos are off chain: null (the sale's contract is in floor_price_basis)" });

export const contractFloorAnswer = z.object({
  address: z.string(),
  ...price,
  marketplace,
  last_updated: z.string().meta({ description: 'When the floor sale was made; the window end when there is none' }),
  floor_price_basis: basisAnswer,
});
export const tokenFloorAnswer = contractFloorAnswer.extend({ token_id: z.string() });
export const historicalFloorAnswer = z.object({
  page: z.int(),
  page_size: z.int(),
  cursor: z.string().nullable(),
  result: z.array(
    z.object({
      ...price,
      marketplace,
      timestamp: z.string().meta({ description: "The UTC day's start" }),
      floor_price_basis: basisAnswer,
    }),
  ),
});

/** The floor fields of the lowest of `sales` (none: nulls); USD at `usdBlock` (the sale's block when undefined). */
function floorOf(sales: readonly Trade[], from: number, to: number, prices: SalePrices | undefined, usdBlock?: number) {
  const low = lowest(sales);
  const decimals = Number(NATIVE_PAYMENT.token_decimals);
  const basis = {
    rule: 'lowest_sale' as const,
    window_start: iso(from),
    window_end: iso(to),
    transaction_hash: low?.transactionHash ?? null,
    token_id: low?.tokenIds[0] ?? null,
    marketplace_address: low?.marketplace ?? null,
  };
  if (low === undefined) return { floor_price: null, floor_price_usd: null, currency: null, marketplace: null, floor_price_basis: basis };
  const wei = BigInt(low.price);
  return {
    floor_price: formatUnits(wei, decimals),
    floor_price_usd: centsOf(wei, decimals, usdAt(prices, prices?.wrappedNative, usdBlock ?? low.blockNumber)),
    currency: NATIVE_PAYMENT.token_symbol.toLowerCase(),
    marketplace: null,
    floor_price_basis: basis,
  };
}

/** The lowest-priced sale (the newest of equal ones: `sales` come newest first). */
function lowest(sales: readonly Trade[]): Trade | undefined {
  let low: Trade | undefined;
  for (const t of sales) if (low === undefined || BigInt(t.price) < BigInt(low.price)) low = t;
  return low;
}

async function currentFloor(deps: NftDeps, chain: string, prefix: string, nowMs: number) {
  await indexedUpTo(deps, chain);
  const to = Math.floor(nowMs / 1000);
  const sales = nativeSales(deps, prefix, FLOOR_DAYS, nowMs);
  const floor = floorOf(sales, to - FLOOR_DAYS * DAY, to, salePrices(deps, chain), Infinity);
  const sale = sales.find((t) => t.transactionHash === floor.floor_price_basis.transaction_hash);
  return { ...floor, last_updated: iso(sale?.timestamp ?? to) };
}

/** GET /nft/:address/floor-price: the lowest sale of the collection over the last FLOOR_DAYS days. */
export async function contractFloor(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof floorQuery>,
  nowMs: number,
): Promise<z.infer<typeof contractFloorAnswer>> {
  return { address: q.address, ...(await currentFloor(deps, chain, `contract/${chain}/${q.address}/`, nowMs)) };
}

/** GET /nft/:address/:token_id/floor-price: the lowest sale of the token over the last FLOOR_DAYS days. */
export async function tokenFloor(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof tokenFloorQuery>,
  nowMs: number,
): Promise<z.infer<typeof tokenFloorAnswer>> {
  const prefix = `token/${nftTokenPrefix(chain, q.address, q.tokenId)}`;
  const id = q.format === 'hex' ? `0x${q.tokenId.toString(16)}` : q.tokenId.toString();
  return { address: q.address, token_id: id, ...(await currentFloor(deps, chain, prefix, nowMs)) };
}

/**
 * GET /nft/:address/floor-price/historical: the collection's lowest sale of each UTC day with a sale over the
 * interval, oldest first, a page of PAGE days at a time.
 */
export async function historicalFloor(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof historicalFloorQuery>,
  nowMs: number,
): Promise<z.infer<typeof historicalFloorAnswer>> {
  await indexedUpTo(deps, chain);
  const skip = q.cursor === null ? 0 : readOffsetCursor(q.cursor);
  const to = Math.floor(nowMs / 1000);
  const days = INTERVAL_DAYS[q.interval];
  const since = days === Infinity ? 0 : to - days * DAY;
  const byDay = new Map<number, Trade[]>();
  for (const t of tradesSince(deps.kv, `contract/${chain}/${q.address}/`, since)) {
    if (t.paymentToken !== null) continue;
    const day = Math.floor(t.timestamp / DAY) * DAY;
    const list = byDay.get(day);
    if (list === undefined) byDay.set(day, [t]);
    else list.push(t);
  }
  const prices = salePrices(deps, chain);
  const all = [...byDay.keys()].sort((a, b) => a - b);
  const result = all.slice(skip, skip + PAGE).map((day) => ({
    ...floorOf(byDay.get(day)!, Math.max(day, since), Math.min(day + DAY, to), prices),
    timestamp: iso(day),
  }));
  return {
    page: Math.floor(skip / PAGE),
    page_size: PAGE,
    cursor: skip + PAGE < all.length ? offsetCursor(skip + PAGE) : null,
    result,
  };
}
