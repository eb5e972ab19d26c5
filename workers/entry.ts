/**
 * What every worker entry exports beside its families' tasks (app/worker.ts): the match task (the default),
 * the compile task, and the readiness ping. Loading it lowers the thread's priority below the serving thread's.
 */
import { lowerThreadPriority } from './priority.js';

lowerThreadPriority();

export { default } from './match-worker.js';
export { compile } from './compile-worker.js';

/** Answers once this worker has loaded (the pool's readiness check). */
export const ping = (): true => true;
