import { workerData } from 'node:worker_threads';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { Kv, Table } from '../engine/ports.js';
import { MAP_SIZE } from '../storage/map-size.js';
import { pack, unpack } from '../storage/codec.js';

/**
 * This worker's handle on the server's LMDB environment (its path in workerData), opened at the first use and
 * shared by the worker's tasks: one environment per thread (storage/README.md, One environment per process). It
 * reads, and writes the one thing a worker writes: a stored watched set it compiled (engine/match/stored-base.ts),
 * in synchronous transactions of this thread, beside the server's own writes (LMDB's write lock orders them).
 */
let root: RootDatabase | undefined;
const dbs = new Map<string, Database<Buffer, string>>();

export function workerDb(name: string): Database<Buffer, string> {
  let db = dbs.get(name);
  if (db === undefined) {
    root ??= open({
      path: (workerData as { path: string }).path,
      maxDbs: 96,
      encoding: 'binary',
      compression: false,
      noSubdir: false,
      overlappingSync: false,
      mapSize: MAP_SIZE,
    });
    dbs.set(name, (db = root.openDB<Buffer, string>({ name, encoding: 'binary' })));
  }
  return db;
}

/** The part of Kv a worker's tasks use: what workerKv has (a call of any other is a compile error, not a run-time one). */
export type WorkerKv = Pick<Kv, 'get' | 'range' | 'keys' | 'put' | 'putRaw' | 'remove' | 'transact'>;

/** The store as a Kv for what a worker's tasks read and write (plain UTF-8 keyed tables; values as storage/codec.ts packs them). */
export const workerKv: WorkerKv = {
  get<T>(table: Table, key: string): T | undefined {
    const b = workerDb(table).getBinaryFast(key);
    return b === undefined ? undefined : unpack<T>(b.subarray(0, b.length));
  },
  range<T>(table: Table, opts: { start?: string; end?: string; limit?: number } = {}) {
    return Array.from(workerDb(table).getRange(opts), ({ key, value }) => ({ key, value: unpack<T>(value) }));
  },
  keys: (table: Table, opts: { start?: string; end?: string; limit?: number }) => Array.from(workerDb(table).getKeys(opts)) as string[],
  put: (table: Table, key: string, value: unknown) => void workerDb(table).putSync(key, Buffer.from(pack(value))),
  putRaw: (table: Table, key: string, bytes: Uint8Array) =>
    void workerDb(table).putSync(key, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)),
  remove: (table: Table, key: string) => void workerDb(table).removeSync(key),
  transact: <T>(fn: () => T): T => {
    workerDb('meta');
    return root!.transactionSync(fn);
  },
};

/** A fresh read snapshot for the task about to run: what the main thread committed before posting it is seen. */
export const freshSnapshot = (): void => workerDb('meta').resetReadTxn();
