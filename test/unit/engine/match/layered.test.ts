import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeAddress } from '../../../../engine/bitcoin/address.js';
import { bitcoinProbeMatch, buildBtcProbe, scriptKey } from '../../../../engine/bitcoin/probe.js';
import { KeyPairs, REMOVES, changeSetsOfPairs, keySetOfPairs } from '../../../../engine/match/watched-keys.js';
import { KeySet } from '../../../../engine/match/key-set.js';
import { LayeredKeySet } from '../../../../engine/match/layered.js';
import { blockFromCore, coreBlock200000v3 } from '../../../bitcoin-fixtures.js';

/** Pairs of 32-byte keys: [key, stream word] in the order given (a change layer's: REMOVES for a removal). */
function pairs(list: ReadonlyArray<readonly [Uint8Array, number]>): KeyPairs {
  const p = new KeyPairs(32);
  for (const [key, word] of list) p.keys.set(key, p.next(word >>> 0));
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
