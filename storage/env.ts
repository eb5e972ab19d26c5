import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { MAP_SIZE, mappedBytes } from './map-size.js';
import { CORE_TABLES, type Entry, type Kv, type Table } from '../engine/ports.js';
import { DATA_API_TABLES, WRITTEN_ONLY_TABLES } from '../engine/data-api/tables.js';
import { pack, packShared, unpack } from './codec.js';
import { hexKeyBytes, hexKeys, readHexKey } from './hex-keys.js';
import { keyInPartition0 } from '../engine/delivery/records.js';
import { marksPerEvent } from '../engine/match/block-events.js';
import { walletTradeRows } from '../engine/data-api/nft/index/writer.js';
import { repeatsTx, txListEnd } from '../engine/data-api/transactions/index/writer.js';
import { contractListEnd } from '../engine/data-api/chain/index/logs.js';
import { regroup } from '../engine/data-api/common/block-groups.js';
import { inKeyBatches } from '../engine/key-batches.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import { overlay } from './overlay.js';
import { StoreWriter } from './writer.js';

/**
 * The one LMDB environment of a chainpost data directory. Layout and key
 * formats: storage/README.md. Opened by the server and by the CLI at the same
 * time (LMDB is multi-process); a write by one is seen by the other's next read.
 */
export const SCHEMA_VERSION = 13;
/**
 * Versions this one opens and upgradeSchema migrates (under the data directory's lock, before anything reads the
 * indexes): 3 stored hex strings in values as text, which this version still reads (it writes them as bytes:
 * storage/codec.ts); 3 and 4 stored the keys of HEX_KEYED_TABLES as plain text, which the migration rewrites;
 * 5 kept logs under their contract and block times without hashes, which this version still reads; 6 kept no
 * staged streams in block events, which this version reads as none staged (an older chainpost would misread the
 * forms written since: the mark keeps it out); 7 kept history, delivery logs, their counters and stats in no
 * delivery partition, which the migration moves to partition 0 (PARTITIONED_SINCE); 8 kept a partition's marks of
 * a chain's block events in one row, which the migration splits into a row per event (MARKS_PER_EVENT_SINCE); 9
 * kept the NFT trades by contract and token only, to which the migration adds the buyer's and seller's rows
 * (WALLET_TRADES_SINCE); 10 kept every transaction of an address's wallet history under `hist/`, whose rows
 * repeating its `tx/` list the migration drops (HIST_APART_SINCE); 11 logged no change of what streams watch
 * (`watchChanges`), which a kept watched set relies on (engine/match/stored-base.ts): the migration has nothing to
 * rewrite (a store before 12 keeps no set; one is built), and the mark keeps a chainpost of 11, which would change
 * addresses without logging them, off a store of 12; 12 kept an address's `tx/` list and a contract's `a/` list of logs
 * a row per entry, which the migration groups into a row per block (GROUPED_SINCE).
 */
const MIGRATES = new Set([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
/** The first version whose keys of HEX_KEYED_TABLES are in the hex-key encoding. */
const HEX_KEYS_SINCE = 5;
/** The first version whose delivery rows are keyed by partition (engine/delivery/records.ts keyInPartition0). */
const PARTITIONED_SINCE = 8;
/** The first version whose `matchMarks` rows are one per (block event, partition) (engine/match/block-events.ts marksPerEvent). */
const MARKS_PER_EVENT_SINCE = 9;
/** The first version whose `nftTrades` list each trade under its buyer and seller too (engine/data-api/nft/index/writer.ts walletTradeRows). */
const WALLET_TRADES_SINCE = 10;
/** The first version whose `hist/` rows of addressTxs leave out its `tx/` list (engine/data-api/transactions/index/writer.ts repeatsTx). */
const HIST_APART_SINCE = 11;
/**
 * The first version whose `tx/` lists (addressTxs) and `a/` lists (contractLogs) are a row per (list, block)
 * (engine/data-api/common/block-groups.ts regroup).
 */
const GROUPED_SINCE = 13;
/** The tables whose keys name a delivery partition since then. */
const PARTITIONED_TABLES: readonly Table[] = ['history', 'deliveryLogs', 'counts', 'stats'];

/**
 * The value codec as lmdb-js calls it on its read handles: `decode` is given lmdb-js's shared buffer (or a view of
 * the map) and the value's size, and must not keep it (decoderCopies: unpack copies into strings and numbers). Those
 * handles write nothing: writes go through the binary handles, as bytes packed by storage/codec.ts.
 */
const IN_PLACE = {
  encode(): never {
    throw new StorageError('a read handle was asked to write');
  },
  decode: (bytes: Uint8Array, size?: unknown): unknown => unpack(bytes.subarray(0, typeof size === 'number' ? size : bytes.length)),
};

/** Every table of the store: the engine's, and those the Data API's indexes declare (engine/data-api/tables.ts). */
export const TABLES: readonly Table[] = [...CORE_TABLES, ...DATA_API_TABLES.map(([name]) => name)];

/**
 * The tables whose keys are stored by storage/hex-keys.ts (hex segments as bytes): the Data API's index tables
 * declared `keys: 'hex'`. The tables of everything else keep plain UTF-8 keys (their keys are short, or free text,
 * or written as bytes by the worker pool: `transfers`, `sales`).
 */
export const HEX_KEYED_TABLES: ReadonlySet<Table> = new Set(DATA_API_TABLES.filter(([, t]) => t.keys === 'hex').map(([name]) => name));

/**
 * The tables whose range reads decode each value in place (IN_PLACE): the Data API's index tables declared
 * `inPlace`, whose values are strings, numbers and lists of them. A byte array in a value would come back as a view
 * of lmdb-js's shared buffer, overwritten by the next read; so `indexUndo` (the bytes each write replaced) and every
 * other table keep lmdb-js's copy.
 */
export const IN_PLACE_TABLES: ReadonlySet<Table> = new Set(DATA_API_TABLES.filter(([, t]) => t.inPlace).map(([name]) => name));

/** Each table's number in a write log (storage/write-log.ts, one byte): its place in TABLES. */
const TABLE_INDEX: ReadonlyMap<Table, number> = new Map(TABLES.map((t, i) => [t, i]));
if (TABLES.length > 256) throw new Error('a write log numbers tables in one byte: more than 256 tables');

/** One named database per table of TABLES. */
type DbName = Table;

export class StorageError extends Error {
  override name = 'StorageError';
}

export class NoStore extends StorageError {
  override name = 'NoStore';
  constructor(readonly dir: string) {
    super(`${dir} holds no chainpost store (no LMDB environment)`);
  }
}

export interface Store extends Kv {
  readonly path: string;
  db(name: DbName): Database<Buffer, string>;
  /** The table with its keys as the bytes stored (migrations). */
  rawKeys(name: DbName): Database<Buffer, Buffer>;
  values<T>(name: DbName): T[];
  /**
   * Writes a snapshot of the whole environment into the existing empty directory `dir` as its data.mdb
   * (LMDB's mdb_env_copy2 in one read transaction: consistent while writers go on); `compact` leaves out
   * free pages and renumbers the rest (smaller, slower). storage/backup.ts checks the target first.
   */
  copyTo(dir: string, compact: boolean): Promise<void>;
  /**
   * Raw bytes that stay valid while the entry stands (not only until the next read, as getRaw's): for a value of
   * more than MAPPED_FROM bytes, lmdb-js's view of the memory map itself (file-backed pages, shared by every thread
   * and process mapping the store, none of it anonymous memory); for one that fits lmdb-js's read buffer, where it
   * copies it, a copy of its own (mappedBytes). A view of a value removed or rewritten since reads pages LMDB may
   * have reused.
   */
  mapped(name: DbName, key: string): Uint8Array | undefined;
  close(): Promise<void>;
}

/** Creates the data directory if missing; a failure is a StorageError naming it. */
export function ensureDataDir(path: string): void {
  try {
    mkdirSync(path, { recursive: true });
  } catch (err) {
    throw new StorageError(`cannot create the data directory ${path}: ${(err as Error).message}`);
  }
}

/** Whether `path` holds an LMDB environment (a store some chainpost made). */
export const hasStore = (path: string): boolean => existsSync(join(path, 'data.mdb'));

/**
 * Opens the store at `path`; without `create`, a directory holding no store is refused (NoStore) rather than made
 * one. A store of an older layout (MIGRATES), or one whose migration was cut short, opens only for its migrating
 * writer (`migrate`: it holds the data directory's lock and calls upgradeSchema before reading anything); any
 * other open is refused, naming the command that migrates it, rather than misread.
 */
export function openStore(path: string, { create = true, migrate = false }: { create?: boolean; migrate?: boolean } = {}): Store {
  if (!create && !hasStore(path)) throw new NoStore(path);
  ensureDataDir(path);
  const dir = realpathSync(path);
  let shared = OPEN.get(dir);
  if (shared === undefined) OPEN.set(dir, (shared = { store: openEnvironment(path, migrate), users: 0 }));
  else checkSchema(shared.store, migrate);
  shared.users++;
  const entry = shared;
  let closed: Promise<void> | undefined;
  // Each opener closes its own handle; the environment closes with the last of them.
  const close = (): Promise<void> => {
    closed ??= --entry.users === 0 && OPEN.get(dir) === entry ? (OPEN.delete(dir), entry.store.close()) : Promise.resolve();
    return closed;
  };
  return { ...entry.store, close };
}

/**
 * The stores open in this thread, by directory: one LMDB environment each, whoever opens it (the server, a CLI run
 * in the same process, a test). lmdb-js gives each open() its own write thread over the one environment LMDB shares
 * in a process: a synchronous write through one would wait for the write lock while the other's write thread holds
 * it waiting for this same thread to run its transaction's callback, and neither would move again. Through one
 * environment, lmdb-js hands its write thread's transaction to the synchronous write instead (storage/README.md, One environment per process).
 */
const OPEN = new Map<string, { store: Store; users: number }>();

function openEnvironment(path: string, migrate: boolean): Store {
  let root: RootDatabase;
  try {
    // noSubdir: false — a path ending in a dotted name is still a directory, as it was created.
    // overlappingSync off: a commit returns (or resolves) only once it is flushed to disk, so
    // what was acknowledged survives a power loss, not just a killed process.
    root = open({ path, maxDbs: 96, encoding: 'binary', compression: false, noSubdir: false, overlappingSync: false, mapSize: MAP_SIZE });
  } catch (err) {
    throw new StorageError(`cannot open the LMDB environment at ${path}: ${(err as Error).message}`);
  }
  const dbs = new Map<DbName, Database<Buffer, string>>();
  /**
   * IN_PLACE_TABLES again, for range reads: a handle whose decoder reads each value where lmdb-js put it, as get()
   * does (unpack copies into strings and numbers). A range of a binary handle copies every value into a new buffer
   * first, only for unpack to read it once.
   */
  const decoding = new Map<DbName, Database<unknown, string>>();
  // One write transaction for every table: lmdb-js commits each openDB on its own otherwise (a commit per table).
  root.transactionSync(() => {
    for (const name of TABLES) {
      const keys = HEX_KEYED_TABLES.has(name) ? { keyEncoder: hexKeys } : {};
      dbs.set(name, root.openDB<Buffer, string>({ name, encoding: 'binary', ...keys }));
      // lmdb-js takes `encoder` per database too; its types name it on the root's options only.
      const options: { name: string; encoder: typeof IN_PLACE } = { name, encoder: IN_PLACE, ...keys };
      if (IN_PLACE_TABLES.has(name)) decoding.set(name, root.openDB<unknown, string>(options));
    }
  });
  const db = (name: DbName): Database<Buffer, string> => dbs.get(name)!;
  /** The writes of a writeBehind under way: table, key, and the bytes (null: a removal). */
  let behind: Array<[DbName, string | Uint8Array, Buffer | null]> | undefined;
  // lmdb-js writes a byte key as it is (ordered-binary), a string key as its UTF-8.
  const write = (name: DbName, k: string | Uint8Array, bytes: Buffer | null): void => {
    const key = k as string;
    if (behind !== undefined) behind.push([name, key, bytes]);
    else if (bytes === null) db(name).removeSync(key);
    else db(name).putSync(key, bytes);
  };

  const store: Store = {
    path,
    db,
    rawKeys: (name) => root.openDB<Buffer, Buffer>({ name, encoding: 'binary', keyEncoding: 'binary' }),
    get<T>(name: DbName, key: string): T | undefined {
      // getBinaryFast reuses one large buffer and marks the value's size in
      // `length` only: view that many bytes (no copy) and decode before the next read.
      const bytes = db(name).getBinaryFast(key);
      return bytes === undefined ? undefined : unpack<T>(bytes.subarray(0, bytes.length));
    },
    put(name, key, value) {
      // A write now copies the bytes at once: no copy of the encoding first (a write behind keeps them: a copy).
      if (behind !== undefined) return write(name, key, Buffer.from(pack(value)));
      const shared = packShared(value);
      write(name, key, Buffer.from(shared.buffer, shared.byteOffset, shared.byteLength));
    },
    remove: (name, key) => write(name, key, null),
    values<T>(name: DbName): T[] {
      return store.range<T>(name).map((e) => e.value);
    },
    count(name, opts) {
      // lmdb-js's getKeysCount walks the whole range whatever its limit: a bounded count walks only that many keys.
      if (opts.limit === undefined) return db(name).getKeysCount(opts);
      let n = 0;
      for (const _ of db(name).getKeys(opts)) n++;
      return n;
    },
    keys: (name, opts) => Array.from(db(name).getKeys(opts)),
    removeRange(name, opts) {
      // The keys first: removing while the cursor walks them would move it.
      const keys = [...db(name).getKeys(opts)];
      for (const key of keys) write(name, key, null);
      return keys.length;
    },
    has: (name, key) => db(name).doesExist(key),
    putRaw: (name, key, bytes) => write(name, key, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)),
    mapped: (name, key) => mappedBytes(db(name).getBinaryFast(key)),
    getRaw(name, key) {
      const b = db(name).getBinaryFast(key);
      return b === undefined ? undefined : b.subarray(0, b.length);
    },
    range<T>(name: DbName, opts: { start?: string; end?: string; limit?: number; reverse?: boolean } = {}): Array<Entry<T>> {
      const decoded = decoding.get(name);
      // lmdb-js makes a fresh {key, value} for each entry: kept as it is.
      if (decoded !== undefined) return Array.from(decoded.getRange(opts)) as Array<Entry<T>>;
      return Array.from(db(name).getRange(opts), ({ key, value }) => ({ key, value: unpack<T>(value) }));
    },
    transact: (fn) => root.transactionSync(fn),
    // A child transaction: a throw in `fn` takes back what it wrote (a plain asynchronous callback's writes would be committed with its batch).
    transactAsync: (fn) => root.childTransaction(fn),
    writeBehind(fn) {
      if (behind !== undefined) throw new StorageError('writeBehind does not nest');
      const ops: Array<[DbName, string | Uint8Array, Buffer | null]> = (behind = []);
      try {
        fn();
      } finally {
        behind = undefined;
      }
      // One conditional block with no condition: lmdb-js queues its writes for its write thread, which
      // applies them in one transaction (the bytes are read from these buffers there, not copied here).
      return root
        .batch(() => {
          for (const [name, key, bytes] of ops) void (bytes === null ? db(name).remove(key as string) : db(name).put(key as string, bytes));
        })
        .then(() => {});
    },
    overlay: (opts) =>
      overlay(
        {
          ...store,
          hexKeyed: (table) => HEX_KEYED_TABLES.has(table),
          tableIndex: (table) => TABLE_INDEX.get(table)!,
          write: (log, expect) => (writer ??= new StoreWriter(path, () => root.resetReadTxn())).write(log, expect),
        },
        opts?.writeOnly ?? WRITTEN_ONLY_TABLES,
      ),
    copyTo: (dir, compact) => root.backup(dir, compact),
    close: async () => {
      await writer?.close();
      await root.close();
    },
  };
  /** The thread the overlays' units are written in (storage/writer.ts), started at the first. */
  let writer: StoreWriter | undefined;
  checkSchema(store, migrate);
  return store;
}

/** `meta` key present while a migration to this version is under way: the version it started from. */
const MIGRATING = 'migratingFrom';

/** Whether the store still needs upgradeSchema: an older layout, or a migration cut short. */
function needsMigration(store: Store): boolean {
  const found = store.get<number>('meta', 'schemaVersion');
  return (found !== undefined && MIGRATES.has(found)) || store.get<number>('meta', MIGRATING) !== undefined;
}

/**
 * Brings a store of a version this one migrates (MIGRATES) to this version, once its writer holds the data
 * directory's lock (the server, an exclusive CLI command) and before anything reads the indexes. The version is
 * marked first, with the version it came from under `meta/migratingFrom`, so an older chainpost refuses the
 * store from the first rewritten key on; then the keys of HEX_KEYED_TABLES written as text (before version 5)
 * are rewritten (migrateHexKeys); then the delivery rows written before partitions (before version 8) move to
 * partition 0 (renameKeys); then a partition's marks row of a chain (before version 9) becomes a row per event
 * (splitRows); then each NFT trade (before version 10) gets its buyer's and seller's rows (addRows); then the
 * wallet history rows repeating an address's `tx/` list (before version 11) go (dropRows); then the `tx/` and `a/`
 * lists become a row per block (before version 13: regroup); then the mark of the migration goes. A migration cut short goes on at the
 * next upgrade. `started` hears the version it starts from before the walk; undefined when nothing was to do.
 */
export function upgradeSchema(store: Store, started: (from: number) => void = () => {}): SchemaUpgrade | undefined {
  if (!needsMigration(store)) return undefined;
  const from = store.transact(() => {
    const found = store.get<number>('meta', 'schemaVersion')!;
    if (store.get<number>('meta', MIGRATING) === undefined) store.put('meta', MIGRATING, found);
    store.put('meta', 'schemaVersion', SCHEMA_VERSION);
    return store.get<number>('meta', MIGRATING)!;
  });
  // Said before the walk: on a large store it holds the start for a while.
  started(from);
  let rewrittenKeys = 0;
  if (from < HEX_KEYS_SINCE) for (const table of HEX_KEYED_TABLES) rewrittenKeys += migrateHexKeys(store, table);
  if (from < PARTITIONED_SINCE)
    for (const table of PARTITIONED_TABLES) rewrittenKeys += renameKeys(store, table, (key) => keyInPartition0(table, key));
  if (from < MARKS_PER_EVENT_SINCE) rewrittenKeys += splitRows(store, 'matchMarks', (key, value) => marksPerEvent(store, key, value));
  if (from < WALLET_TRADES_SINCE)
    rewrittenKeys += addRows(store, 'nftTrades', 'contract/', (key, value) => walletTradeRows(store, key, value));
  if (from < HIST_APART_SINCE) rewrittenKeys += dropRows(store, 'addressTxs', 'hist/', (key) => repeatsTx(store, key));
  if (from < GROUPED_SINCE) {
    // Blocks with an undo row keep their rows as written: a reorg takes them back by their keys.
    const undone = new Set(store.keys('indexUndo', {}));
    const chainOf = (key: string, at: number): string => key.split('/')[at]!;
    rewrittenKeys += regroup(store, 'addressTxs', 'tx/', txListEnd, (key, n) => undone.has(blockKey(chainOf(key, 1), n)));
    rewrittenKeys += regroup(store, 'contractLogs', '', contractListEnd, (key, n) => undone.has(blockKey(chainOf(key, 0), n)));
  }
  store.transact(() => store.remove('meta', MIGRATING));
  return { from, rewrittenKeys };
}

/** What upgradeSchema did (to SCHEMA_VERSION): the version it started from (a migration cut short: the one it first started from), and the keys it rewrote. */
export interface SchemaUpgrade {
  from: number;
  rewrittenKeys: number;
}

/**
 * Rewrites a table's keys stored as text into storage/hex-keys.ts's form, `batch` per transaction; a run cut
 * short is finished by the next (a key already rewritten is left). The rewritten key sorts before the text one
 * (its first hex segment starts with a tag byte below every digit), so the walk never meets it again. Returns
 * how many keys it rewrote.
 */
export function migrateHexKeys(store: Store, table: Table, batch = 10_000): number {
  const raw = store.rawKeys(table);
  const db = store.db(table);
  let moved = 0;
  let from: Buffer | undefined;
  for (;;) {
    let seen = 0;
    store.transact(() => {
      // The keys first: writing while the cursor walks them would move it.
      const rows = [...raw.getRange({ ...(from === undefined ? {} : { start: from }), limit: batch })].map(({ key, value }) => ({
        key,
        value: Buffer.from(value),
      }));
      seen = rows.length;
      if (rows.length > 0) from = Buffer.concat([rows.at(-1)!.key, Buffer.from([0])]);
      for (const { key, value } of rows) {
        const text = readHexKey(key, 0, key.length);
        if (hexKeyBytes(text).equals(key)) continue;
        db.putSync(text, value);
        raw.removeSync(key);
        moved++;
      }
    });
    if (seen < batch) return moved;
  }
}

/**
 * Moves each key of a table that `rename` answers a new one for there, with its bytes, in batches (inKeyBatches); a
 * run cut short is finished by the next (`rename` answers nothing for a key moved already). Returns how many it moved.
 */
export function renameKeys(store: Store, table: Table, rename: (key: string) => string | undefined, batch = 10_000): number {
  return inKeyBatches(store, table, '', batch, (keys) => {
    let moved = 0;
    for (const key of keys) {
      const to = rename(key);
      if (to === undefined) continue;
      // A view of the read buffer: copied before the writes.
      store.putRaw(table, to, Uint8Array.prototype.slice.call(store.getRaw(table, key)!));
      store.remove(table, key);
      moved++;
    }
    return moved;
  });
}

/**
 * Replaces each row of a table that `split` answers rows for with those rows, in batches (inKeyBatches); a run
 * cut short is finished by the next (`split` answers nothing for a row of the new form). Returns how many rows it
 * replaced.
 */
export function splitRows(
  store: Store,
  table: Table,
  split: (key: string, value: unknown) => ReadonlyArray<readonly [string, unknown]> | undefined,
  batch = 100,
): number {
  return inKeyBatches(store, table, '', batch, (keys) => {
    let replaced = 0;
    for (const key of keys) {
      const into = split(key, store.get(table, key));
      if (into === undefined) continue;
      store.remove(table, key);
      for (const [k, v] of into) store.put(table, k, v);
      replaced++;
    }
    return replaced;
  });
}

/**
 * Adds the rows `more` answers for each row of a table under `prefix`, in batches (inKeyBatches); a run cut short is
 * finished by the next (`more` answers nothing for a row whose rows are there). Returns how many rows it added rows
 * for.
 */
export function addRows(
  store: Store,
  table: Table,
  prefix: string,
  more: (key: string, value: unknown) => ReadonlyArray<readonly [string, unknown]> | undefined,
  batch = 1_000,
): number {
  return inKeyBatches(store, table, prefix, batch, (keys) => {
    let added = 0;
    for (const key of keys) {
      const into = more(key, store.get(table, key));
      if (into === undefined) continue;
      for (const [k, v] of into) store.put(table, k, v);
      added++;
    }
    return added;
  });
}

/**
 * Removes the rows under `prefix` that `drop` names, in batches (inKeyBatches); a run cut short is finished by the
 * next. Returns how many it removed. A key an undo row names (a reorg's takeback) is removed then as a key that is no longer there.
 */
export function dropRows(store: Store, table: Table, prefix: string, drop: (key: string) => boolean, batch = 10_000): number {
  return inKeyBatches(store, table, prefix, batch, (keys) => {
    let dropped = 0;
    for (const key of keys) {
      if (!drop(key)) continue;
      store.remove(table, key);
      dropped++;
    }
    return dropped;
  });
}

/** Refuses a data directory written by another schema version rather than misreading it. */
function checkSchema(store: Store, migrate: boolean): void {
  store.transact(() => {
    const found = store.get<number>('meta', 'schemaVersion');
    if (found === undefined) {
      store.put('meta', 'schemaVersion', SCHEMA_VERSION);
    } else if (found !== SCHEMA_VERSION && !MIGRATES.has(found)) {
      throw new StorageError(
        `${store.path} holds schema version ${found}; this chainpost reads version ${SCHEMA_VERSION}. Use a matching chainpost or another CHAINPOST_DATA directory.`,
      );
    }
  });
  if (!migrate && needsMigration(store)) {
    const from = store.get<number>('meta', MIGRATING) ?? store.get<number>('meta', 'schemaVersion');
    throw new StorageError(
      `${store.path} holds schema version ${from}, which this chainpost migrates to version ${SCHEMA_VERSION} when it starts on it: run \`chainpost serve\` (npm start) on this CHAINPOST_DATA once, then this command`,
    );
  }
}
