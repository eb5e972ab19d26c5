import { workerData } from 'node:worker_threads';
import { open, type Database, type RootDatabase } from 'lmdb';
import { move } from 'piscina';
import { blockKey } from '../engine/ingest/store.js';
import { FilterSet, packMatches, type FilterSetData } from '../engine/match/filter-set.js';

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

let root: RootDatabase | undefined;
let probes: Database<Buffer, string> | undefined;
const sets = new Map<string, FilterSet>();

function probeDb(path: string): Database<Buffer, string> {
  if (probes === undefined) {
    root = open({ path, maxDbs: 64, encoding: 'binary', compression: false, noSubdir: false, readOnly: true });
    probes = root.openDB<Buffer, string>({ name: 'probes', encoding: 'binary' });
  }
  return probes;
}

function filterOf(chain: string, data: FilterSetData): FilterSet {
  const cur = sets.get(chain);
  if (cur !== undefined && cur.version === data.version) return cur;
  const next = new FilterSet(data);
  sets.set(chain, next);
  return next;
}

function matchBlocks(path: string, task: MatchTask): Array<Map<number, number[]>> {
  const db = probeDb(path);
  // A fresh snapshot per task: blocks the main thread committed since the last one are seen.
  db.resetReadTxn();
  const set = filterOf(task.chain, task.filter);
  return task.numbers.map((n) => {
    // getBinaryFast: a view into LMDB's shared read buffer, valid until the next read; matched before it.
    const bytes = db.getBinaryFast(blockKey(task.chain, n));
    return bytes === undefined ? new Map() : set.match(bytes.subarray(0, bytes.length));
  });
}

/** Per block of the task, in order, packed (packMatches); a block without a probe column (pruned, rolled back) has no match. */
export default function run(task: MatchTask): Uint32Array {
  // Moved, not copied, back to the main thread.
  return move(packMatches(matchBlocks((workerData as { path: string }).path, task))) as Uint32Array;
}
