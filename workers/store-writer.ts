/**
 * The store's writer thread, started by storage/writer.ts (by its path: storage/ imports no thread of workers/): opens the data directory's LMDB environment in this thread and
 * writes each unit it is sent in one synchronous transaction here, where the B-tree work holds no event loop, after
 * checking the store holds what the unit expects (else it writes nothing).
 */
import { isDeepStrictEqual } from 'node:util';
import { parentPort, workerData } from 'node:worker_threads';
import { TABLES, openStore } from '../storage/env.js';
import { readLog } from '../storage/write-log.js';
import type { WriterReply, WriterUnit } from '../storage/writer.js';
import { lowerThreadPriority } from './priority.js';

// Below the serving thread, as the worker pool's threads: its units are background work, and the event loop (and
// the garbage collector's helpers working for it) must not wait for a core behind them.
lowerThreadPriority();
const store = openStore((workerData as { path: string }).path, { create: false });

parentPort!.on('message', ({ id, log, expect }: WriterUnit) => {
  let reply: WriterReply;
  try {
    const wrote = store.transact(() => {
      for (const [table, key, value] of expect) if (!isDeepStrictEqual(store.get(table, key), value)) return false;
      for (const w of readLog(log)) {
        const table = TABLES[w.table]!;
        if (w.value === null) store.remove(table, w.key);
        else store.putRaw(table, w.key, w.value);
      }
      return true;
    });
    reply = { id, wrote };
  } catch (err) {
    reply = { id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  parentPort!.postMessage(reply);
});
