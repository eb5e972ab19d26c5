import { unixIso } from '../../datetime.js';
import type { Kv } from '../../ports.js';
import { indexedBlockAt } from './block-times.js';

/** An indexed block as a page's items write it: its hash, its time, and that time as the API writes dates. */
export interface PageBlock {
  readonly hash: string;
  readonly timestamp: number;
  readonly iso: string;
}

/** Blocks kept per chain at most: past it the chain's are dropped at once (a page names at most its limit of them). */
const MAX_BLOCKS = 100_000;

/**
 * The indexed blocks pages' items name, kept across requests: otherwise each page decodes its blocks' `blockTimes`
 * rows and writes their dates again, once per block it names. A block's row changes only
 * when the indexes take the block back: DataIndexer.unwind drops the chain's blocks once that is committed, so a
 * kept block is what a read would find (a read before the commit finds the old row too).
 */
export class IndexedBlocks {
  private readonly chains = new Map<string, Map<number, PageBlock>>();

  constructor(private readonly max = MAX_BLOCKS) {}

  /** The block as the indexes hold it; undefined (and not kept: it may be indexed next) when they do not. */
  get(kv: Kv, chain: string, number: number): PageBlock | undefined {
    let blocks = this.chains.get(chain);
    const kept = blocks?.get(number);
    if (kept !== undefined) return kept;
    const row = indexedBlockAt(kv, chain, number);
    if (row === undefined) return undefined;
    const block: PageBlock = Object.freeze({ hash: row.hash, timestamp: row.timestamp, iso: unixIso(row.timestamp) });
    if (blocks === undefined || blocks.size >= this.max) this.chains.set(chain, (blocks = new Map()));
    blocks.set(number, block);
    return block;
  }

  /** Drops the chain's blocks: the indexes took some back. */
  forget(chain: string): void {
    this.chains.delete(chain);
  }
}
