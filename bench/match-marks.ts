/**
 * bench:match-marks — what marking one staged webhook costs a cluster node that keeps 1,024 blocks of events
 * (app/ingest.ts CLUSTER_RETAIN_EVENTS), with the marks as this tree keeps them and as a commit before kept them
 * (BENCH_MARKS_BEFORE, default: the merge base with main), in the same run, on real LMDB.
 *
 * Each layout gets its own store, filled as a node that has run the blocks leaves it: per block a seen event and the
 * confirmation of the block 12 below, both finished for one partition (their marks 0). Then, alternating between the
 * two stores, each new block is seen (the log's cut) and one stream's webhook for it is marked staged in its own
 * transaction: the time of markStaged, of the whole transaction (its commit included), and the bytes of the marks
 * rows it wrote (what the staging unit publishes). The earlier engine/match/block-events.ts is compiled from git into
 * dist-bench beside this one (its imports resolve to this tree's modules, which it shares the Kv port with).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync } from '@swc/core';
import type { ChainEvents } from '../engine/ingest/follow.js';
import { EventKind, eventKey, type BlockEvent } from '../engine/match/block-events.js';
import type * as Marks from '../engine/match/block-events.js';
import { openStore, type Store } from '../storage/env.js';
import { report, round, sized } from './report.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const KEPT = Number(process.env.BENCH_MARKS_KEPT ?? sized(1024, 64));
const STAGINGS = Number(process.env.BENCH_MARKS_STAGINGS ?? sized(200, 20));
const CONFIRMATIONS = 12;
const CHAIN = '0x1';
const PARTITION = 5;

type Module = Pick<typeof Marks, 'blockEventLog' | 'markStaged'>;

/** The module as the commit `rev` had it, compiled beside this tree's (its relative imports resolve here). */
async function before(rev: string): Promise<Module> {
  const source = execFileSync('git', ['-C', ROOT, 'show', `${rev}:engine/match/block-events.ts`], { encoding: 'utf8' });
  const { code } = transformSync(source, { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } });
  const path = join(HERE, '..', 'engine', 'match', 'block-events.before.js');
  writeFileSync(path, code);
  return (await import(path)) as Module;
}

const hash = (): string => `0x${randomBytes(32).toString('hex')}`;

interface Layout {
  name: string;
  m: Module;
  store: Store;
  log: ChainEvents;
  markMs: number[];
  txMs: number[];
  bytes: number[];
}

function layout(name: string, m: Module): Layout {
  const store = openStore(mkdtempSync(join(tmpdir(), 'chainpost-marks-')));
  return { name, m, store, log: m.blockEventLog(store, () => {}, KEPT), markMs: [], txMs: [], bytes: [] };
}

const event = (number: number, kind: EventKind, hash: string): BlockEvent => ({
  key: eventKey(CHAIN, number, kind),
  chain: CHAIN,
  number,
  kind,
  hash,
  done: new Set(),
  staged: new Set(),
});

/** Block n seen, and n − 12 confirmed: their events. */
function block(l: Layout, n: number): BlockEvent[] {
  const events = [event(n, EventKind.Seen, hash())];
  if (n > CONFIRMATIONS) events.push(event(n - CONFIRMATIONS, EventKind.Confirmed, hash()));
  l.store.transact(() => {
    l.log.seen(CHAIN, n, events[0]!.hash);
    if (events[1] !== undefined) l.log.confirmed(CHAIN, events[1].number, events[1].hash);
  });
  return events;
}

/** Block n's events, both finished for the partition: a node's steady state. */
function finished(l: Layout, n: number): void {
  const events = block(l, n);
  l.store.transact(() =>
    l.m.markStaged(
      l.store,
      [],
      events.map((e) => ({ event: e, partitions: [PARTITION] })),
    ),
  );
}

/** Block n seen, and one stream's webhook for it marked staged in its own transaction. */
function stage(l: Layout, n: number): void {
  const [seen] = block(l, n);
  const start = performance.now();
  let marked = 0;
  l.store.transact(() => {
    const t = performance.now();
    l.m.markStaged(l.store, [{ streamId: randomUUID(), event: seen!, partition: PARTITION }]);
    marked = performance.now() - t;
  });
  l.txMs.push(performance.now() - start);
  l.markMs.push(marked);
  // The row it wrote: the partition's (before), or the event's (now).
  const tag = `#${String(PARTITION).padStart(2, '0')}`;
  const row = l.store.getRaw('matchMarks', `${CHAIN}/${tag}`) ?? l.store.getRaw('matchMarks', `${seen!.key}/${tag}`);
  l.bytes.push(row?.length ?? 0);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The last commit with one marks row per (chain, partition). */
const BEFORE_PER_EVENT = 'ea8e486^';

async function main(): Promise<void> {
  // The layout before marks were kept per event: the parent of the commit that moved them (ea8e486).
  const rev = process.env.BENCH_MARKS_BEFORE ?? BEFORE_PER_EVENT;
  const git = (...args: string[]): string => execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8' }).trim();
  if (git('rev-parse', `${rev}:engine/match/block-events.ts`) === git('rev-parse', 'HEAD:engine/match/block-events.ts'))
    throw new Error(`BENCH_MARKS_BEFORE=${rev} has this tree's engine/match/block-events.ts: nothing to compare`);
  const now = await import('../engine/match/block-events.js');
  const layouts = [layout(`before (${git('rev-parse', '--short', rev)})`, await before(rev)), layout('after', now)];
  try {
    for (const l of layouts) for (let n = 1; n <= KEPT; n++) finished(l, n);
    for (let i = 1; i <= STAGINGS; i++) for (const l of layouts) stage(l, KEPT + i);
    const figures = layouts.map((l) => ({
      layout: l.name,
      markStagedMsP50: round(median(l.markMs), 3),
      stagingTxMsP50: round(median(l.txMs), 3),
      marksBytesWritten: median(l.bytes),
    }));
    const [b, a] = figures;
    const markStagedRatio = round(b!.markStagedMsP50 / a!.markStagedMsP50, 1);
    const stagingTxRatio = round(b!.stagingTxMsP50 / a!.stagingTxMsP50, 1);
    console.log(JSON.stringify({ blocksKept: KEPT, stagings: STAGINGS, figures, markStagedRatio, stagingTxRatio }, null, 2));
    report(
      'match-marks',
      rev === BEFORE_PER_EVENT ? 'npm run bench:match-marks' : `BENCH_MARKS_BEFORE=${rev} npm run bench:match-marks`,
      {
        blocksKept: KEPT,
        stagings: STAGINGS,
        markStagedMsP50: a!.markStagedMsP50,
        stagingTxMsP50: a!.stagingTxMsP50,
        marksBytesWritten: a!.marksBytesWritten,
        beforeMarkStagedMsP50: b!.markStagedMsP50,
        beforeStagingTxMsP50: b!.stagingTxMsP50,
        beforeMarksBytesWritten: b!.marksBytesWritten,
        markStagedRatio,
        stagingTxRatio,
      },
      { markStagedRatio: '> 1 (before ÷ after)', stagingTxRatio: '> 1 (before ÷ after)' },
      markStagedRatio > 1 && stagingTxRatio > 1,
      [
        `${KEPT} blocks of events kept (a seen event and the confirmation 12 below per block, both finished for one partition), then ${STAGINGS} blocks each seen and one stream's webhook for it marked staged in its own transaction, alternating between two stores on real LMDB: the marks as this tree keeps them, and as ${b!.layout} kept them (its engine/match/block-events.ts compiled from git). p50 of markStaged, of the staging transaction (its commit included), and the marks bytes each staging wrote; the ratios are before ÷ after.`,
      ],
    );
  } finally {
    for (const l of layouts) {
      await l.store.close();
      rmSync(l.store.path, { recursive: true, force: true });
    }
  }
}

await main();
