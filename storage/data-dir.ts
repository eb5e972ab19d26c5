import { ConfigError } from '../engine/config/config.js';
import { StorageError } from './env.js';

/** Opens (or locks) the data directory; a failure (a StorageError: no directory, locked, another schema) names CHAINPOST_DATA. */
export function dataDir<T>(open: () => T): T {
  try {
    return open();
  } catch (err) {
    if (err instanceof StorageError) throw new ConfigError('CHAINPOST_DATA', err.message);
    throw err;
  }
}
