import { workerData } from 'node:worker_threads';
import { open, type Database, type RootDatabase } from 'lmdb';
import { MAP_SIZE } from '../storage/map-size.js';

/**
 * This worker's read-only handle on the server's LMDB environment (its path in workerData), opened at the first
 * use and shared by the worker's tasks: one environment per thread (storage/README.md, One environment per process).
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
      readOnly: true,
      mapSize: MAP_SIZE,
    });
    dbs.set(name, (db = root.openDB<Buffer, string>({ name, encoding: 'binary' })));
  }
  return db;
}
