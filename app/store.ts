import { SCHEMA_VERSION, openStore, upgradeSchema, type Store } from '../storage/env.js';
import { lockDataDir } from '../storage/lock.js';
import { dataDir } from '../storage/data-dir.js';
import type { Logger } from '../engine/log.js';

export interface ServerStore {
  store: Store;
  /** Closes the store and gives up the data directory. */
  close(): Promise<void>;
}

/**
 * The data directory, held by this process (one server per CHAINPOST_DATA), and its store, migrated to this
 * layout. The lock comes first: a second server must not deliver, ingest or start a devnet on this directory.
 */
export function openServerStore({ dir, log }: { dir: string; log: Logger }): ServerStore {
  const lock = dataDir(() => lockDataDir(dir));
  let store: Store;
  try {
    // The lock is held: an older layout is migrated here, before anything reads it.
    store = dataDir(() => openStore(dir, { migrate: true }));
    const upgraded = upgradeSchema(store, (from) =>
      log.info('migrating the store to this layout; the server answers once it is done', { dir, from, to: SCHEMA_VERSION }),
    );
    if (upgraded !== undefined) log.info('migrated the store', { dir, ...upgraded, to: SCHEMA_VERSION });
  } catch (err) {
    lock.release();
    throw err;
  }
  return {
    store,
    close: async () => {
      await store.close();
      lock.release();
    },
  };
}
