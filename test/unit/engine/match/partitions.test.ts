import { rmSync } from 'node:fs';
import xxhash from 'xxhash-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../../engine/clock.js';
import { CapturingKv, DeliveryCapture } from '../../../../engine/cluster/delivery-capture.js';
import { PARTITIONS, applyPartitionChange, partitionOf, takeBack, type PendingUnit } from '../../../../engine/cluster/partitions.js';
import { streamKey, type Dispatcher } from '../../../../engine/delivery/dispatcher.js';
import { blockKey } from '../../../../engine/ingest/chain-store.js';
import { EventKind, blockEventLog, eventKey, pendingEvents } from '../../../../engine/match/block-events.js';
import { NodeUnavailable, StreamMatcher, type BuildWebhook, type MatcherOptions } from '../../../../engine/match/matcher.js';
import type { MatchPool } from '../../../../engine/match/ports.js';
import type { Watchlist } from '../../../../engine/match/watchlist.js';
import type { Kv } from '../../../../engine/ports.js';
import { evm } from '../../../../engine/evm/index.js';
import type { StoredStream } from '../../../../engine/streams/model.js';
import { unpack } from '../../../../storage/codec.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';
import { evmDefinition } from '../../../kit/evm-stream.js';
import { startReceiver } from '../../../receiver.js';
import { deliveryRig } from '../delivery/rig.js';
import { counting } from '../../../kit/counting-kv.js';
import type { ChainEvents } from '../../../../engine/ingest/follow.js';
import { quietLog } from '../../../kit/quiet-log.js';

/**
 * Matching per delivery partition over a real store: a chain's stored blocks and block events, streams spread over
 * the partitions, and matchers that each own some of them. Every stream matches every block (the pool's answer), so
 * what each stages is decided by the partitions alone; webhooks are staged by a dispatcher that notes them.
 */
const CHAIN = '0x539';
const T0 = Date.parse('2026-12-01T00:00:00Z');
const TENANT = 't_1111111111111111';
/** Eight streams, two in each of partitions 3, 20, 40 and 63: two in each half. */
const STREAMS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
const PARTITION: Record<string, number> = { a: 3, b: 3, c: 20, d: 20, e: 40, f: 40, g: 63, h: 63 };
const payload = (n: number) => ({
  confirmed: false,
  chainId: CHAIN,
  retries: 0,
  block: { number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: '1795000000' },
  logs: [],
  txs: [],
});
const half = (h: number) => (p: number) => Math.floor(p / (PARTITIONS / 2)) === h;

/** Stores blocks `seen` of the chain (canonical), each seen, and confirms those `confirm` names; `retain`: the log's. */
function storeBlocks(store: Store, seen: number[], confirm: number[] = [], retain?: number): void {
  const events = blockEventLog(store, () => {}, retain);
  store.transact(() => {
    for (const n of seen) {
      store.put('canon', blockKey(CHAIN, n), `0x${n}`);
      store.putRaw('blocks', blockKey(CHAIN, n), new Uint8Array([n]));
      events.seen(CHAIN, n, `0x${n}`);
    }
    for (const n of confirm) events.confirmed(CHAIN, n, `0x${n}`);
  });
}

/**
 * Partition `p`'s units taken back from `store` (its lease lost before they were published) and dropped by `m`, then
 * the lease taken again: owned and adopted. Answers the units taken back.
 */
async function lostAndTakenAgain(kv: CapturingKv, store: Store, m: StreamMatcher, owned: Set<number>, p: number): Promise<PendingUnit[]> {
  const units = kv.seal().filter((u) => u.change.partition === p);
  store.transact(() => {
    for (const u of [...units].reverse()) takeBack(store, u);
  });
  owned.delete(p);
  await m.drop(p);
  owned.add(p);
  m.adopt(p);
  return units;
}

/**
 * Stores blocks as storeBlocks does, through a matcher's listeners (`events()`), as a follower or the blocks applied
 * from the bus write them, then says the write committed.
 */
function writer(kv: Kv, events: ChainEvents): (seen: number[], confirm?: number[]) => void {
  return (seen, confirm = []) => {
    kv.transact(() => {
      for (const n of seen) {
        kv.put('canon', blockKey(CHAIN, n), `0x${n}`);
        kv.putRaw('blocks', blockKey(CHAIN, n), new Uint8Array([n]));
        events.seen(CHAIN, n, `0x${n}`);
      }
      for (const n of confirm) events.confirmed(CHAIN, n, `0x${n}`);
    });
    events.committed?.(CHAIN);
  };
}

/** A chain's watchlist and match pool where every stream matches every block. */
function everyBlockMatches(streams: ReadonlyArray<{ id: string; tenantId: string }>): { watchlist: Watchlist; pool: MatchPool } {
  const watchlist = {
    hasMatching: () => true,
    compile: async () => ({ filter: { version: 1 }, streams: streams.map(({ id, tenantId }) => ({ id, tenantId })) }),
  } as unknown as Watchlist;
  const pool: MatchPool = {
    match: async (_chain, numbers) => numbers.map(() => new Map(streams.map((_, i) => [i, []]))),
    close: async () => {},
  };
  return { watchlist, pool };
}

/** A dispatcher that notes each webhook once staged, as `name(stream):block:s|c`; each stream's queue in PARTITION's. */
function notingDispatcher(staged: string[], name: (streamId: string) => string = (id) => id): Pick<Dispatcher, 'prepare' | 'stage'> {
  return {
    prepare: async (items) => items.map((i) => ({ ...i })),
    stage: (items) => ({
      results: items.map(() => 'queued' as const),
      partitions: items.map((i) => PARTITION[i.streamId]),
      failed: () => {},
      settle: () =>
        staged.push(
          ...items.map((i) => {
            const { event } = i as unknown as { event: { number: number; kind: number } };
            return `${name(i.streamId)}:${event.number}:${event.kind === 0 ? 's' : 'c'}`;
          }),
        ),
    }),
  };
}

describe('matching per partition', () => {
  const stores: Store[] = [];
  afterAll(async () => {
    for (const s of stores) {
      await s.close();
      rmSync(s.path, { recursive: true, force: true });
    }
  });
  const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, T0);
  const log = quietLog(() => clock.now());

  /** A store holding the streams; `blocks` stores blocks (storeBlocks). */
  function chain() {
    const store = openStore(tempDir());
    stores.push(store);
    store.transact(() => {
      for (const id of STREAMS) store.put('streams', streamKey(TENANT, id), { id, tenantId: TENANT, status: 'active' });
    });
    const blocks = (seen: number[], confirm: number[] = []) => storeBlocks(store, seen, confirm);
    return { store, blocks };
  }

  /** A matcher over `kv` owning what `owns` says; `staged` lists its webhooks as `stream:block:s|c`. */
  function matcher(kv: Kv, owns: (p: number) => boolean, build: BuildWebhook = async (b) => ({ n: b.number }), opts?: MatcherOptions) {
    const staged: string[] = [];
    const { watchlist, pool } = everyBlockMatches(STREAMS.map((id) => ({ id, tenantId: TENANT })));
    const dispatcher = notingDispatcher(staged);
    const m = new StreamMatcher({
      kv,
      clock,
      watchlist,
      pool,
      dispatcher,
      build,
      log,
      owns,
      partitionOf: (s: StoredStream) => PARTITION[s.id]!,
      ...(opts === undefined ? {} : { opts }),
    });
    return { m, staged };
  }

  const sorted = (xs: readonly string[]) => [...xs].sort();
  const run = async (...ms: Array<ReturnType<typeof matcher>>) => {
    for (const { m } of ms) m.wake(CHAIN);
    for (const { m } of ms) await m.settled();
  };

  it('two matchers, each owning half the partitions, stage exactly the webhooks one matcher stages alone, and the events go once both finished', async () => {
    const alone = chain();
    alone.blocks([1, 2, 3], [1]);
    alone.blocks([4, 5], [2, 3]);
    const one = matcher(alone.store, () => true);
    await run(one);
    expect(one.staged).toHaveLength(STREAMS.length * 8);
    expect(pendingEvents(alone.store, CHAIN, 100)).toEqual([]);

    const split = chain();
    split.blocks([1, 2, 3], [1]);
    split.blocks([4, 5], [2, 3]);
    const low = matcher(split.store, half(0));
    const high = matcher(split.store, half(1));
    await run(low);
    // The first half's streams only; the events wait for the other half.
    expect(new Set(low.staged.map((w) => w.split(':')[0]))).toEqual(new Set(['a', 'b', 'c', 'd']));
    expect(pendingEvents(split.store, CHAIN, 100)).toHaveLength(8);
    expect(pendingEvents(split.store, CHAIN, 100, half(0))).toEqual([]);
    await run(high);
    expect(new Set(high.staged.map((w) => w.split(':')[0]))).toEqual(new Set(['e', 'f', 'g', 'h']));
    expect(sorted([...low.staged, ...high.staged])).toEqual(sorted(one.staged));
    expect(pendingEvents(split.store, CHAIN, 100)).toEqual([]);
    // Each stream's webhooks in event order, as one matcher stages them.
    for (const id of STREAMS) {
      const mine = (ws: string[]) => ws.filter((w) => w.startsWith(`${id}:`));
      expect(mine(PARTITION[id]! < 32 ? low.staged : high.staged)).toEqual(mine(one.staged));
    }
  });

  it('a block that left the chain before a partition matched it is not delivered to that partition, its replacement is, as to the partition that matched both', async () => {
    const { store, blocks } = chain();
    blocks([1, 2, 3]);
    const built: string[] = [];
    const build: BuildWebhook = async (b, s) => {
      built.push(`${s.id}:${b.number}:${b.bytes[0]}`);
      return { n: b.number };
    };
    const low = matcher(store, half(0), build);
    const high = matcher(store, half(1), build);
    await run(low);
    // Block 3 leaves the chain unconfirmed, another takes its place (its bytes 103), before the second half matched.
    const events = blockEventLog(store, () => {});
    store.transact(() => {
      events.reorged!(CHAIN, 3, 3);
      store.put('canon', blockKey(CHAIN, 3), '0x3b');
      store.putRaw('blocks', blockKey(CHAIN, 3), new Uint8Array([103]));
      events.seen(CHAIN, 3, '0x3b');
    });
    await run(high, low);
    const of = (id: string) => built.filter((b) => b.startsWith(`${id}:`));
    expect(of('a')).toEqual(['a:1:1', 'a:2:2', 'a:3:3', 'a:3:103']);
    expect(of('e')).toEqual(['e:1:1', 'e:2:2', 'e:3:103']);
    expect(sorted(high.staged.filter((w) => w.startsWith('e:')))).toEqual(['e:1:s', 'e:2:s', 'e:3:s']);
    expect(pendingEvents(store, CHAIN, 100)).toEqual([]);
  });

  it('a node keeping events for other owners reads, at each round, the events from its oldest unfinished one on: a block after 300 kept finished costs a few reads, and a confirmation written below them is matched', async () => {
    const { store } = chain();
    const counted = counting(store);
    const staged: string[] = [];
    const { watchlist, pool } = everyBlockMatches(STREAMS.map((id) => ({ id, tenantId: TENANT })));
    const m = new StreamMatcher({
      kv: counted.kv,
      clock,
      watchlist,
      pool,
      dispatcher: notingDispatcher(staged),
      build: async (b) => ({ n: b.number }),
      log,
      opts: { retainEvents: 1024 },
      owns: () => true,
      partitionOf: (s: StoredStream) => PARTITION[s.id]!,
    });
    // Written through the matcher's listeners, as a follower (or the blocks applied from the bus) writes them.
    const write = writer(store, m.events());
    const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
    write(upTo(300), upTo(290));
    await m.settled();
    expect(staged).toHaveLength(STREAMS.length * 590);
    // Kept, finished here.
    expect(pendingEvents(store, CHAIN, 1000)).toHaveLength(590);

    // A block as they come, one at a time: its drain starts where the last stopped.
    write([301]);
    await m.settled();
    counted.reset();
    staged.length = 0;
    write([302]);
    await m.settled();
    expect(sorted(staged)).toEqual(sorted(STREAMS.map((id) => `${id}:302:s`)));
    expect(counted.ranges()).toBeLessThan(20);

    counted.reset();
    staged.length = 0;
    // Block 303, and the confirmations of 291 to 299: keys below the newest blocks, all finished.
    const confirmed = [291, 292, 293, 294, 295, 296, 297, 298, 299];
    write([303], confirmed);
    await m.settled();
    expect(sorted(staged.filter((w) => w.startsWith('a:')))).toEqual(sorted(['a:303:s', ...confirmed.map((n) => `a:${n}:c`)]));
    expect(staged).toHaveLength(STREAMS.length * 10);
    expect(counted.ranges()).toBeLessThan(60);

    // An event written elsewhere than through its listeners, below where its drain stopped: a wake from outside reads
    // from the first event again.
    blockEventLog(store, () => {}).confirmed(CHAIN, 300, '0x300');
    staged.length = 0;
    m.wake(CHAIN);
    await m.settled();
    expect(sorted(staged)).toEqual(sorted(STREAMS.map((id) => `${id}:300:c`)));
    await m.stop();
  });

  it('a partition moved between them mid-chain resumes where its owner left it: what was staged is not staged again, what was not is', async () => {
    const { store, blocks } = chain();
    blocks([1, 2, 3], [1]);
    // The first owner of partition 20 stages c's webhooks, but cannot build d's (its node does not answer), then goes.
    const lowOwns = new Set([...Array(PARTITIONS / 2).keys()]);
    const low = matcher(
      store,
      (p) => lowOwns.has(p),
      async (b, s) => {
        if (s.id === 'd') throw new NodeUnavailable('no answer');
        return { n: b.number };
      },
    );
    const highOwns = new Set([...Array(PARTITIONS / 2).keys()].map((p) => p + PARTITIONS / 2));
    const high = matcher(store, (p) => highOwns.has(p));
    low.m.wake(CHAIN);
    high.m.wake(CHAIN);
    await high.m.settled();
    // The first owner's lanes hold the events for d; their other streams are staged.
    await expect.poll(() => low.staged.length).toBe(3 * 4);
    expect(new Set(low.staged.map((w) => w.split(':')[0]))).toEqual(new Set(['a', 'b', 'c']));
    lowOwns.delete(20);
    await low.m.stop();
    highOwns.add(20);
    high.m.adopt(20);
    await high.m.settled();
    // More blocks: the new owner goes on from there.
    blocks([4], [2]);
    await run(high);

    const all = [...low.staged, ...high.staged];
    expect(new Set(all).size).toBe(all.length);
    const c = ['c:1:s', 'c:2:s', 'c:3:s', 'c:1:c'];
    const d = c.map((w) => w.replace('c:', 'd:'));
    expect(sorted(all.filter((w) => w[0] === 'c'))).toEqual(sorted([...c, 'c:4:s', 'c:2:c']));
    expect(sorted(high.staged.filter((w) => w[0] === 'd'))).toEqual(sorted([...d, 'd:4:s', 'd:2:c']));
    // d's webhooks in event order, though its first ones were built by the new owner after c's.
    expect(high.staged.filter((w) => w[0] === 'd')).toEqual(['d:1:s', 'd:1:c', 'd:2:s', 'd:3:s', 'd:2:c', 'd:4:s']);
    // Partition 3 stayed with the first owner, which stopped: the events wait for it alone.
    expect(pendingEvents(store, CHAIN, 100, (p) => p === 3).map((e) => e.key)).toEqual(pendingEvents(store, CHAIN, 100).map((e) => e.key));
  });

  it('a partition adopted while an older event is still being built for the others gets each stream’s webhooks in event order', async () => {
    const { store, blocks } = chain();
    blocks([1]);
    const owned = new Set([3]);
    let release = (): void => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    // a's webhook for block 1 takes long to build (its trigger calls, say): block 1's event stays open.
    const build: BuildWebhook = async (b, s) => {
      if (s.id === 'a' && b.number === 1) await held;
      return { n: b.number };
    };
    const { m, staged } = matcher(store, (p) => owned.has(p), build, { retainEvents: 100 });
    m.wake(CHAIN);
    await expect.poll(() => staged).toContain('b:1:s');
    // Block 2 comes, and partition 40 is adopted: block 2 is matched for the others, not for it before block 1.
    blocks([2]);
    owned.add(40);
    m.adopt(40);
    await expect.poll(() => staged).toContain('b:2:s');
    // Nor is the next block held up for the others meanwhile.
    blocks([3]);
    m.wake(CHAIN);
    await expect.poll(() => staged).toContain('b:3:s');
    release();
    await m.settled();
    expect(staged.filter((w) => w[0] === 'e')).toEqual(['e:1:s', 'e:2:s', 'e:3:s']);
    expect(staged.filter((w) => w[0] === 'a')).toEqual(['a:1:s', 'a:2:s', 'a:3:s']);
    await m.stop();
  });

  it('a partition adopted while a round is under way gets none of that round’s events before an older one still open for the others', async () => {
    const { store, blocks } = chain();
    blocks([1]);
    const owned = new Set([3]);
    let release = (): void => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const build: BuildWebhook = async (b, s) => {
      if (s.id === 'a' && b.number === 1) await held;
      return { n: b.number };
    };
    // Each round first waits for the control log (caughtUp): block 2's waits there while partition 40 is adopted.
    let caughtUp: Promise<void> = Promise.resolve();
    let open = (): void => {};
    const { m, staged } = matcher(store, (p) => owned.has(p), build, { retainEvents: 100, caughtUp: () => caughtUp });
    m.wake(CHAIN);
    await expect.poll(() => staged).toContain('b:1:s');
    caughtUp = new Promise<void>((resolve) => (open = resolve));
    blocks([2]);
    m.wake(CHAIN);
    await new Promise((resolve) => setTimeout(resolve, 20));
    owned.add(40);
    m.adopt(40);
    open();
    await expect.poll(() => staged).toContain('b:2:s');
    release();
    await m.settled();
    expect(staged.filter((w) => w[0] === 'e')).toEqual(['e:1:s', 'e:2:s']);
    await m.stop();
  });

  it('a partition adopted on a node keeping events gets its streams’ webhooks from the oldest event it has not finished, though the drain had started past it for the others', async () => {
    const { store } = chain();
    const owned = new Set([3]);
    const { m, staged } = matcher(store, (p) => owned.has(p), undefined, { retainEvents: 100 });
    // Written through the matcher's listeners, as a follower (or the blocks applied from the bus) writes them.
    const write = writer(store, m.events());
    // Blocks 1 and 2 finished for partition 3: the drain starts past them from now on.
    write([1, 2], [1]);
    await m.settled();
    expect(staged.filter((w) => w[0] === 'a')).toEqual(['a:1:s', 'a:1:c', 'a:2:s']);
    // The next commit's drain (a write of another chain's, say) reads them finished.
    write([]);
    await m.settled();
    // Partition 40 owned (the link's `ready`) as block 3 and the confirmation of 2 come, and adopted: the round they
    // wake runs while the adoption's forgetting is still being written.
    owned.add(40);
    write([3], [2]);
    m.adopt(40);
    await m.settled();
    expect(staged.filter((w) => w[0] === 'e')).toEqual(['e:1:s', 'e:1:c', 'e:2:s', 'e:2:c', 'e:3:s']);
    expect(staged.filter((w) => w[0] === 'a')).toEqual(['a:1:s', 'a:1:c', 'a:2:s', 'a:2:c', 'a:3:s']);
    await m.stop();
  });

  it('a partition adopted again after its units were taken back gets their webhooks before a block that comes while it is being adopted', async () => {
    const { store } = chain();
    // A cluster node: its marks written through the capture, its events kept.
    const kv = new CapturingKv(store, () => 0);
    const owned = new Set([...Array(PARTITIONS).keys()]);
    const { m, staged } = matcher(kv, (p) => owned.has(p), undefined, { retainEvents: 100 });
    const write = writer(kv, m.events());
    write([1, 2], [1]);
    await m.settled();
    write([]);
    await m.settled();
    expect(staged).toHaveLength(STREAMS.length * 3);
    // Partition 3's units (a's and b's webhooks and their marks) were not acknowledged when its lease was lost; the
    // lease taken again (owned, adopted), and block 3 comes while what this node finished for it is forgotten.
    await lostAndTakenAgain(kv, store, m, owned, 3);
    write([3]);
    await m.settled();
    const again = staged.slice(STREAMS.length * 3);
    expect(again.filter((w) => w[0] === 'a')).toEqual(['a:1:s', 'a:1:c', 'a:2:s', 'a:3:s']);
    expect(again.filter((w) => w[0] === 'e')).toEqual(['e:3:s']);
    await m.stop();
  });

  it('a webhook built for a partition dropped meanwhile is not staged here; adopted again, the partition stages it then', async () => {
    const { store, blocks } = chain();
    blocks([1]);
    const owned = new Set([3, 40]);
    let release = (): void => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const build: BuildWebhook = async (b, s) => {
      if (s.id === 'e') await held;
      return { n: b.number };
    };
    const { m, staged } = matcher(store, (p) => owned.has(p), build, { retainEvents: 100 });
    m.wake(CHAIN);
    await expect.poll(() => staged).toContain('f:1:s');
    // Partition 40's lease lost while e's webhook is built: its next owner stages it, not this node.
    owned.delete(40);
    const dropped = m.drop(40);
    release();
    await dropped;
    await m.settled();
    expect(staged.filter((w) => w[0] === 'e')).toEqual([]);
    expect(pendingEvents(store, CHAIN, 10, (p) => p === 40)).toHaveLength(1);
    // Taken again: staged once.
    owned.add(40);
    m.adopt(40);
    await m.settled();
    expect(staged.filter((w) => w[0] === 'e')).toEqual(['e:1:s']);
    await m.stop();
  });

  it('a partition adopted again after its staged units were taken back (its lease lost before they were published) stages their webhooks again, in order', async () => {
    const { store, blocks } = chain();
    blocks([1, 2], [1]);
    // A cluster node: its marks written through the capture, its events kept.
    const kv = new CapturingKv(store, () => 0);
    const owned = new Set([...Array(PARTITIONS).keys()]);
    const { m, staged } = matcher(kv, (p) => owned.has(p), undefined, { retainEvents: 100 });
    await run({ m, staged });
    expect(staged).toHaveLength(STREAMS.length * 3);
    // Partition 3's units (a's and b's webhooks and their marks) were not acknowledged when its lease was lost; the
    // lease taken again: the partition's webhooks the log lacks are staged again, each stream's in event order.
    expect(await lostAndTakenAgain(kv, store, m, owned, 3)).toHaveLength(1);
    await expect.poll(() => staged.length).toBe(STREAMS.length * 3 + 2 * 3);
    await m.settled();
    expect(staged.slice(STREAMS.length * 3).filter((w) => w[0] === 'a')).toEqual(['a:1:s', 'a:1:c', 'a:2:s']);
    expect(staged.slice(STREAMS.length * 3).filter((w) => w[0] === 'b')).toEqual(['b:1:s', 'b:1:c', 'b:2:s']);
    await m.stop();
  });
});

describe('matching per partition, captured', () => {
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());

  it("a cluster node's marks ride in the unit that staged their webhooks, and the node applying them passes those events over", async () => {
    const { h32 } = await xxhash();
    const part = (tenant: string, url: string) => partitionOf(h32, tenant, url);
    const units: PendingUnit[][] = [];
    let capture: DeliveryCapture | undefined;
    const rig = deliveryRig(T0, {
      partitionOf: part,
      capture: (kv) => (capture = new DeliveryCapture(kv, part, (u) => void units.push(u))),
    });
    const other = openStore(tempDir());
    try {
      const family = evm.resources({ kv: rig.store, clock: rig.clock, dispatcher: rig.dispatcher });
      // Three URLs in three partitions (the receiver's port varies: two of three would share one in ~5 % of runs).
      const urls: string[] = [];
      for (let q = 0; urls.length < 3; q++) {
        const u = `${rx.url}?${q}`;
        if (!urls.some((v) => part(TENANT, v) === part(TENANT, u))) urls.push(u);
      }
      const ids = await Promise.all(urls.map(async (u) => String((await family.create(TENANT, evmDefinition(u, 'm'), undefined)).id)));
      const streams = ids.map((id) => rig.store.get<StoredStream>('streams', streamKey(TENANT, id))!);
      const partitionOfStream = (s: StoredStream) => part(s.tenantId, s.webhookUrl);
      // The other node holds the same streams (the control plane's rows) and applies the same blocks.
      other.transact(() => {
        for (const s of streams) other.put('streams', streamKey(TENANT, s.id), s);
      });
      const blocks = (store: Store, seen: number[], confirm: number[] = []) => storeBlocks(store, seen, confirm, 100);
      const { watchlist, pool } = everyBlockMatches(streams);
      const log = quietLog(() => rig.clock.now());
      const build: BuildWebhook = async (b) => payload(b.number);
      const opts = { retainEvents: 100 };

      // The first node owns every partition and writes through its capture.
      const first = new StreamMatcher({
        kv: capture!.kv,
        store: rig.store,
        clock: rig.clock,
        watchlist,
        pool,
        dispatcher: rig.dispatcher,
        build,
        log,
        opts,
        partitionOf: partitionOfStream,
      });
      blocks(rig.store, [1, 2], [1]);
      blocks(other, [1, 2], [1]);
      first.wake(CHAIN);
      await first.settled();
      await rig.dispatcher.settled();
      await first.stop();

      // Each stream's staging unit holds its webhooks' queue rows and its partition's marks, finished.
      // (The first unit of each partition: its outcomes come after.)
      const staging = [
        ...new Map(
          units
            .flat()
            .map((u) => [u.change.partition, u] as const)
            .reverse(),
        ).values(),
      ];
      expect(new Set(staging.map((u) => u.change.partition))).toEqual(new Set(streams.map(partitionOfStream)));
      for (const u of staging) {
        expect(u.change.rows.filter(([table, , bytes]) => table === 'queue' && bytes !== null)).toHaveLength(3);
        const marks = u.change.rows.filter(([table]) => table === 'matchMarks');
        const tag = `#${String(u.change.partition).padStart(2, '0')}`;
        const events = [eventKey(CHAIN, 1, EventKind.Seen), eventKey(CHAIN, 1, EventKind.Confirmed), eventKey(CHAIN, 2, EventKind.Seen)];
        expect(marks.map(([, key]) => key).sort()).toEqual(events.map((e) => `${e}/${tag}`));
        expect(marks.map(([, , bytes]) => (unpack(bytes!) as [string, unknown])[1])).toEqual([0, 0, 0]);
      }
      // The events stay in the log, finished here.
      expect(pendingEvents(rig.store, CHAIN, 10)).toHaveLength(3);
      expect(pendingEvents(rig.store, CHAIN, 10, () => true)).toEqual([]);
      // The log's cut takes block 1's events and their marks from this store alone: every node cuts its own log, and
      // no partition's unit carries the removal.
      const marksOf1 = () => rig.store.keys('matchMarks', { start: `${blockKey(CHAIN, 1)}/`, end: `${blockKey(CHAIN, 1)}/\uffff` });
      expect(marksOf1()).toHaveLength(2 * streams.length);
      rig.store.transact(() => first.events().seen(CHAIN, 2 + opts.retainEvents, '0xcut'));
      expect([pendingEvents(rig.store, CHAIN, 10).map((e) => e.number), marksOf1()]).toEqual([[2, 2 + opts.retainEvents], []]);
      expect(capture!.kv.seal()).toEqual([]);

      // The other node applies the partitions' units, then owns them all: it stages only what came since.
      other.transact(() => {
        for (const u of units.flat()) applyPartitionChange(other, u.change);
      });
      const staged: string[] = [];
      const second = new StreamMatcher({
        kv: other,
        clock: rig.clock,
        watchlist,
        pool,
        dispatcher: notingDispatcher(staged, (id) => String(ids.indexOf(id))),
        build,
        log,
        opts,
        partitionOf: partitionOfStream,
      });
      blocks(other, [3], [2]);
      second.wake(CHAIN);
      await second.settled();
      expect(staged.sort()).toEqual(['0:2:c', '0:3:s', '1:2:c', '1:3:s', '2:2:c', '2:3:s']);
      await second.stop();
    } finally {
      await rig.close();
      await other.close();
      rmSync(other.path, { recursive: true, force: true });
    }
  });
});
