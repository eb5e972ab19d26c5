import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

/**
 * Kv.overlay on a real LMDB store: writes read back before they are written, ranges and counts merged with the
 * store's in its key order (a hex-keyed table's too), a sealed unit written as one, and a dropped one never.
 */
describe('overlay', () => {
  const store = openStore(tempDir());
  afterAll(async () => {
    await store.close();
    rmSync(store.path, { recursive: true, force: true });
  });

  it('reads its own writes over the store, and writes nothing before it is sealed', async () => {
    store.transact(() => {
      store.put('meta', 'o/a', 1);
      store.put('meta', 'o/b', 2);
    });
    const o = store.overlay();
    o.put('meta', 'o/a', 10);
    o.remove('meta', 'o/b');
    o.put('meta', 'o/c', 3);
    expect(o.get('meta', 'o/a')).toBe(10);
    expect(o.has('meta', 'o/b')).toBe(false);
    expect(o.get('meta', 'o/c')).toBe(3);
    expect(store.get('meta', 'o/a')).toBe(1);
    expect(store.has('meta', 'o/c')).toBe(false);
    o.discard();
    expect(o.get('meta', 'o/a')).toBe(1);
    expect(() => o.transact(() => {})).toThrow(/overlay/);
  });

  it('merges ranges and counts with the store in key order, both ways, within limits', async () => {
    store.transact(() => {
      for (const k of ['r/1', 'r/3', 'r/5', 'r/7']) store.put('meta', k, k);
    });
    const o = store.overlay();
    o.put('meta', 'r/2', 'r/2*');
    o.put('meta', 'r/5', 'r/5*');
    o.remove('meta', 'r/3');
    o.put('meta', 'r/9', 'r/9*');
    const keys = (opts: { start?: string; end?: string; limit?: number; reverse?: boolean }): string[] =>
      o.range<string>('meta', opts).map((e) => `${e.key}=${e.value}`);
    expect(keys({ start: 'r/', end: 'r/~' })).toEqual(['r/1=r/1', 'r/2=r/2*', 'r/5=r/5*', 'r/7=r/7', 'r/9=r/9*']);
    expect(keys({ start: 'r/', end: 'r/~', limit: 2 })).toEqual(['r/1=r/1', 'r/2=r/2*']);
    expect(keys({ start: 'r/~', end: 'r/', reverse: true, limit: 3 })).toEqual(['r/9=r/9*', 'r/7=r/7', 'r/5=r/5*']);
    // Reversed: start is included, end is not.
    expect(keys({ start: 'r/5', end: 'r/2', reverse: true })).toEqual(['r/5=r/5*']);
    expect(keys({ start: 'r/2', end: 'r/5' })).toEqual(['r/2=r/2*']);
    expect(o.count('meta', { start: 'r/', end: 'r/~' })).toBe(5);
    expect(o.count('meta', { start: 'r/', end: 'r/~', limit: 3 })).toBe(3);
    expect(o.keys('meta', { start: 'r/', end: 'r/6' })).toEqual(['r/1', 'r/2', 'r/5']);
    o.discard();
  });

  it('orders a hex-keyed table by the bytes its keys are stored as', async () => {
    // A Data API table (storage/hex-keys.ts): 0x segments are stored as bytes.
    const key = (n: number): string => `0x1/0x${n.toString(16).padStart(40, '0')}/00000${n}`;
    store.transact(() => {
      store.put('erc20Balances', key(1), '0x1');
      store.put('erc20Balances', key(4), '0x4');
    });
    const o = store.overlay();
    o.put('erc20Balances', key(2), '0x2');
    o.put('erc20Balances', key(3), '0x3');
    expect(o.range<string>('erc20Balances', { start: '0x1/', end: '0x1/\uffff' }).map((e) => e.value)).toEqual([
      '0x1',
      '0x2',
      '0x3',
      '0x4',
    ]);
    expect(o.range<string>('erc20Balances', { start: '0x1/\uffff', end: '0x1/', reverse: true, limit: 2 }).map((e) => e.value)).toEqual([
      '0x4',
      '0x3',
    ]);
    o.discard();
  });

  it('writes a sealed unit as one, read from the overlay until durable and from the store after', async () => {
    const o = store.overlay();
    o.put('meta', 's/a', { n: 1 });
    o.putRaw('blocks', 's/b', new Uint8Array([7, 8]));
    o.remove('meta', 'o/a');
    const sealed = o.seal();
    expect(o.pending).toBe(1);
    // Built on the sealed unit: reads see it.
    o.put('meta', 's/c', o.get<{ n: number }>('meta', 's/a')!.n + 1);
    await sealed;
    expect(o.pending).toBe(0);
    expect(store.get('meta', 's/a')).toEqual({ n: 1 });
    expect([...store.getRaw('blocks', 's/b')!]).toEqual([7, 8]);
    expect(store.has('meta', 'o/a')).toBe(false);
    expect(store.has('meta', 's/c')).toBe(false);
    expect(o.get('meta', 's/c')).toBe(2);
    await o.seal();
    expect(store.get('meta', 's/c')).toBe(2);
  });

  it('writes a unit only if the store holds what it expects, checked in the unit’s own transaction', async () => {
    store.transact(() => store.put('meta', 'e/state', { n: 1 }));
    const o = store.overlay();
    o.put('meta', 'e/row', 'a');
    expect(await o.seal([['meta', 'e/state', { n: 2 }]])).toBe(false);
    expect(store.has('meta', 'e/row')).toBe(false);
    expect(o.get('meta', 'e/row')).toBeUndefined();
    o.put('meta', 'e/row', 'b');
    o.put('meta', 'e/state', { n: 2 });
    expect(
      await o.seal([
        ['meta', 'e/state', { n: 1 }],
        ['meta', 'e/none', undefined],
      ]),
    ).toBe(true);
    expect(store.get('meta', 'e/row')).toBe('b');
    // A unit built on one that was not written (it expects that one's state) is not written either.
    o.put('meta', 'e/row', 'c');
    o.put('meta', 'e/state', { n: 3 });
    const first = o.seal([['meta', 'e/state', { n: 9 }]]);
    expect(o.get('meta', 'e/row')).toBe('c');
    o.put('meta', 'e/row', 'd');
    o.put('meta', 'e/state', { n: 4 });
    const second = o.seal([['meta', 'e/state', { n: 3 }]]);
    expect(await first).toBe(false);
    expect(await second).toBe(false);
    expect(store.get('meta', 'e/row')).toBe('b');
    expect(o.get('meta', 'e/state')).toEqual({ n: 2 });
  });

  it('writes a table it is told is written only into its unit, keeping no copy: reads of it are refused, getRaw reads the store', async () => {
    store.transact(() => store.put('addressTxs', 'w/old', 1));
    const o = store.overlay({ writeOnly: new Set(['addressTxs']) });
    o.put('addressTxs', 'w/new', [1, 2]);
    o.remove('addressTxs', 'w/old');
    o.put('meta', 'w/kept', 'x');
    expect(() => o.get('addressTxs', 'w/new')).toThrow(/addressTxs is written only/);
    expect(() => o.has('addressTxs', 'w/old')).toThrow(/written only/);
    expect(() => o.range('addressTxs', { start: 'w/', end: 'w/~' })).toThrow(/written only/);
    expect(() => o.count('addressTxs', { start: 'w/', end: 'w/~' })).toThrow(/written only/);
    // What a key's first write saves for a reorg: the store's bytes.
    expect(o.getRaw('addressTxs', 'w/old')).toBeDefined();
    expect(o.getRaw('addressTxs', 'w/new')).toBeUndefined();
    expect(o.get('meta', 'w/kept')).toBe('x');
    expect(o.unsealed).toBe(3);
    expect(await o.seal()).toBe(true);
    expect(store.get('addressTxs', 'w/new')).toEqual([1, 2]);
    expect(store.has('addressTxs', 'w/old')).toBe(false);
    expect(store.get('meta', 'w/kept')).toBe('x');
  });
});
