/**
 * The entry of the server's one worker pool (app/worker-pool.ts): each task kind is a named export, chosen by the
 * `name` piscina runs a task with. The shared tasks come from workers/, the chain families' from app/family-tasks.ts;
 * every import is static, so a worker loads exactly this.
 */
export { default, compile, ping } from '../workers/entry.js';
export { bitcoin, ingest, solana, xpubWindow } from './family-tasks.js';
