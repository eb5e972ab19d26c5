/**
 * The data directory side of the binary: opening a store that must exist, and the lock and migration of a command
 * that holds the directory. Loaded only by the commands that read a store (cli/main.ts): LMDB and the store's code
 * would cost --help, a usage error, a refused configuration and `status` their load.
 */
import { ConfigError } from '../../engine/config/config.js';
import { dataDir } from '../../storage/data-dir.js';
import { NoStore, SCHEMA_VERSION, openStore, upgradeSchema, type Store } from '../../storage/env.js';
import { lockDataDir, type DataDirLock } from '../../storage/lock.js';
import type { Command } from './commands.js';

/** The store in `dir`; a directory without one is refused unless `create`, naming CHAINPOST_DATA and the way out. */
export function openExisting(dir: string, command: Command, create: boolean): Store {
  return dataDir(() => {
    try {
      // An exclusive command takes the lock next and migrates an older layout before it runs.
      return openStore(dir, { create, migrate: command.data === 'exclusive' });
    } catch (err) {
      if (!(err instanceof NoStore)) throw err;
      const how =
        command.options?.['create'] !== undefined
          ? 'or pass --create to make a new store there'
          : 'or make one there with `chainpost serve` or `chainpost keys create --create`';
      throw new ConfigError('CHAINPOST_DATA', `${err.message}. Set CHAINPOST_DATA to the data directory of your server, ${how}`);
    }
  });
}

/** An exclusive command's hold on `dir`: its lock, then the store migrated to this layout (said on `err`, stderr). */
export function holdExclusive(store: Store, dir: string, err: (text: string) => void): DataDirLock {
  const lock = dataDir(() => lockDataDir(dir));
  const upgraded = upgradeSchema(store, (from) => err(`chainpost: migrating the store from layout version ${from} to ${SCHEMA_VERSION}\n`));
  if (upgraded !== undefined) err(`chainpost: migrated the store (${upgraded.rewrittenKeys} keys rewritten)\n`);
  return lock;
}
