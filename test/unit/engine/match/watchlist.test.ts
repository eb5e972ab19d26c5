import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EvmFilterSet, compileFilterSet } from '../../../../engine/evm/filter.js';
import { compileHere, inlineSmallCompiles } from '../../../../engine/match/compile.js';
import { NO_DERIVED, type CompileTask } from '../../../../engine/match/ports.js';
import { FAMILIES } from '../../../../app/families.js';
import { Watchlist } from '../../../../engine/match/watchlist.js';
import { addressesIn, storedAddresses } from '../../../../engine/match/watched-keys.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';
import { probeOf } from './probe-of.js';

const A = '0x1111111111111111111111111111111111111111';
const B = '0x2222222222222222222222222222222222222222';
const stream = (id: string, chainIds: string[]) => ({ id, tenantId: 't', chainIds, allAddresses: false, keys: { topic0: [] } });

/**
 * A watchlist over a real store: `change` writes a stream's addresses to the store as the streams service does, then
 * tells the watchlist; compiles read them back from the store.
 */
function stored(): { w: Watchlist; store: Store; change(id: string, added: string[], removed?: string[]): void; close(): Promise<void> } {
  const store = openStore(tempDir());
  const w = new Watchlist({ families: FAMILIES, addresses: storedAddresses((opts) => store.keys('streamAddresses', opts)) });
  return {
    w,
    store,
    change(id, added, removed = []) {
      store.transact(() => {
        for (const a of added) store.put('streamAddresses', `${id}/${a}`, 1);
        for (const a of removed) store.remove('streamAddresses', `${id}/${a}`);
      });
      w.addressesChanged(id, added, removed);
    },
    close: async () => {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    },
  };
}

describe('the watchlist', () => {
  it('recompiles a chain only when a stream listing it (before or after the change) changed', async () => {
    const { w, change, close } = stored();
    w.stream(stream('s1', ['0x1']));
    w.stream(stream('s2', ['0x89']));
    change('s1', [A]);
    const eth = await w.compile('0x1');
    const polygon = await w.compile('0x89');
    expect(new EvmFilterSet(eth.filter).match(probeOf(A))).toEqual(new Map([[0, [0]]]));

    // Addresses of the polygon stream: ethereum's set stays as it was.
    change('s2', [B]);
    expect(await w.compile('0x1')).toBe(eth);
    const polygon2 = await w.compile('0x89');
    expect(polygon2).not.toBe(polygon);
    expect(new EvmFilterSet(polygon2.filter).match(probeOf(B))).toEqual(new Map([[0, [0]]]));

    // s1 moves from ethereum to polygon: both chains are compiled again, ethereum without it.
    w.stream(stream('s1', ['0x89']));
    const eth3 = await w.compile('0x1');
    expect(eth3).not.toBe(eth);
    expect(eth3.streams).toEqual([]);
    expect((await w.compile('0x89')).streams.map((s) => s?.id).sort()).toEqual(['s1', 's2']);
    expect((await w.compile('0x89')).filter.version).toBeGreaterThan(polygon2.filter.version);

    // An update that changes nothing matching reads, or an address call that changes nothing, recompiles nothing.
    const polygon3 = await w.compile('0x89');
    w.stream(stream('s1', ['0x89']));
    w.addressesChanged('s1', [], []);
    expect(await w.compile('0x89')).toBe(polygon3);

    w.removed('s2');
    expect((await w.compile('0x89')).streams.map((s) => s?.id)).toEqual(['s1']);
    expect(await w.compile('0x1')).toBe(eth3);
    await close();
  });

  it('compiles one version of a chain at a time: changes made while a compile runs are compiled once, after it, at the latest version', async () => {
    const tasks: CompileTask[] = [];
    const held: Array<() => void> = [];
    const { w, store, change, close } = stored();
    const read = storedAddresses((opts) => store.keys('streamAddresses', opts));
    w.compileWith({
      compile: (task) => {
        tasks.push(task);
        return new Promise((resolve) => held.push(() => resolve(compileHere(FAMILIES.matching, task, read))));
      },
    });
    w.stream(stream('s1', ['0x1']));
    const first = w.compile('0x1');
    await new Promise((r) => setImmediate(r));
    expect(tasks).toHaveLength(1);
    // Three changes (xpubs added one after another, say), each followed by a reader asking for the set.
    const asked: Array<Promise<unknown>> = [];
    for (const a of [A, B, '0x3333333333333333333333333333333333333333']) {
      change('s1', [a]);
      asked.push(w.compile('0x1'));
    }
    await new Promise((r) => setImmediate(r));
    expect(tasks).toHaveLength(1);
    held.shift()!();
    await first;
    await new Promise((r) => setImmediate(r));
    expect(tasks).toHaveLength(2);
    expect(tasks[1]!.entries[0]!.count).toBe(3);
    held.shift()!();
    const sets = (await Promise.all(asked)) as Array<{ filter: { version: number; sets: Array<{ size: number }> } }>;
    expect(new Set(sets.map((x) => x.filter.version))).toEqual(new Set([tasks[1]!.version]));
    expect(sets[0]!.filter.sets[0]!.size).toBe(3);
    expect(tasks).toHaveLength(2);
    await close();
  });
});

describe('the watchlist and Solana streams', () => {
  // Mainnet's SPL Token and Vote programs, the USDC and USDT mints, a wallet key (stored beside its lower-cased form: the store keeps what it is given).
  const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
  const VOTE = 'Vote111111111111111111111111111111111111111';
  const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
  const USDT = 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB';
  const WALLET = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM';

  it("loads Solana records from the store and hands their programIds, mintAddresses and addresses (as given) to the chain's compile", async () => {
    const store = openStore(tempDir());
    try {
      const common = {
        webhookUrl: 'http://x',
        description: '',
        tag: '',
        demo: false,
        status: 'active',
        statusMessage: '',
        createdAt: 0,
        updatedAt: 0,
      };
      store.transact(() => {
        store.put('streams', 't/sol', {
          ...common,
          id: 'sol',
          tenantId: 't',
          family: 'solana',
          network: ['mainnet'],
          programIds: [TOKEN, VOTE],
          mintAddresses: [USDC],
          allAddresses: false,
          amountOfAddresses: 2,
        });
        store.put('streams', 't/sol-all', {
          ...common,
          id: 'sol-all',
          tenantId: 't',
          family: 'solana',
          network: ['mainnet'],
          programIds: [],
          mintAddresses: [],
          allAddresses: true,
          amountOfAddresses: 0,
        });
        store.put('streams', 't/evm', {
          ...common,
          id: 'evm',
          tenantId: 't',
          chainIds: ['0x1'],
          topic0: null,
          allAddresses: false,
          amountOfAddresses: 0,
        });
        store.put('streams', 'u/btc', {
          ...common,
          id: 'btc',
          tenantId: 'u',
          family: 'bitcoin',
          network: ['mainnet'],
          includeInputs: true,
          includeOutputs: true,
          allAddresses: false,
          amountOfAddresses: 0,
        });
        store.put('streamAddresses', `sol/${WALLET}`, 1);
        store.put('streamAddresses', `sol/${WALLET.toLowerCase()}`, 1);
      });
      const w = new Watchlist({ families: FAMILIES });
      await w.load(store);
      const solana = w.watchedOn('solana');
      expect(solana.streams).toEqual([
        { id: 'sol', tenantId: 't' },
        { id: 'sol-all', tenantId: 't' },
      ]);
      expect(solana.entries[0]).toMatchObject({
        index: 0,
        keys: { programIds: [TOKEN, VOTE], mintAddresses: [USDC] },
        allAddresses: false,
      });
      expect(solana.entries[0]!.count).toBe(2);
      expect(solana.entries[1]).toMatchObject({ index: 1, keys: { programIds: [], mintAddresses: [] }, allAddresses: true, count: 0 });
      // Other families' entries carry their own keys alone, and a Solana stream is on no other chain.
      expect(w.watchedOn('0x1').entries.map((e) => e.keys)).toEqual([{ topic0: [] }]);
      expect(w.watchedOn('0x1').streams).toEqual([{ id: 'evm', tenantId: 't' }]);
      expect(w.watchedOn('bitcoin').entries.map((e) => e.keys)).toEqual([{}]);
      expect(w.watchedOn('bitcoin').streams).toEqual([{ id: 'btc', tenantId: 'u' }]);
    } finally {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });

  it("recompiles the stream's chains when its programIds or mintAddresses change, and only then", async () => {
    // On an EVM chain, whose compile exists here: what is checked is the watchlist's versioning, the same for every family.
    const w = new Watchlist({ families: FAMILIES });
    const s = (programIds: string[], mintAddresses: string[]) => ({
      id: 's',
      tenantId: 't',
      chainIds: ['0x1'],
      allAddresses: false,
      keys: { programIds, mintAddresses },
    });
    w.stream(s([TOKEN], []));
    const first = await w.compile('0x1');
    w.stream(s([TOKEN], []));
    expect(await w.compile('0x1')).toBe(first);
    w.stream(s([TOKEN, VOTE], []));
    const second = await w.compile('0x1');
    expect(second.filter.version).toBeGreaterThan(first.filter.version);
    w.stream(s([TOKEN, VOTE], [USDT]));
    const third = await w.compile('0x1');
    expect(third.filter.version).toBeGreaterThan(second.filter.version);
    expect(w.watchedOn('0x1').entries[0]).toMatchObject({ keys: { programIds: [TOKEN, VOTE], mintAddresses: [USDT] } });
    w.stream(s([TOKEN, VOTE], [USDT]));
    expect(await w.compile('0x1')).toBe(third);
  });
});

describe('the watchlist at start', () => {
  const hex = (i: number): string => `0x${i.toString(16).padStart(40, '0')}`;

  it('loads page by page while changes come in, and ends with what the store holds; compiling waits for the load', async () => {
    const store = openStore(tempDir());
    try {
      const common = {
        webhookUrl: 'http://x',
        description: '',
        tag: '',
        status: 'active',
        statusMessage: '',
        createdAt: 0,
        updatedAt: 0,
        chainIds: ['0x1'],
        topic0: null,
        allAddresses: false,
      };
      // 300 streams (three pages of streams) of 150 addresses each: 45,000 keys.
      const ids = Array.from({ length: 300 }, (_, i) => `s${String(i).padStart(3, '0')}`);
      store.transact(() => {
        ids.forEach((id, i) => {
          store.put('streams', `t/${id}`, { ...common, id, tenantId: 't', amountOfAddresses: 150 });
          for (let k = 0; k < 150; k++) store.put('streamAddresses', `${id}/${hex(i * 1000 + k)}`, 1);
        });
      });
      const w = new Watchlist({ families: FAMILIES });
      const turns: Array<() => void> = [];
      const loading = w.load(store, () => new Promise((resolve) => turns.push(resolve)));
      let compiled: unknown;
      void w.compile('0x1').then((c) => (compiled = c));
      const turn = async (): Promise<void> => {
        while (turns.length === 0) await new Promise((r) => setImmediate(r));
        turns.shift()!();
        await new Promise((r) => setImmediate(r));
      };
      // Two of the three pages of streams.
      for (let i = 0; i < 2; i++) await turn();
      expect(compiled).toBeUndefined();
      // Between pages, as the streams service does: the store written, then the watchlist told.
      const change = (id: string, added: string[], removed: string[]): void => {
        store.transact(() => {
          for (const a of added) store.put('streamAddresses', `${id}/${a}`, 1);
          for (const a of removed) store.remove('streamAddresses', `${id}/${a}`);
        });
        w.addressesChanged(id, added, removed);
      };
      change('s000', [hex(999_001)], [hex(1)]); // a stream already read
      change('s299', [hex(999_002)], [hex(299_000)]); // a stream not read yet
      store.transact(() => {
        store.remove('streams', 't/s298');
        store.removeRange('streamAddresses', { start: 's298/', end: 's298/\uffff', limit: 1000 });
      });
      w.removed('s298');
      w.stream({ id: 'late', tenantId: 't', chainIds: ['0x1'], allAddresses: false, keys: { topic0: [] } });
      change('late', [hex(999_003)], []);
      while (turns.length > 0 || compiled === undefined) await turn().catch(() => {});
      await loading;

      const on = w.watchedOn('0x1');
      expect(on.streams).toHaveLength(300);
      expect(on.entries.reduce((n, e) => n + e.count, 0)).toBe(299 * 150 + 1);
      // The set compiled once the load ended holds every address the store does, the changes made meanwhile included.
      const c = compiled as Awaited<ReturnType<Watchlist['compile']>>;
      const set = new EvmFilterSet(c.filter);
      expect(set.addresses.size).toBe(299 * 150 + 1);
      const streamOf = (a: string): string[] => [...set.match(probeOf(a)).keys()].map((i) => c.streams[i]!.id);
      expect(streamOf(hex(999_001))).toEqual(['s000']);
      expect(streamOf(hex(1))).toEqual([]);
      expect(streamOf(hex(999_002))).toEqual(['s299']);
      expect(streamOf(hex(299_000))).toEqual([]);
      expect(streamOf(hex(298_000))).toEqual([]);
      expect(streamOf(hex(999_003))).toEqual(['late']);
    } finally {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });

  it('compiles with the compiler given, once per version even when asked again meanwhile, and again after a change once that compile has ended', async () => {
    const { w, store, change, close } = stored();
    const read = storedAddresses((opts) => store.keys('streamAddresses', opts));
    const asked: number[] = [];
    const release: Array<() => void> = [];
    w.compileWith({
      compile: (task) => {
        asked.push(task.version);
        return new Promise((resolve) => release.push(() => resolve(compileHere(FAMILIES.matching, task, read))));
      },
    });
    w.stream(stream('s1', ['0x1']));
    change('s1', [A]);
    const first = w.compile('0x1');
    const again = w.compile('0x1');
    await new Promise((r) => setImmediate(r));
    expect(asked).toHaveLength(1);
    // A change while the first is compiling: the next call compiles the new version once the first has ended.
    change('s1', [B]);
    const second = w.compile('0x1');
    await new Promise((r) => setImmediate(r));
    expect(asked).toHaveLength(1);
    release.shift()!();
    expect(await again).toBe(await first);
    await new Promise((r) => setImmediate(r));
    expect(asked).toHaveLength(2);
    release.shift()!();
    const s2 = await second;
    expect(s2.filter.version).toBeGreaterThan((await first).filter.version);
    expect(new EvmFilterSet(s2.filter).match(probeOf(B))).toEqual(new Map([[0, [0]]]));
    expect(await w.compile('0x1')).toBe(s2);
    await close();
  });
});

describe('where filter sets compile', () => {
  const entry = (index: number, addresses: string[]) => ({
    index,
    id: `s${index}`,
    count: addresses.length,
    allAddresses: addresses.length === 0,
    keys: { topic0: addresses.length === 0 ? ['0x' + 'dd'.repeat(32)] : [] },
    derived: NO_DERIVED,
  });
  const task = { chain: '0x1', family: 'evm' as const, version: 7, seed: 42, entries: [entry(0, [A, B]), entry(1, []), entry(2, [B])] };
  const read = addressesIn(
    new Map([
      ['s0', [A, B]],
      ['s2', [B]],
    ]),
  );

  it('compiles from the addresses read by stream id: a key several streams watch has them all, and each stream its own', () => {
    const set = new EvmFilterSet(compileHere(FAMILIES.matching, task, read));
    expect(set.addresses.size).toBe(2);
    expect(set.match(probeOf(B))).toEqual(
      new Map([
        [0, [0]],
        [2, [0]],
      ]),
    );
    expect(set.match(probeOf(A))).toEqual(new Map([[0, [0]]]));
  });

  it('sends a task of more keys than the bound to the pool, and compiles a smaller one here', async () => {
    const sent: number[] = [];
    const log = { info: () => {}, enabled: () => false } as unknown as Parameters<typeof inlineSmallCompiles>[2];
    const compiler = inlineSmallCompiles(
      { compile: async (t) => (sent.push(t.version), compileHere(FAMILIES.matching, t, read)) },
      3,
      log,
      FAMILIES.matching,
      read,
    );
    await compiler.compile(task); // 4 keys: A, B, a topic, B
    await compiler.compile({ ...task, version: 8, entries: [entry(0, [A, B]), entry(2, [B])] }); // 3 keys
    expect(sent).toEqual([7]);
  });
});
