import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { syntheticBlock, type ChainShape } from '../bench/data-chain.js';
import { ServiceClock } from '../engine/clock.js';
import { DataIndexer, indexedBlock, type DataIndex, type IndexedBlock } from '../engine/data-api/indexer.js';
import { prunable } from '../engine/ingest/follow.js';
import { removeBlock, writeBlock } from '../engine/evm/store.js';
import { jsonLogger } from '../engine/log.js';
import { openStore, type Store } from '../storage/env.js';
import { tempDir } from './helpers.js';

/**
 * The index builder against a follower's reorg, in a real LMDB store: what it tells pruning it has read must
 * leave the blocks that replaced the ones it indexed (it reads them after taking the old ones back), or a
 * pruned replacement stops the indexes for good.
 */

const CHAIN = '0x539';
const SHAPE: ChainShape = { blocks: 16, transfersPerBlock: 3, wallets: 10, tokens: 4, nftContracts: 1, seed: 5 };

/** An index that keeps, per block, the hash it was built from. */
const hashes: DataIndex = {
  name: 'hashes',
  apply: (w, block) => w.put('meta', `hash/${block.number}`, block.hash),
};

/** Block `n` of branch `branch` (0: the chain as first followed; 1: a fork's replacement, other hashes). */
function block(n: number, branch: 0 | 1, forkAt = Infinity): IndexedBlock {
  const b = syntheticBlock(CHAIN, SHAPE, n);
  if (branch === 0 || n < forkAt) return b;
  const hash = `0x${'f'.repeat(56)}${n.toString(16).padStart(8, '0')}`;
  const parentHash = n === forkAt ? String(b.record.header['parentHash']) : `0x${'f'.repeat(56)}${(n - 1).toString(16).padStart(8, '0')}`;
  const record = { ...b.record, header: { ...b.record.header, hash, parentHash } };
  return indexedBlock(CHAIN, n, hash, record);
}

describe('the Data API index builder and pruning across a reorg', () => {
  let dir: string;
  let store: Store;
  let indexer: DataIndexer;

  beforeEach(() => {
    dir = tempDir();
    store = openStore(dir);
    const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, 0);
    indexer = new DataIndexer(store, [hashes], clock, jsonLogger(() => undefined, () => 0, 'error'));
  });
  afterEach(async () => {
    indexer.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const write = (blocks: readonly IndexedBlock[]) =>
    store.transactAsync(() => {
      for (const b of blocks) writeBlock(store, CHAIN, b.record);
      store.put('chainState', CHAIN, { head: blocks.at(-1)!.number, confirmed: blocks.at(-1)!.number, tracer: null, pruned: -1 });
    });
  const unread = (): number | undefined => indexer.events().oldestUnread?.(CHAIN);

  it('holds pruning below the blocks a reorg replaced until it has taken back the old ones and read the new', async () => {
    const first = Array.from({ length: 6 }, (_, n) => block(n, 0));
    await write(first);
    expect(await indexer.index(CHAIN, first)).toBe(true);
    expect(unread()).toBe(6);

    // The follower replaces blocks 4 and 5 (a reorg), before the builder's next run.
    const fork = [block(4, 1, 4), block(5, 1, 4)];
    await store.transactAsync(() => {
      for (const n of [5, 4]) removeBlock(store, CHAIN, n);
    });
    await write(fork);
    // The indexes still hold the old 4 and 5: what was read goes up to 3, and pruning stops there.
    expect(unread()).toBe(4);
    expect(prunable({ head: 5, confirmed: 5, pruned: -1 }, 1, unread())).toEqual({ from: 0, to: 3 });

    indexer.wake(CHAIN);
    await indexer.settled();
    expect(store.get('meta', 'hash/4')).toBe(fork[0]!.hash);
    expect(store.get('meta', 'hash/5')).toBe(fork[1]!.hash);
    expect(unread()).toBe(6);
  });

  it('counts every block as unread before the first batch, and the first indexed block as the start of what was read', async () => {
    expect(unread()).toBe(0);
    const blocks = Array.from({ length: 3 }, (_, n) => block(n + 2, 0));
    await write(blocks);
    expect(await indexer.index(CHAIN, blocks)).toBe(true);
    expect(unread()).toBe(5);
    // The first block indexed left the chain: nothing the indexes hold is still canonical.
    await store.transactAsync(() => {
      for (const n of [4, 3, 2]) removeBlock(store, CHAIN, n);
    });
    await write([block(2, 1, 2), block(3, 1, 2), block(4, 1, 2)]);
    expect(unread()).toBe(2);
  });
});
