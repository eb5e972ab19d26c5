import { compileHere, layerHere } from '../engine/match/compile.js';
import type { LayerResult, LayerTask } from '../engine/match/bases.js';
import type { FilterSetData } from '../engine/match/filter-set.js';
import type { CompileTask, Matchings } from '../engine/match/ports.js';
import { storedAddresses } from '../engine/match/watched-keys.js';
import { freshSnapshot, workerDb, workerKv } from './worker-store.js';

/**
 * The compile task of the worker pool: a chain's filter set built from what its streams watch (the family's
 * compile), off the serving thread. The task names the streams; their addresses are read here, from this worker's
 * own handle on the store (`streamAddresses`, in one read snapshot taken when the task starts: every change the
 * task's version counts was committed before it was posted), so none travels between threads. Its key sets are
 * made in shared memory, so they come back without a copy; with the task's `store`, the address set is written to the
 * store as the chain's base here (engine/match/stored-base.ts) and comes back by ref.
 */
export const compileTask =
  (matching: Matchings) =>
  (task: CompileTask): FilterSetData => {
    freshSnapshot();
    const db = workerDb('streamAddresses');
    return compileHere(
      matching,
      task,
      storedAddresses((opts) => db.getKeys(opts) as Iterable<string>),
      workerKv,
    );
  };

/** A change layer of the watch log (engine/match/bases.ts), read from this worker's own snapshot. */
export const layerTask =
  (matching: Matchings) =>
  (task: LayerTask): LayerResult => {
    freshSnapshot();
    return layerHere(matching, task, workerKv);
  };
