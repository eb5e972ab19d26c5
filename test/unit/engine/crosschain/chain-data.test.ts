import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findChain } from '../../../../engine/chains/registry.js';
import { ServiceClock } from '../../../../engine/clock.js';
import { v1Block } from '../../../../engine/crosschain/chain-data.js';
import type { DataDeps } from '../../../../engine/data-api/common/deps.js';
import { latestBlock } from '../../../../engine/data-api/chain/latest-block.js';
import { DataIndexer } from '../../../../engine/data-api/common/indexer.js';
import { dataIndexes } from '../../../../engine/data-api/indexes.js';
import { blockTransfers, blockTransfersQuery } from '../../../../engine/data-api/nft/lists.js';
import { NftMetadata } from '../../../../engine/data-api/nft/metadata.js';
import { block as v2Block, blockQuery } from '../../../../engine/data-api/transactions/txs.js';
import { normalizeBlock } from '../../../../engine/evm/record.js';
import { writeBlock } from '../../../../engine/evm/store.js';
import { TokenMetadata } from '../../../../engine/evm/token-metadata.js';
import type { FollowerStatus } from '../../../../engine/ingest/follow.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { FIXTURE_BLOCKS, bundle } from '../../../kit/fixtures.js';
import { tempDir } from '../../../helpers.js';
import { noNode } from '../../../kit/no-node.js';
import { quietLog } from '../../../kit/quiet-log.js';

/**
 * A block read while the follower catches up with its node (the stored head ahead of the Data API's indexes, which
 * do not make list reads wait then): a read naming one block waits for the indexes to hold it, and a block they
 * do not reach in time is answered 404, never with its token transfers missing. A mainnet fixture block (with
 * ERC-20 transfers) stored as the follower stores it, in a real LMDB store, indexed by every Data API index.
 */

const CHAIN = findChain('0x1')!;
const N = FIXTURE_BLOCKS[0];
/** The follower far behind its node: catching up. */
const catchingUp = (head: number): FollowerStatus => ({
  chain: CHAIN.key,
  head,
  confirmed: head,
  nodeHead: head + 500,
  oldest: N,
  upstream: 'ok',
  upstreamErrors: 0,
});

let dir: string;
let store: Store;
let clock: ServiceClock;
let deps: DataDeps;

/** Stores fixture block `fixture` at height `n` as the follower does, the stored head moved to it. */
function follow(fixture: number, n: number): void {
  const b = bundle(fixture);
  const record = normalizeBlock({ ...b.block, number: `0x${n.toString(16)}` }, b.receipts, b.traces);
  store.transact(() => {
    writeBlock(store, CHAIN.key, record);
    store.put('chainState', CHAIN.key, { head: n, confirmed: n, tracer: null, pruned: -1 });
  });
}

beforeEach(() => {
  dir = tempDir();
  store = openStore(dir);
  clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, Date.parse('2026-12-07T00:00:00Z'));
  const tokens = new TokenMetadata(store, noNode.call);
  const indexer = new DataIndexer(
    store,
    dataIndexes({ reads: noNode, tokens }),
    clock,
    quietLog(() => clock.now()),
  );
  deps = {
    kv: store,
    tokens,
    reads: noNode,
    indexer,
    follower: () => catchingUp(store.get<{ head: number }>('chainState', CHAIN.key)!.head),
  };
});

afterEach(async () => {
  deps.indexer.stop();
  await deps.indexer.settled();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a block read while the follower catches up', () => {
  it('waits for the indexes to hold the block it names, and answers its token transfers', async () => {
    follow(N, N);
    // Nothing indexed yet: the read wakes the build and waits for it.
    const answer = await v1Block(deps, CHAIN, { blockIdentifier: String(N) });
    const transfers = answer.txs.flatMap((t): readonly unknown[] => t.tokenTransfers);
    expect(transfers.length).toBeGreaterThan(0);
    expect(deps.indexer.position(CHAIN.key)).toBe(N);
  });

  it('answers 404 for a stored block the indexes do not reach within the wait (/v1 and /block), and its NFT transfers block_exists false', async () => {
    follow(N, N);
    await v1Block(deps, CHAIN, { blockIdentifier: String(N) });
    // The indexes stop at N; the follower stores N + 1.
    deps.indexer.stop();
    follow(FIXTURE_BLOCKS[1], N + 1);
    for (const read of [
      () => v1Block(deps, CHAIN, { blockIdentifier: String(N + 1) }),
      () => v2Block(deps, CHAIN.key, blockQuery.parse({ block_number_or_hash: String(N + 1) })),
    ]) {
      const answered = read().then(
        () => 'answered',
        (err: { status?: number; message: string }) => `${err.status} ${err.message}`,
      );
      await clock.advance(2_000);
      expect(await answered).toBe(`404 block ${N + 1} of chain ${CHAIN.key} is not indexed yet: the Data API answers blocks up to ${N}`);
    }
    // Its NFT transfers: a block the Data API does not hold yet.
    const metadata = new NftMetadata(store, noNode, { get: async () => ({ error: 'no fetches here' }) }, clock);
    const nft = blockTransfers({ ...deps, metadata }, CHAIN.key, blockTransfersQuery.parse({ block_number_or_hash: String(N + 1) }));
    await clock.advance(2_000);
    expect(await nft).toMatchObject({ result: [], block_exists: false });
  });
});

describe('GET /latestBlockNumber while the follower catches up', () => {
  it("answers 404 before any block is indexed, then the indexed head, behind the stored head, and the node's head beside it", async () => {
    const before = latestBlock(deps, CHAIN.key).then(
      () => 'answered',
      (err: { status?: number; message: string }) => `${err.status} ${err.message}`,
    );
    expect(await before).toBe(`404 no block of chain ${CHAIN.key} is indexed yet`);
    follow(N, N);
    await v1Block(deps, CHAIN, { blockIdentifier: String(N) });
    deps.indexer.stop();
    follow(FIXTURE_BLOCKS[1], N + 1);
    // The stored head is N + 1; the Data API answers at N, what every other read is made at.
    expect(await latestBlock(deps, CHAIN.key)).toEqual({ block: String(N), nodeHead: N + 1 + 500 });
  });
});
