import { posAt, TRANSFER } from '../../evm/store.js';
import { z } from 'zod';
import { rangePage } from '../../page.js';
import type { Entry } from '../../ports.js';
import type { DataDeps } from '../common/deps.js';
import { indexedHead, pageBlocks } from '../common/pages.js';
import type { PageBlock } from '../common/indexed-blocks.js';
import { metadata } from '../common/node-reads.js';
import type { TokenInfo } from '../../evm/token-metadata.js';
import { headBounds } from '../common/block-times.js';
import { walletTransfersPrefix, type WalletTransfer } from './index/keys.js';
import { byTopic0, topicEntriesLog, type TopicEntry } from '../chain/index/logs.js';
import { erc20TransferAt, erc20TransferOf } from './index/log.js';
import { dec, formatted } from '../common/values.js';
import { blockRange, cursor, evmAddress, limit, order } from '../common/params.js';
import { offChain, pageAnswer, partiesAnswer } from '../common/answer-parts.js';
import { addressList } from './tokens.js';

/**
 * GET /:address/erc20/transfers (a wallet's, from the `erc20Wallet` index) and
 * GET /erc20/:address/transfers (a token's, its Transfer logs under their topic0
 * in `contractLogs`): newest first unless asked, in a block or date range; a
 * page reads at most limit + 2 index entries (contract_addresses aside: that
 * filter reads on until the page is full), and a wallet's page one log row per
 * transfer.
 */

export const tokenTransfersQuery = z.object({
  address: evmAddress,
  ...blockRange,
  limit: limit(),
  order,
  cursor,
});
/** `contract_addresses`: only these tokens' transfers (a list, as the route reads lists). */
export const walletTransfersQuery = tokenTransfersQuery.extend({ contract_addresses: addressList.optional() });
export type TransfersQuery = z.output<typeof tokenTransfersQuery>;

/** `item`: both endpoints' transfers. */
export const transfersAnswer = pageAnswer(
  z.object({
    token_name: z.string(),
    token_symbol: z.string(),
    token_logo: offChain,
    token_decimals: z.string(),
    transaction_hash: z.string(),
    address: z.string(),
    block_timestamp: z.string(),
    block_number: z.string(),
    block_hash: z.string(),
    ...partiesAnswer,
    value: z.string(),
    value_decimal: z
      .string()
      .nullable()
      .meta({ description: "The value in the token's units (value scaled by token_decimals); null when the token has no decimals()" }),
    transaction_index: z.int(),
    log_index: z.int(),
    possible_spam: z.boolean(),
    verified_contract: z.boolean(),
  }),
);

/** A transfer as both endpoints answer it. */
function item(t: WalletTransfer, at: { blockNumber: number; logIndex: number }, token: TokenInfo, block: PageBlock) {
  return {
    token_name: token.name,
    token_symbol: token.symbol,
    token_logo: null,
    token_decimals: String(token.decimals ?? 0),
    transaction_hash: t.transactionHash,
    address: t.contract,
    block_timestamp: block.iso,
    block_number: String(at.blockNumber),
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
    value_decimal: token.decimals === null ? null : formatted(BigInt(t.value), token.decimals),
    transaction_index: t.transactionIndex,
    log_index: at.logIndex,
    possible_spam: token.possibleSpam,
    verified_contract: false,
  };
}

async function answer(
  deps: DataDeps,
  chain: string,
  q: TransfersQuery,
  page: Pick<ReturnType<typeof rangePage<WalletTransfer>>, 'rows' | 'page' | 'cursor'>,
) {
  const rows = page.rows.map(({ key, value }) => ({ t: value, at: posAt(key) }));
  // A page's transfers share a few tokens and blocks: each is read once (an item needs a token's name, not its supply).
  const contracts = [...new Set(rows.map((r) => r.t.contract))];
  const infos = await Promise.all(contracts.map((c) => metadata(deps, chain, c)));
  const tokens = new Map(contracts.map((c, i) => [c, infos[i]!]));
  const block = pageBlocks(deps, chain);
  const result = rows.map(({ t, at }) => item(t, at, tokens.get(t.contract)!, block(at.blockNumber)));
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result };
}

const EMPTY = { rows: [], page: 0, cursor: null };

/** An `erc20Wallet` entry of a version-3 store (the whole transfer) may carry addresses as the node wrote them. */
const norm = (t: WalletTransfer): WalletTransfer => ({
  ...t,
  contract: t.contract.toLowerCase(),
  from: t.from.toLowerCase(),
  to: t.to.toLowerCase(),
});

export async function walletTransfers(deps: DataDeps, chain: string, q: TransfersQuery, contracts: readonly string[]) {
  const head = await indexedHead(deps, chain);
  const bounds = headBounds(deps.kv, chain, head, q);
  if (bounds === null) return answer(deps, chain, q, EMPTY);
  // The query names the list (not the blocks its dates come to: a date past the head moves with each block).
  const list = `erc20-wallet ${q.order} ${[q.from_block, q.to_block, q.from_date, q.to_date].join(',')} ${contracts.join(',')}`;
  const wanted = new Set(contracts);
  // Filtered by contract: rangePage reads on in chunks until the page is full.
  const keep = contracts.length === 0 ? {} : { keep: (entry: WalletEntry) => wanted.has(tokenOf(entry)) };
  const page = rangePage<WalletEntry>(deps.kv, 'erc20Wallet', walletTransfersPrefix(chain, q.address), {
    list,
    limit: q.limit,
    reverse: q.order === 'DESC',
    cursor: q.cursor,
    ...bounds,
    ...keep,
  });
  const rows = resolved(page.rows, (value, key) => (typeof value === 'string' ? transferOf(deps, chain, value, key) : norm(value)));
  return answer(deps, chain, q, { ...page, rows });
}

/** An `erc20Wallet` value: the token's address, or (a store written before 2026-11-24) the transfer itself. */
type WalletEntry = string | WalletTransfer;
const tokenOf = (entry: WalletEntry): string => (typeof entry === 'string' ? entry : entry.contract.toLowerCase());

/** The ERC-20 transfer `token` logged at an index key's place (its last two segments). */
function transferOf(deps: DataDeps, chain: string, token: string, key: string): WalletTransfer | undefined {
  const { blockNumber, logIndex } = posAt(key);
  return erc20TransferAt(deps.kv, chain, token, blockNumber, logIndex);
}

/** A page's entries as their transfers; an entry with none (its log is no ERC-20 Transfer) is left out. */
function resolved<T>(
  rows: ReadonlyArray<Entry<T>>,
  transfer: (value: T, key: string) => WalletTransfer | undefined,
): Array<Entry<WalletTransfer>> {
  return rows.flatMap(({ key, value }) => {
    const t = transfer(value, key);
    return t === undefined ? [] : [{ key, value: t }];
  });
}

export async function tokenTransfers(deps: DataDeps, chain: string, q: TransfersQuery) {
  const head = await indexedHead(deps, chain);
  const bounds = headBounds(deps.kv, chain, head, q);
  if (bounds === null) return answer(deps, chain, q, EMPTY);
  const list = `erc20-token ${q.order} ${[q.from_block, q.to_block, q.from_date, q.to_date].join(',')}`;
  // The token's Transfer logs by their topic0 key (its Approvals and other logs are not read): from the indexes' first block
  // (indexState.start: the log rows begin there) up to their head. One an NFT logged (four topics, the same topic0) is left out of the page.
  const page = rangePage<TopicEntry>(deps.kv, 'contractLogs', byTopic0(chain, q.address, TRANSFER), {
    list,
    limit: q.limit,
    reverse: q.order === 'DESC',
    cursor: q.cursor,
    ...bounds,
  });
  // Each entry holds its log: no read per transfer.
  const logOf = topicEntriesLog(deps.kv, chain, q.address);
  return answer(deps, chain, q, {
    ...page,
    rows: resolved(page.rows, (value, key) => {
      const log = logOf(value, key);
      return log === undefined ? undefined : erc20TransferOf(q.address, log);
    }),
  });
}
