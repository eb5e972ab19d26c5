/**
 * The entry of the server's one worker pool (app/worker-pool.ts): each task kind is a named export, chosen by the
 * `name` piscina runs a task with. The shared tasks come from workers/, the chain families' own run by name
 * (app/family-tasks.ts), all made over the families' worker parts; every import is static, so a worker loads exactly this.
 */
import { WorkerFamilies } from '../engine/families/worker-registry.js';
import { compileTask, matchTask } from '../workers/entry.js';
import { familyTask } from './family-tasks.js';
import { WORKER_FAMILIES } from './worker-families.js';

// Each family's match step and tasks alone: not its full object (app/family-list.ts), whose schemas and webhook builders a worker never runs.
const FAMILIES = new WorkerFamilies(WORKER_FAMILIES);

export { ping } from '../workers/entry.js';

export default matchTask(FAMILIES.matching);
export const compile = compileTask(FAMILIES.matching);
export const family = familyTask(FAMILIES);
