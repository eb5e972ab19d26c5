import { bitcoin } from '../engine/bitcoin/index.js';
import { evm } from '../engine/evm/index.js';
import { solana } from '../engine/solana/index.js';

/**
 * The server's chain families, a line each, without their adapters: what a worker of the pool needs (its tasks and
 * match steps), so a worker loads no adapter (the devnet's process, a node's WebSocket). app/families.ts binds them.
 */
export const CHAIN_FAMILIES = { evm, bitcoin, solana };
