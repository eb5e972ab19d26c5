import { unpackMatches, type FilterSetData } from '../engine/match/filter-set.js';
import type { CompileTask, FilterCompiler, MatchPool } from '../engine/match/ports.js';
import type { LayerTask } from '../engine/match/bases.js';
import { postable } from '../engine/match/layered.js';
import type { Threads } from './threads.js';
import { ownBuffers } from './transfer.js';

/**
 * The server's worker threads (workers/threads.ts): one piscina pool, one worker per core unless told (CHAINPOST_WORKER_THREADS), that
 * matches blocks (each worker with its own read handle on the server's LMDB environment), compiles large filter
 * sets, and runs the chain families' own tasks (preparing the blocks ingestion writes, deriving xpub windows) by
 * name. The entry the workers load is given (app/worker.ts): this folder knows no family.
 */
export interface TaskPool {
  match: MatchPool;
  /** Filter sets compiled off the serving thread. */
  compile: FilterCompiler;
  /** Runs the entry's task `name`; the byte arrays of `moved` are moved to the worker, not copied. */
  run<R>(name: string, task: unknown, moved?: ReadonlyArray<Uint8Array | null>): Promise<R>;
  /** Resolves once every worker has loaded its code (a task each), rejects when one cannot. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function taskPool(threads: Threads): TaskPool {
  const pool = threads.piscina;
  const close = (): Promise<void> => threads.close();
  return {
    match: {
      async match(chain: string, numbers: readonly number[], filter: FilterSetData) {
        // A base kept in the store travels by ref (its name and bloom filter): each worker reads its own views.
        const posted = { ...filter, sets: filter.sets.map(postable) };
        const packed = (await pool.run({ chain, numbers: [...numbers], filter: posted })) as Uint32Array;
        return unpackMatches(packed, numbers.length);
      },
      close,
    },
    compile: {
      compile: (task: CompileTask) => pool.run(task, { name: 'compile' }),
      layer: (task: LayerTask) => pool.run(task, { name: 'layer' }),
    },
    run: (name, task, moved = []) => pool.run(task, { name, transferList: ownBuffers(moved) }),
    // One task per thread: a worker takes one at a time, so each of them answers. Lazy threads load at the first task.
    ready: () =>
      threads.lazy
        ? Promise.resolve()
        : Promise.all(Array.from({ length: threads.count }, () => pool.run(null, { name: 'ping' }))).then(() => {}),
    close,
  };
}
