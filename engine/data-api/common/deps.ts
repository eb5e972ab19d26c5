import type { Pricing } from '../../chains/pricing.js';
import type { ChainReads } from '../../evm/chain-reads.js';
import type { TokenMetadata } from '../../evm/token-metadata.js';
import type { FollowerStatus } from '../../ingest/follow.js';
import type { Kv } from '../../ports.js';
import type { DataIndexer } from './indexer.js';

/** What the Data API's endpoints read: the store's indexes, the chains' nodes, and how far each chain is indexed. */
export interface DataDeps {
  kv: Kv;
  tokens: TokenMetadata;
  /** eth_call and eth_getBalance at a block on the chain's node. */
  reads: ChainReads;
  indexer: DataIndexer;
  /** The chain's follower in this server, if it follows the chain. */
  follower(chain: string): FollowerStatus | undefined;
  /** The chain's entry of the pricing registry (engine/chains/pricing.ts); none: no USD prices on that chain. */
  pricing?: (chain: string) => Pricing | undefined;
}

/** What indexes may read besides the store: the chain's node at a block, token metadata, the pricing registry. */
export interface IndexDeps {
  reads: ChainReads;
  tokens: TokenMetadata;
  /** The chain's pricing entry (engine/chains/pricing.ts); none: no DEX index for that chain. */
  pricing?: (chain: string) => Pricing | undefined;
}
