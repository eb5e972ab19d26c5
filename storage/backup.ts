import { readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { StorageError, type Store } from './env.js';

/** What backupStore wrote: the copy's data.mdb and its size. */
export interface Backup {
  file: string;
  bytes: number;
  compact: boolean;
}

/**
 * `chainpost backup <dir>`: a consistent copy of the live store (the one LMDB environment: streams, keys,
 * queues, indexes) into `target`, which must be an existing empty directory, so that nothing is overwritten
 * and no half-copied directory is mistaken for a store; the copy is a data directory a server starts on.
 * The store's writers go on meanwhile: the copy is the store as one read transaction saw it.
 */
export async function backupStore(store: Store, target: string, { compact }: { compact: boolean }): Promise<Backup> {
  const dir = resolve(target);
  checkTarget(dir, store.path);
  const file = join(dir, 'data.mdb');
  try {
    await store.copyTo(dir, compact);
  } catch (err) {
    // A copy cut short (a full disk) is not a store: nothing of it stays to be started on.
    rmSync(file, { force: true });
    throw new StorageError(`cannot copy the store into ${dir}: ${(err as Error).message}`);
  }
  return { file, bytes: statSync(file).size, compact };
}

/** Refuses a target that is missing, not a directory, not empty, or the store's own directory. */
function checkTarget(dir: string, source: string): void {
  let entries: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new StorageError(`the backup target ${dir} is not a directory`);
    entries = readdirSync(dir);
  } catch (err) {
    if (err instanceof StorageError) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new StorageError(`the backup target ${dir} does not exist: create an empty directory for it first`);
    throw new StorageError(`cannot read the backup target ${dir}: ${(err as Error).message}`);
  }
  if (dir === resolve(source)) throw new StorageError(`the backup target ${dir} is the data directory itself`);
  const [first, ...more] = entries.sort();
  if (first !== undefined)
    throw new StorageError(
      `the backup target ${dir} is not empty (it holds ${first}${more.length > 0 ? ` and ${more.length} more` : ''}): give an empty directory, so nothing is overwritten`,
    );
}
