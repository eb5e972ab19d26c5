import { bitcoin } from '../engine/bitcoin/index.js';
import { evm } from '../engine/evm/index.js';
import { solana } from '../engine/solana/index.js';

/**
 * The server's chain families, a line each, without their adapters (the devnet's process, a node's WebSocket):
 * app/families.ts binds them. A worker of the pool loads their worker parts instead, by name (app/worker.ts).
 */
export const CHAIN_FAMILIES = { evm, bitcoin, solana };
