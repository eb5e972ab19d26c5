/**
 * What every worker entry is made of beside its families' tasks (app/worker.ts): the match task (its default
 * export) and the compile task, each made over the families' match steps, and the readiness ping. Loading it
 * lowers the thread's priority below the serving thread's.
 */
import { lowerThreadPriority } from './priority.js';

lowerThreadPriority();

export { matchTask } from './match-worker.js';
export { compileTask, layerTask } from './compile-worker.js';

/** Answers once this worker has loaded (the pool's readiness check). */
export const ping = (): true => true;
