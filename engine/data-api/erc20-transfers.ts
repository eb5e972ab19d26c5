import { z } from 'zod';
import { rangeCursor, rangePage } from '../page.js';
import type { DataDeps } from './deps.js';
import { blockBounds, blockInfo, indexedHead, tokenFacts, type TokenFacts } from './erc20-common.js';
import { keyPosition, walletTransfersPrefix, type WalletTransfer } from './erc20-keys.js';
import { dec, iso } from './nft-transfers.js';
import { blockRange, cursor, evmAddress, limit, order } from './params.js';

/**
 * GET /:address/erc20/transfers (a wallet's, from the `erc20Wallet` index) and
 * GET /erc20/:address/transfers (a token's, from the `transfers` table's
 * `erc20/chain/contract/…` keys written at ingest): newest first unless asked,
 * in a block or date range; a page reads at most limit + 2 index entries
 * (contract_addresses aside: that filter reads on until the page is full).
 */

export const walletTransfersQuery = z.object({
  address: evmAddress,
  ...blockRange,
  limit: limit(),
  order,
  cursor,
});
export const tokenTransfersQuery = walletTransfersQuery;
export type TransfersQuery = z.output<typeof walletTransfersQuery>;

/** A transfer as both endpoints answer it. */
function item(t: WalletTransfer, key: string, token: TokenFacts, block: { hash: string; timestamp: number }) {
  const { blockNumber, logIndex } = keyPosition(key);
  return {
    token_name: token.name,
    token_symbol: token.symbol,
    token_logo: null,
    token_decimals: String(token.decimals ?? 0),
    transaction_hash: t.transactionHash,
    address: t.contract,
    block_timestamp: iso(block.timestamp),
    block_number: String(blockNumber),
    block_hash: block.hash,
    to_address_entity: null,
    to_address_entity_logo: null,
    to_address: t.to,
    to_address_label: null,
    from_address_entity: null,
    from_address_entity_logo: null,
    from_address: t.from,
    from_address_label: null,
    value: dec(t.value),
    transaction_index: t.transactionIndex,
    log_index: logIndex,
    possible_spam: token.possibleSpam,
    verified_contract: false,
  };
}

async function answer(deps: DataDeps, chain: string, q: TransfersQuery, page: ReturnType<typeof rangePage<WalletTransfer>>) {
  const tokens = new Map<string, Promise<TokenFacts>>();
  const facts = (t: string) => tokens.get(t) ?? tokens.set(t, tokenFacts(deps, chain, t)).get(t)!;
  const result = await Promise.all(page.rows.map(async ({ key, value }) => item(norm(value), key, await facts(norm(value).contract), blockInfo(deps, chain, keyPosition(key).blockNumber))));
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result };
}

/** The range's end: to_block's, and never past the indexed head (blocks beyond it have no time stored yet). */
function upTo(to: string | undefined, head: number): string {
  const atHead = (head + 1).toString(16).padStart(12, '0');
  return to === undefined || to > atHead ? atHead : to;
}

/** Rows of the `transfers` table may carry addresses as the node wrote them. */
const norm = (t: WalletTransfer): WalletTransfer => ({ ...t, contract: t.contract.toLowerCase(), from: t.from.toLowerCase(), to: t.to.toLowerCase() });

export async function walletTransfers(deps: DataDeps, chain: string, q: TransfersQuery, contracts: readonly string[]) {
  const head = await indexedHead(deps, chain);
  const bounds = blockBounds(deps, chain, head, q);
  const list = `erc20-wallet ${q.order} ${JSON.stringify(bounds)} ${contracts.join(',')}`;
  const opts = { list, limit: q.limit, reverse: q.order === 'DESC', cursor: q.cursor, ...bounds, to: upTo(bounds.to, head) };
  const prefix = walletTransfersPrefix(chain, q.address);
  if (contracts.length === 0) return answer(deps, chain, q, rangePage<WalletTransfer>(deps.kv, 'erc20Wallet', prefix, opts));
  // Filtered: the rows of the asked contracts, read a page at a time until this page is full.
  const wanted = new Set(contracts);
  const rows: Array<{ key: string; value: WalletTransfer }> = [];
  let at = rangePage<WalletTransfer>(deps.kv, 'erc20Wallet', prefix, opts);
  const first = at.page;
  for (;;) {
    rows.push(...at.rows.filter((r) => wanted.has(r.value.contract)));
    if (rows.length >= q.limit || at.cursor === null) break;
    at = rangePage<WalletTransfer>(deps.kv, 'erc20Wallet', prefix, { ...opts, cursor: at.cursor });
  }
  const kept = rows.slice(0, q.limit);
  // The next page continues after the last row answered.
  const last = kept.at(-1);
  const more = rows.length > q.limit || (at.cursor !== null && last !== undefined);
  const next = more && last !== undefined ? rangeCursor(list, last.key, first + 1) : null;
  return answer(deps, chain, q, { rows: kept, page: first, cursor: next });
}

export async function tokenTransfers(deps: DataDeps, chain: string, q: TransfersQuery) {
  const head = await indexedHead(deps, chain);
  const start = deps.kv.get<number>('erc20Start', chain) ?? head + 1;
  const bounds = blockBounds(deps, chain, head, { ...q, from_block: Math.max(q.from_block ?? 0, start) });
  const list = `erc20-token ${q.order} ${JSON.stringify(bounds)}`;
  // From the indexes' first block (below it the follower's rows have no block row here) up to their head.
  const page = rangePage<WalletTransfer>(deps.kv, 'transfers', `erc20/${chain}/${q.address}/`, { list, limit: q.limit, reverse: q.order === 'DESC', cursor: q.cursor, ...bounds, to: upTo(bounds.to, head) });
  return answer(deps, chain, q, page);
}
