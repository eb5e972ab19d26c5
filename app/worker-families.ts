import { bitcoinWorker } from '../engine/bitcoin/worker.js';
import { evmWorker } from '../engine/evm/worker.js';
import { solanaWorker } from '../engine/solana/worker.js';

/**
 * The server's chain families as a worker of the pool runs them (their match steps and tasks), a line each, in
 * app/family-list.ts's order: a worker loads these, not the full families (their schemas and webhook builders).
 */
export const WORKER_FAMILIES = [evmWorker, bitcoinWorker, solanaWorker];
