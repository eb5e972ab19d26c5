import type { BlockRecord } from '../../evm/record.js';
import { transfersOf, type Transfer } from '../../evm/store.js';
import type { Kv } from '../../ports.js';
import type { IndexWriter } from './index-writer.js';

/** A block as the indexes read it: decoded once per batch and shared by every index. */
export interface IndexedBlock {
  chain: string;
  number: number;
  hash: string;
  /** Unix seconds. */
  timestamp: number;
  record: BlockRecord;
  /** The block's ERC-20, ERC-721 and ERC-1155 transfers in log order, addresses lower case: decoded once for every index. */
  transfers: readonly Transfer[];
}

/** A block record as the indexes read it. */
export function indexedBlock(chain: string, number: number, hash: string, record: BlockRecord): IndexedBlock {
  const transfers = transfersOf(record).map((t) => ({
    ...t,
    contract: t.contract.toLowerCase(),
    from: t.from.toLowerCase(),
    to: t.to.toLowerCase(),
  }));
  return { chain, number, hash, timestamp: Number(record.header['timestamp']), record, transfers };
}

/** One index (or a group of indexes kept together): the rows a block adds, written through `w`. */
export interface DataIndex<Prepared = unknown> {
  readonly name: string;
  /**
   * Work before the batch's transaction (node reads, such as balanceOf of pairs seen for the first time), so
   * the transaction itself never waits on the network. A rejection retries the batch later; nothing is written.
   */
  prepare?(blocks: readonly IndexedBlock[], kv: Kv): Promise<Prepared>;
  /** Writes this block's rows. Runs in the batch's write transaction: reads through `w` see the batch's writes. */
  apply(w: IndexWriter, block: IndexedBlock, prepared: Prepared): void;
  /**
   * apply in steps, for an index whose rows of a busy block take the event loop longest: the indexer runs each step
   * in a turn of its own (apply runs them all at once).
   */
  steps?(w: IndexWriter, block: IndexedBlock, prepared: Prepared): Iterable<void>;
}
