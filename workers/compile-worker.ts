import { compileHere } from '../engine/match/compile.js';
import type { FilterSetData } from '../engine/match/filter-set.js';
import type { CompileTask, Matchings } from '../engine/match/ports.js';
import { storedAddresses } from '../engine/match/watched-keys.js';
import { workerDb } from './worker-store.js';

/**
 * The compile task of the worker pool: a chain's filter set built from what its streams watch (the family's
 * compile), off the serving thread. The task names the streams; their addresses are read here, from this worker's
 * own handle on the store (`streamAddresses`, in one read snapshot taken when the task starts: every change the
 * task's version counts was committed before it was posted), so none travels between threads. Its key sets are
 * made in shared memory, so they come back without a copy.
 */
export const compileTask =
  (matching: Matchings) =>
  (task: CompileTask): FilterSetData => {
    const db = workerDb('streamAddresses');
    db.resetReadTxn();
    return compileHere(
      matching,
      task,
      storedAddresses((opts) => db.getKeys(opts) as Iterable<string>),
    );
  };
