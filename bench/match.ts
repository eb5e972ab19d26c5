/**
 * npm run bench:match — the matcher over the stored mainnet fixture blocks with
 * 1,000,000 watched addresses and 10,000 streams, beside a naive matcher (hex
 * strings in a Map, over the decoded block records) in the same run:
 *   - probes/s of FilterSet.match on one thread over probe columns read from LMDB (tinybench);
 *   - the naive matcher over the same blocks, decoded from their stored records (tinybench);
 *   - blocks/s replayed from LMDB through the server's piscina match pool;
 *   - the bloom filter's false-positive rate;
 *   - what building a matched block's webhooks reads: the record read in place
 *     (RecordView, only the matched items decoded) beside the whole record decoded.
 * Both matchers must find exactly the same items on every fixture block, and the
 * pool the same as the single thread, or the bench stops.
 */
import type { KeySetData } from '../engine/match/key-set.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Bench } from 'tinybench';
import { buildProbe, readProbe } from '../engine/evm/probe.js';
import { RecordView } from '../engine/evm/record-view.js';
import { decodeRecord, normalizeBlock, type BlockRecord } from '../engine/evm/record.js';
import { writeBlock } from '../engine/evm/store.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import { EvmFilterSet, compileFilterSet, type WatchedStream } from '../engine/evm/filter.js';
import { type FilterSetData } from '../engine/match/filter-set.js';
import { openStore } from '../storage/env.js';
import { matchPool } from '../app/worker-pool.js';
import { FIXTURE_BLOCKS, bundle } from '../test/kit/fixtures.js';
import { printRows, report, sized } from './report.js';

const BLOCKS = Number(process.env['BENCH_BLOCKS'] ?? sized(2_048, 64));
const WATCHED = sized(1_000_000, 10_000);
const STREAMS = sized(10_000, 1_000);
/** Of the streams, these are allAddresses streams (topic0 only); the others share the watched addresses. */
const TOPIC_STREAMS = 100;
const TOPICS_PER_STREAM = 10;
/** Real addresses of the fixtures among the watched ones, so that there are genuine matches. */
const REAL_ADDRESSES = 300;
const REAL_TOPICS = 20;
const RANDOM_KEYS = sized(1_000_000, 10_000);
const TASK_BLOCKS = 64;
const THREADS = Number(process.env['BENCH_THREADS'] ?? availableParallelism());
const POOL_SECONDS = Number(process.env['BENCH_POOL_SECONDS'] ?? sized(6, 0.3));
const POOL_WARMUP_SECONDS = sized(1, 0.1);
/** tinybench's options for the single-thread figures: `ms` of runs after `warmUpMs` (a few runs at the smoke size). */
const timed = (ms: number, warmUpMs: number) =>
  sized(
    { time: ms, iterations: 5, warmupTime: warmUpMs, warmupIterations: 2 },
    { time: 0, iterations: 2, warmupTime: 0, warmupIterations: 1 },
  );
const CHAIN = '0x1';
/** Replicas are stored under these numbers (the fixtures keep their own). */
const BASE = 30_000_000;

/** A seeded generator, so that every run watches the same keys. */
function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
}
const randomHex = (rand: () => number, bytes: number): string => {
  let s = '0x';
  for (let i = 0; i < bytes / 4; i++) s += rand().toString(16).padStart(8, '0');
  return s;
};

type Matches = Map<number, number[]>;

/** Streams by key, as the naive matcher keeps them: a Map of lowercase 0x hex strings. */
interface NaiveSet {
  addresses: Map<string, number[]>;
  topics: Map<string, number[]>;
}

/**
 * The naive matcher: over the decoded record, the same items the probe column holds (transaction
 * from/to/contractAddress, log emitter, address topics, internal call from/to, topic0), each looked
 * up as a hex string. Gives the same refs (kind << 24 | index) in the same order as FilterSet.match.
 */
function naiveMatch(r: BlockRecord, set: NaiveSet): Matches {
  const out: Matches = new Map();
  const add = (streams: number[] | undefined, ref: number): void => {
    if (streams === undefined) return;
    for (const s of streams) {
      const refs = out.get(s);
      if (refs === undefined) out.set(s, [ref]);
      else refs.push(ref);
    }
  };
  const addr = (hex: unknown, kind: number, index: number): void => {
    if (typeof hex === 'string' && hex.length === 42) add(set.addresses.get(hex), (kind << 24) | index);
  };
  const topicRefs: Array<[string, number]> = [];
  let log = 0;
  r.txs.forEach((t, i) => {
    addr(t.tx['from'], 0, i);
    addr(t.tx['to'], 1, i);
    addr(t.receipt['contractAddress'], 2, i);
    for (const l of t.logs) {
      addr(l.address, 3, log);
      const t0 = l.topics[0];
      if (t0?.length === 66) topicRefs.push([t0, (7 << 24) | log]);
      for (let k = 1; k < l.topics.length; k++) {
        const topic = l.topics[k]!;
        if (topic.length === 66 && topic.startsWith('0x000000000000000000000000')) addr(`0x${topic.slice(26)}`, 4, log);
      }
      log++;
    }
  });
  (r.internal ?? []).forEach((c, i) => {
    addr(c.from, 5, i);
    addr(c.to, 6, i);
  });
  // The probe column lists addresses first, then topics: so does this.
  for (const [t, ref] of topicRefs) add(set.topics.get(t), ref);
  return out;
}

const meanSeconds = (bench: Bench, name: string): number =>
  (bench.tasks.find((t) => t.name === name)!.result as unknown as { latency: { mean: number } }).latency.mean / 1000;
const canonical = (m: Matches): string =>
  JSON.stringify([...m].map(([s, refs]) => [s, [...refs].sort((a, b) => a - b)] as const).sort((a, b) => a[0] - b[0]));
const refCount = (ms: Iterable<Matches>): number => {
  let n = 0;
  for (const m of ms) for (const refs of m.values()) n += refs.length;
  return n;
};

const loadBefore = loadavg()[0]!;
const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-match-'));
const store = openStore(dir);
const pool = matchPool(store.path, THREADS);
try {
  // The fixtures, stored as the follower stores them (record, probe column, hash, transfer indexes);
  // then BLOCKS replicas of their probe columns under new numbers, cycling the fixtures.
  const records = FIXTURE_BLOCKS.map((n) => {
    const b = bundle(n);
    return normalizeBlock(b.block, b.receipts, b.traces);
  });
  store.transact(() => {
    for (const r of records) writeBlock(store, CHAIN, r);
  });
  const probes = records.map((r) => buildProbe(r));
  for (let i = 0; i < BLOCKS; i += 256) {
    store.transact(() => {
      for (let j = i; j < Math.min(i + 256, BLOCKS); j++) store.putRaw('probes', blockKey(CHAIN, BASE + j), probes[j % probes.length]!);
    });
  }
  const fixtureOf = (j: number): number => FIXTURE_BLOCKS[j % FIXTURE_BLOCKS.length]!;
  const probeCounts = probes.map((p) => {
    const v = readProbe(p);
    return v.addressCount + v.topicCount;
  });
  let probesPerPass = 0;
  for (let j = 0; j < BLOCKS; j++) probesPerPass += probeCounts[j % probeCounts.length]!;

  // The distinct addresses and topic0s of the fixtures, from their probe columns.
  const fixtureAddresses = new Set<string>();
  const fixtureTopics = new Set<string>();
  for (const p of probes) {
    const v = readProbe(p);
    const hex = Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('hex');
    for (let a = 0; a < v.addressCount; a++)
      fixtureAddresses.add(`0x${hex.slice((v.addressesAt + a * 20) * 2, (v.addressesAt + a * 20 + 20) * 2)}`);
    for (let t = 0; t < v.topicCount; t++) fixtureTopics.add(`0x${hex.slice((v.topicsAt + t * 32) * 2, (v.topicsAt + t * 32 + 32) * 2)}`);
  }
  // A seeded uniform sample of the distinct ones (not weighted by how often they occur).
  const pick = splitmix32(0x5eed);
  const sample = (from: Set<string>, n: number): string[] => {
    const all = [...from].sort();
    for (let i = all.length - 1; i > 0; i--) {
      const k = pick() % (i + 1);
      [all[i], all[k]] = [all[k]!, all[i]!];
    }
    return all.slice(0, n);
  };
  const realAddresses = sample(fixtureAddresses, REAL_ADDRESSES);
  const realTopics = sample(fixtureTopics, REAL_TOPICS);
  /** Every tenth real address is watched by a second stream too. */
  const inTwoStreams = (i: number): boolean => i % 10 === 0;

  // 1,000,000 watched addresses over the 9,900 address streams (round robin, about 101 each); every
  // tenth real address is watched by a second stream too. 100 allAddresses streams of 10 topic0 each.
  // The random ones come from a seeded generator, so they are made twice rather than kept: once for
  // the filter set, then again for the naive matcher's Map. The filter set is measured while the
  // naive Map does not exist yet, as in a match worker, whose heap holds no such thing (with a
  // million strings live, every full GC of this thread would be charged to the filter set).
  const addressStreams = STREAMS - TOPIC_STREAMS;
  const forEachWatched = (watch: (address: string, stream: number) => void): void => {
    realAddresses.forEach((a, i) => {
      watch(a, (i * 7919) % addressStreams);
      if (inTwoStreams(i)) watch(a, (i * 7919 + 1) % addressStreams);
    });
    const rand = splitmix32(0xadd7e55);
    for (let i = REAL_ADDRESSES; i < WATCHED; i++) watch(randomHex(rand, 20), i % addressStreams);
  };
  const topicRand = splitmix32(0x70b1c);
  const topicLists: string[][] = Array.from({ length: TOPIC_STREAMS }, () =>
    Array.from({ length: TOPICS_PER_STREAM }, () => randomHex(topicRand, 32)),
  );
  realTopics.forEach((t, i) => (topicLists[(i * 37) % TOPIC_STREAMS]![i % TOPICS_PER_STREAM] = t));
  const compile = (): { data: FilterSetData; compileMs: number } => {
    const lists: string[][] = Array.from({ length: addressStreams }, () => []);
    forEachWatched((a, s) => void lists[s]!.push(a));
    const streams: WatchedStream[] = [
      ...lists.map((addresses, index) => ({ index, addresses, allAddresses: false, topic0: [] })),
      ...topicLists.map((topic0, s) => ({ index: addressStreams + s, addresses: [], allAddresses: true, topic0 })),
    ];
    const started = performance.now();
    const data = compileFilterSet(1, streams);
    return { data, compileMs: performance.now() - started };
  };
  const { data, compileMs } = compile();
  const set = new EvmFilterSet(data);
  if (set.addresses.size !== WATCHED) throw new Error(`${set.addresses.size} distinct addresses watched, not ${WATCHED}`);
  console.log(
    `watching ${set.addresses.size.toLocaleString('en-US')} addresses and ${set.topics.size} topic0s over ${STREAMS.toLocaleString('en-US')} streams (compiled in ${Math.round(compileMs)} ms, ${(set.addresses.bytes / 2 ** 20).toFixed(1)} MiB)`,
  );
  const expected = new Map<number, Matches>(FIXTURE_BLOCKS.map((n) => [n, set.match(store.getRaw('probes', blockKey(CHAIN, n))!)]));
  let matchesPerPass = 0;
  for (let j = 0; j < BLOCKS; j++) matchesPerPass += refCount([expected.get(fixtureOf(j))!]);

  // One thread: the filter set over every replica's probe column read from LMDB without a copy.
  let seen = 0;
  const setBench = new Bench(timed(4_000, 500));
  setBench.add('filter set', () => {
    let found = 0;
    for (let j = 0; j < BLOCKS; j++) {
      for (const refs of set.match(store.getRaw('probes', blockKey(CHAIN, BASE + j))!).values()) found += refs.length;
    }
    if (found !== matchesPerPass) throw new Error(`filter set: ${found} items, expected ${matchesPerPass}`);
    seen += found;
  });
  await setBench.run();

  // Then the naive matcher, in a function of its own: its Map of a million strings is garbage once
  // it returns, before the pool runs on the same cores.
  const naivePhase = async () => {
    // The naive matcher's Map: the same keys as hex strings, each with its streams.
    const watched = new Map<string, number[]>();
    forEachWatched((a, s) => {
      const w = watched.get(a);
      if (w === undefined) watched.set(a, [s]);
      else w.push(s);
    });
    const watchedTopics = new Map<string, number[]>();
    topicLists.forEach((ts, s) => {
      for (const t of ts) {
        const w = watchedTopics.get(t);
        if (w === undefined) watchedTopics.set(t, [addressStreams + s]);
        else if (!w.includes(addressStreams + s)) w.push(addressStreams + s);
      }
    });
    const naive: NaiveSet = { addresses: watched, topics: watchedTopics };

    // Both matchers on every fixture block, from what LMDB holds: the same streams and items, or stop.
    FIXTURE_BLOCKS.forEach((n) => {
      const got = expected.get(n)!;
      const want = naiveMatch(decodeRecord(store.getRaw('blocks', blockKey(CHAIN, n))!), naive);
      if (canonical(got) !== canonical(want))
        throw new Error(`block ${n}: the filter set and the naive matcher disagree (${refCount([got])} vs ${refCount([want])} items)`);
    });
    const fixtureMatches = refCount(expected.values());
    const topicMatches = [...expected.values()].reduce(
      (a, m) => a + [...m].filter(([s]) => s >= addressStreams).reduce((b, [, r]) => b + r.length, 0),
      0,
    );
    if (fixtureMatches - topicMatches === 0 || topicMatches === 0)
      throw new Error('no genuine address or topic matches: the bench would measure misses only');
    console.log(`both matchers agree on the ${FIXTURE_BLOCKS.length} fixture blocks: ${fixtureMatches} items (${topicMatches} by topic0)`);

    // One thread: the naive matcher over the stored records (read, decoded, matched) of the same blocks,
    // and over records decoded beforehand.
    const NAIVE_BLOCKS = 64;
    let naiveProbes = 0;
    for (let j = 0; j < NAIVE_BLOCKS; j++) naiveProbes += probeCounts[j % probeCounts.length]!;
    const decoded = records.map((r) => decodeRecord(store.getRaw('blocks', blockKey(CHAIN, Number(r.header['number'])))!));
    const bench = new Bench(timed(4_000, 500));
    bench.add('naive', () => {
      for (let j = 0; j < NAIVE_BLOCKS; j++)
        seen += refCount([naiveMatch(decodeRecord(store.getRaw('blocks', blockKey(CHAIN, fixtureOf(j)))!), naive)]);
    });
    bench.add('naive, records decoded beforehand', () => {
      for (let j = 0; j < NAIVE_BLOCKS; j++) seen += refCount([naiveMatch(decoded[j % decoded.length]!, naive)]);
    });
    await bench.run();
    const naiveProbesPerSec = Math.round(naiveProbes / meanSeconds(bench, 'naive'));
    const naiveMatchOnlyProbesPerSec = Math.round(naiveProbes / meanSeconds(bench, 'naive, records decoded beforehand'));

    // The unwatched addresses and topic0s of the fixture probe columns, through the bloom filters.
    let unwatched = 0;
    let fixturePassed = 0;
    for (const p of probes) {
      const v = readProbe(p);
      const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
      const hex = Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('hex');
      for (let a = 0; a < v.addressCount; a++) {
        const at = v.addressesAt + a * 20;
        if (watched.has(`0x${hex.slice(at * 2, (at + 20) * 2)}`)) continue;
        unwatched++;
        if (set.addresses.mayContain(dv, at)) fixturePassed++;
      }
      for (let t = 0; t < v.topicCount; t++) {
        const at = v.topicsAt + t * 32;
        if (watchedTopics.has(`0x${hex.slice(at * 2, (at + 32) * 2)}`)) continue;
        unwatched++;
        if (set.topics.mayContain(dv, at)) fixturePassed++;
      }
    }
    const fixtureFalsePositiveRate = fixturePassed / unwatched;
    return { naiveProbesPerSec, naiveMatchOnlyProbesPerSec, fixtureMatches, topicMatches, unwatched, fixtureFalsePositiveRate };
  };
  const { naiveProbesPerSec, naiveMatchOnlyProbesPerSec, fixtureMatches, topicMatches, unwatched, fixtureFalsePositiveRate } =
    await naivePhase();

  // What the webhook builder reads of a matched block: each matched item, and the transaction it belongs
  // to (its hash goes in every item). Read in place, as the matcher does, or from the whole record decoded.
  const readMatched = (v: RecordView, refs: Iterable<number[]>): void => {
    for (const rs of refs) {
      for (const ref of rs) {
        const kind = ref >>> 24;
        const index = ref & 0xffffff;
        if (kind <= 2) seen += Object.keys(v.receipt(index)).length + Object.keys(v.tx(index)).length;
        else if (kind <= 4 || kind === 7) seen += v.log(index).topics.length + Object.keys(v.tx(v.logTx(index))).length;
        else seen += Object.keys(v.tx(v.internal(index).txIndex)).length;
      }
    }
    seen += Object.keys(v.header).length;
  };
  // Only blocks some stream matched go to the builder.
  const stored = FIXTURE_BLOCKS.map((n, i) => ({ key: blockKey(CHAIN, n), matches: expected.get(n)!, record: records[i]! })).filter(
    (b) => b.matches.size > 0,
  );
  /** The stream with the fewest matched items in each block: one webhook's worth. */
  const oneStream = stored.map(({ matches }) => [[...matches.values()].reduce((a, b) => (b.length < a.length ? b : a))]);
  let viewDecoded = 0;
  let viewDecodedOne = 0;
  let blockItems = 0;
  stored.forEach(({ key, matches }, i) => {
    const all = RecordView.of(store.getRaw('blocks', key)!);
    readMatched(all, matches.values());
    viewDecoded += all.decoded;
    const one = RecordView.of(store.getRaw('blocks', key)!);
    readMatched(one, oneStream[i]!);
    viewDecodedOne += one.decoded;
    blockItems += 1 + 2 * all.txCount + all.logCount + (stored[i]!.record.internal?.length ?? 0);
  });
  const buildBench = new Bench(timed(2_000, 300));
  buildBench.add('whole record', () => {
    for (const { key } of stored) {
      const r = decodeRecord(store.getRaw('blocks', key)!);
      // The flat log list the builder kept before it read in place.
      seen += r.txs.flatMap((t, txIndex) => t.logs.map((log) => ({ log, txIndex }))).length;
    }
  });
  buildBench.add('view, every stream', () => {
    for (const { key, matches } of stored) readMatched(RecordView.of(store.getRaw('blocks', key)!), matches.values());
  });
  buildBench.add('view, one stream', () => {
    stored.forEach(({ key }, i) => readMatched(RecordView.of(store.getRaw('blocks', key)!), oneStream[i]!));
  });
  await buildBench.run();
  const perBlockUs = (name: string): number => +((meanSeconds(buildBench, name) * 1e6) / stored.length).toFixed(1);
  const buildReads = {
    wholeRecordUsPerBlock: perBlockUs('whole record'),
    viewUsPerBlock: perBlockUs('view, every stream'),
    viewOneStreamUsPerBlock: perBlockUs('view, one stream'),
    viewDecodedShare: +(viewDecoded / blockItems).toFixed(3),
    viewOneStreamDecodedShare: +(viewDecodedOne / blockItems).toFixed(4),
  };
  const probesPerSecPerWorker = Math.round(probesPerPass / meanSeconds(setBench, 'filter set'));

  // The server's pool: tasks of 64 block numbers, 4 per thread in flight, over all replicas again
  // and again; each worker reads the probe columns from its own LMDB read handle.
  const numbers = Array.from({ length: BLOCKS }, (_, j) => BASE + j);
  const tasks: number[][] = [];
  for (let j = 0; j < BLOCKS; j += TASK_BLOCKS) tasks.push(numbers.slice(j, j + TASK_BLOCKS));
  const replay = async (seconds: number): Promise<{ blocks: number; seconds: number }> => {
    const started = performance.now();
    let next = 0;
    let blocks = 0;
    let found = 0;
    const loop = async (): Promise<void> => {
      while (performance.now() - started < seconds * 1000 || next % tasks.length !== 0) {
        const task = tasks[next++ % tasks.length]!;
        const res = await pool.match(CHAIN, task, data);
        blocks += res.length;
        found += refCount(res);
      }
    };
    await Promise.all(Array.from({ length: THREADS * 4 }, loop));
    const elapsed = (performance.now() - started) / 1000;
    // Whole passes only (every loop stops at a pass boundary's task count): the items found must add up.
    if (found !== (blocks / BLOCKS) * matchesPerPass)
      throw new Error(`pool: ${found} items over ${blocks} blocks, expected ${(blocks / BLOCKS) * matchesPerPass}`);
    return { blocks, seconds: elapsed };
  };
  await replay(POOL_WARMUP_SECONDS); // warm-up: the workers open LMDB and compile the hot loop
  const cpuBefore = process.cpuUsage();
  const run = await replay(POOL_SECONDS);
  const cpu = process.cpuUsage(cpuBefore);
  // CPU this process (main thread and workers) had during the replay, in cores: below the core
  // count, something else on the machine had the rest.
  const poolCpuCores = +((cpu.user + cpu.system) / 1e6 / run.seconds).toFixed(2);
  const blocksPerSecTotal = Math.round(run.blocks / run.seconds);
  const blocksPerSec = Math.round(blocksPerSecTotal / THREADS);

  // False positives of the bloom filter: 1,000,000 random addresses (none watched).
  const strangers = randomBytes(RANDOM_KEYS * 20);
  const sdv = new DataView(strangers.buffer, strangers.byteOffset, strangers.byteLength);
  let passed = 0;
  for (let i = 0; i < RANDOM_KEYS; i++) if (set.addresses.mayContain(sdv, i * 20)) passed++;
  const falsePositiveRate = passed / RANDOM_KEYS;

  const ratioVsNaive = +(probesPerSecPerWorker / naiveProbesPerSec).toFixed(1);
  const figures = {
    probesPerSecPerWorker,
    naiveProbesPerSec,
    ratioVsNaive,
    naiveMatchOnlyProbesPerSec,
    ratioVsNaiveMatchOnly: +(probesPerSecPerWorker / naiveMatchOnlyProbesPerSec).toFixed(2),
    blocksPerSec,
    blocksPerSecTotal,
    workers: THREADS,
    poolCpuCores,
    falsePositiveRate: +falsePositiveRate.toFixed(5),
    fixtureFalsePositiveRate: +fixtureFalsePositiveRate.toFixed(5),
    ...buildReads,
  };
  printRows([
    ['filter set probes/s', probesPerSecPerWorker, '/s (one thread)', naiveProbesPerSec],
    ['naive probes/s (decode)', naiveProbesPerSec, '/s'],
    ['naive probes/s (no decode)', naiveMatchOnlyProbesPerSec, '/s'],
    ['ratio vs naive (decode)', figures.ratioVsNaive, "× (the goal's figure)"],
    ['ratio vs naive (no decode)', figures.ratioVsNaiveMatchOnly, '×'],
    [
      'pool blocks/s per worker',
      blocksPerSec,
      `/s (${THREADS} workers, ${blocksPerSecTotal.toLocaleString('en-US')}/s in all, ${poolCpuCores} cores used)`,
    ],
    ['bloom FP, random addresses', falsePositiveRate * 100, '%'],
    ['bloom FP, fixture probes', fixtureFalsePositiveRate * 100, `% of ${unwatched} unwatched`],
    [
      'view reads (all streams)',
      buildReads.viewUsPerBlock,
      `µs/block (${(buildReads.viewDecodedShare * 100).toFixed(1)}% of items decoded)`,
      buildReads.wholeRecordUsPerBlock,
    ],
    [
      'view reads (one stream)',
      buildReads.viewOneStreamUsPerBlock,
      `µs/block (${(buildReads.viewOneStreamDecodedShare * 100).toFixed(2)}% of items decoded)`,
      buildReads.wholeRecordUsPerBlock,
    ],
    ['whole-record reads', buildReads.wholeRecordUsPerBlock, 'µs/block'],
  ]);
  const goal = { probesPerSecPerWorker: '>= 25000000', ratioVsNaive: '>= 10', blocksPerSec: '>= 10000 (per worker)' };
  const met = probesPerSecPerWorker >= 25_000_000 && ratioVsNaive >= 10 && blocksPerSec >= 10_000;
  const meanProbes = Math.round(probesPerPass / BLOCKS);
  report('match', 'npm run bench:match', figures, goal, met, [
    `Watched: ${WATCHED.toLocaleString('en-US')} addresses (${realAddresses.length} of them real addresses of the fixtures, a seeded uniform sample of their distinct addresses, ${realAddresses.filter((_, i) => inTwoStreams(i)).length} of those in two streams; the rest seeded random) over ${addressStreams.toLocaleString('en-US')} address streams, and ${TOPIC_STREAMS} allAddresses streams of ${TOPICS_PER_STREAM} topic0 each (${realTopics.length} real). Compiled in ${Math.round(compileMs)} ms; the address set takes ${(set.addresses.bytes / 2 ** 20).toFixed(1)} MiB (bloom ${((data.sets[0] as KeySetData).bloom.byteLength / 2 ** 20).toFixed(1)} MiB).`,
    `Blocks: the ${FIXTURE_BLOCKS.length} complete mainnet bundles of test/fixtures/evm/chainstorage (sources in test/fixtures/README.md), stored with writeBlock in a real LMDB environment in a temp dir, and ${BLOCKS} replicas of their probe columns under new numbers (${meanProbes} probes per block on average, ${Math.round(matchesPerPass / BLOCKS)} matched items: ${((100 * matchesPerPass) / probesPerPass).toFixed(0)}% of probes hit, more than most watchlists would, and each hit costs the exact table and the result Map). A probe = one address or topic0 entry of a probe column; both matchers count the same entries. On every fixture block the filter set and the naive matcher find exactly the same (stream, item) pairs (${fixtureMatches} items, ${topicMatches} by topic0), and every pass of the single thread and of the pool the expected count, or the bench stops.`,
    `Machine: ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), shared with whatever else runs on it: 1-minute load average ${loadBefore.toFixed(2)} when the bench started, ${loadavg()[0]!.toFixed(2)} at the end.`,
    `probesPerSecPerWorker: tinybench, one thread, FilterSet.match over each replica's probe column read from LMDB (getBinaryFast, no copy, the block key made per block as the worker does), ${(probesPerPass / 1e6).toFixed(2)} M probes per iteration; run before the naive matcher's Map of a million strings exists, as in a match worker's heap. naiveProbesPerSec: the baseline, one thread, each block's stored record read from LMDB, decoded (decodeRecord) and its items looked up as hex strings in a Map of the same keys (address → streams; topic0 → streams); naiveMatchOnlyProbesPerSec: the same lookups over records decoded beforehand, i.e. strings against bytes without the decode.`,
    `ratioVsNaive, the goal's figure, is against the naive matcher as the issue defines it (a set of hex strings over decoded blocks), so it includes the naive side's decode of each stored block; against the lookups alone (ratioVsNaiveMatchOnly) the filter set is ${figures.ratioVsNaiveMatchOnly}× faster.`,
    `blocksPerSec: the server's piscina match pool (app/worker-pool.ts, ${THREADS} workers on the ${availableParallelism()} cores of this machine, each with its own LMDB read handle), tasks of ${TASK_BLOCKS} block numbers, ${THREADS * 4} in flight, for ${POOL_SECONDS} s after a ${POOL_WARMUP_SECONDS} s warm-up, matches unpacked on the main thread and their count checked; per worker = all blocks / workers. The main thread shares the same ${availableParallelism()} cores; poolCpuCores = CPU time of the whole process during the replay / its duration.`,
    `Build reads (what the matcher reads of a matched block to build its webhooks), one thread, tinybench, over the ${stored.length} fixture blocks some stream matched, read from LMDB: viewUsPerBlock = RecordView.of (copy, one walk over the msgpack headers) plus decoding each item every stream matched and the transaction it belongs to, as the webhook builder does; viewOneStreamUsPerBlock = the same for the one stream with the fewest matched items in each block (one webhook's worth); wholeRecordUsPerBlock = decodeRecord of the whole record plus the flat log list, what the matcher did before it read in place. viewDecodedShare / viewOneStreamDecodedShare = items decoded / items in those blocks (header, transactions, receipts, logs, internal calls). This watchlist hits ${((100 * matchesPerPass) / probesPerPass).toFixed(0)}% of probes, far more than a usual one, so the every-stream figure is a worst case.`,
    `falsePositiveRate: share of ${RANDOM_KEYS.toLocaleString('en-US')} random addresses (none watched) that pass the address set's bloom filter (KeySet.mayContain); fixtureFalsePositiveRate: the same over the ${unwatched} unwatched address and topic0 entries of the ${probes.length} fixture probe columns (topic0s against the topic set).`,
  ]);
  console.log(`\n${met ? 'goals met' : 'goals not met'}; wrote bench/results/match.json and bench/RESULTS.md (checksum ${seen})`);
} finally {
  await pool.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
