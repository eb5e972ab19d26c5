import type { ChainReads } from '../../engine/evm/chain-reads.js';

/**
 * A chain's node reads that all answer null: the Data API indexes and token metadata over a store alone (a test or a
 * bench that indexes stored blocks and asks no node). Shared by tests and benches, hence test/kit/.
 */
export const noNode: ChainReads = {
  call: async () => null,
  balance: async () => null,
  header: async () => null,
  rpc: async () => null,
  code: async () => null,
};
