import { z } from 'zod';
import { blockHashKey } from '../../ingest/chain-store.js';
import { nftKeyPosition, transferRefKey, type StoredTransfer, type TransferRef } from '../../evm/store.js';
import type { Kv } from '../../ports.js';
import { rangePage } from '../../page.js';
import { format, indexedUpTo, type NftDeps } from './common.js';
import { blockPart } from './index/writer.js';
import { transferItems, type NftTransfersAnswer } from './transfers.js';
import { blockSpan, spanBounds } from '../common/block-times.js';
import { blockIndexed, storedHead } from '../common/read-at.js';
import { bool, blockNumber, blockRange, cursor, evmAddress, hash32, limit, order } from '../common/params.js';
import { BATCH } from '../../size-limits.js';

/**
 * NFT transfer lists in block order from the `nftRefs` index (each entry names
 * its `transfers` key): a wallet's, a contract's, a block range's, a block's.
 * Every item is the NFT transfer record of engine/data-api/nft/transfers.ts.
 * Block and date ranges bound the key range, so a page still reads at most
 * limit + 2 entries.
 */

const common = { format, limit: limit(), order, cursor, include_prices: bool(false), ...blockRange };

export const walletTransfersQuery = z.object({
  address: evmAddress,
  contract_addresses: z.array(evmAddress).max(BATCH.nftAddresses, `at most ${BATCH.nftAddresses} addresses`).default([]),
  ...common,
});
export const contractTransfersQuery = z.object({ address: evmAddress, ...common });
export const rangeTransfersQuery = z.object(common);
export const blockTransfersQuery = z.object({
  block_number_or_hash: z.union([hash32, blockNumber], 'a block number or a block hash (0x and 64 hex digits)'),
  limit: limit(),
  order,
  cursor,
  include_prices: bool(false),
});

type Range = z.output<typeof rangeTransfersQuery>;

/** The key bounds of a query's block range (blockSpan); null when nothing can match. */
export function rangeOf(
  kv: Kv,
  chain: string,
  q: Pick<Range, 'from_block' | 'to_block' | 'from_date' | 'to_date'>,
): { low?: string; high?: string } | null {
  const span = blockSpan(kv, chain, q);
  return span === null ? null : spanBounds(span);
}

/** An `nftRefs` value: the transfer's reference (its block is the key's), or its `transfers` key itself in rows written before 2026-11-24. */
export type NftRef = TransferRef | string;
export const nftRefTransferKey = (chain: string, refKey: string, ref: NftRef): string =>
  typeof ref === 'string' ? ref : transferRefKey(chain, nftKeyPosition(refKey).blockNumber, ref);

/** A page of refs under `prefixes`, as NFT transfer records, in the list envelope with block_exists and index_complete. */
async function refsPage(
  deps: NftDeps,
  chain: string,
  prefixes: string | string[],
  list: string,
  q: Pick<Range, 'limit' | 'order' | 'cursor' | 'include_prices' | 'from_block' | 'to_block' | 'from_date' | 'to_date'>,
  bounds: { low?: string; high?: string } | null = {},
  blockExists = true,
): Promise<NftTransfersAnswer> {
  const complete = await indexedUpTo(deps, chain);
  // The query names the list (not the blocks its dates come to: a date past the head moves with each block).
  const named = `${list} ${q.order} ${[q.from_block, q.to_block, q.from_date, q.to_date].join(',')}`;
  const page =
    bounds === null
      ? { rows: [], page: 0, cursor: null }
      : rangePage<NftRef>(deps.kv, 'nftRefs', prefixes, {
          list: named,
          limit: q.limit,
          reverse: q.order === 'DESC',
          cursor: q.cursor,
          ...bounds,
        });
  const rows = page.rows.flatMap((e) => {
    const key = nftRefTransferKey(chain, e.key, e.value);
    const t = deps.kv.get<StoredTransfer>('transfers', key);
    return t === undefined ? [] : [{ key, value: t }];
  });
  const result = await transferItems(deps, chain, rows, q.include_prices);
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result, block_exists: blockExists, index_complete: complete };
}

export function walletTransfers(deps: NftDeps, chain: string, q: z.output<typeof walletTransfersQuery>) {
  const contracts = [...new Set(q.contract_addresses)];
  const prefixes =
    contracts.length === 0 ? `wallet/${chain}/${q.address}/` : contracts.map((c) => `walletContract/${chain}/${q.address}/${c}/`);
  return refsPage(deps, chain, prefixes, `wallet-nft-transfers ${contracts.join(',')}`, q, rangeOf(deps.kv, chain, q));
}

export function contractTransfers(deps: NftDeps, chain: string, q: z.output<typeof contractTransfersQuery>) {
  return refsPage(deps, chain, `contract/${chain}/${q.address}/`, 'contract-nft-transfers', q, rangeOf(deps.kv, chain, q));
}

export function rangeTransfers(deps: NftDeps, chain: string, q: z.output<typeof rangeTransfersQuery>) {
  return refsPage(deps, chain, `block/${chain}/`, 'nft-transfers', q, rangeOf(deps.kv, chain, q));
}

/**
 * One block's NFT transfers, by number or hash; a block this server has not stored, or the indexes do not hold
 * yet (blockIndexed), answers block_exists false.
 */
export async function blockTransfers(deps: NftDeps, chain: string, q: z.output<typeof blockTransfersQuery>) {
  const given = q.block_number_or_hash;
  const number = typeof given === 'number' ? given : deps.kv.get<number>('blockHashes', blockHashKey(chain, given));
  const exists = number !== undefined && number <= storedHead(deps.kv, chain) && (await blockIndexed(deps, chain, number));
  // A block not stored has no transfers here: an empty range (no key has this prefix).
  const prefix = exists ? `block/${chain}/${blockPart(number)}/` : `block/${chain}/-/`;
  return refsPage(deps, chain, prefix, `block-nft-transfers ${number}`, q, {}, exists);
}
