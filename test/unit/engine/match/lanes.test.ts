import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../../engine/clock.js';
import type { Dispatcher } from '../../../../engine/delivery/dispatcher.js';
import { blockKey } from '../../../../engine/ingest/chain-store.js';
import { PartitionLost } from '../../../../engine/cluster/partition-log.js';
import { PARTITIONS } from '../../../../engine/cluster/partitions.js';
import { partitionTag } from '../../../../engine/delivery/records.js';
import { blockEventLog, pendingEvents, stagedIn, type BlockEvent } from '../../../../engine/match/block-events.js';
import { ChainLanes, LAG_BUDGETS, type StagedElsewhere } from '../../../../engine/match/lanes.js';
import type { CallBudget, MatchedBlock } from '../../../../engine/match/build.js';
import type { StoredStream } from '../../../../engine/streams/model.js';
import { openStore } from '../../../../storage/env.js';
import { tempDir, until } from '../../../helpers.js';
import { jsonLogger } from '../../../../engine/log.js';

/**
 * The matcher's lanes over a real store: each build waits until the test lets it end, so a slow stream and a fast
 * one are whatever the test makes them; after each step the block-event log is read back (what stays, and which
 * streams it has marked staged) with the order in which webhooks were staged.
 */
const CHAIN = '0x539';
const T0 = Date.parse('2026-12-01T00:00:00Z');
const BUDGET_MS = 1_000;
const ALL = [...Array(PARTITIONS).keys()];

describe('the lanes of a chain', () => {
  const store = openStore(tempDir());
  afterAll(async () => {
    await store.close();
    rmSync(store.path, { recursive: true, force: true });
  });
  // Service time moves only when the test advances it.
  const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, T0);

  /**
   * `owns`: the partitions this node owns now (a cluster node's); all by default. `cluster`: each stream's partition
   * (0 by default), when each transaction's units are durable (at once by default), and the events kept once finished.
   */
  function rig(
    elsewhere?: StagedElsewhere,
    owns?: (partition: number) => boolean,
    cluster: {
      partitionOf?: (streamId: string) => number;
      queuedIn?: (streamId: string) => number;
      durable?: () => Promise<void> | undefined;
      keepEvents?: boolean;
      /** Whether staging throws (the transaction aborted, nothing of it written). */
      failStage?: () => boolean;
    } = {},
  ) {
    const staged: string[] = [];
    const started: string[] = [];
    /** The lanes' error lines: a failed batch's. */
    const failures: string[] = [];
    const budgets = new Map<string, CallBudget>();
    const ends = new Map<string, (payload: Record<string, unknown> | null) => void>();
    const dispatcher: Pick<Dispatcher, 'prepare' | 'stage'> = {
      prepare: async (items) => items.map((i) => ({ ...i })),
      // Staged inside the transaction, told once it committed: the order webhooks reach the queue in. A stream's
      // queue is in its partition unless `queuedIn` says another (a stream moving partitions).
      stage: (items) => {
        if (cluster.failStage?.() === true) throw new Error('the disk is full');
        return {
          results: items.map(() => 'queued' as const),
          partitions: items.map((i) => cluster.queuedIn?.(i.streamId) ?? cluster.partitionOf?.(i.streamId) ?? 0),
          failed: () => {},
          settle: () => staged.push(...items.map((i) => `${i.streamId}${(i as unknown as { event: BlockEvent }).event.number}`)),
          durable: () => cluster.durable?.(),
        };
      },
    };
    const build = (block: MatchedBlock, stream: StoredStream, _refs: readonly number[], budget?: CallBudget) => {
      const name = `${stream.id}${block.number}`;
      started.push(name);
      budgets.set(name, budget!);
      return new Promise<Record<string, unknown> | null>((resolve) => ends.set(name, resolve));
    };
    const lanes = new ChainLanes(
      CHAIN,
      store,
      clock,
      dispatcher,
      build,
      jsonLogger(
        (line) => void failures.push(line),
        () => clock.now(),
        'error',
      ),
      {
        stageChunk: 200,
        triggerBudgetMs: BUDGET_MS,
        triggerShareMs: 1_000,
        retryMs: 1_000,
        ...(elsewhere === undefined ? {} : { elsewhere }),
        ...(owns === undefined ? {} : { owns }),
        ...(cluster.keepEvents === undefined ? {} : { keepEvents: cluster.keepEvents }),
      },
      () => false,
    );
    /** Ends a build: with a body, or with none (null). */
    const end = async (name: string, body: Record<string, unknown> | null = { name }) => {
      expect(await until(() => ends.has(name), 2_000), `${name} started`).toBe(true);
      ends.get(name)!(body);
    };
    /** One process's hand: every partition, the streams in partition 0. */
    const hand = (e: BlockEvent, b: MatchedBlock | undefined, streams: Array<{ stream: StoredStream; refs: readonly number[] }>) =>
      lanes.hand(
        e,
        b,
        streams.map((s) => ({ ...s, partition: cluster.partitionOf?.(s.stream.id) ?? 0 })),
        ALL,
      );
    /**
     * Once `n` batches failed (each logged, its retry wait armed just after): the retry wait passes on the service
     * clock. Advanced before a wait is armed, the clock would leave it waiting.
     */
    const retried = async (n = 1) => {
      expect(await until(() => failures.length >= n, 2_000), `${n} failed batches`).toBe(true);
      await clock.advance(1_000);
    };
    return { lanes, hand, staged, started, budgets, end, failures, retried };
  }
  const stream = (id: string) => ({ id }) as StoredStream;
  const block = (number: number): MatchedBlock => ({ chain: CHAIN, number, bytes: new Uint8Array(), confirmed: false });
  /** Blocks `numbers`, canonical, each announced seen; their events as the matcher reads them. */
  const seen = (numbers: number[]): BlockEvent[] => {
    const log = blockEventLog(store, () => {});
    store.transact(() => {
      for (const n of numbers) {
        store.put('canon', blockKey(CHAIN, n), `0x${n}`);
        log.seen(CHAIN, n, `0x${n}`);
      }
    });
    return pendingEvents(store, CHAIN, 100).filter((e) => numbers.includes(e.number));
  };
  /** The events left in the store: block number and the streams marked staged in it. */
  const left = (): string[] =>
    pendingEvents(store, CHAIN, 100).map(
      (e) =>
        `${e.number}:${['a', 'b', 'm', 's', 'f']
          .filter(stagedIn(store, e, 0))
          .sort()
          .join('')}`,
    );

  it("stages a fast stream's webhooks while a slow stream builds, marking the event the slow one still owes, and removes it once that came", async () => {
    const r = rig();
    const [e1, e2] = seen([1, 2]);
    r.hand(e1!, block(1), [
      { stream: stream('s'), refs: [] },
      { stream: stream('f'), refs: [] },
    ]);
    r.hand(e2!, block(2), [{ stream: stream('f'), refs: [] }]);
    await r.end('f1');
    await r.end('f2');
    expect(await until(() => r.staged.length === 2, 2_000)).toBe(true);
    expect(r.staged).toEqual(['f1', 'f2']);
    expect(left()).toEqual(['1:f']);
    expect([r.lanes.size, r.lanes.has(e1!), r.lanes.has(e2!)]).toEqual([1, true, false]);

    await r.end('s1');
    await r.lanes.settled();
    expect(r.staged).toEqual(['f1', 'f2', 's1']);
    expect(left()).toEqual([]);
    expect(r.lanes.size).toBe(0);
  });

  it("builds a stream's events one after another and stages them in event order, however the other streams' end", async () => {
    const r = rig();
    const [e3, e4, e5] = seen([3, 4, 5]);
    for (const e of [e3!, e4!, e5!])
      r.hand(e, block(e.number), [
        { stream: stream('s'), refs: [] },
        { stream: stream('f'), refs: [] },
      ]);
    await r.end('f3');
    await r.end('f4');
    await r.end('f5');
    expect(await until(() => r.staged.length === 3, 2_000)).toBe(true);
    // The slow stream's second build waits for its first.
    expect(r.started.filter((n) => n.startsWith('s'))).toEqual(['s3']);
    await r.end('s3');
    // None for block 4: nothing to send, and nothing on disk for it.
    await r.end('s4', null);
    await r.end('s5');
    await r.lanes.settled();
    expect(r.staged).toEqual(['f3', 'f4', 'f5', 's3', 's5']);
    expect(left()).toEqual([]);
  });

  it('removes an event handed to no stream; keeps one whose block left the canonical chain, marked with the streams staged before', async () => {
    const r = rig();
    const [e6, e7] = seen([6, 7]);
    r.hand(e6!, undefined, []);
    r.hand(e7!, block(7), [
      { stream: stream('a'), refs: [] },
      { stream: stream('b'), refs: [] },
    ]);
    await r.end('a7');
    expect(await until(() => r.staged.length === 1, 2_000)).toBe(true);
    expect(left()).toEqual(['7:a']);
    // A reorg takes block 7 away while b's build runs: b's webhook is not staged, and the event stays for the next round.
    store.transact(() => store.put('canon', blockKey(CHAIN, 7), '0x70'));
    await r.end('b7');
    await r.lanes.settled();
    expect(r.staged).toEqual(['a7']);
    expect(left()).toEqual(['7:a']);
    expect(r.lanes.size).toBe(0);
    store.transact(() => store.remove('blockEvents', e7!.key));
  });

  it('has the owner of the partition a moving stream’s queue waits in stage its webhooks, in order, marked staged here; a batch it could not take is tried again', async () => {
    const asked: Array<{ partition: number; webhooks: string[] }> = [];
    let refuse = true;
    // Stream m's queue waits in partition 9, another node's (its URL changed while webhooks waited).
    const r = rig({
      partitionOf: (id) => (id === 'm' ? 9 : undefined),
      stage: async (partition, items) => {
        asked.push({ partition, webhooks: items.map((i) => String(i.payload['name'])) });
        if (refuse) throw new Error('no owner now');
      },
    });
    const [e20, e21] = seen([20, 21]);
    for (const e of [e20!, e21!])
      r.hand(e, block(e.number), [
        { stream: stream('m'), refs: [] },
        { stream: stream('f'), refs: [] },
      ]);
    for (const name of ['m20', 'f20', 'm21', 'f21']) await r.end(name);
    expect(await until(() => r.failures.length > 0, 2_000)).toBe(true);
    // Refused: nothing of the batch is written here; tried again after the retry wait.
    expect(r.staged).toEqual([]);
    expect(left()).toEqual(['20:', '21:']);
    refuse = false;
    await r.retried();
    await r.lanes.settled();
    expect(r.staged).toEqual(['f20', 'f21']);
    expect(asked.at(-1)).toEqual({ partition: 9, webhooks: ['m20', 'm21'] });
    expect(asked.every((a) => a.partition === 9 && a.webhooks.join() === 'm20,m21')).toBe(true);
    expect(left()).toEqual([]);
  });

  it.each([
    ['still waits there', false, 25],
    ['drained meanwhile', true, 26],
  ])(
    'asks the owner of the partition a moving stream’s queue waits in once when its batch is tried again after its own transaction failed (the queue %s)',
    async (_, drains, n) => {
      const asked: string[] = [];
      let fail = true;
      let queueMoved = true;
      // Stream m's queue waits in partition 9, another node's; f's is here. The first try's forward is answered, then
      // its transaction fails; before the retry m's old queue may have drained (its webhooks are staged here from then on).
      const r = rig(
        {
          partitionOf: (id) => (id === 'm' && queueMoved ? 9 : undefined),
          stage: async (_partition, items) => {
            asked.push(...items.map((i) => String(i.payload['name'])));
          },
        },
        undefined,
        {
          failStage: () => {
            if (!fail) return false;
            fail = false;
            queueMoved = !drains;
            return true;
          },
        },
      );
      const [e] = seen([n]);
      r.hand(e!, block(n), [
        { stream: stream('m'), refs: [] },
        { stream: stream('f'), refs: [] },
      ]);
      for (const name of [`m${n}`, `f${n}`]) await r.end(name);
      await r.retried();
      await r.lanes.settled();
      // m's webhook is in partition 9's queue since the first try's answer: neither forwarded again nor staged here.
      expect(asked).toEqual([`m${n}`]);
      expect(r.staged).toEqual([`f${n}`]);
      expect(left()).toEqual([]);
    },
  );

  it('waits for every owner’s answer before it tries a batch again: an owner still answering is not asked twice', async () => {
    const asked: Array<[number, string]> = [];
    let answer9: (() => void) | undefined;
    let refuse8 = true;
    // Streams m and n move to partitions 9 and 8, other nodes'. 8's owner refuses the first ask at once; 9's answers late.
    const r = rig({
      partitionOf: (id) => (id === 'm' ? 9 : id === 'n' ? 8 : undefined),
      stage: (partition, items) => {
        for (const i of items) asked.push([partition, String(i.payload['name'])]);
        if (partition === 8 && refuse8) {
          refuse8 = false;
          return Promise.reject(new Error('no owner now'));
        }
        if (partition === 9 && answer9 === undefined) return new Promise<void>((resolve) => (answer9 = resolve));
        return Promise.resolve();
      },
    });
    const [e] = seen([27]);
    r.hand(e!, block(27), [
      { stream: stream('m'), refs: [] },
      { stream: stream('n'), refs: [] },
    ]);
    for (const name of ['m27', 'n27']) await r.end(name);
    expect(await until(() => asked.length === 2, 2_000)).toBe(true);
    // A retry wait's time passes while 9's owner is still answering: a batch failed at 8's refusal would be tried
    // again now (its failure comes at once: 200 ms is ample). Then 9 answers, and the batch is tried again.
    expect(await until(() => r.failures.length > 0, 200)).toBe(false);
    await clock.advance(1_000);
    answer9!();
    await r.retried();
    await r.lanes.settled();
    expect(asked.sort()).toEqual([
      [8, 'n27'],
      [8, 'n27'],
      [9, 'm27'],
    ]);
    expect(left()).toEqual([]);
  });

  it('neither stages nor has another node stage a webhook built for a partition lost meanwhile: its event waits for the partition’s next owner', async () => {
    const asked: string[] = [];
    let owned = true;
    // As a cluster node wires it: a stream's queue in a partition this node does not own is another node's to stage.
    const r = rig(
      {
        partitionOf: () => (owned ? undefined : 0),
        stage: async (_partition, items) => {
          asked.push(...items.map((i) => String(i.payload['name'])));
        },
      },
      () => owned,
    );
    const [e30] = seen([30]);
    r.hand(e30!, block(30), [{ stream: stream('s'), refs: [] }]);
    // Partition 0 lost (the bus down, its lease unrenewed) while s's webhook builds: s is not moving.
    owned = false;
    await r.end('s30');
    await r.lanes.settled();
    try {
      expect(asked).toEqual([]);
      expect(r.staged).toEqual([]);
      expect(left()).toEqual(['30:']);
    } finally {
      // Gone for the next tests, which read the log.
      store.transact(() => store.remove('blockEvents', e30!.key));
    }
  });

  it('stages no webhook twice when a batch is tried again after its transaction committed and one partition’s unit of it was taken back', async () => {
    // A cluster node: a in partition 0, b in partition 1, m in partition 0 with its queue still in 5 (moving). The
    // first transaction commits; partition 1's lease is lost before its unit is published, so that unit (b's webhook
    // and its marks) is taken back and the batch rejected. Before the retry, m's old queue drained: it reads 0 then.
    let owned1 = true;
    let takeBack = true;
    const r = rig(undefined, (p) => p !== 1 || owned1, {
      partitionOf: (id) => (id === 'b' ? 1 : 0),
      queuedIn: (id) => (id === 'm' && takeBack ? 5 : id === 'b' ? 1 : 0),
      keepEvents: true,
      durable: () => {
        if (!takeBack) return undefined;
        takeBack = false;
        owned1 = false;
        store.transact(() => store.remove('matchMarks', `${e40!.key}/${partitionTag(1)}`));
        return Promise.reject(new PartitionLost(1, 'released'));
      },
    });
    const [e40] = seen([40]);
    r.hand(e40!, block(40), [
      { stream: stream('a'), refs: [] },
      { stream: stream('b'), refs: [] },
      { stream: stream('m'), refs: [] },
    ]);
    for (const name of ['a40', 'b40', 'm40']) await r.end(name);
    expect(await until(() => r.staged.length === 3 && !takeBack, 2_000)).toBe(true);
    await r.retried();
    await r.lanes.settled();
    try {
      // a's webhook, staged and sent by the first try, is not staged again; b's waits for partition 1's next owner.
      // m's mark is in partition 0's unit, its webhook in 5's, which may have been taken back alone: staged again.
      expect(r.staged).toEqual(['a40', 'b40', 'm40', 'm40']);
      expect([stagedIn(store, e40!, 0)('a'), stagedIn(store, e40!, 1)('b')]).toEqual([true, false]);
    } finally {
      store.transact(() => {
        store.remove('blockEvents', e40!.key);
        store.removeRange('matchMarks', { start: `${e40!.key}/`, end: `${e40!.key}/\uffff`, limit: Infinity });
      });
    }
  });

  it('gives each build its budget from when it starts, and none past LAG_BUDGETS budgets after its event was handed', async () => {
    const r = rig();
    const [e8, e9] = seen([8, 9]);
    r.hand(e8!, block(8), [{ stream: stream('s'), refs: [] }]);
    r.hand(e9!, block(9), [{ stream: stream('s'), refs: [] }]);
    expect(await until(() => r.budgets.has('s8'), 2_000)).toBe(true);
    const b8 = r.budgets.get('s8')!;
    let over = false;
    void b8.over.then(() => (over = true));
    await clock.advance(BUDGET_MS - 1);
    expect([b8.expired(), over]).toEqual([false, false]);
    await clock.advance(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect([b8.expired(), over, b8.ms]).toEqual([true, true, BUDGET_MS]);

    // Block 9's build starts half a budget before LAG_BUDGETS budgets since its event was handed: it has that half.
    await clock.advance((LAG_BUDGETS - 1.5) * BUDGET_MS);
    await r.end('s8');
    expect(await until(() => r.budgets.has('s9'), 2_000)).toBe(true);
    const b9 = r.budgets.get('s9')!;
    await clock.advance(BUDGET_MS / 2 - 1);
    expect(b9.expired()).toBe(false);
    await clock.advance(1);
    expect(b9.expired()).toBe(true);
    await r.end('s9');
    await r.lanes.settled();
    expect(left()).toEqual([]);
  });
});
