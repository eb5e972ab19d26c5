import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KeySet, buildKeySet, fillKeySet, type KeySetData } from '../../../../engine/match/key-set.js';
import { readKeySet, removeKeySet, writeKeySet } from '../../../../engine/match/stored-key-set.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { MAPPED_FROM } from '../../../../storage/map-size.js';

const dirs: string[] = [];
const open = (dir?: string): { dir: string; store: Store } => {
  const d = dir ?? mkdtempSync(join(tmpdir(), 'chainpost-stored-set-'));
  if (dir === undefined) dirs.push(d);
  return { dir: d, store: openStore(d) };
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const view = (b: Uint8Array): DataView => new DataView(b.buffer, b.byteOffset, b.byteLength);
const mapped = (store: Store) => (key: string) => store.mapped('watchedSets', key);

/** `n` random 20-byte keys, key i watched by streams i % 1,000 (and i % 7 + 1,000 for every tenth). */
function keysOf(n: number): { bytes: Buffer; data: KeySetData } {
  const bytes = randomBytes(n * 20);
  const streamsOf = (i: number): number[] => (i % 10 === 0 ? [i % 1_000, (i % 7) + 1_000] : [i % 1_000]);
  const postings = Array.from({ length: n }, (_, i) => 1 + streamsOf(i).length).reduce((a, b) => a + b, 0);
  const data = fillKeySet(20, n, postings, 0x5eed, (insert) => {
    const dv = view(bytes);
    for (let i = 0; i < n; i++) insert(dv, i * 20, streamsOf(i));
  });
  return { bytes, data };
}

describe('a key set kept in the store', () => {
  it('is found again after the store is reopened: every key with its streams, and no stranger', async () => {
    const { dir, store } = open();
    const { bytes, data } = keysOf(3_000);
    store.transact(() => writeKeySet(store, 'evm/0x1/1', data));
    await store.close();

    const again = open(dir).store;
    try {
      const read = readKeySet(again, mapped(again), 'evm/0x1/1')!;
      const set = new KeySet(read);
      expect(set.size).toBe(3_000);
      for (let i = 0; i < 3_000; i++)
        expect(Array.from(set.lookup(view(bytes), i * 20))).toEqual(i % 10 === 0 ? [i % 1_000, (i % 7) + 1_000] : [i % 1_000]);
      const strangers = randomBytes(5_000 * 20);
      let found = 0;
      for (let i = 0; i < 5_000; i++) found += set.lookup(view(strangers), i * 20).length;
      expect(found).toBe(0);
      // Small arrays are copies (lmdb-js answers them from its read buffer, which the next read overwrites).
      expect(read.slots.buffer.byteLength).toBe(read.slots.byteLength);
      expect(readKeySet(again, mapped(again), 'evm/0x1/2')).toBeUndefined();
    } finally {
      await again.close();
    }
  });

  it('reads arrays of 16 MiB and more as views of the store map, not copies, which stay valid across other reads', async () => {
    const { store } = open();
    try {
      // 600,000 keys: a table of 2^21 slots of 5 words, 40 MiB.
      const { bytes, data } = keysOf(600_000);
      expect(data.slots.byteLength).toBeGreaterThanOrEqual(MAPPED_FROM);
      store.transact(() => writeKeySet(store, 'evm/0x1/7', data));
      const read = readKeySet(store, mapped(store), 'evm/0x1/7')!;
      // A window of the map (lmdb-js maps it in windows of about 4 GiB), not a buffer of the array's own size.
      expect(read.slots.buffer.byteLength).toBeGreaterThan(2 ** 31);
      expect(read.slots.buffer).not.toBeInstanceOf(SharedArrayBuffer);
      expect(Buffer.from(read.slots.buffer, read.slots.byteOffset, read.slots.byteLength).equals(Buffer.from(data.slots.buffer))).toBe(
        true,
      );
      // Other reads meanwhile (the small arrays, copied through lmdb-js's read buffer) leave the view as it was.
      const again = readKeySet(store, mapped(store), 'evm/0x1/7')!;
      const set = new KeySet(read);
      for (let i = 0; i < 600_000; i += 997) expect(set.lookup(view(bytes), i * 20)[0]).toBe(i % 1_000);
      expect(again.size).toBe(600_000);
    } finally {
      await store.close();
    }
  }, 60_000);

  it.each([MAPPED_FROM - 4, MAPPED_FROM, MAPPED_FROM + 4])(
    'keeps a value of %i bytes as read across the next reads (lmdb-js copies one of exactly 16 MiB into its read buffer)',
    async (size) => {
      const { store } = open();
      try {
        const big = randomBytes(size);
        const small = randomBytes(4_096);
        store.transact(() => {
          store.putRaw('watchedSets', 'big', big);
          store.putRaw('watchedSets', 'small', small);
        });
        const read = store.mapped('watchedSets', 'big')!;
        expect(Buffer.from(store.mapped('watchedSets', 'small')!).equals(small)).toBe(true);
        expect(Buffer.from(read.buffer, read.byteOffset, read.byteLength).equals(big)).toBe(true);
      } finally {
        await store.close();
      }
    },
  );

  it("takes a filter it is given (a base's shared one, as a match worker has it) without reading its own, and refuses one of another size", async () => {
    const { store } = open();
    try {
      const { bytes, data } = keysOf(3_000);
      store.transact(() => writeKeySet(store, 'evm/0x1/3', data));
      const reads: string[] = [];
      const counted = (key: string) => (reads.push(key), store.mapped('watchedSets', key));
      const shared = Uint32Array.from(data.bloom);
      const read = readKeySet(store, counted, 'evm/0x1/3', shared)!;
      expect(read.bloom).toBe(shared);
      expect(reads).toEqual(['evm/0x1/3/slots', 'evm/0x1/3/postingAt', 'evm/0x1/3/postings']);
      expect(new KeySet(read).lookup(view(bytes), 20 * 7)[0]).toBe(7);
      expect(() => readKeySet(store, counted, 'evm/0x1/3', new Uint32Array(8))).toThrow(/bloom: 8 words given, the header says/);
    } finally {
      await store.close();
    }
  });

  it('refuses a set whose stored arrays disagree with its header (a torn or foreign write), and removes one whole', async () => {
    const { store } = open();
    try {
      const data = buildKeySet(20, [{ key: new Uint8Array(20).fill(1), streams: [3] }]);
      store.transact(() => writeKeySet(store, 'evm/0x1/1', data));
      store.transact(() => store.putRaw('watchedSets', 'evm/0x1/1/postings', new Uint8Array(4)));
      expect(() => readKeySet(store, mapped(store), 'evm/0x1/1')).toThrow('evm/0x1/1/postings: 4 bytes stored, the header says 8');
      store.transact(() => removeKeySet(store, 'evm/0x1/1'));
      expect(readKeySet(store, mapped(store), 'evm/0x1/1')).toBeUndefined();
      expect(store.keys('watchedSets', {})).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
