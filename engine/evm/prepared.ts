import type { IngestPool, Kv } from '../ports.js';
import { resultOf } from '../ingest/json-bytes.js';
import { buildProbe } from './probe.js';
import { encodeNodeRecord } from './record-encoder.js';
import { NormalizeError, nodeRecord, type Json } from './record.js';
import { indexRows, removeBlock, type IndexTable } from './store.js';
import { blockKey } from '../ingest/chain-store.js';
import type { BlockStore } from '../ingest/commit.js';

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

/**
 * One index table's rows of a block, sorted by key, as bytes: the keys end to end (key i ends at
 * keyEnds[i]) and the encoded values end to end (value i ends at ends[i]). Bytes rather than strings: a
 * block's ~1,000 keys cross to the main thread in one moved buffer, and stay off its heap while the block
 * waits to be written.
 */
export interface PackedRows {
  keys: Uint8Array;
  keyEnds: Uint32Array;
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

/** The worker pool's EVM task: the node's answers for a block into a PreparedBlock. */
export type EvmIngestPool = IngestPool<NodeAnswers, PreparedBlock>;

const INDEX_TABLES: readonly IndexTable[] = ['canon', 'blockHashes', 'transfers', 'sales'];

/** Whether a response body says null (the node has no such block yet); such a body is short, so only short ones are read. */
export const isNullResult = (body: Uint8Array): boolean => body.length < 128 && resultOf(body) === null;

/**
 * The pool for large blocks (mainnet, a catch-up); a small one (a devnet's new head: a few KB of answers)
 * is prepared here at once: it takes tens of µs, the round trip to a worker thread (a lower-priority one)
 * far more, and the announced block is waiting on it.
 */
export function inlineSmallBlocks(pool: EvmIngestPool, encode: (value: unknown) => Uint8Array, maxBytes: number): EvmIngestPool {
  return {
    prepare(chain, answers) {
      const size = answers.block.byteLength + answers.receipts.byteLength + (answers.traces?.byteLength ?? 0);
      if (size > maxBytes) return pool.prepare(chain, answers);
      try {
        return Promise.resolve(prepareBlock(chain, answers, encode));
      } catch (err) {
        return Promise.reject(err as Error);
      }
    },
  };
}

/** `encode` writes an index value as the store writes it (storage/codec.ts). Null when the node has no such block (yet). */
export function prepareBlock(chain: string, answers: NodeAnswers, encode: (value: unknown) => Uint8Array): PreparedBlock | null {
  const block = resultOf<Json | null>(answers.block);
  const receipts = resultOf<Json[] | null>(answers.receipts);
  if (block === null || receipts === null) return null;
  const traces = answers.traces === null ? null : resultOf<Json[] | null>(answers.traces);
  // Asked separately, the answers may come from different branches around a reorg.
  if (receipts.some((x) => x['blockHash'] !== block['hash']))
    throw new NormalizeError(
      `block ${String(block['number'])}: the receipts are for another block than ${String(block['hash'])} (a reorg under way); trying again`,
    );
  const view = nodeRecord(block, receipts, traces);
  return {
    number: Number(block['number']),
    hash: String(block['hash']),
    parentHash: String(block['parentHash']),
    record: encodeNodeRecord(
      block,
      view.txs.map((t) => t.tx),
      receipts,
      view.internal,
    ),
    probe: buildProbe(view),
    rows: packRows(indexRows(chain, view), encode),
  };
}

function packRows(rows: ReturnType<typeof indexRows>, encode: (value: unknown) => Uint8Array): Record<IndexTable, PackedRows> {
  const out = {} as Record<IndexTable, PackedRows>;
  for (const table of INDEX_TABLES) {
    // String order is byte order for these keys (ASCII, checked by keyBytes).
    const mine = rows.filter((r) => r.table === table).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const keys = concat(mine.map((r) => keyBytes(r.key)));
    const values = concat(mine.map((r) => encode(r.value)));
    out[table] = { keys: keys.bytes, keyEnds: keys.ends, bytes: values.bytes, ends: values.ends };
  }
  return out;
}

/** Byte arrays end to end, and where each ends. */
function concat(arrays: readonly Uint8Array[]): { bytes: Uint8Array; ends: Uint32Array } {
  const ends = new Uint32Array(arrays.length);
  let size = 0;
  arrays.forEach((a, i) => (ends[i] = size += a.byteLength));
  const bytes = new Uint8Array(size);
  arrays.forEach((a, i) => bytes.set(a, ends[i]! - a.byteLength));
  return { bytes, ends };
}

/**
 * A key as the bytes LMDB stores for it: lmdb-js writes a string key as its UTF-8, with an escape before
 * a first character below 28 or any character up to 4, and a byte key as it is. The store's keys are
 * printable ASCII, so they are their own bytes; anything else is refused rather than stored differently.
 */
export function keyBytes(key: string): Uint8Array {
  const bytes = Buffer.from(key, 'latin1');
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (c < 32 || c > 126 || key.charCodeAt(i) > 126) throw new Error(`index key ${JSON.stringify(key)} is not printable ASCII`);
  }
  return bytes;
}

const slice = (bytes: Uint8Array, ends: Uint32Array, i: number): Uint8Array => bytes.subarray(i === 0 ? 0 : ends[i - 1]!, ends[i]!);

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
    const head = (i: number): Uint8Array | undefined =>
      next[i]! < runs[i]!.keyEnds.length ? slice(runs[i]!.keys, runs[i]!.keyEnds, next[i]!) : undefined;
    const heads = runs.map((_, i) => head(i));
    // A k-way merge of the sorted runs (k is a batch's block count, a handful).
    for (;;) {
      let min = -1;
      for (let i = 0; i < runs.length; i++) {
        if (heads[i] !== undefined && (min < 0 || Buffer.compare(heads[i]!, heads[min]!) < 0)) min = i;
      }
      if (min < 0) break;
      const run = runs[min]!;
      kv.putRaw(table, heads[min]!, slice(run.bytes, run.ends, next[min]!));
      next[min]!++;
      heads[min] = head(min);
    }
  }
}

/**
 * The EVM family's part of the commit path (engine/ingest/commit.ts): the follower's commits and a cluster node's
 * apply of a published block write the prepared bytes alike.
 */
export const evmBlockStore: BlockStore<PreparedBlock> = {
  write: writePrepared,
  remove(kv, chain, from, to) {
    for (let n = from; n <= to; n++) removeBlock(kv, chain, n);
  },
  received(data) {
    const b = data as { [K in keyof PreparedBlock]?: unknown };
    if (typeof b.number !== 'number' || typeof b.hash !== 'string' || typeof b.parentHash !== 'string')
      throw new Error('an EVM block without its number, hash and parent hash');
    const rows = {} as Record<IndexTable, PackedRows>;
    for (const table of INDEX_TABLES) {
      const r = (b.rows as Record<string, Record<string, unknown>> | undefined)?.[table];
      rows[table] = {
        keys: bytesOf(r?.['keys']),
        keyEnds: endsOf(r?.['keyEnds']),
        bytes: bytesOf(r?.['bytes']),
        ends: endsOf(r?.['ends']),
      };
    }
    return { number: b.number, hash: b.hash, parentHash: b.parentHash, record: bytesOf(b.record), probe: bytesOf(b.probe), rows };
  },
};

function bytesOf(value: unknown): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new Error('an EVM block without the bytes of its record, probe column or index rows');
  return value;
}

/** Offsets a message carried as their bytes (little-endian, as every platform Node runs on lays them out), copied to be aligned. */
function endsOf(value: unknown): Uint32Array {
  const bytes = bytesOf(value);
  if (bytes.byteLength % 4 !== 0) throw new Error('an EVM block whose index rows are cut short');
  // A copy of its own (new Uint8Array, not slice: a Buffer's slice is a view of its pool).
  return new Uint32Array(new Uint8Array(bytes).buffer);
}
