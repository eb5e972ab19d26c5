import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_BLOCKS, bundle } from './kit/fixtures.js';
import { buildProbe } from '../engine/evm/probe.js';
import { normalizeBlock, type BlockRecord } from '../engine/evm/record.js';
import { TRANSFER } from '../engine/evm/store.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import { EvmFilterSet, compileFilterSet, type WatchedStream } from '../engine/evm/filter.js';
import { FAMILIES } from '../app/families.js';
import { inlineSmallRounds } from '../engine/match/match-blocks.js';
import type { MatchPool } from '../engine/match/ports.js';
import { openStore, type Store } from '../storage/env.js';
import { matchPool } from '../app/worker-pool.js';
import { startWorkerThreads } from '../app/worker-threads.js';
import { taskPool } from '../workers/pool.js';
import { tempDir } from './helpers.js';

/**
 * The piscina pool of the server: workers reading probe columns from the LMDB
 * environment the main thread writes, against filter sets posted as shared
 * memory. Their answers must equal the same filter set probed in this thread.
 */
describe('the match pool over the mainnet fixture blocks in LMDB', () => {
  let dir: string;
  let store: Store;
  let pool: MatchPool;
  const records: BlockRecord[] = FIXTURE_BLOCKS.map((n) => {
    const b = bundle(n);
    return normalizeBlock(b.block, b.receipts, b.traces);
  });
  const probes = records.map(buildProbe);
  const chain = '0x1';
  const numbers = records.map((_, i) => i);

  beforeAll(() => {
    dir = tempDir();
    store = openStore(dir);
    pool = matchPool(store.path, 2);
    // The first half now; the rest after the pool has already read (a fresh snapshot per task).
    store.transact(() => probes.slice(0, 4).forEach((p, i) => store.putRaw('probes', blockKey(chain, i), p)));
  });
  afterAll(async () => {
    await pool.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const watchedOf = (r: BlockRecord, every: number): string[] =>
    [...new Set(r.txs.map((t) => t.tx['to']).filter((a): a is string => typeof a === 'string'))].filter((_, i) => i % every === 0);
  const streamsFor = (every: number): WatchedStream[] => [
    { index: 0, addresses: records.flatMap((r) => watchedOf(r, every)), allAddresses: false, topic0: [] },
    { index: 1, addresses: [], allAddresses: true, topic0: [TRANSFER] },
  ];

  it('answers what the same filter set finds in this thread, block by block, across versions and new blocks', async () => {
    const v1 = compileFilterSet(1, streamsFor(5));
    const first = await pool.match(chain, numbers, v1);
    const here1 = new EvmFilterSet(v1);
    numbers.forEach((n) => expect(first[n], `block ${n}`).toEqual(n < 4 ? here1.match(probes[n]!) : new Map()));
    expect(first.slice(0, 4).some((m) => (m.get(0)?.length ?? 0) > 0)).toBe(true);

    store.transact(() => probes.slice(4).forEach((p, i) => store.putRaw('probes', blockKey(chain, 4 + i), p)));
    const v2 = compileFilterSet(2, streamsFor(2));
    const here2 = new EvmFilterSet(v2);
    // Several tasks at once, so both workers answer with the new version.
    const answers = await Promise.all(numbers.map((n) => pool.match(chain, [n], v2)));
    numbers.forEach((n) => expect(answers[n]![0], `block ${n}`).toEqual(here2.match(probes[n]!)));
    // The versions answer differently on the blocks both read, so a worker still on v1 would be caught above.
    expect(answers.slice(0, 4).map((a) => a[0])).not.toEqual(first.slice(0, 4));
  });

  it('matches small rounds on this thread with the same answers, and hands larger ones to the pool', async () => {
    const v3 = compileFilterSet(3, streamsFor(3));
    const here = new EvmFilterSet(v3);
    let pooled = 0;
    const counting: MatchPool = { match: (...args) => (pooled++, pool.match(...args)), close: async () => {} };
    const inline = inlineSmallRounds(counting, store, 2, FAMILIES.matching);
    const small = await inline.match(chain, [0, 1], v3);
    expect(pooled).toBe(0);
    expect(small).toEqual([here.match(probes[0]!), here.match(probes[1]!)]);
    // A block without a probe column matches nothing, here as in a worker.
    expect(await inline.match(chain, [numbers.length + 5], v3)).toEqual([new Map()]);
    const large = await inline.match(chain, numbers, v3);
    expect(pooled).toBe(1);
    numbers.forEach((n) => expect(large[n], `block ${n}`).toEqual(here.match(probes[n]!)));
  });
});

/**
 * The modules a pool thread's entry (dist/app/worker.js) loads, by URL, seen by a resolve hook in a thread started as
 * the server starts one (the server's families named in its workerData), in a process of its own; the hook answers
 * the list itself when asked for `loaded:`, after the entry has loaded.
 */
function workerModules(): string[] {
  const hook = `const seen = new Set();
export async function resolve(specifier, context, next) {
  if (specifier === 'loaded:') return { url: 'data:text/javascript,export default ' + JSON.stringify([...seen]), shortCircuit: true };
  const resolved = await next(specifier, context);
  seen.add(resolved.url);
  return resolved;
}`;
  const thread = `import { register } from 'node:module';
import { parentPort } from 'node:worker_threads';
register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
await import(${JSON.stringify(new URL('../dist/app/worker.js', import.meta.url).href)});
parentPort.postMessage((await import('loaded:')).default);`;
  const script = `import { Worker } from 'node:worker_threads';
const data = { path: '/nonexistent', families: ${JSON.stringify(FAMILIES.list.map((f) => f.name))} };
new Worker(${JSON.stringify(thread)}, { eval: true, workerData: data }).once('message', (m) => {
  process.stdout.write(JSON.stringify(m));
  process.exit(0);
});`;
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
}

describe("a pool thread's modules", () => {
  it("loads each family's match step and tasks, not its schemas or webhook builders: neither viem nor zod", () => {
    const modules = workerModules();
    const ours = (path: string) => modules.some((url) => url.endsWith(`/dist/${path}`));
    // What it runs: the match and compile tasks, and each family's filter and prepared block.
    for (const { name } of FAMILIES.list) {
      expect(ours(`engine/${name}/worker.js`), name).toBe(true);
      expect(ours(`engine/${name}/index.js`), name).toBe(false);
    }
    expect(ours('workers/match-worker.js')).toBe(true);
    expect(modules.filter((url) => /\/node_modules\/(viem|zod)\//.test(url))).toEqual([]);
  });
});

describe('lazy pool threads (a server that follows no chain)', () => {
  it('starts no thread until the first task, is ready meanwhile, and runs that task on a thread it starts then', async () => {
    const dir = tempDir();
    const threads = startWorkerThreads(dir, 1, true);
    const pool = taskPool(threads);
    try {
      await pool.ready();
      expect(threads.piscina.threads.length).toBe(0);
      await pool.run('ping', null);
      expect(threads.piscina.threads.length).toBe(1);
    } finally {
      await pool.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
