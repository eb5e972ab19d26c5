/**
 * The entry of the server's one worker pool (app/worker-pool.ts): each task kind is a named export, chosen by the
 * `name` piscina runs a task with. The shared tasks come from workers/ (made over the registry of families), the
 * chain families' own from app/family-tasks.ts; every import is static, so a worker loads exactly this.
 */
import { compileTask, matchTask } from '../workers/entry.js';
import { FAMILIES } from './families.js';

export { ping } from '../workers/entry.js';
export { bitcoin, ingest, solana, xpubWindow } from './family-tasks.js';

export default matchTask(FAMILIES.matching);
export const compile = compileTask(FAMILIES.matching);
