import { rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { evmAddressKey } from '../../../../engine/evm/filter.js';
import { KeySet } from '../../../../engine/match/key-set.js';
import { KeyPairs, addressKeyParts, addressKeySet, storedAddresses } from '../../../../engine/match/watched-keys.js';
import { PartedKeySet } from '../../../../engine/match/layered.js';
import { openStore } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';

const view = (hex: string): DataView => new DataView(Uint8Array.from(Buffer.from(hex.slice(2), 'hex')).buffer);

describe('the address key set compiled from raw keys', () => {
  it("reads each stream's addresses from the store, pages and all, and gives a key every stream watching it, once each", async () => {
    const store = openStore(tempDir());
    try {
      // 25,000 addresses per stream (more than two pages of reads), a fifth of them shared by the three streams.
      const shared = Array.from({ length: 5_000 }, () => `0x${randomBytes(20).toString('hex')}`);
      const own = [0, 1, 2].map(() => Array.from({ length: 20_000 }, () => `0x${randomBytes(20).toString('hex')}`));
      const ids = ['a', 'b', 'c'];
      store.transact(() => {
        ids.forEach((id, i) => {
          for (const a of [...shared, ...own[i]!]) store.put('streamAddresses', `${id}/${a}`, 1);
        });
        // A stream whose id is another's prefix: its rows are not read as that one's.
        store.put('streamAddresses', `ab/${own[0]![0]}`, 1);
      });
      const read = storedAddresses((opts) => store.keys('streamAddresses', opts));
      const entries = ids.map((id, index) => ({ index, id, derived: new Uint8Array(0) }));
      // The first stream listed twice (a key read twice for one stream counts once).
      const set = new KeySet(addressKeySet(evmAddressKey, [...entries, entries[0]!], read, 7));
      expect(set.size).toBe(5_000 + 60_000);
      for (const a of shared) expect(Array.from(set.lookup(view(a), 0))).toEqual([0, 1, 2]);
      own.forEach((list, i) => {
        for (const a of list) expect(Array.from(set.lookup(view(a), 0))).toEqual([i]);
      });
      expect(set.lookup(view(`0x${randomBytes(20).toString('hex')}`), 0).length).toBe(0);
    } finally {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });

  it("splits a stored base's keys into parts a probe finds each key in (a value of the store stays under 2 GiB)", () => {
    const addresses = Array.from({ length: 20_000 }, () => `0x${randomBytes(20).toString('hex')}`);
    const read = (id: string, visit: (a: string) => void): void => {
      for (const [i, a] of addresses.entries()) if (i % 2 === Number(id) || i % 10 === 0) visit(a);
    };
    const entries = [0, 1].map((index) => ({ index, id: String(index), derived: new Uint8Array(0) }));
    const parts = addressKeyParts(evmAddressKey, entries, read, 3, 3_000);
    expect(parts.length).toBe(8);
    expect(parts.reduce((n, p) => n + p.size, 0)).toBe(20_000);
    for (const p of parts) expect(p.size).toBeLessThan(3_000);
    const set = new PartedKeySet(parts.map((p) => new KeySet(p)));
    for (const [i, a] of addresses.entries()) {
      const dv = view(a);
      const p = set.find(dv, 0);
      expect(Array.from(set.postings.subarray(p, p + set.postings[p - 1]!))).toEqual(i % 10 === 0 ? [0, 1] : [i % 2]);
    }
    expect(set.find(view(`0x${randomBytes(20).toString('hex')}`), 0)).toBe(0);
  });

  it('refuses a stored address of another form than its family keeps', () => {
    const read = (_id: string, visit: (a: string) => void): void => visit('0xABCDEF0000000000000000000000000000000000');
    expect(() => addressKeySet(evmAddressKey, [{ index: 0, id: 's', derived: new Uint8Array(0) }], read, 1)).toThrow(/not a 20-byte/);
  });

  it('keeps every key of a derived run that grows the pairs past their capacity (a count that undercounts)', () => {
    const pairs = new KeyPairs(20, 2);
    const run = randomBytes(5 * 20);
    pairs.addRun(run, 7);
    expect(pairs.count).toBe(5);
    expect(Buffer.from(pairs.keys.subarray(0, 100)).equals(run)).toBe(true);
    expect(Array.from(pairs.streams.subarray(0, 5))).toEqual([7, 7, 7, 7, 7]);
  });
});
