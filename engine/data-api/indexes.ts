import type { TokenMetadata } from '../evm/token-metadata.js';
import { blockTimesIndex, contractLogsIndex } from './chain/index/writer.js';
import { dexIndex } from './dex/index/writer.js';
import { createdContracts, erc20Index } from './erc20/index/writer.js';
import type { DataIndex } from './common/indexer.js';
import type { IndexDeps } from './common/deps.js';
import { nativeTxIndex } from './transactions/index/writer.js';
import { nftIndex } from './nft/index/writer.js';
import { priceMarksIndex } from './dex/index/marks-writer.js';
import { candleIndex } from './dex/index/candle-writer.js';

/**
 * Not an index: tells token metadata which contracts a batch's blocks met (each log's emitter, each contract
 * created), so a read made before one had code is made again when the indexes below ask for it. Its prepare
 * does its work at once, with nothing awaited: the indexer starts each index's prepare in order, so it is done
 * before theirs begin.
 */
function tokenSightings(tokens: TokenMetadata): DataIndex<void> {
  return {
    name: 'tokenSightings',
    prepare(blocks) {
      for (const b of blocks) {
        for (const t of b.record.txs) for (const l of t.logs) tokens.appeared(b.chain, l.address);
        for (const c of createdContracts(b.record)) tokens.appeared(b.chain, c);
      }
      return Promise.resolve();
    },
    apply() {},
  };
}

/** Every index the Data API builds behind the follower, in the order each block is applied to them. */
export function dataIndexes(deps: IndexDeps): DataIndex[] {
  return [
    tokenSightings(deps.tokens) as DataIndex,
    blockTimesIndex,
    contractLogsIndex,
    nativeTxIndex as DataIndex, // native transactions and activity
    erc20Index(deps) as DataIndex,
    nftIndex(deps.reads),
    dexIndex({ call: deps.reads.call, pricing: deps.pricing ?? (() => undefined) }) as DataIndex,
    priceMarksIndex({ tokens: deps.tokens, pricing: deps.pricing ?? (() => undefined) }) as DataIndex,
    // After the marks: a swap is priced by its quote token's marks of the block.
    candleIndex({ tokens: deps.tokens, pricing: deps.pricing ?? (() => undefined) }) as DataIndex,
  ];
}
