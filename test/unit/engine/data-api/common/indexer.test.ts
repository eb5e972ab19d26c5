import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../../../engine/clock.js';
import { indexedBlockAt } from '../../../../../engine/data-api/common/block-times.js';
import { pageBlocks } from '../../../../../engine/data-api/common/pages.js';
import { DataIndexer, PACE_LEAD, UNDO_BLOCKS, type DataIndex, type IndexState } from '../../../../../engine/data-api/common/indexer.js';
import { indexedTo } from '../../../../../engine/data-api/common/read-at.js';
import { withIndexer } from '../../../../../engine/data-api/common/with-indexer.js';
import { dataChainRanges } from '../../../../../engine/data-api/tables.js';
import { decodeRecord, type BlockRecord } from '../../../../../engine/evm/record.js';
import { removeBlock, writeBlock } from '../../../../../engine/evm/store.js';
import { blockKey, pruneBlock } from '../../../../../engine/ingest/chain-store.js';
import { prunable } from '../../../../../engine/ingest/follow.js';
import { jsonLogger } from '../../../../../engine/log.js';
import { openStore, type Store } from '../../../../../storage/env.js';
import { counting } from '../../../../kit/counting-kv.js';
import { tempDir } from '../../../../helpers.js';
import { blockTimesIndex } from '../../../../../engine/data-api/chain/index/writer.js';

/**
 * The Data API's index builder on a real LMDB store: block records written as
 * the follower writes them (writeBlock, removeBlock on a reorg), a stateful
 * test index (a counter per sending address, its key removed at every fourth
 * transaction so undo covers removals too), checked against a recomputation
 * from scratch over the canonical blocks; reorgs within and beyond the undo
 * window; `reached` on an injected clock.
 */

const CHAIN = '0x539';
const START = Date.parse('2026-11-24T00:00:00Z');
const addr = (i: number): string => `0x${i.toString(16).padStart(40, '0')}`;
const hash = (branch: number, n: number): string => `0x${branch.toString(16)}${n.toString(16).padStart(63, '0')}`;

/** A block of `branch` at height n: up to three transactions from one of five senders (the branch shifts which). */
function block(n: number, branch: number): BlockRecord {
  const txs = Array.from({ length: (n + branch) % 4 }, (_, i) => ({
    tx: { hash: hash(branch + 8, n * 4 + i), from: addr(1 + ((n * 7 + i + branch * 3) % 5)), to: addr(99), value: '0x1' },
    receipt: { status: '0x1', gasUsed: '0x5208' },
    logs: [],
  }));
  const parentHash = n === 0 ? `0x${'0'.repeat(64)}` : hash(branch, n - 1);
  return {
    header: { number: `0x${n.toString(16)}`, hash: hash(branch, n), parentHash, timestamp: `0x${(1_700_000_000 + n * 12).toString(16)}` },
    txs,
    internal: null,
  };
}

/** The counter's rule, shared by the index and the recomputation: +1 per transaction sent, no key at a multiple of 4. */
const bump = (count: number | undefined): number | undefined => (((count ?? 0) + 1) % 4 === 0 ? undefined : ((count ?? 0) + 1) % 4);
const COUNT = 'count/';

const senders: DataIndex = {
  name: 'senders',
  apply(w, b) {
    for (const t of b.record.txs) {
      const key = `${COUNT}${String(t.tx['from'])}`;
      const next = bump(w.get<number>('meta', key));
      if (next === undefined) w.remove('meta', key);
      else w.put('meta', key, next);
    }
  },
};

let dir: string;
let kv: Store;
let clock: ServiceClock;
let lines: string[];
let indexer: DataIndexer;
/** Which branch each stored height holds. */
let branches: Map<number, number>;

const frozen = { elapsedMs: () => 0, wake: () => () => {} };

/** An indexer over the store of these tests, its log lines kept in `lines`: of `indexes` (`senders` unless given). */
function newIndexer(startBlock?: number, nodeHead?: number, indexes: DataIndex[] = [senders]): DataIndexer {
  return new DataIndexer(
    kv,
    indexes,
    clock,
    jsonLogger(
      (l) => void lines.push(l),
      () => clock.now(),
      'info',
    ),
    {
      ...(startBlock === undefined ? {} : { startBlock: () => startBlock }),
      ...(nodeHead === undefined ? {} : { nodeHead: () => nodeHead }),
      chainRanges: dataChainRanges,
    },
  );
}

/** Stores heights from..to of `branch` as the follower does (a reorg: what was there is removed first). */
function store(from: number, to: number, branch: number): void {
  kv.transact(() => {
    for (let n = to; n >= from; n--) if (branches.has(n)) removeBlock(kv, CHAIN, n);
    for (let n = from; n <= to; n++) {
      writeBlock(kv, CHAIN, block(n, branch));
      branches.set(n, branch);
    }
  });
}

async function build(): Promise<void> {
  indexer.wake(CHAIN);
  await indexer.settled();
}

/** The counters a build from scratch over `records` gives. */
function tally(records: readonly BlockRecord[]): Record<string, number> {
  const counts = new Map<string, number | undefined>();
  for (const r of records) {
    for (const t of r.txs) {
      const key = `${COUNT}${String(t.tx['from'])}`;
      counts.set(key, bump(counts.get(key)));
    }
  }
  return Object.fromEntries([...counts].filter((e): e is [string, number] => e[1] !== undefined).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** The counters recomputed from scratch over the canonical stored blocks from..to. */
function recomputed(from: number, to: number): Record<string, number> {
  const records: BlockRecord[] = [];
  for (let n = from; n <= to; n++) {
    const bytes = kv.getRaw('blocks', blockKey(CHAIN, n));
    expect(bytes, `block ${n} stored`).toBeDefined();
    records.push(decodeRecord(bytes!));
  }
  return tally(records);
}

const indexed = (): Record<string, number> =>
  Object.fromEntries(kv.range<number>('meta', { start: COUNT, end: `${COUNT}\uffff` }).map((e) => [e.key, e.value]));
const state = (): IndexState | undefined => kv.get<IndexState>('indexState', CHAIN);

beforeEach(() => {
  dir = tempDir();
  kv = openStore(dir);
  clock = new ServiceClock(frozen, START);
  lines = [];
  branches = new Map();
});

afterEach(async () => {
  indexer.stop();
  await indexer.settled();
  await kv.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('DataIndexer', () => {
  it('starts at the start block, and never below the lowest block stored (it would wait there for ever)', async () => {
    store(10, 80, 0);
    indexer = newIndexer(25);
    await build();
    expect(state()).toEqual({ number: 80, hash: hash(0, 80), start: 25 });
    expect(indexed()).toEqual(recomputed(25, 80));
    expect(indexed()).not.toEqual(recomputed(10, 80));
    kv.transact(() => kv.removeRange('meta', { start: COUNT, end: `${COUNT}\uffff`, limit: 1000 }));
    kv.transact(() => {
      kv.remove('indexState', CHAIN);
      kv.removeRange('indexUndo', { start: `${CHAIN}/`, end: `${CHAIN}/\uffff`, limit: 1000 });
    });
    indexer.stop();
    indexer = newIndexer(3);
    await build();
    expect(state()?.number).toBe(80);
    expect(indexed()).toEqual(recomputed(10, 80));
  });

  it('after a reorg replacing the top 2 blocks, holds what a build from scratch over the canonical blocks holds', async () => {
    store(0, 40, 0);
    indexer = newIndexer();
    await build();
    const before = indexed();
    expect(before).toEqual(recomputed(0, 40));
    store(39, 41, 1);
    await build();
    expect(state()).toEqual({ number: 41, hash: hash(1, 41), start: 0 });
    expect(indexed()).toEqual(recomputed(0, 41));
    expect(indexed()).not.toEqual(before);
    // The same again with only the top replaced, no new height.
    store(41, 41, 2);
    await build();
    expect(state()).toEqual({ number: 41, hash: hash(2, 41), start: 0 });
    expect(indexed()).toEqual(recomputed(0, 41));
    expect(lines.filter((l) => l.includes('"warn"') || l.includes('"error"'))).toEqual([]);
  });

  it('keeps the blocks pages read across requests, and drops them once a reorg took blocks back: a kept block is what a read finds', async () => {
    store(0, 40, 0);
    indexer = newIndexer(undefined, undefined, [senders, blockTimesIndex]);
    await build();
    const deps = { kv, indexer };
    const read = (n: number) => indexedBlockAt(kv, CHAIN, n);
    expect(pageBlocks(deps, CHAIN)(39)).toEqual({
      hash: hash(0, 39),
      timestamp: 1_700_000_000 + 39 * 12,
      iso: new Date((1_700_000_000 + 39 * 12) * 1000).toISOString(),
    });
    // Kept: the next page does not read it again.
    const c = counting(kv);
    expect(pageBlocks({ kv: c.kv, indexer }, CHAIN)(39).hash).toBe(hash(0, 39));
    expect(c.reads()).toBe(0);
    // The follower replaced 39…41; until the indexes take them back, pages and reads both see the block they indexed.
    store(39, 41, 1);
    expect(pageBlocks(deps, CHAIN)(39).hash).toBe(read(39)!.hash);
    await build();
    expect(read(39)!.hash).toBe(hash(1, 39));
    expect(pageBlocks(deps, CHAIN)(39).hash).toBe(hash(1, 39));
    expect(pageBlocks(deps, CHAIN)(41).hash).toBe(hash(1, 41));
    // A block the indexes do not hold: 503, and not kept.
    expect(() => pageBlocks(deps, CHAIN)(42)).toThrow(/block 42 of chain 0x539 is not indexed yet/);
    store(42, 42, 1);
    await build();
    expect(pageBlocks(deps, CHAIN)(42).hash).toBe(hash(1, 42));
  });

  it('refuses a reorg deeper than UNDO_BLOCKS, with the error in the log, instead of keeping writes of blocks that left the chain', async () => {
    const top = UNDO_BLOCKS + 40;
    store(0, top, 0);
    indexer = newIndexer();
    await build();
    expect(indexed()).toEqual(recomputed(0, top));
    // Every height from top − UNDO_BLOCKS up replaced: one more than the undo window holds.
    const fork = top - UNDO_BLOCKS;
    store(fork, top + 1, 1);
    await build();
    const failed = lines.map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l['msg'] === 'indexing failed; trying again');
    expect(failed.length).toBeGreaterThan(0);
    expect(failed[0]!['err']['message']).toBe(
      `block ${fork} of ${CHAIN} left the chain deeper than the Data API can take back (${UNDO_BLOCKS} blocks); rebuild the indexes`,
    );
    // Taken back as far as the undo rows go, and stopped below the block it cannot take back: no new block is indexed on top of it.
    expect(state()).toEqual({ number: fork, hash: hash(0, fork), start: 0 });
    expect(indexed()).toEqual(tally(Array.from({ length: fork + 1 }, (_, n) => block(n, 0))));
    // A retry (on the clock) refuses again rather than going on.
    await clock.advance(5_000);
    await indexer.settled();
    expect(state()?.number).toBe(fork);
  });

  it("keeps no undo row for a block deeper than UNDO_BLOCKS below its node's head (a catch-up), and one for each block above", async () => {
    const top = UNDO_BLOCKS + 40;
    const nodeHead = top + 100;
    store(0, top, 0);
    indexer = newIndexer(undefined, nodeHead);
    await build();
    expect(indexed()).toEqual(recomputed(0, top));
    const undone = Array.from({ length: top + 1 }, (_, n) => n).filter((n) => kv.has('indexUndo', blockKey(CHAIN, n)));
    expect(undone).toEqual(Array.from({ length: top - (nodeHead - UNDO_BLOCKS) }, (_, i) => nodeHead - UNDO_BLOCKS + 1 + i));
    // A reorg within the undo window of the node's head is taken back as before.
    store(top - 5, top + 1, 1);
    await build();
    expect(state()).toEqual({ number: top + 1, hash: hash(1, top + 1), start: 0 });
    expect(indexed()).toEqual(recomputed(0, top + 1));
  });

  it('counts as read for pruning only what it holds that is still canonical: blocks a reorg put in place of indexed ones wait for the build', async () => {
    store(0, 20, 0);
    indexer = newIndexer();
    const unread = (): number | undefined => indexer.events().oldestUnread?.(CHAIN);
    await build();
    expect(unread()).toBe(21);
    // The follower replaces the top 2 blocks (a reorg) before the build's next run: pruning must stop below them,
    // or the replacements go before the build reads them and it stops for good.
    store(19, 20, 1);
    expect(unread()).toBe(19);
    expect(prunable({ head: 20, confirmed: 20, pruned: -1 }, 1, unread())).toEqual({ from: 0, to: 18 });
    await build();
    expect(state()).toEqual({ number: 20, hash: hash(1, 20), start: 0 });
    expect(unread()).toBe(21);
  });

  it('follows a chain that grew shorter, and a second reorg before the build ran', async () => {
    store(0, 20, 0);
    indexer = newIndexer();
    const unread = (): number | undefined => indexer.events().oldestUnread?.(CHAIN);
    await build();
    // The follower took 19 and 20 back and has not stored their replacements yet.
    kv.transact(() => {
      for (const n of [20, 19]) removeBlock(kv, CHAIN, n);
    });
    for (const n of [19, 20]) branches.delete(n);
    expect(unread()).toBe(19);
    // Then a deeper reorg: 17 up replaced.
    store(17, 21, 1);
    expect(unread()).toBe(17);
    await build();
    expect(state()).toEqual({ number: 21, hash: hash(1, 21), start: 0 });
    expect(unread()).toBe(22);
  });

  it('counts nothing as read once the first block it indexed was replaced', async () => {
    store(5, 8, 0);
    indexer = newIndexer(5);
    const unread = (): number | undefined => indexer.events().oldestUnread?.(CHAIN);
    expect(unread()).toBe(0);
    await build();
    expect(unread()).toBe(9);
    store(5, 8, 1);
    expect(unread()).toBe(5);
    await build();
    expect(unread()).toBe(9);
  });

  it('answers `reached` true once a block is indexed, false when the injected clock passes the timeout', async () => {
    store(0, 10, 0);
    indexer = newIndexer();
    await build();
    expect(await indexer.reached(CHAIN, 10, 1_000)).toBe(true);
    const waiting = indexer.reached(CHAIN, 12, 1_000);
    const never = indexer.reached(CHAIN, 50, 1_000);
    let settledNever: boolean | undefined;
    void never.then((v) => (settledNever = v));
    store(11, 12, 0);
    await build();
    expect(await waiting).toBe(true);
    await clock.advance(999);
    expect(settledNever).toBeUndefined();
    await clock.advance(1);
    expect(await never).toBe(false);
  });

  it('keeps a catch-up within PACE_LEAD blocks of what it built, lets it go on as it builds, and holds nothing while its build fails', async () => {
    store(0, 10, 0);
    indexer = newIndexer();
    await build();
    const events = withIndexer({ seen() {}, confirmed() {}, reorged() {} }, indexer);
    // The follower stored up to 100 and is about to write above it: too far ahead of block 10.
    store(11, 100, 0);
    expect(events.pace!(CHAIN, 10 + PACE_LEAD)).toBeUndefined();
    let went = false;
    const paced = events.pace!(CHAIN, 100);
    expect(paced).toBeInstanceOf(Promise);
    void paced!.then(() => (went = true));
    // pace wakes the build: it goes on once the build reaches 100 − PACE_LEAD.
    await indexer.settled();
    await paced;
    expect(went).toBe(true);
    expect(state()?.number).toBe(100);
    // A build that fails holds no follower back: the streams' webhooks come first.
    indexer.stop();
    await indexer.settled();
    let fail = true;
    const failing: DataIndex = {
      name: 'failing',
      apply() {
        if (fail) throw new Error('a node read failed');
      },
    };
    indexer = newIndexer(undefined, undefined, [senders, failing]);
    store(101, 200, 0);
    const held = withIndexer({ seen() {}, confirmed() {}, reorged() {} }, indexer).pace!(CHAIN, 200);
    expect(held).toBeInstanceOf(Promise);
    await held;
    expect(state()?.number).toBe(100);
    expect(indexer.pace(CHAIN, 200)).toBeUndefined();
    // Built again: paced again.
    fail = false;
    await clock.advance(5_000);
    await indexer.settled();
    expect(state()?.number).toBe(200);
    store(201, 300, 0);
    expect(indexer.pace(CHAIN, 300)).toBeInstanceOf(Promise);
  });

  it('does not hold a follower it finds far above the indexes at its first pace of a run (a run without them before) until they come within PACE_LEAD; one a paced run left is held', async () => {
    store(0, 10, 0);
    indexer = newIndexer();
    await build();
    indexer.stop();
    await indexer.settled();
    // A run that stopped in a paced catch-up: the follower a step past the lead, the indexes' last units unwritten.
    store(11, 10 + PACE_LEAD + 200, 0);
    indexer = newIndexer();
    expect(indexer.pace(CHAIN, 10 + PACE_LEAD + 200)).toBeInstanceOf(Promise);
    await indexer.settled();
    indexer.stop();
    await indexer.settled();
    // A run without the indexes: the follower stored up to 1,000 blocks above them.
    const built = state()!.number;
    store(built + 1, built + 1_000, 0);
    indexer = newIndexer();
    expect(indexer.pace(CHAIN, built + 1_000)).toBeUndefined();
    store(built + 1_001, built + 1_050, 0);
    expect(indexer.pace(CHAIN, built + 1_050)).toBeUndefined();
    // Built within PACE_LEAD of the follower, which paces at its next block: a catch-up from there is paced again.
    await build();
    expect(state()?.number).toBe(built + 1_050);
    expect(indexer.pace(CHAIN, built + 1_050)).toBeUndefined();
    store(built + 1_051, built + 1_200, 0);
    expect(indexer.pace(CHAIN, built + 1_200)).toBeInstanceOf(Promise);
  });

  it('builds between turns of the event loop, and drops what it built when the follower replaces the blocks meanwhile', async () => {
    store(0, 20, 0);
    indexer = newIndexer();
    await build();
    store(21, 31, 0);
    let replaced = false;
    // The follower's reorg lands between two turns of the build, while block 30 is being indexed.
    const reorg: DataIndex = {
      name: 'reorg',
      apply(_w, b) {
        if (b.number !== 30 || replaced) return;
        replaced = true;
        setImmediate(() => store(28, 31, 1));
      },
    };
    indexer.stop();
    await indexer.settled();
    indexer = newIndexer(undefined, undefined, [reorg, senders]);
    await build();
    expect(replaced).toBe(true);
    expect(state()).toEqual({ number: 31, hash: hash(1, 31), start: 0 });
    expect(indexed()).toEqual(recomputed(0, 31));
  });

  it("runs an index's steps each in a turn of its own: what the event loop had waiting runs between two steps", async () => {
    store(0, 3, 0);
    const seen: string[] = [];
    const stepped: DataIndex = {
      name: 'stepped',
      apply() {
        throw new Error('the indexer runs the steps');
      },
      *steps(_w, b) {
        if (b.number !== 2) return;
        setImmediate(() => seen.push('a turn'));
        seen.push('step 1');
        yield;
        seen.push('step 2');
      },
    };
    indexer = newIndexer(undefined, undefined, [stepped, senders]);
    await build();
    expect(seen).toEqual(['step 1', 'a turn', 'step 2']);
    expect(indexed()).toEqual(recomputed(0, 3));
  });

  it('makes reads wait for the block just stored, but not while the follower catches up with its node', async () => {
    store(0, 40, 0);
    indexer = newIndexer();
    await build();
    store(41, 50, 0);
    kv.transact(() => kv.put('chainState', CHAIN, { head: 50, confirmed: 50, pruned: -1 }));
    // Stopped: it stays at block 40 (a read would wake it otherwise).
    indexer.stop();
    const status = (nodeHead: number) => ({
      chain: CHAIN,
      head: 50,
      confirmed: 50,
      nodeHead,
      oldest: 0,
      upstream: 'ok' as const,
      upstreamErrors: 0,
    });
    // Caught up with its node: the read waits (here until the clock passes its bound).
    const waiting = indexedTo({ kv, indexer, follower: () => status(50) }, CHAIN);
    let answered = false;
    void waiting.then(() => (answered = true));
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    await clock.advance(2_000);
    expect(await waiting).toEqual({ reached: false, position: 40 });
    // Catching up (its node 500 blocks ahead): answered at once from what the indexes hold.
    const now = indexedTo({ kv, indexer, follower: () => status(550) }, CHAIN);
    await new Promise((r) => setImmediate(r));
    expect(await Promise.race([now, Promise.resolve('waiting')])).toEqual({ reached: false, position: 40 });
  });

  it('drops its rows and begins again at the oldest block stored, as a new node would, when its next block was pruned unread (its node ran without the api role)', async () => {
    const times = (): number[] =>
      kv.range('blockTimes', { start: `${CHAIN}/`, end: `${CHAIN}/\uffff` }).map((e) => parseInt(e.key.slice(CHAIN.length + 1), 16));
    store(0, 30, 0);
    indexer = newIndexer(undefined, undefined, [blockTimesIndex]);
    await build();
    expect(state()?.number).toBe(30);
    indexer.stop();
    await indexer.settled();
    // Meanwhile blocks 31–60 stored and 0–44 pruned with no indexer: the oldest record stored is 45. The start block
    // said is lower (a node applying another's blocks is told that one's pruning): the records say where to begin.
    store(31, 60, 0);
    kv.transact(() => {
      for (let n = 0; n <= 44; n++) pruneBlock(kv, CHAIN, n);
    });
    indexer = newIndexer(20, undefined, [blockTimesIndex]);
    await build();
    expect(state()).toEqual({ number: 60, hash: hash(0, 60), start: 45 });
    expect(times()).toEqual(Array.from({ length: 16 }, (_, i) => 45 + i));
    expect(lines.filter((l) => l.includes('built again from it'))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('indexing failed'))).toEqual([]);
    // Built again from far below a live head, the indexes hold no follower back until they come within PACE_LEAD;
    // then a follower far ahead waits for them again.
    expect(indexer.pace(CHAIN, 60 + PACE_LEAD + 100)).toBeUndefined();
    expect(indexer.pace(CHAIN, 60 + PACE_LEAD)).toBeUndefined();
    const held = indexer.pace(CHAIN, 60 + PACE_LEAD + 100);
    expect(held).toBeInstanceOf(Promise);

    // A record missing above where a new node would begin is not healed so: the build fails, logged, and keeps its rows.
    store(61, 70, 0);
    kv.transact(() => pruneBlock(kv, CHAIN, 61));
    await build();
    expect(state()?.number).toBe(60);
    expect(times()).toHaveLength(16);
    expect(lines.filter((l) => l.includes('was pruned before the Data API indexed it'))).not.toEqual([]);
    // A failing build lets its followers go.
    await held;
  });

  it('reads no position of a chain while its rows are dropped to begin again, and a stop cuts the drop short: the next start drops the rest', async () => {
    store(0, 30, 0);
    indexer = newIndexer(undefined, undefined, [blockTimesIndex]);
    await build();
    indexer.stop();
    await indexer.settled();
    store(31, 60, 0);
    kv.transact(() => {
      for (let n = 0; n <= 44; n++) pruneBlock(kv, CHAIN, n);
    });
    /** An indexer whose `onDrop` runs when it says it drops its rows (then synchronously, as the log line is written). */
    const dropping = (onDrop: (i: DataIndexer) => void): DataIndexer => {
      const i: DataIndexer = new DataIndexer(
        kv,
        [blockTimesIndex],
        clock,
        jsonLogger(
          (l) => {
            lines.push(l);
            if (l.includes('built again from it')) onDrop(i);
          },
          () => clock.now(),
          'info',
        ),
        { chainRanges: dataChainRanges },
      );
      return i;
    };
    // Stopped as the drop begins: the position, dropped last, is still there, so the next start begins again.
    let during: Array<number | undefined> = [];
    indexer = dropping((i) => {
      during.push(i.position(CHAIN));
      setImmediate(() => during.push(i.position(CHAIN)));
      i.stop();
    });
    await build();
    expect(during).toEqual([30, undefined]);
    expect(state()?.number).toBe(30);
    expect(lines.filter((l) => l.includes('stopped while dropping'))).toHaveLength(1);

    during = [];
    indexer = dropping((i) => setImmediate(() => during.push(i.position(CHAIN))));
    await build();
    expect(during).toEqual([undefined]);
    expect(state()).toEqual({ number: 60, hash: hash(0, 60), start: 45 });
    expect(lines.filter((l) => l.includes('built again from it'))).toHaveLength(2);
  });

  it('holds pruning back to the first block it has not read', async () => {
    store(0, 20, 0);
    indexer = newIndexer();
    const events = withIndexer({ seen() {}, confirmed() {}, reorged() {} }, indexer);
    // Before the first batch nothing may go.
    expect(prunable({ head: 20, confirmed: 20, pruned: -1 }, 2, events.oldestUnread!(CHAIN))).toBeUndefined();
    await build();
    kv.transact(() => kv.put('indexState', CHAIN, { number: 7, hash: hash(0, 7) }));
    expect(events.oldestUnread!(CHAIN)).toBe(8);
    expect(prunable({ head: 20, confirmed: 20, pruned: -1 }, 2, events.oldestUnread!(CHAIN))).toEqual({ from: 0, to: 7 });
  });
});
