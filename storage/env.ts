import { mkdirSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import { pack, unpack } from './codec.js';

/**
 * The one LMDB environment of a chainpost data directory. Layout and key
 * formats: storage/README.md. Opened by the server and by the CLI at the same
 * time (LMDB is multi-process); a write by one is seen by the other's next read.
 */
export const SCHEMA_VERSION = 1;

/** Named databases. A new one is added here and in storage/README.md. */
export const DB_NAMES = ['meta', 'keys', 'tenants'] as const;
export type DbName = (typeof DB_NAMES)[number];

export class StorageError extends Error {
  override name = 'StorageError';
}

export interface Store {
  readonly path: string;
  readonly root: RootDatabase;
  db(name: DbName): Database<Buffer, string>;
  get<T>(name: DbName, key: string): T | undefined;
  putSync(name: DbName, key: string, value: unknown): void;
  removeSync(name: DbName, key: string): void;
  values<T>(name: DbName): T[];
  transactSync<T>(fn: () => T): T;
  close(): Promise<void>;
}

export function openStore(path: string): Store {
  mkdirSync(path, { recursive: true });
  let root: RootDatabase;
  try {
    root = open({ path, maxDbs: 64, encoding: 'binary', compression: false });
  } catch (err) {
    throw new StorageError(`cannot open the LMDB environment at ${path}: ${(err as Error).message}`);
  }
  const dbs = new Map<DbName, Database<Buffer, string>>();
  for (const name of DB_NAMES) dbs.set(name, root.openDB<Buffer, string>({ name, encoding: 'binary' }));
  const db = (name: DbName): Database<Buffer, string> => dbs.get(name)!;

  const store: Store = {
    path,
    root,
    db,
    get<T>(name: DbName, key: string): T | undefined {
      // getBinaryFast reuses one large buffer and marks the value's size in
      // `length` only: view that many bytes (no copy) and decode before the next read.
      const bytes = db(name).getBinaryFast(key);
      return bytes === undefined ? undefined : unpack<T>(bytes.subarray(0, bytes.length));
    },
    putSync: (name, key, value) => void db(name).putSync(key, Buffer.from(pack(value))),
    removeSync: (name, key) => void db(name).removeSync(key),
    values<T>(name: DbName): T[] {
      const out: T[] = [];
      for (const { value } of db(name).getRange()) out.push(unpack<T>(value));
      return out;
    },
    transactSync: (fn) => root.transactionSync(fn),
    close: () => root.close(),
  };
  checkSchema(store);
  return store;
}

/** Refuses a data directory written by another schema version rather than misreading it. */
function checkSchema(store: Store): void {
  store.transactSync(() => {
    const found = store.get<number>('meta', 'schemaVersion');
    if (found === undefined) {
      store.putSync('meta', 'schemaVersion', SCHEMA_VERSION);
    } else if (found !== SCHEMA_VERSION) {
      throw new StorageError(
        `${store.path} holds schema version ${found}; this chainpost reads version ${SCHEMA_VERSION}. Use a matching chainpost or another CHAINPOST_DATA directory.`,
      );
    }
  });
}
