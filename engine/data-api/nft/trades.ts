import { newestFirst } from '../common/newest-first.js';
import { z } from 'zod';
import { ApiError } from '../../errors.js';
import { nftTokenPrefix } from '../../evm/store.js';
import { rangePage } from '../../page.js';
import { format, indexedUpTo, withTokenId, type NftDeps } from './common.js';
import { statsKey, tokenKey, type ContractStats, type NftToken, type Trade, type WalletTrade } from './index/writer.js';
import { rangeOf } from './lists.js';
import { NATIVE_PAYMENT, saleAnswer, salePrices, saleRecord, usdAt } from './transfers.js';
import { centsOf } from '../dex/index/usd.js';
import { formatUnits } from 'viem/utils';
import { ZERO_ADDRESS, dec } from '../common/values.js';
import { unixIso as iso } from '../../datetime.js';
import { blockRange, bool, cursor, evmAddress, limit } from '../common/params.js';
import { pageAnswer } from '../common/answer-parts.js';

/**
 * NFT trades and statistics: trades are the sales decided at ingest
 * (engine/evm/sales.ts), one per (transaction, buyer, contract), indexed in
 * `nftTrades` by contract and by token, newest first; statistics come from the
 * ownership counters (engine/data-api/nft/index/writer.ts).
 */

/** The hosted service filters by marketplace; sales here are read from payments, whatever the marketplace, so the value is checked and not applied. */
const marketplace = z
  .enum(['opensea', 'blur', 'looksrare', 'x2y2', '0xprotocol'], 'opensea, blur, looksrare, x2y2 or 0xprotocol')
  .default('opensea');
const common = { ...blockRange, cursor, limit: limit(), nft_metadata: bool(true) };

export const contractTradesQuery = z.object({ address: evmAddress, marketplace, ...common });
export const tokenTradesQuery = z.object({ address: evmAddress, token_id: z.string(), format, ...common }).transform(withTokenId);
export const walletTradesQuery = z.object({ address: evmAddress, ...common });
export const lowestPriceQuery = z.object({
  address: evmAddress,
  days: z
    .string()
    .regex(/^\d{1,5}$/, 'a whole number of days')
    .transform(Number)
    .refine((d) => d >= 1, 'at least 1')
    .default(7),
  marketplace,
});
export const contractStatsQuery = z.object({ address: evmAddress });
export const tokenStatsQuery = z.object({ address: evmAddress, token_id: z.string(), format }).transform(withTokenId);

/** A trade: the hosted service's `trade` record (GET /nft/:address/lowestprice answers one). */
export const tradeAnswer = z.object({
  transaction_hash: z.string(),
  transaction_index: z.string(),
  token_ids: z.array(z.string()),
  seller_address: z.string(),
  buyer_address: z.string(),
  token_address: z.string(),
  marketplace_address: z.string().meta({ description: "The transaction's receiver: the marketplace (or the buyer's own contract)" }),
  price_token_address: z.string().nullable().meta({ description: 'The ERC-20 token paid in; null for the native currency' }),
  price: z.string(),
  block_timestamp: z.string(),
  block_number: z.string(),
  block_hash: z.string(),
});
export const tradesAnswer = pageAnswer(tradeAnswer);

/** The sale-price answers: the last, lowest and highest sale paid in the native currency over the days asked, their average and count. */
export const soldPriceAnswer = z.object({
  last_sale: saleAnswer,
  lowest_sale: saleAnswer,
  highest_sale: saleAnswer,
  average_sale: z.object({ price: z.string(), price_formatted: z.string(), current_usd_value: z.string().nullable() }),
  total_trades: z.number().int(),
  message: z
    .string()
    .optional()
    .meta({ description: "Why the figures are empty: no such sale (then each sale's strings are '', its addresses the zero address)" }),
});

export const contractStatsAnswer = z.object({
  total_tokens: z.string(),
  owners: z.object({ current: z.string() }),
  transfers: z.object({ total: z.string() }),
});
/** GET /nft/:address/:token_id/stats (chainpost's own: the collection's figures of one token). */
export const tokenStatsAnswer = contractStatsAnswer.omit({ total_tokens: true });

/** A trade as the hosted service's `trade` record. */
function tradeItem(contract: string, t: Trade): z.infer<typeof tradeAnswer> {
  return {
    transaction_hash: t.transactionHash,
    transaction_index: String(t.transactionIndex),
    token_ids: t.tokenIds,
    seller_address: t.seller,
    buyer_address: t.buyer,
    token_address: contract,
    marketplace_address: t.marketplace,
    price_token_address: t.paymentToken,
    price: dec(t.price),
    block_timestamp: iso(t.timestamp),
    block_number: String(t.blockNumber),
    block_hash: t.blockHash,
  };
}

/** A page of one `nftTrades` list, newest first; `contract` names each row's contract (a wallet's rows carry theirs). */
async function tradesPage<T extends Trade>(
  deps: NftDeps,
  chain: string,
  prefix: string,
  list: string,
  contract: (t: T) => string,
  q: z.output<typeof contractTradesQuery> | z.output<typeof tokenTradesQuery> | z.output<typeof walletTradesQuery>,
): Promise<z.infer<typeof tradesAnswer>> {
  await indexedUpTo(deps, chain);
  const bounds = rangeOf(deps.kv, chain, q);
  // The query names the list (not the blocks its dates come to: a date past the head moves with each block).
  const named = `${list} ${[q.from_block, q.to_block, q.from_date, q.to_date].join(',')}`;
  const page =
    bounds === null
      ? { rows: [], page: 0, cursor: null }
      : rangePage<T>(deps.kv, 'nftTrades', prefix, { list: named, limit: q.limit, reverse: true, cursor: q.cursor, ...bounds });
  return {
    page: page.page,
    page_size: q.limit,
    cursor: page.cursor,
    result: page.rows.map(({ value }) => tradeItem(contract(value), value)),
  };
}

export function contractTrades(deps: NftDeps, chain: string, q: z.output<typeof contractTradesQuery>) {
  return tradesPage(deps, chain, `contract/${chain}/${q.address}/`, 'nft-trades', () => q.address, q);
}

export function tokenTrades(deps: NftDeps, chain: string, q: z.output<typeof tokenTradesQuery>) {
  return tradesPage(deps, chain, `token/${nftTokenPrefix(chain, q.address, q.tokenId)}`, 'nft-token-trades', () => q.address, q);
}

/** GET /wallets/:address/nfts/trades: the wallet's trades as buyer or seller, of every contract, newest first. */
export function walletTrades(deps: NftDeps, chain: string, q: z.output<typeof walletTradesQuery>) {
  return tradesPage<WalletTrade>(deps, chain, `wallet/${chain}/${q.address}/`, 'nft-wallet-trades', (t) => t.contract, q);
}

/** The contract's trades (`contract/…`) or one token's (`token/…`) from `since` (Unix seconds) on, newest first: the window's trades only. */
export function* tradesSince(kv: NftDeps['kv'], prefix: string, since: number): Generator<Trade> {
  for (const { value: t } of newestFirst<Trade>(kv, 'nftTrades', `${prefix}\uffff`, prefix)) {
    if (t.timestamp < since) return;
    yield t;
  }
}

/** The window's trades paid in the native currency (the hosted service's sale prices count only those), newest first. */
export function nativeSales(deps: NftDeps, prefix: string, days: number, nowMs: number): Trade[] {
  const since = Math.floor(nowMs / 1000) - days * 86_400;
  return [...tradesSince(deps.kv, prefix, since)].filter((t) => t.paymentToken === null);
}

const byPrice = (a: Trade, b: Trade): number => (BigInt(a.price) < BigInt(b.price) ? -1 : BigInt(a.price) > BigInt(b.price) ? 1 : 0);

/** The lowest price paid in the native currency for the contract's NFTs over the last `days` days; 404 when none. */
export async function lowestPrice(deps: NftDeps, chain: string, q: z.output<typeof lowestPriceQuery>, nowMs: number) {
  await indexedUpTo(deps, chain);
  const [best] = nativeSales(deps, `contract/${chain}/${q.address}/`, q.days, nowMs).sort(byPrice);
  if (best === undefined) throw new ApiError(404, `no trade of ${q.address} paid in the native currency in the last ${q.days} days`);
  return tradeItem(q.address, best);
}

/** `days` of the sale prices: 0 … 365 (the hosted service's bounds); 0 and absent mean its default, 7. */
const saleDays = z
  .string()
  .regex(/^\d{1,3}$/, 'a whole number of days from 0 to 365')
  .transform(Number)
  .refine((d) => d <= 365, 'at most 365')
  .optional()
  .transform((d) => (d === undefined || d === 0 ? 7 : d));

export const contractSoldPriceQuery = z.object({ address: evmAddress, days: saleDays });
export const tokenSoldPriceQuery = z.object({ address: evmAddress, token_id: z.string(), format, days: saleDays }).transform(withTokenId);

export function contractSoldPrice(deps: NftDeps, chain: string, q: z.output<typeof contractSoldPriceQuery>, nowMs: number) {
  return soldPrice(deps, chain, q.address, `contract/${chain}/${q.address}/`, undefined, q.days, nowMs);
}

export function tokenSoldPrice(deps: NftDeps, chain: string, q: z.output<typeof tokenSoldPriceQuery>, nowMs: number) {
  return soldPrice(deps, chain, q.address, `token/${nftTokenPrefix(chain, q.address, q.tokenId)}`, q.tokenId.toString(), q.days, nowMs);
}

/**
 * The hosted service's `soldPrice`: the last, lowest and highest sale paid in the native currency over the last
 * `days` days, their average and count. With no such sale each figure is empty (its strings '', buyer and seller
 * the zero address, the payment token the native currency), not null: the official SDK reads each of the four as
 * an object, and the last sale's buyer and seller as addresses.
 */
async function soldPrice(
  deps: NftDeps,
  chain: string,
  contract: string,
  prefix: string,
  tokenId: string | undefined,
  days: number,
  nowMs: number,
): Promise<z.infer<typeof soldPriceAnswer>> {
  await indexedUpTo(deps, chain);
  const sales = nativeSales(deps, prefix, days, nowMs);
  if (sales.length === 0) {
    const none = {
      transaction_hash: '',
      block_timestamp: '',
      buyer_address: ZERO_ADDRESS,
      seller_address: ZERO_ADDRESS,
      price: '',
      price_formatted: '',
      usd_price_at_sale: null,
      current_usd_value: null,
      token_address: contract,
      token_id: tokenId ?? '',
      payment_token: NATIVE_PAYMENT,
    };
    const message = `no sale of ${contract}${tokenId === undefined ? '' : ` token ${tokenId}`} paid in the native currency in the last ${days} days`;
    return {
      last_sale: none,
      lowest_sale: none,
      highest_sale: none,
      average_sale: { price: '', price_formatted: '', current_usd_value: null },
      total_trades: 0,
      message,
    };
  }
  const prices = salePrices(deps, chain);
  const record = (t: Trade) => saleRecord(deps, chain, contract, tokenId ?? t.tokenIds[0]!, t, t.blockNumber, prices);
  const ranked = [...sales].sort(byPrice);
  const average = sales.reduce((sum, t) => sum + BigInt(t.price), 0n) / BigInt(sales.length);
  const decimals = Number(NATIVE_PAYMENT.token_decimals);
  return {
    last_sale: await record(sales[0]!),
    lowest_sale: await record(ranked[0]!),
    highest_sale: await record(ranked.at(-1)!),
    average_sale: {
      price: average.toString(),
      price_formatted: formatUnits(average, decimals),
      current_usd_value: centsOf(average, decimals, usdAt(prices, prices?.wrappedNative, Infinity)),
    },
    total_trades: sales.length,
  };
}

export async function contractStats(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof contractStatsQuery>,
): Promise<z.infer<typeof contractStatsAnswer>> {
  await indexedUpTo(deps, chain);
  const s = deps.kv.get<ContractStats>('nftStats', statsKey(chain, q.address));
  return {
    total_tokens: String(s?.tokens ?? 0),
    owners: { current: String(s?.owners ?? 0) },
    transfers: { total: String(s?.transfers ?? 0) },
  };
}

export async function tokenStats(
  deps: NftDeps,
  chain: string,
  q: z.output<typeof tokenStatsQuery>,
): Promise<z.infer<typeof tokenStatsAnswer>> {
  await indexedUpTo(deps, chain);
  const token = deps.kv.get<NftToken>('nftTokens', tokenKey(chain, q.address, q.tokenId));
  const prefix = `nft/${nftTokenPrefix(chain, q.address, q.tokenId)}`;
  const transfers = deps.kv.count('transfers', { start: prefix, end: `${prefix}\uffff` });
  return { owners: { current: String(token?.holders ?? 0) }, transfers: { total: String(transfers) } };
}
