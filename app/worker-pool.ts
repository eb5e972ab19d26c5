import { fileURLToPath } from 'node:url';
import type { FamilyPools } from '../engine/families/registry.js';
import type { FilterCompiler, MatchPool } from '../engine/match/ports.js';
import { taskPool } from '../workers/pool.js';
import { FAMILIES, type ServerFamilies } from './families.js';
import type { FamilyTask } from './family-tasks.js';

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

export function workerPool(path: string, threads?: number): WorkerPool {
  const pool = taskPool({ path, entry: workerEntry(), ...(threads === undefined ? {} : { threads }) });
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

/** The compiled entry: beside this file in dist/, or in dist/ when this runs from the TypeScript sources (vitest). */
function workerEntry(): string {
  const here = fileURLToPath(import.meta.url);
  return here.endsWith('.ts')
    ? fileURLToPath(new URL('../dist/app/worker.js', import.meta.url))
    : fileURLToPath(new URL('./worker.js', import.meta.url));
}
