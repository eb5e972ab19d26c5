import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

/** Kv.writeBehind: bulk writes handed to LMDB's write thread as one unit. */
describe('writeBehind', () => {
  const store = openStore(tempDir());
  afterAll(async () => {
    await store.close();
    rmSync(store.path, { recursive: true, force: true });
  });

  it('writes puts, raw puts (string or byte keys) and removals as one unit, readable once it resolves', async () => {
    store.put('meta', 'gone', 1);
    let seenInside: unknown = 'unread';
    const done = store.writeBehind(() => {
      store.put('meta', 'a', { n: 1 });
      store.putRaw('blocks', 'b', new Uint8Array([1, 2, 3]));
      store.putRaw('blocks', Buffer.from('c', 'latin1'), new Uint8Array([4]));
      store.remove('meta', 'gone');
      seenInside = store.get('meta', 'a');
    });
    // Not written on this thread: neither inside nor before the commit.
    expect(seenInside).toBeUndefined();
    await done;
    expect(store.get('meta', 'a')).toEqual({ n: 1 });
    expect([...store.getRaw('blocks', 'b')!]).toEqual([1, 2, 3]);
    // A byte key is the same entry as its string.
    expect([...store.getRaw('blocks', 'c')!]).toEqual([4]);
    expect(store.get('meta', 'gone')).toBeUndefined();
  });

  it('writes nothing when its function throws, and does not nest', async () => {
    expect(() =>
      store.writeBehind(() => {
        store.put('meta', 'half', 1);
        throw new Error('stop');
      }),
    ).toThrow('stop');
    await store.writeBehind(() => {});
    expect(store.get('meta', 'half')).toBeUndefined();
    expect(() => store.writeBehind(() => void store.writeBehind(() => {}))).toThrow(/does not nest/);
    // Writes after a writeBehind are direct again.
    store.put('meta', 'after', 2);
    expect(store.get('meta', 'after')).toBe(2);
  });
});
