import { z } from 'zod';
import { blockHashKey } from '../ingest/chain-store.js';
import type { ChainState } from '../evm/follower.js';
import type { StoredTransfer } from '../evm/store.js';
import type { Kv } from '../ports.js';
import { rangePage } from '../page.js';
import { format, indexedUpTo, type NftDeps } from './nft-common.js';
import { blockPart } from './nft-index.js';
import { transferItems } from './nft-transfers.js';
import { bool, blockNumber, blockRange, cursor, evmAddress, hash32, limit, order } from './params.js';

/**
 * NFT transfer lists in block order from the `nftRefs` index (each entry names
 * its `transfers` key): a wallet's, a contract's, a block range's, a block's.
 * Every item is the NFT transfer record of engine/data-api/nft-transfers.ts.
 * Block and date ranges bound the key range, so a page still reads at most
 * limit + 2 entries.
 */

const common = { format, limit: limit(), order, cursor, include_prices: bool(false), ...blockRange };

export const walletTransfersQuery = z.object({ address: evmAddress, contract_addresses: z.array(evmAddress).max(100, 'at most 100 addresses').default([]), ...common });
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

/**
 * The key bounds (what follows a list's prefix: the 12-hex block number) of from_block/to_block and
 * from_date/to_date; a date becomes the first block at or after it among the blocks with NFT transfers.
 */
export function blockBounds(kv: Kv, chain: string, q: Pick<Range, 'from_block' | 'to_block' | 'from_date' | 'to_date'>): { start?: string; end?: string } {
  let low = q.from_block ?? 0;
  let high = q.to_block === undefined ? Infinity : q.to_block + 1;
  if (q.from_date !== undefined) low = Math.max(low, firstBlockAfter(kv, chain, (t) => t >= q.from_date!));
  if (q.to_date !== undefined) high = Math.min(high, firstBlockAfter(kv, chain, (t) => t > q.to_date!));
  return { start: blockPart(low), ...(Number.isFinite(high) ? { end: blockPart(Math.max(high, low)) } : {}) };
}

/** The smallest block n such that every NFT transfer at n or later has a timestamp that `past` accepts (binary search). */
function firstBlockAfter(kv: Kv, chain: string, past: (timestamp: number) => boolean): number {
  const prefix = `block/${chain}/`;
  const timeAt = (n: number): number => {
    const [first] = kv.range<string>('nftRefs', { start: `${prefix}${blockPart(n)}`, end: `${prefix}\uffff`, limit: 1 });
    return first === undefined ? Infinity : kv.get<StoredTransfer>('transfers', first.value)?.timestamp ?? Infinity;
  };
  let lo = 0;
  let hi = (kv.get<ChainState>('chainState', chain)?.head ?? 0) + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (past(timeAt(mid))) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** A page of refs under `prefixes`, as NFT transfer records, in the list envelope with block_exists and index_complete. */
async function refsPage(deps: NftDeps, chain: string, prefixes: string | string[], list: string, q: Pick<Range, 'limit' | 'order' | 'cursor' | 'include_prices'>, bounds: { start?: string; end?: string } = {}, blockExists = true) {
  const complete = await indexedUpTo(deps, chain);
  const page = rangePage<string>(deps.kv, 'nftRefs', prefixes, { list: `${list} ${q.order} ${bounds.start ?? ''}-${bounds.end ?? ''}`, limit: q.limit, reverse: q.order === 'DESC', cursor: q.cursor, bounds });
  const rows = page.rows.flatMap(({ value }) => {
    const t = deps.kv.get<StoredTransfer>('transfers', value);
    return t === undefined ? [] : [{ key: value, value: t }];
  });
  const result = await transferItems(deps, chain, rows, q.include_prices);
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result, block_exists: blockExists, index_complete: complete };
}

export function walletTransfers(deps: NftDeps, chain: string, q: z.output<typeof walletTransfersQuery>) {
  const contracts = [...new Set(q.contract_addresses)];
  const prefixes = contracts.length === 0 ? `wallet/${chain}/${q.address}/` : contracts.map((c) => `walletContract/${chain}/${q.address}/${c}/`);
  return refsPage(deps, chain, prefixes, `wallet-nft-transfers ${contracts.join(',')}`, q, blockBounds(deps.kv, chain, q));
}

export function contractTransfers(deps: NftDeps, chain: string, q: z.output<typeof contractTransfersQuery>) {
  return refsPage(deps, chain, `contract/${chain}/${q.address}/`, 'contract-nft-transfers', q, blockBounds(deps.kv, chain, q));
}

export function rangeTransfers(deps: NftDeps, chain: string, q: z.output<typeof rangeTransfersQuery>) {
  return refsPage(deps, chain, `block/${chain}/`, 'nft-transfers', q, blockBounds(deps.kv, chain, q));
}

/** One block's NFT transfers, by number or hash; a block this server has not stored answers block_exists false. */
export function blockTransfers(deps: NftDeps, chain: string, q: z.output<typeof blockTransfersQuery>) {
  const given = q.block_number_or_hash;
  const number = typeof given === 'number' ? given : deps.kv.get<number>('blockHashes', blockHashKey(chain, given));
  const head = deps.kv.get<ChainState>('chainState', chain)?.head ?? -1;
  const exists = number !== undefined && number <= head;
  // A block not stored has no transfers here: an empty range (no key has this prefix).
  const prefix = exists ? `block/${chain}/${blockPart(number)}/` : `block/${chain}/-/`;
  return refsPage(deps, chain, prefix, `block-nft-transfers ${number}`, q, {}, exists);
}
