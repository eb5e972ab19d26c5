import { move } from 'piscina';
import { packMatches, type FilterSetData } from '../engine/match/filter-set.js';
import { FilterSets, matchBlocks } from '../engine/match/match-blocks.js';
import type { Matchings } from '../engine/match/ports.js';
import { workerDb, workerKv } from './worker-store.js';
import type { StoredSetRef } from '../engine/match/layered.js';
import { readKeySet } from '../engine/match/stored-key-set.js';
import { mappedBytes } from '../storage/map-size.js';

/**
 * A match worker (piscina): opens the server's LMDB environment in this thread,
 * reads each block's probe column without copying it, and tests it against the
 * chain's compiled filter set. The set arrives with every task as shared
 * memory; a new version replaces the old one between two tasks, so workers
 * swap without stopping.
 */
export interface MatchTask {
  chain: string;
  numbers: number[];
  filter: FilterSetData;
}

/**
 * The match task over the families' walks (the worker entry, app/worker.ts, gives the registry): per block of
 * the task, in order, packed (packMatches); a block without a probe column (pruned, rolled back) has no match.
 */
export function matchTask(matching: Matchings): (task: MatchTask) => Uint32Array {
  const sets = new FilterSets(matching, resolveStored);
  return (task) => {
    const db = workerDb('probes');
    // A fresh snapshot per task: blocks the main thread committed since the last one are seen.
    db.resetReadTxn();
    const matches = matchBlocks(sets.of(task.chain, task.filter), task.chain, task.numbers, (key) => {
      // getBinaryFast: a view into LMDB's shared read buffer, valid until the next read; matched before it.
      const bytes = db.getBinaryFast(key);
      return bytes === undefined ? undefined : bytes.subarray(0, bytes.length);
    });
    // Moved, not copied, back to the main thread.
    return move(packMatches(matches)) as Uint32Array;
  };
}

/**
 * A base kept in the store, read through this worker's handle: its table as views of the map (valid while the base
 * stands: the main thread removes it only once no task naming it runs), its bloom filter the shared one of the ref.
 */
function resolveStored(ref: StoredSetRef) {
  const db = workerDb('watchedSets');
  const data = readKeySet(workerKv, (key) => mappedBytes(db.getBinaryFast(key)), ref.stored, ref.bloom);
  if (data === undefined) throw new Error(`no stored set ${ref.stored}`);
  return data;
}
