import { isAscii } from 'node:buffer';
import type { Kv } from '../ports.js';
import { buildProbe } from './probe.js';
import { encodeNodeRecord } from './record-encoder.js';
import { NormalizeError, nodeRecord, type Json } from './record.js';
import { blockKey, indexRows, type IndexTable } from './store.js';

/**
 * A block made ready to write off the main thread: the node's answers, as the
 * bytes they came in, parsed, checked, encoded into the stored record and probe
 * column, and turned into the index rows writeBlock would put, each value
 * already encoded and each table's rows sorted by key. The main thread checks
 * the parent link (number, hash, parentHash) and puts the bytes as they are.
 */
export interface NodeAnswers {
  /** Response bodies of eth_getBlockByNumber(n, true), eth_getBlockReceipts(n) and debug_traceBlockByNumber(n, callTracer) (null: no tracer). */
  block: Uint8Array;
  receipts: Uint8Array;
  traces: Uint8Array | null;
}

/** One index table's rows of a block, sorted by key: the keys, and their encoded values end to end (value i ends at ends[i]). */
export interface PackedRows {
  keys: string[];
  bytes: Uint8Array;
  ends: Uint32Array;
}

export interface PreparedBlock {
  number: number;
  hash: string;
  parentHash: string;
  record: Uint8Array;
  probe: Uint8Array;
  rows: Record<IndexTable, PackedRows>;
}

const INDEX_TABLES: readonly IndexTable[] = ['canon', 'blockHashes', 'transfers', 'sales'];

/** The `result` of a JSON-RPC response body (an error one is refused: the node answered with an error). */
export function resultOf<T>(body: Uint8Array): T {
  // A node's JSON is ASCII nearly always, and read as such then (the same text): Node's ASCII decode was the
  // fastest measured (per block of answers 4.2 ms, latin1 5.0 ms, UTF-8 7.6 ms, on a loaded machine).
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const envelope = JSON.parse(bytes.toString(isAscii(bytes) ? 'ascii' : 'utf8')) as { result?: T; error?: { message?: string } };
  if (envelope.error !== undefined) throw new Error(`the node answered with an error: ${String(envelope.error.message)}`);
  return envelope.result as T;
}

/** Whether a response body says null (the node has no such block yet); such a body is short, so only short ones are read. */
export const isNullResult = (body: Uint8Array): boolean => body.length < 128 && resultOf(body) === null;

/** `encode` writes an index value as the store writes it (storage/codec.ts). Null when the node has no such block (yet). */
export function prepareBlock(chain: string, answers: NodeAnswers, encode: (value: unknown) => Uint8Array): PreparedBlock | null {
  const block = resultOf<Json | null>(answers.block);
  const receipts = resultOf<Json[] | null>(answers.receipts);
  if (block === null || receipts === null) return null;
  const traces = answers.traces === null ? null : resultOf<Json[] | null>(answers.traces);
  // Asked separately, the answers may come from different branches around a reorg.
  if (receipts.some((x) => x['blockHash'] !== block['hash'])) throw new NormalizeError(`block ${String(block['number'])}: the receipts are for another block than ${String(block['hash'])} (a reorg under way); trying again`);
  const view = nodeRecord(block, receipts, traces);
  return {
    number: Number(block['number']),
    hash: String(block['hash']),
    parentHash: String(block['parentHash']),
    record: encodeNodeRecord(block, view.txs.map((t) => t.tx), receipts, view.internal),
    probe: buildProbe(view),
    rows: packRows(indexRows(chain, view), encode),
  };
}

function packRows(rows: ReturnType<typeof indexRows>, encode: (value: unknown) => Uint8Array): Record<IndexTable, PackedRows> {
  const out = {} as Record<IndexTable, PackedRows>;
  for (const table of INDEX_TABLES) {
    const mine = rows.filter((r) => r.table === table).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const values = mine.map((r) => encode(r.value));
    const ends = new Uint32Array(values.length);
    let size = 0;
    values.forEach((v, i) => (ends[i] = size += v.byteLength));
    const bytes = new Uint8Array(size);
    values.forEach((v, i) => bytes.set(v, ends[i]! - v.byteLength));
    out[table] = { keys: mine.map((r) => r.key), bytes, ends };
  }
  return out;
}

/**
 * Writes prepared blocks as writeBlock writes them (call inside a transaction): records and probe columns
 * in block order, then each index table's rows of all the blocks merged into key order, so LMDB
 * inserts each table's keys front to back.
 */
export function writePrepared(kv: Kv, chain: string, blocks: readonly PreparedBlock[]): void {
  for (const b of blocks) {
    const key = blockKey(chain, b.number);
    kv.putRaw('blocks', key, b.record);
    kv.putRaw('probes', key, b.probe);
  }
  for (const table of INDEX_TABLES) {
    const runs = blocks.map((b) => b.rows[table]);
    const next = runs.map(() => 0);
    // A k-way merge of the sorted runs (k is a batch's block count, a handful).
    for (;;) {
      let min = -1;
      for (let i = 0; i < runs.length; i++) {
        if (next[i]! < runs[i]!.keys.length && (min < 0 || runs[i]!.keys[next[i]!]! < runs[min]!.keys[next[min]!]!)) min = i;
      }
      if (min < 0) break;
      const run = runs[min]!;
      const at = next[min]!++;
      kv.putRaw(table, run.keys[at]!, run.bytes.subarray(at === 0 ? 0 : run.ends[at - 1]!, run.ends[at]!));
    }
  }
}
