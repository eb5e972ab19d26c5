import type { ChainReads } from '../evm/chain-reads.js';
import type { TokenMetadata } from '../evm/token-metadata.js';
import { blockTimesIndex } from './block-times.js';
import { contractLogsIndex } from './contract-logs.js';
import { erc20Index } from './erc20-index.js';
import type { DataIndex } from './indexer.js';
import { prefixRange, type KeyRange } from '../ingest/chain-store.js';
import type { Table } from '../ports.js';
import { nftChainPrefixes } from './nft-tables.js';
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

/**
 * Every key range the Data API's indexes hold of one chain, for clearing it (`chainpost devnet reset`): a table
 * keyed `chain/…`, the `kind/chain/…` ranges of the others, and the rows keyed by the chain alone.
 */
export function dataChainRanges(chain: string): KeyRange[] {
  const one = (table: Table): KeyRange => ({ table, start: chain, end: `${chain}\u0000` });
  return [
    ...(['blockTimes', 'contractLogs', 'activity', 'indexUndo', 'erc20Balances', 'erc20Pairs', 'erc20Holders', 'erc20Tokens', 'erc20HolderDays', 'erc20HolderDeltas', 'erc20Approvals', 'erc20Wallet', 'erc20Search'] as const).map((t) => prefixRange(t, `${chain}/`)),
    ...(['h', 's'] as const).map((k) => prefixRange('nativeTxs', `${k}/${chain}/`)),
    ...(['tx', 'hist'] as const).map((k) => prefixRange('addressTxs', `${k}/${chain}/`)),
    ...nftChainPrefixes(chain).map(([table, p]) => prefixRange(table, p)),
    one('indexState'),
  ];
}
