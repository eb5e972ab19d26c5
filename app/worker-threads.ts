import { fileURLToPath } from 'node:url';
import { startThreads, type Threads } from '../workers/threads.js';
import { FAMILIES } from './families.js';

export type { Threads } from '../workers/threads.js';

/** What each thread of the pool is started with: the store's path, and the names of the families it loads the worker parts of. */
export interface PoolData {
  path: string;
  families: readonly string[];
}

/**
 * The server's worker threads on the entry of app/worker.ts, started: each loads its modules while the starting thread
 * goes on; `lazy`, each starts at the first task that needs it.
 */
export const startWorkerThreads = (path: string, threads?: number, lazy = false): Threads =>
  startThreads({
    entry: workerEntry(),
    data: { path, families: FAMILIES.list.map((f) => f.name) } satisfies PoolData,
    lazy,
    ...(threads === undefined ? {} : { threads }),
  });

/** The compiled entry: beside this file in dist/, or in dist/ when this runs from the TypeScript sources (vitest). */
function workerEntry(): string {
  const here = fileURLToPath(import.meta.url);
  return here.endsWith('.ts')
    ? fileURLToPath(new URL('../dist/app/worker.js', import.meta.url))
    : fileURLToPath(new URL('./worker.js', import.meta.url));
}
