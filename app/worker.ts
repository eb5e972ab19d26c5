/**
 * The entry of the server's one worker pool (app/worker-pool.ts): each task kind is a named export, chosen by the
 * `name` piscina runs a task with. The shared tasks come from workers/, the chain families' own run by name
 * (app/family-tasks.ts), all made over the families' worker parts.
 */
import { workerData } from 'node:worker_threads';
import { WorkerFamilies } from '../engine/families/worker-registry.js';
import { compileTask, layerTask, matchTask } from '../workers/entry.js';
import { familyTask, workerPart } from './family-tasks.js';
import type { PoolData } from './worker-threads.js';

// The families the server lists (app/family-list.ts), each by its worker part alone: not its full object, whose
// schemas and webhook builders a worker never runs.
const FAMILIES = new WorkerFamilies(await Promise.all((workerData as PoolData).families.map(workerPart)));

export { ping } from '../workers/entry.js';

export default matchTask(FAMILIES.matching);
export const compile = compileTask(FAMILIES.matching);
export const layer = layerTask(FAMILIES.matching);
export const family = familyTask(FAMILIES);
