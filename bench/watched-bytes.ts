/**
 * node --expose-gc dist-bench/bench/watched-bytes.js N STREAMS — where the bytes of a watched address go in today's
 * server, part by part (docs/decisions/watched-set.md): N scale addresses over STREAMS streams written to a real
 * LMDB store on a temp dir as the streams service writes them, then, in this one thread, each step the server takes
 * with them, measured by the V8 heap after a full GC (what it keeps) and RssAnon (/proc):
 *   1. the Watchlist's load from the store (app/server.ts's; what the serving thread keeps for as long as it runs:
 *      the streams' records, no address);
 *   2. watchedOn(chain), what a compile is handed, and the bytes of its structured clone (posted to a pool worker);
 *   3. the EVM compile (what the worker does: the addresses read from the store as raw keys), its time and the heap
 *      it leaves, then the key set it leaves.
 * Not a bench:* script (no goal of its own): bench:scale measures the whole server; this says which part is which.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serialize, getHeapStatistics } from 'node:v8';
import { FAMILIES } from '../app/families.js';
import { EvmFilterSet } from '../engine/evm/filter.js';
import { compileHere } from '../engine/match/compile.js';
import { storedAddresses } from '../engine/match/watched-keys.js';
import { Watchlist } from '../engine/match/watchlist.js';
import type { StoredStream } from '../engine/streams/model.js';
import { openStore } from '../storage/env.js';
import { scaleAddress } from '../test/kit/startup-store.js';

const N = Number(process.argv[2] ?? 1_000_000);
const STREAMS = Number(process.argv[3] ?? 10_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc');

const anon = (): number => Number(/^RssAnon:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) * 1024;
const heap = (): number => {
  gc();
  return process.memoryUsage().heapUsed;
};
const perAddress = (bytes: number): number => Math.round((bytes / N) * 10) / 10;

const dir = mkdtempSync(join(tmpdir(), 'chainpost-watched-bytes-'));
const store = openStore(dir);
try {
  const perStream = Math.ceil(N / STREAMS);
  const written = performance.now();
  const batch = Math.max(1, Math.floor(200_000 / perStream));
  for (let from = 0; from < STREAMS; from += batch) {
    store.transact(() => {
      for (let i = from; i < Math.min(STREAMS, from + batch); i++) {
        const id = `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
        store.put('streams', `t/${id}`, { id, tenantId: 't' } as unknown as StoredStream);
        for (let k = 0; k < perStream && i * perStream + k < N; k++) store.put('streamAddresses', `${id}/${scaleAddress(i, k)}`, 1);
      }
    });
  }
  const writeMs = performance.now() - written;
  const h0 = heap();
  const a0 = anon();
  const watchlist = new Watchlist({
    families: { matching: FAMILIES.matching, watched: () => ({ chainIds: ['0x1'], allAddresses: false, keys: {} }) },
  });
  const loadStarted = performance.now();
  await watchlist.load(store);
  const loadMs = performance.now() - loadStarted;
  const h1 = heap();
  const a1 = anon();
  const on = watchlist.watchedOn('0x1');
  const h2 = heap();
  const cloneBytes = serialize(on.entries).byteLength;
  const compileStarted = performance.now();
  const read = storedAddresses((opts) => store.keys('streamAddresses', opts));
  const data = compileHere(FAMILIES.matching, { chain: '0x1', family: 'evm', version: 1, entries: on.entries, seed: 0x9e3779b9 }, read);
  // The heap as the compile left it, its garbage not yet collected: a lower bound of what it peaked at.
  const compileHeap = process.memoryUsage().heapUsed;
  const compileMs = performance.now() - compileStarted;
  const set = new EvmFilterSet(data);
  const a3 = anon();
  const h3 = heap();
  const s = store.db('streamAddresses').getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number };
  console.log(
    JSON.stringify({
      addresses: N,
      streams: STREAMS,
      writeMs: Math.round(writeMs),
      storeBytesPerAddress: perAddress((s.treeBranchPageCount + s.treeLeafPageCount) * s.pageSize),
      loadMs: Math.round(loadMs),
      watchlistHeapPerAddress: perAddress(h1 - h0),
      watchlistRssAnonPerAddress: perAddress(a1 - a0),
      watchedOnHeapPerAddress: perAddress(h2 - h1),
      cloneBytesPerAddress: perAddress(cloneBytes),
      compileMs: Math.round(compileMs),
      compileGarbagePerAddress: perAddress(compileHeap - h2),
      keySetBytesPerAddress: perAddress(set.addresses.bytes),
      afterCompileRssAnonPerAddress: perAddress(a3 - a0),
      afterCompileHeapPerAddress: perAddress(h3 - h0),
      heapLimitMb: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20),
    }),
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
