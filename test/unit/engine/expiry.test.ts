import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Expiries } from '../../../engine/expiry.js';
import { openStore } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

describe('Expiries', () => {
  it('purges what is due by now, whatever its table, and nothing due a millisecond later', async () => {
    const store = openStore(tempDir());
    try {
      const expiries = new Expiries(store);
      const NOW = 1_800_000_000_000;
      store.transact(() => {
        for (const [at, key] of [
          [NOW - 1, 'a'],
          [NOW, 'b'],
          [NOW + 1, 'c'],
        ] as const) {
          // Tables that sort before and after each other: the cut must not depend on the name.
          for (const table of ['challenges', 'settings'] as const) {
            store.put(table, key, 1);
            expiries.add(at, table, key);
          }
        }
      });
      expect(expiries.purge(NOW)).toBe(4);
      for (const table of ['challenges', 'settings'] as const)
        expect(['a', 'b', 'c'].map((k) => store.has(table, k))).toEqual([false, false, true]);
      expect(expiries.purge(NOW + 1)).toBe(2);
    } finally {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });

  it("keeps each owner's count of entries in each table through adds, removals and purges, and says when the next is due", async () => {
    const store = openStore(tempDir());
    try {
      const expiries = new Expiries(store);
      const NOW = 1_800_000_000_000;
      const counts = () => ['t1', 't2'].flatMap((owner) => (['challenges', 'binds'] as const).map((table) => expiries.count(table, owner)));
      expect(expiries.nextDue()).toBeUndefined();
      store.transact(() => {
        expiries.add(NOW + 5, 'challenges', 't1/a');
        expiries.add(NOW + 1, 'challenges', 't1/b');
        expiries.add(NOW + 9, 'binds', 't1/c');
        expiries.add(NOW + 2, 'challenges', 't2/d');
      });
      expect(counts()).toEqual([2, 1, 1, 0]);
      expect(expiries.nextDue()).toBe(NOW + 1);
      store.transact(() => expiries.remove(NOW + 5, 'challenges', 't1/a'));
      expect(counts()).toEqual([1, 1, 1, 0]);
      expect(expiries.purge(NOW + 2)).toBe(2);
      expect(counts()).toEqual([0, 1, 0, 0]);
      expect(expiries.nextDue()).toBe(NOW + 9);
      // No count is kept at 0, and one that was never counted (a store from before the counts) stays at 0.
      store.transact(() => expiries.remove(NOW + 2, 'challenges', 't2/d'));
      expect(store.range('expiryCounts').map((e) => e.key)).toEqual(['binds/t1']);
    } finally {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });
});
