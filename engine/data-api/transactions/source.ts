import { blockIndexed, indexedPosition, indexedTo } from '../common/read-at.js';
import { ApiError } from '../../errors.js';
import { decodeRecord, normalizeBlock, receiptLogs, type BlockRecord, type Json, type StoredLog } from '../../evm/record.js';
import { blockHashKey, blockKey } from '../../ingest/chain-store.js';
import type { DataDeps } from '../common/deps.js';
import { hashKey, summaryKey } from './index/writer.js';
import { decodeSummary, type NamedSummaryRow, type SummaryRow, type TxSummary } from './index/summary.js';
import { transferRefKey, type StoredTransfer, type TransferRef } from '../../evm/store.js';
import type { Kv } from '../../ports.js';
import { erc20TransferAt } from '../erc20/index/log.js';
import { pageBlocks, type BlockDeps } from '../common/pages.js';

/**
 * Where the transaction endpoints read from: the indexes' summaries (kept
 * forever), the block record while retention keeps it, and past that the
 * chain's node (the block, its receipts and call traces, normalized as the
 * follower does).
 */

/** Waits (briefly) until the indexes hold the follower's stored head, so an answer is as fresh as the store. */
export async function caughtUp(deps: DataDeps, chain: string): Promise<void> {
  await indexedTo(deps, chain);
}

/** A block's hash (as the indexes hold it, lower case as summaries answer it), read once per block however many summaries ask (pageBlocks). */
export function blockHashes(deps: BlockDeps, chain: string): (block: number) => string {
  const blockOf = pageBlocks(deps, chain);
  return (block) => blockOf(block).hash.toLowerCase();
}

export function summaryAt(
  deps: BlockDeps,
  chain: string,
  block: number,
  index: number,
  hashOf = blockHashes(deps, chain),
): TxSummary | undefined {
  const row = deps.kv.get<SummaryRow | NamedSummaryRow>('nativeTxs', summaryKey(chain, block, index));
  return row === undefined ? undefined : decodeSummary(row, block, index, () => hashOf(block));
}

/** What a summary's transfer reference names: the transfer's parties, amount and kind. */
export type SummaryTransfer = Pick<StoredTransfer, 'kind' | 'contract' | 'from' | 'to' | 'value' | 'tokenId' | 'operator' | 'batchIndex'>;

/**
 * The transfer a summary's reference names: an ERC-20 one is its log's `contractLogs` row (erc20TransferAt), an
 * NFT one its `transfers` row. The one reader of references, so where a transfer is kept changes here alone.
 */
export function transferOfSummary(kv: Kv, chain: string, block: number, ref: TransferRef): SummaryTransfer | undefined {
  if (ref[2] !== undefined) return kv.get<StoredTransfer>('transfers', transferRefKey(chain, block, ref));
  const t = erc20TransferAt(kv, chain, ref[0], block, ref[1]);
  return t === undefined ? undefined : { kind: 'erc20', ...t };
}

export function summaryOf(deps: Pick<DataDeps, 'kv'>, chain: string, hash: string): TxSummary | undefined {
  const at = deps.kv.get<[number, number]>('nativeTxs', hashKey(chain, hash));
  return at === undefined ? undefined : summaryAt(deps, chain, at[0], at[1]);
}

/** A transaction the indexes hold, or 404. */
export async function txOrNotFound(deps: DataDeps, chain: string, hash: string): Promise<TxSummary> {
  await caughtUp(deps, chain);
  const s = summaryOf(deps, chain, hash);
  if (s === undefined) throw new ApiError(404, `transaction ${hash} is not in a block indexed on chain ${chain}`);
  return s;
}

/** The block's number: given as a number, or its hash through `blockHashes`. */
export function blockNumberOf(deps: Pick<DataDeps, 'kv'>, chain: string, numberOrHash: string): number | undefined {
  if (/^0x[0-9a-fA-F]{64}$/.test(numberOrHash)) return deps.kv.get<number>('blockHashes', blockHashKey(chain, numberOrHash)) ?? undefined;
  return Number(numberOrHash);
}

/**
 * A block as a Data API read answers it: its record (recordOf) once every index holds it (blockIndexed);
 * undefined when the server holds no canonical block there; a 404 while the block is past the indexed head.
 */
export async function indexedRecordOf(deps: DataDeps, chain: string, number: number): Promise<BlockRecord | undefined> {
  if (!(await blockIndexed(deps, chain, number)) && deps.kv.has('canon', blockKey(chain, number)))
    throw new ApiError(
      404,
      `block ${number} of chain ${chain} is not indexed yet: the Data API answers blocks up to ${indexedPosition(deps, chain)}`,
    );
  return recordOf(deps, chain, number);
}

/** The canonical block's record: stored, or rebuilt from the node once pruned; undefined when neither has it. */
export async function recordOf(deps: DataDeps, chain: string, number: number): Promise<BlockRecord | undefined> {
  const bytes = deps.kv.getRaw('blocks', blockKey(chain, number));
  if (bytes !== undefined) return decodeRecord(bytes);
  const canon = deps.kv.get<string>('canon', blockKey(chain, number));
  if (canon === undefined) return undefined;
  const tag = `0x${number.toString(16)}`;
  try {
    const [block, receipts, traces] = await Promise.all([
      deps.reads.rpc<Json>(chain, 'eth_getBlockByNumber', [tag, true]),
      deps.reads.rpc<Json[]>(chain, 'eth_getBlockReceipts', [tag]),
      deps.reads.rpc<Json[]>(chain, 'debug_traceBlockByNumber', [tag, { tracer: 'callTracer' }]).catch(() => null),
    ]);
    if (block === null || receipts === null) return undefined;
    // The node moved on to another block at that height: what the indexes say is answered, not the node's fork.
    if (String(block['hash']).toLowerCase() !== canon.toLowerCase()) return undefined;
    return normalizeBlock(block, receipts, traces);
  } catch (err) {
    throw new ApiError(
      502,
      `block ${number} of chain ${chain} is past the retention window and its node did not answer: ${(err as Error).message}`,
    );
  }
}

/** A transaction's logs: from its block's record while stored, else from the node's receipt (of the same block). */
export async function logsOf(deps: DataDeps, chain: string, s: TxSummary): Promise<StoredLog[]> {
  const bytes = deps.kv.getRaw('blocks', blockKey(chain, s.blockNumber));
  if (bytes !== undefined) return decodeRecord(bytes).txs[s.index]?.logs ?? [];
  let receipt: Json | null;
  try {
    receipt = await deps.reads.rpc<Json>(chain, 'eth_getTransactionReceipt', [s.hash]);
  } catch (err) {
    throw new ApiError(
      502,
      `the logs of ${s.hash} (block ${s.blockNumber}, past the retention window) could not be read from the node of chain ${chain}: ${(err as Error).message}`,
    );
  }
  if (receipt === null || String(receipt['blockHash']).toLowerCase() !== s.blockHash) {
    throw new ApiError(502, `the node of chain ${chain} has no receipt of ${s.hash} in block ${s.blockHash}`);
  }
  // The fields a log item shows.
  return receiptLogs(receipt).map(
    (l): StoredLog => ({
      address: String(l['address']),
      topics: l['topics'] as string[],
      data: String(l['data']),
      logIndex: String(l['logIndex']),
    }),
  );
}
