import { NATIVE, dec } from '../common/values.js';
import { unixIso as iso } from '../../datetime.js';
import { metadata } from '../common/node-reads.js';
import { formatUnits } from 'viem/utils';
import { z } from 'zod';
import type { ChainState } from '../../evm/follower.js';
import type { FollowerStatus } from '../../ingest/follow.js';
import type { Sale } from '../../evm/sales.js';
import { nftKeyPosition, nftTokenPrefix, type StoredTransfer } from '../../evm/store.js';
import type { TokenMetadata } from '../../evm/token-metadata.js';
import { MAX_LIMIT, rangePage } from '../../page.js';
import type { Kv } from '../../ports.js';
import type { DataDeps } from '../common/deps.js';
import { offChain, pageAnswer, partiesAnswer } from '../common/answer-parts.js';
import { priceReader, type PriceReader } from '../dex/index/prices.js';
import { centsOf } from '../dex/index/usd.js';

/**
 * GET /nft/:address/:token_id/transfers: one NFT's transfers, newest first
 * unless asked, from the `transfers` index written at ingest (a page reads
 * O(page) entries, however long the token's history), with its last sale from
 * the `sales` index (one entry).
 */

const UINT256_MAX = 2n ** 256n - 1n;

/** The token id of the path, written as `format` says; undefined when it is not. */
export function tokenIdOf(raw: string, format: 'decimal' | 'hex'): bigint | undefined {
  const ok = format === 'decimal' ? /^\d{1,78}$/.test(raw) : /^(0x)?[0-9a-fA-F]{1,64}$/.test(raw);
  if (!ok) return undefined;
  const id = BigInt(format === 'hex' && !raw.startsWith('0x') ? `0x${raw}` : raw);
  return id <= UINT256_MAX ? id : undefined;
}

/** The endpoint's path and query (chain aside: dataChain reads it), checked at the edge. */
export const nftTransfersQuery = z
  .object({
    address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'not a contract address (0x and 40 hex digits)'),
    token_id: z.string(),
    format: z.enum(['decimal', 'hex'], 'decimal or hex').default('decimal'),
    include_prices: z.enum(['true', 'false'], 'true or false').default('false'),
    // 0 is allowed by the interface (minimum 0) and means the default.
    limit: z
      .string()
      .regex(/^\d+$/, `a whole number from 0 to ${MAX_LIMIT}`)
      .transform(Number)
      .refine((n) => n <= MAX_LIMIT, `at most ${MAX_LIMIT}`)
      .optional(),
    order: z.enum(['ASC', 'DESC'], 'ASC or DESC').default('DESC'),
    cursor: z.string().optional(),
  })
  .transform((q, ctx) => {
    const tokenId = tokenIdOf(q.token_id, q.format);
    if (tokenId === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['token_id'],
        message: `not a token id written in ${q.format} (format=${q.format}), up to 2^256 − 1`,
      });
      return z.NEVER;
    }
    return {
      contract: q.address.toLowerCase(),
      tokenId,
      includePrices: q.include_prices === 'true',
      limit: q.limit === undefined || q.limit === 0 ? MAX_LIMIT : q.limit,
      order: q.order,
      cursor: q.cursor ?? null,
    };
  });

export type NftTransfersQuery = z.output<typeof nftTransfersQuery>;

/** The token a sale was paid in. */
const paymentTokenAnswer = z.object({
  token_name: z.string(),
  token_symbol: z.string(),
  token_logo: offChain,
  token_decimals: z.string(),
  token_address: z.string().meta({ description: '0xeeee…eeee for the native currency' }),
});

/** A sale: the hosted service's `last_sale` record (also each sale of the sale-price answers). */
export const saleAnswer = z.object({
  transaction_hash: z.string(),
  block_timestamp: z.string(),
  buyer_address: z.string(),
  seller_address: z.string(),
  price: z.string(),
  price_formatted: z.string(),
  usd_price_at_sale: z.string().nullable().meta({ description: "In USD at the sale's block, to the cent; null without a price" }),
  current_usd_value: z.string().nullable().meta({ description: 'In USD at the indexed head, to the cent; null without a price' }),
  token_address: z.string(),
  token_id: z.string(),
  payment_token: paymentTokenAnswer,
});
export type SaleAnswer = z.infer<typeof saleAnswer>;

/** A flag as the interface carries it on NFT transfers: a string. */
const flag = z.enum(['true', 'false']);

/** An NFT transfer: the hosted service's `nftTransfer` record, as every NFT transfer list answers it. */
const nftTransferAnswer = z.object({
  token_address: z.string(),
  token_id: z.string(),
  ...partiesAnswer,
  value: z.string().meta({ description: "The transaction's native value (wei)" }),
  amount: z.string(),
  contract_type: z.enum(['ERC721', 'ERC1155']),
  block_number: z.string(),
  block_timestamp: z.string(),
  block_hash: z.string(),
  transaction_hash: z.string(),
  transaction_type: z.enum(['Single', 'Batch']).meta({ description: 'Batch for an id of a TransferBatch' }),
  transaction_index: z.string(),
  log_index: z.string(),
  operator: z.string().nullable().meta({ description: "An ERC-1155 transfer's operator" }),
  possible_spam: flag,
  verified_collection: flag,
  last_sale: saleAnswer.nullable().optional().meta({ description: "The token's last sale (include_prices=true)" }),
});
type NftTransferAnswer = z.infer<typeof nftTransferAnswer>;

/** A page of NFT transfers; block_exists: whether the block asked for is stored (the block's list), index_complete: whether the indexes reached the node's head. */
export const nftTransfersAnswer = pageAnswer(nftTransferAnswer).extend({ block_exists: z.boolean(), index_complete: z.boolean() });
export type NftTransfersAnswer = z.infer<typeof nftTransfersAnswer>;

export interface NftTransfersDeps extends Partial<Pick<DataDeps, 'indexer' | 'pricing'>> {
  kv: Kv;
  tokens: TokenMetadata;
  /** The chain's follower in this server, if it follows the chain. */
  follower(chain: string): FollowerStatus | undefined;
}

/** How one request prices sales in USD: one reader (it memoizes), the block "current" is (the indexed head), and what the native coin is priced as. */
export interface SalePrices {
  reader: PriceReader;
  head: number;
  wrappedNative: string;
}

/** A request's sale prices; none when the chain has no pricing entry (or the deps no indexes), and then the USD fields are null. */
export function salePrices(deps: NftTransfersDeps, chain: string): SalePrices | undefined {
  const { indexer } = deps;
  if (indexer === undefined) return undefined;
  const head = indexer.position(chain) ?? -1;
  const reader = priceReader(deps, chain, head);
  return reader === undefined ? undefined : { reader, head, wrappedNative: deps.pricing!(chain)!.wrappedNative };
}

/** The chain's native currency as a payment token (the registry names none, so Ether's). */
export const NATIVE_PAYMENT = {
  token_name: NATIVE.name,
  token_symbol: NATIVE.symbol,
  token_logo: null,
  token_decimals: String(NATIVE.decimals),
  token_address: NATIVE.address,
} as const;

/**
 * Whether the answer is complete: this server follows the chain, its node
 * answers, and the stored head (chainState) has reached the node's head as the
 * follower last saw it. A chain not followed here is never complete.
 */
export function indexComplete(kv: Kv, chain: string, follower: FollowerStatus | undefined): boolean {
  if (follower === undefined || follower.upstream !== 'ok' || follower.nodeHead < 0) return false;
  return (kv.get<ChainState>('chainState', chain)?.head ?? -1) >= follower.nodeHead;
}

export async function nftTransfers(deps: NftTransfersDeps, chain: string, q: NftTransfersQuery): Promise<NftTransfersAnswer> {
  const prefix = `nft/${nftTokenPrefix(chain, q.contract, q.tokenId)}`;
  const page = rangePage<StoredTransfer>(deps.kv, 'transfers', prefix, {
    list: `nft-transfers ${q.order}`,
    limit: q.limit,
    reverse: q.order === 'DESC',
    cursor: q.cursor,
  });
  const result = await transferItems(deps, chain, page.rows, q.includePrices);
  return {
    page: page.page,
    page_size: q.limit,
    cursor: page.cursor,
    result,
    block_exists: true,
    index_complete: indexComplete(deps.kv, chain, deps.follower(chain)),
  };
}

/**
 * NFT transfer records, as every NFT transfer list answers them, from `transfers` entries (`nft/…` keys);
 * `includePrices` adds each token's last sale.
 */
export async function transferItems(
  deps: NftTransfersDeps,
  chain: string,
  rows: ReadonlyArray<{ key: string; value: StoredTransfer }>,
  includePrices: boolean,
): Promise<NftTransferAnswer[]> {
  const spam = new Map<string, boolean>();
  const sales = new Map<string, Awaited<ReturnType<typeof lastSale>>>();
  const prices = includePrices ? salePrices(deps, chain) : undefined;
  for (const { value: t } of rows) {
    const contract = t.contract.toLowerCase();
    if (!spam.has(contract)) spam.set(contract, (await metadata(deps, chain, contract)).possibleSpam);
    const id = BigInt(t.tokenId!);
    const token = `${contract}/${id}`;
    if (includePrices && !sales.has(token)) sales.set(token, await lastSale(deps, chain, contract, id, prices));
  }
  return rows.map(({ key, value: t }) => {
    const { blockNumber, logIndex } = nftKeyPosition(key);
    const contract = t.contract.toLowerCase();
    const tokenId = BigInt(t.tokenId!);
    return {
      token_address: contract,
      token_id: tokenId.toString(),
      from_address_entity: null,
      from_address_entity_logo: null,
      from_address: t.from.toLowerCase(),
      from_address_label: null,
      to_address_entity: null,
      to_address_entity_logo: null,
      to_address: t.to.toLowerCase(),
      to_address_label: null,
      value: dec(t.txValue),
      amount: dec(t.value),
      contract_type: t.kind === 'erc721' ? 'ERC721' : 'ERC1155',
      block_number: String(blockNumber),
      block_timestamp: iso(t.timestamp),
      block_hash: t.blockHash,
      transaction_hash: t.transactionHash,
      // As the hosted service: Batch for an id of a TransferBatch, Single for anything else.
      transaction_type: t.batchIndex === undefined ? 'Single' : 'Batch',
      transaction_index: String(t.transactionIndex),
      log_index: String(logIndex),
      operator: t.operator === undefined ? null : t.operator.toLowerCase(),
      // The interface carries these flags as strings.
      possible_spam: spam.get(contract) === true ? 'true' : 'false',
      verified_collection: 'false',
      ...(includePrices ? { last_sale: sales.get(`${contract}/${tokenId}`) ?? null } : {}),
    };
  });
}

/** The token's most recent sale: the last key of its `sales` range (the key gives the sale's block). */
export async function lastSale(
  deps: NftTransfersDeps,
  chain: string,
  contract: string,
  tokenId: bigint,
  prices: SalePrices | undefined,
): Promise<SaleAnswer | null> {
  const prefix = nftTokenPrefix(chain, contract, tokenId);
  const [last] = deps.kv.range<Sale>('sales', { start: `${prefix}\uffff`, end: prefix, reverse: true, limit: 1 });
  return last === undefined
    ? null
    : saleRecord(deps, chain, contract, tokenId.toString(), last.value, nftKeyPosition(last.key).blockNumber, prices);
}

/**
 * A sale at `block` as a `last_sale` record, its payment token named; its price in USD at the sale's block and at
 * the indexed head (a price in the native coin as the wrapped native token's), to the cent; null where no pool prices it.
 */
export async function saleRecord(
  deps: NftTransfersDeps,
  chain: string,
  contract: string,
  tokenId: string,
  s: Sale,
  block: number,
  prices: SalePrices | undefined,
): Promise<SaleAnswer> {
  const payment = s.paymentToken === null ? NATIVE_PAYMENT : await erc20(deps, chain, s.paymentToken);
  const paidIn = s.paymentToken ?? prices?.wrappedNative;
  const [atSale, now] = [usdAt(prices, paidIn, block), usdAt(prices, paidIn, Infinity)];
  const [raw, decimals] = [BigInt(s.price), Number(payment.token_decimals)];
  return {
    transaction_hash: s.transactionHash,
    block_timestamp: iso(s.timestamp),
    buyer_address: s.buyer,
    seller_address: s.seller,
    price: dec(s.price),
    price_formatted: formatUnits(raw, decimals),
    usd_price_at_sale: centsOf(raw, decimals, atSale),
    current_usd_value: centsOf(raw, decimals, now),
    token_address: contract,
    token_id: tokenId,
    payment_token: payment,
  };
}

/** One whole unit of `token` in USD at `block` (at most the indexed head); null without a price. */
export function usdAt(prices: SalePrices | undefined, token: string | undefined, block: number) {
  return prices === undefined || token === undefined ? null : prices.reader.valueUsd(token, Math.min(block, prices.head));
}

export async function erc20(deps: NftTransfersDeps, chain: string, token: string) {
  const info = await metadata(deps, chain, token);
  // decimals() is optional in ERC-20: a token without it counts in whole units.
  return {
    token_name: info.name,
    token_symbol: info.symbol,
    token_logo: null,
    token_decimals: String(info.decimals ?? 0),
    token_address: token,
  };
}
