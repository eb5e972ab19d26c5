import { rmSync } from 'node:fs';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyBlockMessage, BlockPublisher, BlockTooLargeError, type BlockApplied } from '../bus/blocks.js';
import { connectBus, type BusConnection } from '../bus/connect.js';
import { BLOCKS_STREAM, ensureBlocksStream } from '../bus/streams.js';
import { bitcoinBlockStore, prepareBitcoinBlock, type PreparedBitcoinBlock } from '../engine/bitcoin/prepared.js';
import type { ChainFamily } from '../engine/chains/registry.js';
import { evmBlockStore, prepareBlock, type PreparedBlock } from '../engine/evm/prepared.js';
import type { StartState } from '../engine/ingest/chain-start.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import {
  publishedBlocks,
  removeUnit,
  statesAfter,
  storeUnit,
  type BlockStore,
  type CommittedBlock,
  type PublishedBlock,
  type StoredListener,
} from '../engine/ingest/commit.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import { blockEventLog } from '../engine/match/block-events.js';
import type { Table } from '../engine/ports.js';
import { pack } from '../storage/codec.js';
import { openStore, type Store } from '../storage/env.js';
import { BLOCK_STORES } from '../app/families.js';
import { systemTicker } from '../app/process.js';
import { workerPool } from '../app/worker-pool.js';
import { ServiceClock } from '../engine/clock.js';
import { EvmFollower } from '../engine/evm/follower.js';
import { SolanaFollower } from '../engine/solana/follower.js';
import { prepareSolanaBlock, solanaBlockStore, storedSolanaBlock, type PreparedSolanaBlock } from '../engine/solana/prepared.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { coreBlock200000v3 } from './bitcoin-fixtures.js';
import { tempDir } from './helpers.js';
import { FIXTURE_BLOCKS, bundle } from './kit/fixtures.js';
import { startNatsServer, type NatsServer } from './kit/nats-server.js';
import { startStandIn } from './kit/node-standin.js';
import { benchChain } from './kit/solana-rpc/bench.js';
import { entryOf, fixtureBlockChain, fixtureTransaction, FIXTURE_TRANSACTIONS } from './kit/solana-rpc/fixtures.js';
import { getBlockResponse } from './kit/solana-rpc/render.js';
import { startSolanaRpc } from './kit/solana-rpc/server.js';
import { quietLog } from './kit/quiet-log.js';

/**
 * The chains' blocks on a cluster against a real nats-server: node A stores blocks by the commit path its follower
 * runs and publishes them as stored; node B applies them to its own store. Two nodes in this process, each with its
 * own LMDB store and NATS connection.
 */
const CHAIN = '0x1';
const BTC = 'bitcoin';
const SOL = 'solana';
const CONFIRMATIONS = 2;
/** The control log's sequence node A had applied when it published (carried, not checked here). */
const CONTROL_SEQ = 7;

interface Node {
  dir: string;
  store: Store;
  bus: BusConnection;
  events: ChainEvents;
  /** The chains `committed` was told of, in order. */
  committed: string[];
}

let nats: NatsServer;
const nodes: Node[] = [];
const servers: NatsServer[] = [];

async function startNode(server = nats): Promise<Node> {
  const dir = tempDir();
  const store = openStore(dir);
  const bus = await connectBus({ servers: server.url, maxReconnectWaitMs: 100 });
  const committed: string[] = [];
  const log = blockEventLog(store, (chain) => committed.push(chain));
  const node = { dir, store, bus, events: log, committed };
  nodes.push(node);
  return node;
}

beforeEach(async () => {
  nats = await startNatsServer();
  servers.push(nats);
  const bus = await connectBus({ servers: nats.url });
  await ensureBlocksStream(await jetstreamManager(bus.nc));
  await bus.close();
});

afterEach(async () => {
  for (const node of nodes.splice(0)) {
    await node.bus.close();
    await node.store.close();
    rmSync(node.dir, { recursive: true, force: true });
  }
  for (const s of servers.splice(0)) await s.close();
});

/** The tables the commit path writes, every key and value as stored. */
const COMMIT_TABLES: Table[] = [
  'blocks',
  'probes',
  'canon',
  'blockHashes',
  'transfers',
  'sales',
  'blockEvents',
  'chainState',
  'btcOutputs',
  'btcAddressTxs',
  'btcUtxos',
  'btcTxs',
];
/** Every key and value of the tables the commit path writes, as stored, by `table key`. */
function snapshot(s: Store): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const t of COMMIT_TABLES) for (const { key, value } of s.db(t).getRange({})) out.set(`${t} ${String(key)}`, Buffer.from(value));
  return out;
}
/**
 * Where two snapshots differ: a key one holds and the other not, or held with other bytes. Compared as bytes, not
 * as hex text (megabytes of it for mainnet-size blocks, and a slow deep equal).
 */
function differences(x: Map<string, Buffer>, y: Map<string, Buffer>): string[] {
  const out: string[] = [];
  for (const [key, value] of x) {
    const other = y.get(key);
    if (other === undefined) out.push(`${key}: only in the first`);
    else if (!other.equals(value)) out.push(`${key}: other bytes`);
  }
  for (const key of y.keys()) if (!x.has(key)) out.push(`${key}: only in the second`);
  return out;
}
const count = (rows: Map<string, Buffer>, table: Table): number => [...rows.keys()].filter((k) => k.startsWith(`${table} `)).length;

const body = (result: unknown): Uint8Array => Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result }));

/** A fixture bundle as the worker pool prepares it from the node's answers. */
function prepared(n: number): PreparedBlock {
  const b = bundle(n);
  return prepareBlock(CHAIN, { block: body(b.block), receipts: body(b.receipts), traces: body(b.traces) }, pack)!;
}

/**
 * Node A's follower committing `block` as one unit (on LMDB's write thread, as EvmFollower and BitcoinFollower do),
 * the chain's head the block below it and the first fixture block its backfill (stored, announced to no listener);
 * what it publishes for it.
 */
async function commitOn<B extends CommittedBlock>(
  node: Node,
  chain: string,
  store: BlockStore<B>,
  block: B,
  backfillTo: number,
): Promise<PublishedBlock<B>> {
  const before: StartState = {
    head: block.number - 1,
    confirmed: block.number - 1 - CONFIRMATIONS,
    pruned: -1,
    backfill: { from: backfillTo, to: backfillTo },
  };
  const after = statesAfter(before, [block], CONFIRMATIONS);
  await node.store.writeBehind(() =>
    storeUnit(node.store, chain, store, [block], before, after, node.events, (n) => node.store.get<string>('canon', blockKey(chain, n))),
  );
  return publishedBlocks(chain, [block], before, after)[0]!;
}

/** Node A's follower taking block `n` back (a reorg of the chain's head), and what it publishes for it. */
async function rollBackOn(node: Node, chain: string, store: BlockStore<CommittedBlock>, n: number) {
  const hash = node.store.get<string>('canon', blockKey(chain, n))!;
  const state = node.store.get<StartState>('chainState', chain)!;
  const after = { ...state, head: n - 1, confirmed: Math.min(state.confirmed, n - 1) };
  await node.store.transactAsync(() => removeUnit(node.store, store, { chain, from: n, to: n, after }, node.events));
  return { chain, from: n, hash, to: n, after };
}

/** Applies `count` messages of the stream from sequence `from` on to the node's store, in order. */
async function applyOn(node: Node, from: number, count: number): Promise<BlockApplied[]> {
  const consumer = await jetstream(node.bus.nc).consumers.get(BLOCKS_STREAM, {
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: from,
  });
  const out: BlockApplied[] = [];
  for await (const m of await consumer.fetch({ max_messages: count, expires: 10_000 }))
    out.push(await applyBlockMessage(node.store, m, node.events, BLOCK_STORES));
  return out;
}

/** A follower's listener publishing what it is told, one message after the other, in the order told. */
function publishing(publisher: BlockPublisher, family: ChainFamily) {
  let published: Promise<unknown> = Promise.resolve();
  /** The blocks of each call, in order. */
  const units: number[] = [];
  const stored: StoredListener = {
    blocks(blocks) {
      units.push(blocks.length);
      for (const p of blocks) published = published.then(() => publisher.publishBlock(family, p, CONTROL_SEQ));
    },
    reorg: (r) => void (published = published.then(() => publisher.publishReorg(family, r, CONTROL_SEQ))),
  };
  return { stored, units, sent: () => published };
}

const clock = new ServiceClock(systemTicker, Date.now());
const log = quietLog(() => clock.now());

async function lastSeq(node: Node): Promise<number> {
  return (await (await jetstreamManager(node.bus.nc)).streams.info(BLOCKS_STREAM)).state.last_seq;
}

describe('blocks published over NATS JetStream', () => {
  it("applies the blocks one node stored to another node's store byte for byte, and a second time changes nothing", async () => {
    const [a, b] = [await startNode(), await startNode()];
    const publisher = new BlockPublisher(a.bus);
    for (const n of FIXTURE_BLOCKS)
      await publisher.publishBlock('evm', await commitOn(a, CHAIN, evmBlockStore, prepared(n), FIXTURE_BLOCKS[0]), CONTROL_SEQ);
    const stored = snapshot(a.store);
    expect(count(stored, 'blocks')).toBe(FIXTURE_BLOCKS.length);
    expect(count(stored, 'transfers')).toBeGreaterThan(100);
    // The first block is the chain's backfill: no seen event for it; each later one seen. The numbers each confirms
    // (2 below it) hold no fixture block: nothing to announce for them.
    expect(count(stored, 'blockEvents')).toBe(FIXTURE_BLOCKS.length - 1);

    const applied = await applyOn(b, 1, FIXTURE_BLOCKS.length);
    expect(applied).toEqual(
      FIXTURE_BLOCKS.map((n) =>
        expect.objectContaining({ applied: true, kind: 'block', chain: CHAIN, height: n, controlSeq: CONTROL_SEQ }),
      ),
    );
    expect(differences(snapshot(b.store), stored)).toEqual([]);
    expect(b.committed).toEqual(FIXTURE_BLOCKS.map(() => CHAIN));

    // Past JetStream's de-dup window, a message met again (a consumer started over) is known by (chain, height, hash).
    const again = await applyOn(b, 1, FIXTURE_BLOCKS.length);
    expect(again.map((r) => ('why' in r ? r.why : r))).toEqual(FIXTURE_BLOCKS.map(() => 'stored already'));
    expect(differences(snapshot(b.store), stored)).toEqual([]);
    expect(b.committed).toHaveLength(FIXTURE_BLOCKS.length);
    // Within the window, a publish sent again (its acknowledgement lost) is appended once.
    const top = await commitOn(a, CHAIN, evmBlockStore, prepared(FIXTURE_BLOCKS.at(-1)!), FIXTURE_BLOCKS[0]);
    expect(await publisher.publishBlock('evm', top, CONTROL_SEQ)).toMatchObject({ duplicate: true, seq: FIXTURE_BLOCKS.length });
    expect(await lastSeq(b)).toBe(FIXTURE_BLOCKS.length);
  });

  it('applies a reorg as the node that published it took the block back, and the block published again once it is back', async () => {
    const [a, b] = [await startNode(), await startNode()];
    const publisher = new BlockPublisher(a.bus);
    const blocks = FIXTURE_BLOCKS.slice(0, 3).map(prepared);
    for (const p of blocks) await publisher.publishBlock('evm', await commitOn(a, CHAIN, evmBlockStore, p, blocks[0]!.number), CONTROL_SEQ);
    await applyOn(b, 1, 3);
    const top = blocks[2]!;
    await publisher.publishReorg('evm', await rollBackOn(a, CHAIN, evmBlockStore, top.number), CONTROL_SEQ);

    expect(await applyOn(b, 4, 1)).toEqual([expect.objectContaining({ applied: true, kind: 'reorg', height: top.number, hash: top.hash })]);
    const afterReorg = snapshot(a.store);
    expect(count(afterReorg, 'blocks')).toBe(2);
    expect([...afterReorg.keys()].some((key) => key.startsWith('blockHashes ') && key.endsWith(top.hash))).toBe(false);
    expect(differences(snapshot(b.store), afterReorg)).toEqual([]);
    expect(await applyOn(b, 4, 1)).toEqual([expect.objectContaining({ applied: false, why: 'removed already' })]);
    expect(differences(snapshot(b.store), afterReorg)).toEqual([]);

    // The same block back on the canonical chain within JetStream's de-dup window: published anew, applied again.
    const back = await publisher.publishBlock('evm', await commitOn(a, CHAIN, evmBlockStore, top, blocks[0]!.number), CONTROL_SEQ);
    expect(back).toMatchObject({ duplicate: false, seq: 5 });
    expect(await applyOn(b, 5, 1)).toEqual([expect.objectContaining({ applied: true, kind: 'block', height: top.number })]);
    expect(differences(snapshot(b.store), snapshot(a.store))).toEqual([]);
  });

  it("applies what a follower catching up a chain stored, as it told it, to another node's store byte for byte", async () => {
    const BLOCKS = 10;
    const standIn = await startStandIn(BLOCKS);
    const rpc = jsonRpcUpstream(`http://127.0.0.1:${standIn.port}`);
    const pool = workerPool(tempDir(), 1);
    const [a, b] = [await startNode(), await startNode()];
    // Published one after the other, in the order the follower told them.
    const { stored, units, sent } = publishing(new BlockPublisher(a.bus), 'evm');
    const f = new EvmFollower(CHAIN, rpc, a.store, clock, a.events, log, { confirmations: 2, pollMs: 50, pool: pool.ingest, stored });
    try {
      await f.sync();
      await sent();
      expect(f.status()).toMatchObject({ head: BLOCKS - 1, confirmed: BLOCKS - 3 });
      // Told per unit of writes (several blocks while catching up), published per block.
      expect(units.reduce((x, y) => x + y, 0)).toBe(BLOCKS);
      expect(units.length).toBeLessThan(BLOCKS);
      const applied = await applyOn(b, 1, BLOCKS);
      expect(applied.map((r) => ('applied' in r ? r.applied : r))).toEqual(Array.from({ length: BLOCKS }, () => true));
      const held = snapshot(a.store);
      expect(count(held, 'blocks')).toBe(BLOCKS);
      expect(count(held, 'blockEvents')).toBe(2 * BLOCKS - 2);
      expect(differences(snapshot(b.store), held)).toEqual([]);
    } finally {
      f.stop();
      await rpc.close();
      await standIn.close();
      await pool.close();
    }
  });

  it("refuses a block that does not extend the applying node's chain, writing nothing", async () => {
    const [a, b] = [await startNode(), await startNode()];
    const publisher = new BlockPublisher(a.bus);
    const first = prepared(FIXTURE_BLOCKS[0]);
    await publisher.publishBlock('evm', await commitOn(a, CHAIN, evmBlockStore, first, first.number), CONTROL_SEQ);
    // A block above it on another branch (a holder that lost its lease publishing late).
    const stray = { ...prepared(FIXTURE_BLOCKS[1]), number: first.number + 1, parentHash: `0x${'ab'.repeat(32)}` };
    const published = publishedBlocks(CHAIN, [stray], { head: first.number, confirmed: -1, pruned: -1 }, [
      { head: stray.number, confirmed: -1, pruned: -1 },
    ])[0]!;
    await publisher.publishBlock('evm', published, CONTROL_SEQ);
    const [, refused] = await applyOn(b, 1, 2);
    expect(refused).toMatchObject({ applied: false, why: expect.stringMatching(/its parent 0xabab.* is not this store's block/) });
    expect(differences(snapshot(b.store), snapshot(a.store))).toEqual([]);
  });

  it("refuses to publish a block over the server's max_payload, naming the setting", async () => {
    const small = await startNatsServer({ maxPayload: '64KB' });
    servers.push(small);
    const a = await startNode(small);
    await ensureBlocksStream(await jetstreamManager(a.bus.nc));
    const largest = FIXTURE_BLOCKS.map(prepared).reduce((x, y) => (y.record.byteLength > x.record.byteLength ? y : x));
    expect(largest.record.byteLength).toBeGreaterThan(64 * 1024);
    const published = await commitOn(a, CHAIN, evmBlockStore, largest, largest.number);
    const sent = new BlockPublisher(a.bus).publishBlock('evm', published, CONTROL_SEQ);
    await expect(sent).rejects.toThrow(BlockTooLargeError);
    await expect(sent).rejects.toThrow(
      new RegExp(
        `block ${largest.number} of 0x1 is \\d+ bytes as stored, over the NATS server's max_payload of 65536 bytes: set max_payload: 32MB`,
      ),
    );
    expect(await lastSeq(a)).toBe(0);
  });

  it('applies a Bitcoin block with its outputs and address rows, and its reorg, byte for byte', async () => {
    const [a, b] = [await startNode(), await startNode()];
    const publisher = new BlockPublisher(a.bus);
    const block: PreparedBitcoinBlock = prepareBitcoinBlock({ block: body(coreBlock200000v3()), keepOutputs: true })!;
    const family: ChainFamily = 'bitcoin';
    await publisher.publishBlock(family, await commitOn(a, BTC, bitcoinBlockStore, block, block.number - 1), CONTROL_SEQ);
    expect(await applyOn(b, 1, 1)).toEqual([expect.objectContaining({ applied: true, kind: 'block', chain: BTC, height: 200000 })]);
    const stored = snapshot(a.store);
    for (const t of ['btcOutputs', 'btcAddressTxs', 'btcUtxos', 'btcTxs'] as const) expect(count(stored, t)).toBeGreaterThan(0);
    expect(differences(snapshot(b.store), stored)).toEqual([]);

    await publisher.publishReorg(family, await rollBackOn(a, BTC, bitcoinBlockStore, block.number), CONTROL_SEQ);
    expect(await applyOn(b, 2, 1)).toEqual([expect.objectContaining({ applied: true, kind: 'reorg' })]);
    expect(count(snapshot(a.store), 'blocks')).toBe(0);
    expect(differences(snapshot(b.store), snapshot(a.store))).toEqual([]);
  });
  it("applies what a Solana follower stored (the real mainnet block, skipped slots, a parent the node no longer has, a confirmation between blocks, a fork) to another node's store byte for byte, and a second time changes nothing", async () => {
    const chain = fixtureBlockChain();
    const node = await startSolanaRpc({ chain, ws: false });
    const rpc = jsonRpcUpstream(node.url);
    const pool = workerPool(tempDir(), 1);
    const [a, b] = [await startNode(), await startNode()];
    const { stored, sent } = publishing(new BlockPublisher(a.bus), 'solana');
    const f = new SolanaFollower(SOL, rpc, a.store, clock, a.events, log, {
      confirmations: CONFIRMATIONS,
      pollMs: 60_000,
      pool: pool.solana,
      stored,
    });
    // The mainnet getTransaction fixtures, each in a block of its own after the real block.
    const txs = FIXTURE_TRANSACTIONS.map((path) => [entryOf(fixtureTransaction(path))]);
    const first = chain.tip;
    const state = (): StartState => a.store.get<StartState>('chainState', SOL)!;
    try {
      // A new chain starts at the node's confirmed slot: the real block.
      await f.sync();
      chain.produce(txs[0]!);
      chain.skip();
      const linked = chain.produce(txs[1]!);
      // The node no longer has this block's parent (it started from a snapshot above it): it says 111…1.
      chain.put({ ...linked, previousBlockhash: '11111111111111111111111111111111' });
      chain.produce(txs[2]!);
      await f.sync();
      // The node's tip moves to a block not available yet: a stored slot is confirmed with no block stored.
      const held = chain.produce(txs[0]!, { available: false });
      await f.sync();
      expect(state()).toMatchObject({ head: first + 4, confirmed: first + 3 });
      chain.release(held.slot);
      await f.sync();
      // A fork from our slot first + 4: it and first + 5 are taken back, the node's branch (a skipped slot in it) taken.
      chain.fork(first + 4, [txs[1]!, 'skip', txs[2]!, txs[0]!]);
      await f.sync();
      await sent();
      expect(f.reorgs()).toBe(1);
      expect(state()).toMatchObject({ head: first + 7, confirmed: first + 5 });
      const holds = snapshot(a.store);
      expect(count(holds, 'blocks')).toBe(6);
      // Seen: 6 blocks; confirmed: first, first + 1, first + 3 and the new first + 4.
      expect(count(holds, 'blockEvents')).toBe(10);

      // The blocks first to first + 5, the fork, the branch's three blocks.
      const applied = await applyOn(b, 1, 9);
      expect(applied.map((r) => ('applied' in r ? `${r.kind} ${r.height - first} ${r.applied}` : r))).toEqual(
        [0, 1, 3, 4, 5]
          .map((n) => `block ${n} true`)
          .concat(
            ['reorg 4 true'],
            [4, 6, 7].map((n) => `block ${n} true`),
          ),
      );
      expect(differences(snapshot(b.store), holds)).toEqual([]);
      expect(b.committed).toHaveLength(9);

      const again = await applyOn(b, 1, 9);
      expect(again.map((r) => ('applied' in r ? r.applied : r))).toEqual(Array.from({ length: 9 }, () => false));
      expect(differences(snapshot(b.store), holds)).toEqual([]);
      expect(b.committed).toHaveLength(9);
    } finally {
      f.stop();
      await rpc.close();
      await node.close();
      await pool.close();
    }
  });

  it('sends a mainnet-size Solana block (3,000 transactions) as one message under the documented 8 MB max_payload, applied byte for byte', async () => {
    const { chain } = benchChain({ slots: 1 });
    const prepared = prepareSolanaBlock({ slot: chain.tip, block: getBlockResponse(chain.at(chain.tip)!) }) as PreparedSolanaBlock;
    expect(prepared.txCount).toBe(3_000);
    const block = storedSolanaBlock(prepared, undefined);
    const [a, b] = [await startNode(), await startNode()];
    const published = await commitOn(a, SOL, solanaBlockStore, block, block.number - 1);
    await new BlockPublisher(a.bus).publishBlock('solana', published, CONTROL_SEQ);
    const info = await (await jetstreamManager(a.bus.nc)).streams.info(BLOCKS_STREAM);
    expect(info.state.bytes).toBeGreaterThan(prepared.record.byteLength + prepared.probe.byteLength);
    expect(info.state.bytes).toBeLessThan(8 * 1024 * 1024);
    expect(await applyOn(b, 1, 1)).toEqual([expect.objectContaining({ applied: true, kind: 'block', chain: SOL, height: block.number })]);
    expect(differences(snapshot(b.store), snapshot(a.store))).toEqual([]);
  });
});
