import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeAddress } from '../../../../engine/bitcoin/address.js';
import { bitcoinProbeMatch, buildBtcProbe, scriptKey } from '../../../../engine/bitcoin/probe.js';
import { KeyPairs, REMOVES, changeSetsOfPairs, keySetOfPairs } from '../../../../engine/match/watched-keys.js';
import { KeySet, partOf, writeKeyLanes } from '../../../../engine/match/key-set.js';
import { sharedBlooms } from '../../../../engine/match/shared-words.js';
import { LayeredKeySet, PartedKeySet, eachHit, probeKeys, type ProbeKeys } from '../../../../engine/match/layered.js';
import { blockFromCore, coreBlock200000v3 } from '../../../bitcoin-fixtures.js';

/** Pairs of `width`-byte keys: [key, stream word] in the order given (a change layer's: REMOVES for a removal). */
function pairs(list: ReadonlyArray<readonly [Uint8Array, number]>, width: 20 | 32 = 32): KeyPairs {
  const p = new KeyPairs(width);
  for (const [key, word] of list) {
    // next() first: it may grow the key array, which p.keys then names.
    const at = p.next(word >>> 0);
    p.keys.set(key, at);
  }
  return p;
}
const layer = (list: ReadonlyArray<readonly [Uint8Array, number]>) => {
  const { adds, removes } = changeSetsOfPairs(pairs(list), 5);
  return { adds: new KeySet(adds), removes: new KeySet(removes) };
};
const streamsOf = (set: LayeredKeySet, key: Uint8Array): number[] => {
  const dv = new DataView(key.buffer, key.byteOffset, 32);
  const p = set.find(dv, 0);
  return p === 0 ? [] : Array.from(set.postings.subarray(p, p + set.postings[p - 1]!)).sort((a, b) => a - b);
};

describe('a base with change layers over it', () => {
  const [a, b, c] = [randomBytes(32), randomBytes(32), randomBytes(32)];
  const base = new KeySet(
    keySetOfPairs(
      pairs([
        [a, 1],
        [a, 2],
        [b, 1],
      ]),
      3,
      { load: 0.75, shared: false },
    ),
  );

  it("answers the base's streams, less a layer's removals, plus its adds, the later layer and the later change counting", () => {
    const l1 = layer([
      [b, 1 | REMOVES],
      [c, 4],
      [a, 2 | REMOVES],
      [a, 2], // removed, then added again in the same layer: added
    ]);
    const l0 = layer([
      [a, 1 | REMOVES],
      [c, 4 | REMOVES],
      [b, 1],
    ]);
    expect(streamsOf(new LayeredKeySet(base, [l1]), a)).toEqual([1, 2]);
    expect(streamsOf(new LayeredKeySet(base, [l1]), b)).toEqual([]);
    expect(streamsOf(new LayeredKeySet(base, [l1]), c)).toEqual([4]);
    const both = new LayeredKeySet(base, [l1, l0]);
    expect([streamsOf(both, a), streamsOf(both, b), streamsOf(both, c)]).toEqual([[2], [1], []]);
    expect(streamsOf(both, randomBytes(32))).toEqual([]);
  });

  it("is walked by a family's probe walker as a plain set is: a Bitcoin block's transactions paying a key a layer added", () => {
    const block = blockFromCore(coreBlock200000v3());
    const probe = buildBtcProbe(block.txs);
    const dice = scriptKey(decodeAddress('1dice8EMZmqKvrGE4Qc9bUFf9PX3xaYDp').script);
    const other = scriptKey(decodeAddress('1H5DfbDtCnKUdke9xH9svwwxqga41Z5xbz').script);
    const plain = new KeySet(
      keySetOfPairs(
        pairs([
          [dice, 3],
          [other, 7],
          [other, 3],
        ]),
        9,
      ),
    );
    const before = new KeySet(
      keySetOfPairs(
        pairs([
          [other, 7],
          [other, 3],
          [randomBytes(32), 11],
        ]),
        9,
        { load: 0.75, shared: false },
      ),
    );
    const layered = new LayeredKeySet(before, [layer([[dice, 3]])]);
    expect(bitcoinProbeMatch(layered, probe)).toEqual(bitcoinProbeMatch(plain, probe));
    expect(bitcoinProbeMatch(layered, probe).get(3)!.length).toBeGreaterThan(bitcoinProbeMatch(before, probe).get(3)?.length ?? 0);
  });
});

describe("a layered set's column pass", () => {
  const hex = (k: Uint8Array): string => Buffer.from(k).toString('hex');
  const pairs20 = (list: ReadonlyArray<readonly [Uint8Array, number]>): KeyPairs => pairs(list, 20);
  /** Each key's streams as find() answers them, sorted. */
  const found = (set: ProbeKeys, dv: DataView, at: number): number[] => {
    const p = set.find(dv, at);
    return p === 0 ? [] : Array.from(set.postings.subarray(p, p + set.postings[p - 1]!)).sort((a, b) => a - b);
  };
  // A small key space (a key drawn often, by the base and the layers), strangers beside it.
  const key = fc.uint8Array({ minLength: 20, maxLength: 20 });
  const change = fc.tuple(fc.nat(39), fc.nat(5), fc.boolean());

  it('answers for every key of a section what find() answers, and what a Map of the changes applied in order holds (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { selector: hex, minLength: 40, maxLength: 40 }),
        fc.array(fc.tuple(fc.nat(39), fc.nat(5)), { maxLength: 60 }),
        fc.array(fc.array(change, { maxLength: 30 }), { maxLength: 3 }),
        fc.integer({ min: 0, max: 3 }),
        fc.array(fc.oneof(fc.nat(39), key), { maxLength: 200 }),
        fc.boolean(),
        (pool, base, layers, bits, probed, withLanes) => {
          // The model: the base's streams per key, then each layer's changes in order (a stream's last change counts).
          const model = new Map<string, Set<number>>();
          const at = (k: Uint8Array): Set<number> => model.get(hex(k)) ?? model.set(hex(k), new Set()).get(hex(k))!;
          for (const [k, s] of base) at(pool[k]!).add(s);
          for (const l of layers) for (const [k, s, add] of l) add ? at(pool[k]!).add(s) : at(pool[k]!).delete(s);
          // The base in 2^bits parts as a stored one is (partOf, dense), the layers as bases.ts builds them.
          const stored = Array.from({ length: 2 ** bits }, (_, part) => {
            const mine = base.filter(([k]) => partOf(new DataView(pool[k]!.buffer), 0, bits) === part);
            return keySetOfPairs(pairs20(mine.map(([k, s]) => [pool[k]!, s] as const)), 11, { load: 0.75, shared: false });
          });
          // Its filters in one shared memory, as openBase copies them.
          const blooms = sharedBlooms(stored.map((d) => d.bloom));
          const parts = stored.map((d, i) => new KeySet({ ...d, bloom: blooms[i]! }));
          const set = new LayeredKeySet(
            bits === 0 ? parts[0]! : new PartedKeySet(parts),
            layers.map((l) => {
              const { adds, removes } = changeSetsOfPairs(pairs20(l.map(([k, s, add]) => [pool[k]!, add ? s : s | REMOVES] as const)), 13);
              return { adds: new KeySet(adds), removes: new KeySet(removes) };
            }),
          );
          // The section: 9 bytes in (a column's header), the keys, then their lanes.
          const keys = probed.map((p) => (typeof p === 'number' ? pool[p]! : p));
          const column = Buffer.alloc(9 + keys.length * 28);
          keys.forEach((k, i) => column.set(k, 9 + i * 20));
          const dv = new DataView(column.buffer, column.byteOffset, column.byteLength);
          const lanesAt = 9 + keys.length * 20;
          for (let i = 0; i < keys.length; i++) writeKeyLanes(dv, 9 + i * 20, 20, dv, lanesAt + i * 8);
          const got: Array<[number, number[]]> = [];
          eachHit(set, dv, 9, keys.length, withLanes ? lanesAt : -1, (i, p, postings) =>
            got.push([i, Array.from(postings.subarray(p, p + postings[p - 1]!)).sort((a, b) => a - b)]),
          );
          const byFind = keys.flatMap((_, i) => {
            const s = found(set, dv, 9 + i * 20);
            return s.length === 0 ? [] : [[i, s] as [number, number[]]];
          });
          const byModel = keys.flatMap((k, i) => {
            const s = [...(model.get(hex(k)) ?? [])].sort((a, b) => a - b);
            return s.length === 0 ? [] : [[i, s] as [number, number[]]];
          });
          expect(got).toEqual(byFind);
          expect(got).toEqual(byModel);
        },
      ),
      { numRuns: 400 },
    );
  });
});

describe("a change layer's keys in its base's filter", () => {
  it('are let through once, by the first set laid over the base, and found by every later set over the same layer (another thread: its admitted flag shared)', () => {
    const keys = Array.from({ length: 3_000 }, () => randomBytes(20));
    const p = new KeyPairs(20);
    for (const [i, k] of keys.entries())
      if (i % 3 !== 0) {
        const at = p.next(i % 5);
        p.keys.set(k, at);
      }
    const base = keySetOfPairs(p, 17, { load: 0.75, shared: true });
    const added = new KeyPairs(20);
    for (const [i, k] of keys.entries())
      if (i % 3 === 0) {
        const at = added.next(9);
        added.keys.set(k, at);
      }
    const layer = changeSetsOfPairs(added, 17);
    const column = Buffer.concat(keys);
    const dv = new DataView(column.buffer, column.byteOffset, column.byteLength);
    const hitsOf = (set: ProbeKeys): number[] => {
      const out: number[] = [];
      eachHit(set, dv, 0, keys.length, -1, (i) => out.push(i));
      return out;
    };
    const first = probeKeys({ base: [base], layers: [layer] });
    expect(Atomics.load(layer.admitted!, 0)).toBe(1);
    // The second set skips the admission: the bits the first set in the shared filter let the layer's keys through.
    const second = probeKeys({ base: [base], layers: [layer] });
    const all = keys.map((_, i) => i);
    expect(hitsOf(first)).toEqual(all);
    expect(hitsOf(second)).toEqual(all);
  });
});
