import { fileURLToPath } from 'node:url';
import { startThreads, type Threads } from '../workers/threads.js';

export type { Threads } from '../workers/threads.js';

/**
 * The server's worker threads on the entry of app/worker.ts, started. Light to import (piscina alone): `serve` starts
 * them before it imports the server, so the threads load their modules while the serving thread loads its own.
 */
export const startWorkerThreads = (path: string, threads?: number): Threads =>
  startThreads({ path, entry: workerEntry(), ...(threads === undefined ? {} : { threads }) });

/** The compiled entry: beside this file in dist/, or in dist/ when this runs from the TypeScript sources (vitest). */
function workerEntry(): string {
  const here = fileURLToPath(import.meta.url);
  return here.endsWith('.ts')
    ? fileURLToPath(new URL('../dist/app/worker.js', import.meta.url))
    : fileURLToPath(new URL('./worker.js', import.meta.url));
}
