import { z } from 'zod';
import { ApiError } from '../../errors.js';
import { transfersOf } from '../../evm/store.js';
import type { BlockRecord } from '../../evm/record.js';
import { mergedRangePage, rangePage } from '../../page.js';
import type { DataDeps } from '../common/deps.js';
import { blockRange, cursor, evmAddress, hash32, limit, order } from '../common/params.js';
import { addressPrefix, addressTxReads, historyPrefixes, nextPosition, positionOf, txPosition } from './index/writer.js';
import { blockSpan, spanBounds } from '../common/block-times.js';
import { internalItem, internalTxAnswer, txAnswer, txItem, txVerboseAnswer, txWithLogsAnswer } from './item.js';
import { pageAnswer } from '../common/answer-parts.js';
import { unixIso as iso } from '../../datetime.js';
import { blockHashes, blockNumberOf, caughtUp, indexedRecordOf, logsOf, summaryAt, txOrNotFound } from './source.js';
import { summarize, type TxSummary } from './index/summary.js';

/**
 * Native transactions and blocks: GET /:address (and /verbose), /transaction/:transaction_hash (and /verbose,
 * /internal-transactions), /block/:block_number_or_hash (and /stats). Lists page over the `addressTxs`
 * index (limit + 2 entries a page); items come from the kept summaries, logs from the block record or the node.
 */

const include = z.enum(['internal_transactions'], 'internal_transactions').optional();

export const walletTxsQuery = z.object({ address: evmAddress, ...blockRange, cursor, order, limit: limit(), include });
export const txQuery = z.object({ transaction_hash: hash32, include });
export const internalTxsQuery = z.object({ transaction_hash: hash32 });
export const blockQuery = z.object({
  block_number_or_hash: z
    .string()
    .regex(/^(\d{1,15}|0x[0-9a-fA-F]{64})$/, 'a block number (decimal) or a block hash (0x and 64 hex digits)'),
  include,
});
export const blockStatsQuery = blockQuery.pick({ block_number_or_hash: true });

export const walletTxsAnswer = pageAnswer(txAnswer);
export const walletTxsVerboseAnswer = pageAnswer(txVerboseAnswer);
export const transactionAnswer = txWithLogsAnswer;
export const transactionVerboseAnswer = txVerboseAnswer;
export const internalTxsAnswer = z.array(internalTxAnswer);

/** `blockFields`: a header field the node did not send is null. */
export const blockFieldsAnswer = z.object({
  timestamp: z.string(),
  number: z.string(),
  hash: z.string(),
  parent_hash: z.string(),
  nonce: z.string().nullable(),
  sha3_uncles: z.string().nullable(),
  logs_bloom: z.string().nullable(),
  transactions_root: z.string().nullable(),
  state_root: z.string().nullable(),
  receipts_root: z.string().nullable(),
  miner: z.string().nullable(),
  difficulty: z.string(),
  total_difficulty: z.string().meta({ description: '0 where the node gives none (after the merge)' }),
  size: z.string().nullable(),
  extra_data: z.string().nullable(),
  gas_limit: z.string(),
  gas_used: z.string(),
  transaction_count: z.string(),
});
export const blockAnswer = blockFieldsAnswer.extend({ transactions: z.array(txWithLogsAnswer) });

const total = z.object({ total: z.string() });
export const blockStatsAnswer = z.object({ transactions: total, nft_transfers: total, token_transfers: total });

export interface AddressPageQuery {
  address: string;
  from_block?: number | undefined;
  to_block?: number | undefined;
  from_date?: number | undefined;
  to_date?: number | undefined;
  cursor: string | null;
  order: 'ASC' | 'DESC';
  limit: number;
}

/** A page of one of an address's lists (`tx`: native, `hist`: wallet history) as summaries. */
export async function addressPage(
  deps: DataDeps,
  chain: string,
  list: 'tx' | 'hist',
  q: AddressPageQuery,
): Promise<{ page: number; cursor: string | null; items: TxSummary[] }> {
  await caughtUp(deps, chain);
  const span = blockSpan(deps.kv, chain, q);
  if (span === null) return { page: 0, cursor: null, items: [] };
  const page = {
    // The query names the list (not the blocks its dates come to: a date past the head moves with each block).
    list: `${list} ${q.order} ${[q.from_block, q.to_block, q.from_date, q.to_date].join(',')}`,
    limit: q.limit,
    reverse: q.order === 'DESC',
    cursor: q.cursor,
    ...spanBounds(span),
  };
  const p =
    list === 'tx'
      ? rangePage<number>(addressTxReads(deps.kv), 'addressTxs', addressPrefix('tx', chain, q.address), page)
      : mergedRangePage<number>(addressTxReads(deps.kv), 'addressTxs', historyPrefixes(chain, q.address), { ...page, step: nextPosition });
  const hashOf = blockHashes(deps, chain);
  const items = p.rows.map(({ key }) => {
    const { block, index } = positionOf(key);
    const s = summaryAt(deps, chain, block, index, hashOf);
    if (s === undefined) throw new ApiError(500, `the summary of transaction ${txPosition(block, index)} of chain ${chain} is missing`);
    return s;
  });
  return { page: p.page, cursor: p.cursor, items };
}

export async function walletTxs(deps: DataDeps, chain: string, q: z.output<typeof walletTxsQuery>, verbose: boolean) {
  const { page, cursor: next, items } = await addressPage(deps, chain, 'tx', q);
  const internal = q.include === 'internal_transactions';
  const result = await Promise.all(
    items.map(async (s) => (verbose ? txItem(s, { internal, verbose, logs: await logsOf(deps, chain, s) }) : txItem(s, { internal }))),
  );
  return { page, page_size: q.limit, cursor: next, result };
}

/** GET /transaction/:transaction_hash and /verbose: the item with its logs, its internal transactions with include=internal_transactions. */
export async function transaction(deps: DataDeps, chain: string, q: z.output<typeof txQuery>, verbose: boolean) {
  const s = await txOrNotFound(deps, chain, q.transaction_hash);
  return txItem(s, { logs: await logsOf(deps, chain, s), verbose, internal: q.include === 'internal_transactions' });
}

export async function internalTxs(deps: DataDeps, chain: string, q: z.output<typeof internalTxsQuery>) {
  const s = await txOrNotFound(deps, chain, q.transaction_hash);
  return s.internal.map((c) => internalItem(s, c));
}

export async function blockRecord(deps: DataDeps, chain: string, numberOrHash: string): Promise<BlockRecord> {
  const number = blockNumberOf(deps, chain, numberOrHash);
  const record = number === undefined ? undefined : await indexedRecordOf(deps, chain, number);
  if (record === undefined) throw new ApiError(404, `block ${numberOrHash} is not a canonical block stored for chain ${chain}`);
  return record;
}

const dec = (v: unknown): string | null => (typeof v === 'string' ? BigInt(v).toString() : null);

/** A block's own fields as the Data API's block item shows them (the v2.2 item and the /v1 EVM block's evmSpecific). */
export function blockFields(r: BlockRecord) {
  const h = r.header;
  return {
    timestamp: iso(Number(h['timestamp'])),
    number: dec(h['number']),
    hash: h['hash'],
    parent_hash: h['parentHash'],
    nonce: h['nonce'] ?? null,
    sha3_uncles: h['sha3Uncles'] ?? null,
    logs_bloom: h['logsBloom'] ?? null,
    transactions_root: h['transactionsRoot'] ?? null,
    state_root: h['stateRoot'] ?? null,
    receipts_root: h['receiptsRoot'] ?? null,
    miner: typeof h['miner'] === 'string' ? h['miner'].toLowerCase() : null,
    difficulty: dec(h['difficulty']) ?? '0',
    // Nodes after the merge drop totalDifficulty: 0, as the hosted service answers for such blocks.
    total_difficulty: dec(h['totalDifficulty']) ?? '0',
    size: dec(h['size']),
    extra_data: h['extraData'] ?? null,
    gas_limit: dec(h['gasLimit']),
    gas_used: dec(h['gasUsed']),
    transaction_count: String(r.txs.length),
  };
}

export async function block(deps: DataDeps, chain: string, q: z.output<typeof blockQuery>) {
  const r = await blockRecord(deps, chain, q.block_number_or_hash);
  const internal = q.include === 'internal_transactions';
  const transactions = summarize(r).map((s, i) => txItem(s, { internal, logs: r.txs[i]!.logs }));
  return { ...blockFields(r), transactions };
}

export async function blockStats(deps: DataDeps, chain: string, q: z.output<typeof blockStatsQuery>) {
  const r = await blockRecord(deps, chain, q.block_number_or_hash);
  const transfers = transfersOf(r);
  const nft = transfers.filter((t) => t.kind !== 'erc20').length;
  return {
    transactions: { total: String(r.txs.length) },
    nft_transfers: { total: String(nft) },
    token_transfers: { total: String(transfers.length - nft) },
  };
}
