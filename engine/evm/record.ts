import { logsBloom } from './bloom.js';
import { encodeRpc, decodeRpc } from './codec.js';

/**
 * One block as chainpost stores it: the node's header, each transaction with
 * its receipt and logs, and the internal calls of the call tracer flattened
 * with their trace address. Fields that can be rebuilt are dropped (each child's
 * blockHash and blockNumber, transaction hash and index on logs and receipts, a
 * receipt's from/to, its logsBloom); everything the node sent otherwise stays,
 * so the node's block and receipts can be answered again exactly.
 */
export type Hex = string;
export type Json = Record<string, unknown>;

export interface StoredLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  logIndex: Hex;
  /** Any other field the node sent (e.g. removed). */
  [k: string]: unknown;
}

export interface StoredTx {
  /** The node's transaction object minus blockHash, blockNumber, transactionIndex. */
  tx: Json;
  /** The node's receipt minus blockHash, blockNumber, transactionHash, transactionIndex, from, to, logsBloom, logs. */
  receipt: Json;
  logs: StoredLog[];
}

export interface InternalCall {
  txIndex: number;
  /** Position in the call tree: [] for the top frame, [0, 2] for the third call of the first call. */
  traceAddress: number[];
  type: string;
  /** null only where the tracer sent no address. */
  from: Hex | null;
  to: Hex | null;
  value: Hex;
  gas: Hex;
  gasUsed: Hex;
  error?: string;
}

export interface BlockRecord {
  /** The node's block object without its transactions. */
  header: Json;
  txs: StoredTx[];
  /** Calls below each transaction's top frame; null when the node has no call tracer. */
  internal: InternalCall[] | null;
}

const omit = (o: Json, keys: ReadonlySet<string>): Json => {
  const out: Json = {};
  for (const k in o) if (!keys.has(k)) out[k] = o[k];
  return out;
};

/** What the record leaves out of each part of the node's answers (it can be rebuilt). */
export const HEADER_DROP: ReadonlySet<string> = new Set(['transactions']);
export const TX_DROP: ReadonlySet<string> = new Set(['blockHash', 'blockNumber', 'transactionIndex']);
export const RECEIPT_DROP: ReadonlySet<string> = new Set([
  'blockHash',
  'blockNumber',
  'transactionHash',
  'transactionIndex',
  'from',
  'to',
  'logsBloom',
  'logs',
]);
export const LOG_DROP: ReadonlySet<string> = new Set(['blockHash', 'blockNumber', 'transactionHash', 'transactionIndex']);

export class NormalizeError extends Error {
  override name = 'NormalizeError';
}

/** The block's transactions, once the receipts and traces are checked to be theirs (same count, same order). */
export function checkedTxs(block: Json, receipts: Json[], traces: Json[] | null): Json[] {
  const txs = (block['transactions'] ?? []) as Json[];
  if (txs.some((t) => typeof t !== 'object')) throw new NormalizeError('the block must carry full transaction objects');
  if (receipts.length !== txs.length)
    throw new NormalizeError(`block ${String(block['number'])} has ${txs.length} transactions but ${receipts.length} receipts`);
  if (traces !== null && traces.length !== txs.length)
    throw new NormalizeError(`block ${String(block['number'])} has ${txs.length} transactions but ${traces.length} traces`);
  txs.forEach((tx, i) => {
    const receipt = receipts[i]!;
    if (receipt['transactionHash'] !== tx['hash'])
      throw new NormalizeError(`receipt ${i} is for ${String(receipt['transactionHash'])}, not ${String(tx['hash'])}`);
  });
  return txs;
}

/** A receipt's logs (a node may send none). */
export const receiptLogs = (receipt: Json): Json[] => (receipt['logs'] ?? []) as Json[];

/**
 * Builds the record from eth_getBlockByNumber(n, true), eth_getBlockReceipts(n)
 * and the per-transaction callTracer frames (or null without a tracer).
 */
export function normalizeBlock(block: Json, receipts: Json[], traces: Json[] | null): BlockRecord {
  const stored = checkedTxs(block, receipts, traces).map((tx, i): StoredTx => {
    const receipt = receipts[i]!;
    return {
      tx: omit(tx, TX_DROP),
      receipt: omit(receipt, RECEIPT_DROP),
      logs: receiptLogs(receipt).map((l) => omit(l, LOG_DROP) as StoredLog),
    };
  });
  return { header: omit(block, HEADER_DROP), txs: stored, internal: traces === null ? null : flattenCalls(traces) };
}

/**
 * The node's answers seen through the record's shape with nothing copied: each
 * part keeps the fields the record drops. Enough for what reads a record's
 * values only (the probe column, the transfer and sales indexes).
 */
export function nodeRecord(block: Json, receipts: Json[], traces: Json[] | null): BlockRecord {
  const txs = checkedTxs(block, receipts, traces).map(
    (tx, i): StoredTx => ({ tx, receipt: receipts[i]!, logs: receiptLogs(receipts[i]!) as StoredLog[] }),
  );
  return { header: block, txs, internal: traces === null ? null : flattenCalls(traces) };
}

const hexOrNull = (v: unknown): Hex | null => (typeof v === 'string' ? v : null);

/** The call tree below each top frame, depth first, with trace addresses. */
export function flattenCalls(traces: Json[]): InternalCall[] {
  const out: InternalCall[] = [];
  const walk = (frame: Json, txIndex: number, address: number[]): void => {
    const calls = (frame['calls'] ?? []) as Json[];
    calls.forEach((c, i) => {
      const traceAddress = [...address, i];
      const call: InternalCall = {
        txIndex,
        traceAddress,
        type: String(c['type'] ?? 'CALL'),
        from: hexOrNull(c['from']),
        to: hexOrNull(c['to']),
        value: String(c['value'] ?? '0x0'),
        gas: String(c['gas'] ?? '0x0'),
        gasUsed: String(c['gasUsed'] ?? '0x0'),
      };
      if (typeof c['error'] === 'string') call.error = c['error'];
      out.push(call);
      walk(c, txIndex, traceAddress);
    });
  };
  traces.forEach((t, i) => walk((t['result'] as Json | undefined) ?? t, i, []));
  return out;
}

export const encodeRecord = (r: BlockRecord): Uint8Array => encodeRpc(r);
export const decodeRecord = (bytes: Uint8Array): BlockRecord => decodeRpc<BlockRecord>(bytes);

/** The node's block with full transactions, rebuilt. */
export function rpcBlock(r: BlockRecord): Json {
  const { hash, number } = r.header as { hash: Hex; number: Hex };
  return { ...r.header, transactions: r.txs.map((t, i) => ({ ...withChildFields(t.tx, hash, number, i) })) };
}

/** The node's receipts, rebuilt (logsBloom recomputed from the logs). */
export function rpcReceipts(r: BlockRecord): Json[] {
  const { hash, number } = r.header as { hash: Hex; number: Hex };
  return r.txs.map((t, i) => {
    const txHash = t.tx['hash'] as Hex;
    const index = `0x${i.toString(16)}`;
    return {
      ...t.receipt,
      blockHash: hash,
      blockNumber: number,
      transactionHash: txHash,
      transactionIndex: index,
      from: t.tx['from'],
      to: t.tx['to'] ?? null,
      logsBloom: logsBloom(t.logs),
      logs: t.logs.map((l) => rpcLog(l, hash, number, txHash, index)),
    };
  });
}

/** The node's log object (as eth_getLogs and receipts show it), rebuilt from a stored log and where it stands. */
export const rpcLog = (l: StoredLog, blockHash: Hex, blockNumber: Hex, transactionHash: Hex, transactionIndex: Hex): Json => ({
  ...l,
  blockHash,
  blockNumber,
  transactionHash,
  transactionIndex,
});

const withChildFields = (o: Json, blockHash: Hex, blockNumber: Hex, index: number): Json => ({
  ...o,
  blockHash,
  blockNumber,
  transactionIndex: `0x${index.toString(16)}`,
});
