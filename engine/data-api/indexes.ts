import type { ChainReads } from '../evm/chain-reads.js';
import type { TokenMetadata } from '../evm/token-metadata.js';
import { blockTimesIndex } from './block-times.js';
import { contractLogsIndex } from './contract-logs.js';
import { erc20Index } from './erc20-index.js';
import type { DataIndex } from './indexer.js';
import { nativeTxIndex } from './tx-index.js';
import { nftIndex } from './nft-index.js';

/** What indexes may read besides the store: the chain's node at a block, token metadata. */
export interface IndexDeps {
  reads: ChainReads;
  tokens: TokenMetadata;
}

/** Every index the Data API builds behind the follower, in the order each block is applied to them. */
export function dataIndexes(deps: IndexDeps): DataIndex[] {
  return [
    blockTimesIndex,
    contractLogsIndex,
    nativeTxIndex as DataIndex, // native transactions and activity
    erc20Index(deps) as DataIndex,
    nftIndex(deps.reads),
  ];
}
