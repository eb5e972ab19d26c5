/**
 * The entry of the server's one worker pool (workers/pool.ts): each task kind
 * is a named export, chosen by the `name` piscina runs a task with.
 */
import { lowerThreadPriority } from './priority.js';

lowerThreadPriority();

export { default } from './match-worker.js';
export { bitcoin, ingest, solana } from './ingest-worker.js';
export { compile } from './compile-worker.js';
export { deriveWindow as xpubWindow } from '../engine/bitcoin/xpub-windows.js';

/** Answers once this worker has loaded (the pool's readiness check). */
export const ping = (): true => true;
