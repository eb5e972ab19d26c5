import { z } from 'zod';
import { ApiError } from '../errors.js';
import { nftTokenPrefix } from '../evm/store.js';
import { rangePage } from '../page.js';
import { format, indexedUpTo, withTokenId, type NftDeps } from './nft-common.js';
import { statsKey, tokenKey, type ContractStats, type NftToken, type Trade } from './nft-index.js';
import { rangeOf } from './nft-lists.js';
import { dec } from './values.js';
import { unixIso as iso } from '../datetime.js';
import { blockRange, bool, cursor, evmAddress, limit } from './params.js';

/**
 * NFT trades and statistics: trades are the sales decided at ingest
 * (engine/evm/sales.ts), one per (transaction, buyer, contract), indexed in
 * `nftTrades` by contract and by token, newest first; statistics come from the
 * ownership counters (engine/data-api/nft-index.ts).
 */

/** The hosted service filters by marketplace; sales here are read from payments, whatever the marketplace, so the value is checked and not applied. */
const marketplace = z.enum(['opensea', 'blur', 'looksrare', 'x2y2', '0xprotocol'], 'opensea, blur, looksrare, x2y2 or 0xprotocol').default('opensea');
const common = { ...blockRange, cursor, limit: limit(), nft_metadata: bool(true) };

export const contractTradesQuery = z.object({ address: evmAddress, marketplace, ...common });
export const tokenTradesQuery = z.object({ address: evmAddress, token_id: z.string(), format, ...common }).transform(withTokenId);
export const lowestPriceQuery = z.object({
  address: evmAddress,
  days: z.string().regex(/^\d{1,5}$/, 'a whole number of days').transform(Number).refine((d) => d >= 1, 'at least 1').default(7),
  marketplace,
});
export const contractStatsQuery = z.object({ address: evmAddress });
export const tokenStatsQuery = z.object({ address: evmAddress, token_id: z.string(), format }).transform(withTokenId);

/** A trade as the hosted service's `trade` record. */
function tradeItem(contract: string, t: Trade) {
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

async function tradesPage(deps: NftDeps, chain: string, prefix: string, list: string, contract: string, q: z.output<typeof contractTradesQuery> | z.output<typeof tokenTradesQuery>) {
  await indexedUpTo(deps, chain);
  const bounds = rangeOf(deps.kv, chain, q);
  // The query names the list (not the blocks its dates come to: a date past the head moves with each block).
  const named = `${list} ${[q.from_block, q.to_block, q.from_date, q.to_date].join(',')}`;
  const page = bounds === null ? { rows: [], page: 0, cursor: null } : rangePage<Trade>(deps.kv, 'nftTrades', prefix, { list: named, limit: q.limit, reverse: true, cursor: q.cursor, ...bounds });
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result: page.rows.map(({ value }) => tradeItem(contract, value)) };
}

export function contractTrades(deps: NftDeps, chain: string, q: z.output<typeof contractTradesQuery>) {
  return tradesPage(deps, chain, `contract/${chain}/${q.address}/`, 'nft-trades', q.address, q);
}

export function tokenTrades(deps: NftDeps, chain: string, q: z.output<typeof tokenTradesQuery>) {
  return tradesPage(deps, chain, `token/${nftTokenPrefix(chain, q.address, q.tokenId)}`, 'nft-token-trades', q.address, q);
}

/** The lowest price paid in the native currency for the contract's NFTs over the last `days` days; 404 when none. */
export async function lowestPrice(deps: NftDeps, chain: string, q: z.output<typeof lowestPriceQuery>, nowMs: number) {
  await indexedUpTo(deps, chain);
  const since = Math.floor(nowMs / 1000) - q.days * 86_400;
  const prefix = `contract/${chain}/${q.address}/`;
  let best: Trade | undefined;
  // Newest first, stopping at the first trade older than the window: the read is the window's trades.
  let start = `${prefix}\uffff`;
  for (;;) {
    // The range includes its start: the last key of the previous batch is read again and skipped.
    const batch = deps.kv.range<Trade>('nftTrades', { start, end: prefix, reverse: true, limit: 256 }).filter((e) => e.key !== start);
    for (const { value: t } of batch) {
      if (t.timestamp < since) return found(best, q);
      if (t.paymentToken === null && (best === undefined || BigInt(t.price) < BigInt(best.price))) best = t;
    }
    if (batch.length < 255) return found(best, q);
    start = batch.at(-1)!.key;
  }
}

function found(best: Trade | undefined, q: z.output<typeof lowestPriceQuery>) {
  if (best === undefined) throw new ApiError(404, `no trade of ${q.address} paid in the native currency in the last ${q.days} days`);
  return tradeItem(q.address, best);
}

export async function contractStats(deps: NftDeps, chain: string, q: z.output<typeof contractStatsQuery>) {
  await indexedUpTo(deps, chain);
  const s = deps.kv.get<ContractStats>('nftStats', statsKey(chain, q.address));
  return { total_tokens: String(s?.tokens ?? 0), owners: { current: String(s?.owners ?? 0) }, transfers: { total: String(s?.transfers ?? 0) } };
}

export async function tokenStats(deps: NftDeps, chain: string, q: z.output<typeof tokenStatsQuery>) {
  await indexedUpTo(deps, chain);
  const token = deps.kv.get<NftToken>('nftTokens', tokenKey(chain, q.address, q.tokenId));
  const prefix = `nft/${nftTokenPrefix(chain, q.address, q.tokenId)}`;
  const transfers = deps.kv.count('transfers', { start: prefix, end: `${prefix}\uffff` });
  return { owners: { current: String(token?.holders ?? 0) }, transfers: { total: String(transfers) } };
}
