import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Expiries } from '../../engine/expiry.js';
import { openStore } from '../../storage/env.js';
import { tempDir } from '../helpers.js';

describe('Expiries', () => {
  it('purges what is due by now, whatever its table, and nothing due a millisecond later', async () => {
    const store = openStore(tempDir());
    try {
      const expiries = new Expiries(store);
      const NOW = 1_800_000_000_000;
      store.transact(() => {
        for (const [at, key] of [[NOW - 1, 'a'], [NOW, 'b'], [NOW + 1, 'c']] as const) {
          // Tables that sort before and after each other: the cut must not depend on the name.
          for (const table of ['challenges', 'settings'] as const) {
            store.put(table, key, 1);
            expiries.add(at, table, key);
          }
        }
      });
      expect(expiries.purge(NOW)).toBe(4);
      for (const table of ['challenges', 'settings'] as const) expect(['a', 'b', 'c'].map((k) => store.has(table, k))).toEqual([false, false, true]);
      expect(expiries.purge(NOW + 1)).toBe(2);
    } finally {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });
});
