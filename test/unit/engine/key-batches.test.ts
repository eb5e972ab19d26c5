import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inKeyBatches } from '../../../engine/key-batches.js';
import { openStore, type Store } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

/**
 * The migrations' walk (storage/env.ts upgradeSchema): a table's keys in batches, a write transaction each, resumed
 * after a run cut short. On a real store and a hex-keyed table (addressTxs), where `key + '\u0000'` sorts past a
 * key's siblings.
 */

let dir: string;
let store: Store;

/** An address's transaction-list key: `tx/chain/address/block/index`, hex. */
const key = (address: number, block: number, index: number): string =>
  `tx/0x1/0x${address.toString(16).padStart(40, '0')}/${block.toString(16).padStart(12, '0')}/${index.toString(16).padStart(6, '0')}`;
const KEYS = [1, 2, 3].flatMap((a) => [1, 2, 3].flatMap((b) => [0, 1].map((i) => key(a, b, i))));

beforeEach(() => {
  dir = tempDir();
  store = openStore(dir);
  store.transact(() => {
    for (const k of KEYS) store.put('addressTxs', k, [1]);
    // Outside the prefix walked: never visited.
    store.put('addressTxs', 'hist/0x1/0x01/000000000001/000000', [1]);
  });
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const left = (): string[] => store.keys('addressTxs', { start: 'tx/', end: 'tx/\uffff' });

describe('inKeyBatches', () => {
  // Batches ending at every place: inside an address's block, at a block's end, at an address's end.
  it.each([1, 2, 3, 4, 5, 7])(
    'behavior: visits every key under the prefix once, in order, in batches of %i, the ones it removes included',
    (batch) => {
      const seen: string[] = [];
      const removed = inKeyBatches(store, 'addressTxs', 'tx/', batch, (keys) => {
        seen.push(...keys);
        const odd = keys.filter((k) => k.endsWith('1'));
        for (const k of odd) store.remove('addressTxs', k);
        return odd.length;
      });
      expect(seen).toEqual([...KEYS].sort());
      expect(removed).toBe(9);
      expect(left()).toEqual(KEYS.filter((k) => k.endsWith('0')).sort());
      expect(store.has('addressTxs', 'hist/0x1/0x01/000000000001/000000')).toBe(true);
    },
  );

  it('behavior: a run cut short keeps the batches it finished, and the next run finishes the walk', () => {
    let batches = 0;
    let done = 0;
    const cut = () =>
      inKeyBatches(store, 'addressTxs', 'tx/', 5, (keys) => {
        if (++batches === 3) throw new Error('stopped');
        for (const k of keys) store.remove('addressTxs', k);
        done += keys.length;
        return keys.length;
      });
    expect(cut).toThrow('stopped');
    // Two batches went; the third's transaction was not committed.
    expect(done).toBeGreaterThanOrEqual(10);
    expect(left()).toHaveLength(KEYS.length - done);
    const rest = inKeyBatches(store, 'addressTxs', 'tx/', 5, (keys) => {
      for (const k of keys) store.remove('addressTxs', k);
      return keys.length;
    });
    expect(rest).toBe(KEYS.length - done);
    expect(left()).toEqual([]);
  });
});
