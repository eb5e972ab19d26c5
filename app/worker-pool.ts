import type { FamilyPools } from '../engine/families/registry.js';
import type { FilterCompiler, MatchPool } from '../engine/match/ports.js';
import { taskPool } from '../workers/pool.js';
import { FAMILIES, type ServerFamilies } from './families.js';
import type { FamilyTask } from './family-tasks.js';
import { startWorkerThreads, type Threads } from './worker-threads.js';

/**
 * The server's worker pool (workers/pool.ts) on the entry of app/worker.ts: matching, compiling, and each
 * family's tasks as the ports its follower and the rest use (preparing its blocks, deriving xpub windows).
 */
export type WorkerPool = FamilyPools<ServerFamilies['byName']> & {
  match: MatchPool;
  compile: FilterCompiler;
  ready(): Promise<void>;
  close(): Promise<void>;
};

/** The pool on threads already started (startWorkerThreads), or on new ones over the store at `path`. */
export function workerPool(on: Threads | string, threads?: number): WorkerPool {
  const pool = taskPool(typeof on === 'string' ? startWorkerThreads(on, threads) : on);
  return {
    match: pool.match,
    compile: pool.compile,
    ...FAMILIES.pools(
      (name, input, moved) => pool.run('family', { name, input } satisfies FamilyTask, moved),
      ['match', 'compile', 'ready', 'close'],
    ),
    ready: () => pool.ready(),
    close: () => pool.close(),
  };
}

/** The match workers alone (benches and tests of matching). */
export const matchPool = (path: string, threads?: number): MatchPool => workerPool(path, threads).match;
