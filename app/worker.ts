/**
 * The entry of the server's one worker pool (app/worker-pool.ts): each task kind is a named export, chosen by the
 * `name` piscina runs a task with. The shared tasks come from workers/, the chain families' own run by name
 * (app/family-tasks.ts), all made over the registry of families; every import is static, so a worker loads exactly this.
 */
import { Families } from '../engine/families/registry.js';
import { compileTask, matchTask } from '../workers/entry.js';
import { CHAIN_FAMILIES } from './family-list.js';
import { familyTask } from './family-tasks.js';

// The families without their adapters (the server's process binds those): a worker runs tasks and match steps only.
const FAMILIES = new Families(CHAIN_FAMILIES);

export { ping } from '../workers/entry.js';

export default matchTask(FAMILIES.matching);
export const compile = compileTask(FAMILIES.matching);
export const family = familyTask(FAMILIES);
