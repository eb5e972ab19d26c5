import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { FAMILIES } from '../../../../app/families.js';
import { EvmFilterSet } from '../../../../engine/evm/filter.js';
import { Bases } from '../../../../engine/match/bases.js';
import { compileHere } from '../../../../engine/match/compile.js';
import type { CompileTask, FilterCompiler } from '../../../../engine/match/ports.js';
import { readPointer, writeBase } from '../../../../engine/match/stored-base.js';
import { logWatchChange } from '../../../../engine/streams/watch-log.js';
import { storedAddresses } from '../../../../engine/match/watched-keys.js';
import { Watchlist, type CompiledChain } from '../../../../engine/match/watchlist.js';
import { allocKeySet } from '../../../../engine/match/key-set.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';
import { probeOf } from './probe-of.js';

/**
 * The watched set kept in the store and changed by layers (engine/match/bases.ts), on a real LMDB store: a chain's
 * address set compiled whole once and kept as its base (the pool's compile: compileHere with the store, as a worker
 * runs it), read in place at the next start, changes laid over it (L0, L1), merged into a new base past a bound.
 */
const hex = (i: number): string => `0x${i.toString(16).padStart(40, '0')}`;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A node's watchlist over the store at `dir`: whole compiles run here as a pool worker runs them (keeping the base), counted. */
function node(dir: string, opts: ConstructorParameters<typeof Bases>[1] = {}) {
  const store = openStore(dir);
  const read = storedAddresses((o) => store.keys('streamAddresses', o));
  const wholes: CompileTask[] = [];
  const pool: FilterCompiler = {
    compile: async (task) => (wholes.push(task), compileHere(FAMILIES.matching, task, read, store)),
  };
  const bases = new Bases({ kv: store, mapped: (key) => store.mapped('watchedSets', key) }, opts);
  const w = new Watchlist({ families: FAMILIES, addresses: read, bases });
  w.compileWith(pool);
  /** Addresses added or removed as the control plane writes them: the rows and the watch log in one transaction, then the watchlist told. */
  const change = (id: string, add: boolean, addresses: string[]): void => {
    const seq = store.transact(() => {
      for (const a of addresses) (add ? store.put : store.remove)('streamAddresses', `${id}/${a}`, 1);
      return logWatchChange(store, { id, add, addresses });
    });
    w.addressesChanged(id, add ? addresses : [], add ? [] : addresses, seq);
  };
  const create = (id: string, addresses: number): void => {
    store.transact(() => {
      store.put('streams', `t/${id}`, { id, tenantId: 't', chainIds: ['0x1'], topic0: null, allAddresses: false, amountOfAddresses: 0 });
      logWatchChange(store, { id, created: true });
    });
    w.stream({ id, tenantId: 't', chainIds: ['0x1'], allAddresses: false, keys: { topic0: [] }, amountOfAddresses: 0 });
    if (addresses > 0)
      change(
        id,
        true,
        Array.from({ length: addresses }, (_, k) => hex(id.charCodeAt(1) * 100_000 + k)),
      );
  };
  return { store, w, bases, wholes, change, create };
}

/** A node on a new store, its watchlist loaded, with these streams of that many addresses each (created in order). */
async function started(streams: Record<string, number>, opts: ConstructorParameters<typeof Bases>[1] = {}) {
  const dir = tempDir();
  dirs.push(dir);
  const a = node(dir, opts);
  await a.w.load(a.store);
  for (const [id, addresses] of Object.entries(streams)) a.create(id, addresses);
  return { dir, a };
}

/** The ids of the streams the set says watch `address`, as the matcher hands them (an index of no stream: none). */
const watchers = (c: CompiledChain, address: string): string[] =>
  [...new EvmFilterSet(c.filter).match(probeOf(address)).keys()].flatMap((i) => c.streams[i]?.id ?? []).sort();

const settled = async (bases: Bases): Promise<void> => {
  for (let i = 0; i < 200 && bases.of('0x1')?.busy !== undefined; i++) await bases.of('0x1')!.busy;
  await new Promise((r) => setImmediate(r));
};

describe('the watched set kept in the store', () => {
  it('is compiled whole once and read in place at the next start, with the changes logged since laid over it', async () => {
    const { dir, a } = await started({ s1: 3_000, s2: 10 });
    const first = await a.w.compile('0x1');
    expect(a.wholes).toHaveLength(1);
    const header = readPointer(a.store, '0x1')!;
    expect(header.streams).toEqual(['s1', 's2']);
    expect(watchers(first, hex(0x31 * 100_000 + 5))).toEqual(['s1']);
    // Changes after it: laid over the base (no whole compile), then a restart.
    a.change('s2', true, [hex(0x31 * 100_000 + 5), hex(7)]);
    a.change('s1', false, [hex(0x31 * 100_000 + 6)]);
    a.create('s3', 4);
    const second = await a.w.compile('0x1');
    expect(a.wholes).toHaveLength(1);
    expect(watchers(second, hex(0x31 * 100_000 + 5))).toEqual(['s1', 's2']);
    expect(watchers(second, hex(0x31 * 100_000 + 6))).toEqual([]);
    expect(watchers(second, hex(0x33 * 100_000 + 3))).toEqual(['s3']);
    await a.store.close();

    const b = node(dir);
    await b.w.load(b.store);
    const again = await b.w.compile('0x1');
    // Nothing compiled whole: the base read in place, the log's changes after it as L1.
    expect(b.wholes).toHaveLength(0);
    expect(readPointer(b.store, '0x1')!.name).toBe(header.name);
    expect(watchers(again, hex(0x31 * 100_000 + 5))).toEqual(['s1', 's2']);
    expect(watchers(again, hex(0x31 * 100_000 + 6))).toEqual([]);
    expect(watchers(again, hex(7))).toEqual(['s2']);
    expect(watchers(again, hex(0x33 * 100_000 + 3))).toEqual(['s3']);
    expect(watchers(again, hex(0x31 * 100_000 + 2_999))).toEqual(['s1']);
    expect(watchers(again, hex(123_456_789))).toEqual([]);
    // Its large arrays are views of the map: no copy (the bloom filter, copied into shared memory, aside).
    const base = b.bases.of('0x1')!.data[0]!;
    expect(base.bloom.buffer).toBeInstanceOf(SharedArrayBuffer);
    await b.store.close();
  });

  it('lays a change of more than 1,024 addresses whole: each in its layer, L0 and L1, and no address it did not name', async () => {
    const { dir, a } = await started({ s1: 10, s2: 1 });
    await a.w.compile('0x1');
    // KeyPairs start at 1,024 keys: the 1,025th grows them.
    const added = Array.from({ length: 1_100 }, (_, k) => hex(0x5000 + k));
    a.change('s2', true, added);
    const l0 = await a.w.compile('0x1');
    for (const k of [0, 1_023, 1_024, 1_025, 1_099]) expect(watchers(l0, added[k]!)).toEqual(['s2']);
    expect(watchers(l0, hex(0))).toEqual([]);
    await a.store.close();
    // Restarted: the same changes read from the log as L1.
    const b = node(dir);
    await b.w.load(b.store);
    const l1 = await b.w.compile('0x1');
    for (const k of [0, 1_023, 1_024, 1_025, 1_099]) expect(watchers(l1, added[k]!)).toEqual(['s2']);
    expect(watchers(l1, hex(0))).toEqual([]);
    await b.store.close();
  });

  it('leaves the previous version whole when a crash comes between the writes of a new one', async () => {
    const { dir, a } = await started({ s1: 3_000 });
    await a.w.compile('0x1');
    const header = readPointer(a.store, '0x1')!;
    // A merge's new version written as writeBase writes it, the process dying at its second transaction.
    let transactions = 0;
    const dying = new Proxy(a.store, {
      get: (target, key) =>
        key === 'transact'
          ? <T>(fn: () => T): T => {
              if (++transactions === 2) throw new Error('killed');
              return target.transact(fn);
            }
          : Reflect.get(target, key),
    });
    expect(() => writeBase(dying, '0x1', 99, ['s1'], [allocKeySet(20, 1, 2, 1, { shared: false })])).toThrow('killed');
    const stray = a.store.keys('watchedSets', { start: 'base/0x1/99', end: 'base/0x1/99\uffff' });
    expect(stray.length).toBeGreaterThan(0);
    await a.store.close();

    const b = node(dir);
    await b.w.load(b.store);
    const c = await b.w.compile('0x1');
    expect(b.wholes).toHaveLength(0);
    expect(readPointer(b.store, '0x1')!.name).toBe(header.name);
    expect(watchers(c, hex(0x31 * 100_000 + 17))).toEqual(['s1']);
    // What the crash left is removed at the start (no reader holds it).
    for (const key of stray) expect(b.store.get('watchedSets', key)).toBeUndefined();
    expect(b.store.get('watchedSets', header.name)).toBeDefined();
    await b.store.close();
  });

  it("folds only the chain's own changes: a burst on another chain's stream builds no L1 of this one", async () => {
    const { a } = await started({ s1: 3_000 }, { l0Keys: 5 });
    await a.w.compile('0x1');
    a.w.stream({ id: 's9', tenantId: 't', chainIds: ['0x89'], allAddresses: false, keys: { topic0: [] }, amountOfAddresses: 0 });
    const burst = (id: string, from: number, n: number): void =>
      a.change(
        id,
        true,
        Array.from({ length: n }, (_, k) => hex(from + k)),
      );
    burst('s9', 700, 10);
    // One address of its own, under the bound of 5: L0 holds it.
    burst('s1', 800, 1);
    await settled(a.bases);
    expect(a.bases.of('0x1')!.l1).toBeUndefined();
    // Past the bound with its own: folded.
    burst('s1', 801, 9);
    await settled(a.bases);
    expect(a.bases.of('0x1')!.l1?.keys).toBe(10);
    await a.store.close();
  });

  it('folds L0 into L1 past its bound and merges into a new base past its own, the old removed once no match task holds it', async () => {
    const { dir, a } = await started({ s1: 3_000 }, { l0Keys: 5, mergeKeys: () => 20 });
    await a.w.compile('0x1');
    const old = readPointer(a.store, '0x1')!.name;
    // A match task naming the old base runs through the merge.
    const release = a.bases.hold([old]);
    for (let k = 0; k < 12; k++) {
      a.change('s1', true, [hex(900 + 4 * k), hex(901 + 4 * k), hex(902 + 4 * k)]);
      const c = await a.w.compile('0x1');
      // Every change in effect from the compile after it, whatever layer holds it.
      for (let j = 0; j <= k; j++) expect(watchers(c, hex(902 + 4 * j))).toEqual(['s1']);
      await settled(a.bases);
    }
    const merged = readPointer(a.store, '0x1')!;
    expect(merged.name).not.toBe(old);
    expect(a.wholes.filter((t) => t.store === true).length).toBeGreaterThanOrEqual(2);
    const c = await a.w.compile('0x1');
    for (let j = 0; j < 12; j++) expect(watchers(c, hex(900 + 4 * j))).toEqual(['s1']);
    expect(watchers(c, hex(0x31 * 100_000 + 1))).toEqual(['s1']);
    // The old base stays while the task holding it runs; it goes once that ends.
    expect(a.store.get('watchedSets', old)).toBeDefined();
    release();
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(a.store.get('watchedSets', old)).toBeUndefined();
    // The watch log keeps only the rows after the base's number.
    expect(a.store.range('watchChanges').every((r) => Number(r.key) > merged.seq)).toBe(true);
    await a.store.close();
  });

  it('drops a removed stream, and compiles whole again a chain an existing stream with addresses moves onto', async () => {
    const { dir, a } = await started({ s1: 3_000, s2: 3 });
    await a.w.compile('0x1');
    a.store.transact(() => a.store.remove('streams', 't/s2'));
    a.w.removed('s2');
    const c = await a.w.compile('0x1');
    expect(watchers(c, hex(0x32 * 100_000 + 1))).toEqual([]);
    expect(c.streams.filter((s) => s !== undefined).map((s) => s!.id)).toEqual(['s1']);
    expect(a.wholes).toHaveLength(1);
    // s1 (3,000 addresses) also lists 0x89: that chain compiles whole (no base of it holds them).
    a.w.stream({ id: 's1', tenantId: 't', chainIds: ['0x1', '0x89'], allAddresses: false, keys: { topic0: [] } });
    const polygon = await a.w.compile('0x89');
    expect(watchers(polygon, hex(0x31 * 100_000 + 1))).toEqual(['s1']);
    expect(a.wholes.map((t) => t.chain)).toEqual(['0x1', '0x89']);
    await a.store.close();
  });

  it('drops the base of a chain a stream with addresses moves onto, its pointer with it: the next start compiles that chain whole', async () => {
    const { dir, a } = await started({ s1: 3_000 });
    await a.w.compile('0x1');
    const old = readPointer(a.store, '0x1')!.name;
    // s2, on polygon with addresses, moves onto 0x1: the kept base does not hold them.
    a.create('s2', 0);
    a.w.stream({ id: 's2', tenantId: 't', chainIds: ['0x89'], allAddresses: false, keys: { topic0: [] } });
    a.change('s2', true, [hex(77)]);
    a.store.transact(() =>
      a.store.put('streams', 't/s2', {
        id: 's2',
        tenantId: 't',
        chainIds: ['0x1'],
        topic0: null,
        allAddresses: false,
        amountOfAddresses: 1,
      }),
    );
    a.w.stream({ id: 's2', tenantId: 't', chainIds: ['0x1'], allAddresses: false, keys: { topic0: [] } });
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(readPointer(a.store, '0x1')).toBeUndefined();
    expect(a.store.get('watchedSets', old)).toBeUndefined();
    await a.store.close();

    const b = node(dir);
    await b.w.load(b.store);
    const c = await b.w.compile('0x1');
    expect(b.wholes.map((t) => t.chain)).toEqual(['0x1']);
    expect(watchers(c, hex(77))).toEqual(['s2']);
    expect(watchers(c, hex(0x31 * 100_000 + 9))).toEqual(['s1']);
    await b.store.close();
  });
});
