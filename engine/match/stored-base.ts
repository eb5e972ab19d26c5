import type { Kv } from '../ports.js';
import type { KeySetData } from './key-set.js';
import { sharedBloomViews } from './shared-words.js';
import { partName } from './layered.js';
import { readKeySet, removeKeySet, storedBloomWords, writeKeySet, type MappedRead } from './stored-key-set.js';

/**
 * A chain's base: the key set of its watched addresses kept in the store (`watchedSets`) and read in place
 * (docs/decisions/watched-set.md). A version goes under its own name: its header first, then each part's arrays
 * in a write transaction of its own, then the chain's pointer to it in a transaction of its own, last: a crash before
 * the pointer leaves it on the previous version, whole (the new one's rows, named by no pointer, are removed at the next start). The pointer says
 * the last change of the watch log (engine/streams/watch-log.ts) the version holds, and its streams in index order.
 */
export interface BaseHeader {
  name: string;
  /** The last watch-log change the base holds. */
  seq: number;
  /** Stream ids by their index in the base's postings. */
  streams: string[];
  /** Its parts (a power of two: layered.ts partOf), each a key set under `name/pI`. */
  parts: number;
}

const pointerKey = (chain: string): string => `chain/${chain}`;
const prefixOf = (chain: string): string => `base/${chain}/`;

/** The chain's current base, if one is kept. */
export const readPointer = (kv: Pick<Kv, 'get'>, chain: string): BaseHeader | undefined =>
  kv.get<BaseHeader>('watchedSets', pointerKey(chain));

/** Every chain's kept base. */
export const pointers = (kv: Pick<Kv, 'range'>): BaseHeader[] =>
  kv.range<BaseHeader>('watchedSets', { start: 'chain/', end: 'chain/\uffff' }).map((e) => e.value);

/**
 * Writes `parts` (arrays in the thread's own memory: lmdb-js is not handed shared memory) as the chain's base at
 * `seq`: its name first (what a sweep finds it by), each part in a transaction of its own (a write transaction of
 * gigabytes spills pages), the pointer last.
 */
export function writeBase(
  kv: Pick<Kv, 'get' | 'put' | 'putRaw' | 'transact'>,
  chain: string,
  seq: number,
  streams: string[],
  parts: readonly KeySetData[],
): BaseHeader {
  const prev = readPointer(kv, chain);
  // A new name each time: a version is never rewritten in place (readers may hold views of it).
  const gen = prev === undefined ? 1 : Number(prev.name.slice(prev.name.lastIndexOf('.') + 1)) + 1;
  const header: BaseHeader = { name: `${prefixOf(chain)}${seq}.${gen}`, seq, streams, parts: parts.length };
  kv.transact(() => kv.put('watchedSets', header.name, { parts: parts.length }));
  parts.forEach((part, i) => kv.transact(() => writeKeySet(kv, partName(header.name, i), part)));
  kv.transact(() => kv.put('watchedSets', pointerKey(chain), header));
  return header;
}

/** The base's parts: tables as views of the map (and copies of small arrays), bloom filters copied into one shared memory (`blooms`: already there). */
export function openBase(kv: Pick<Kv, 'get'>, mapped: MappedRead, header: BaseHeader, blooms?: readonly Uint32Array[]): KeySetData[] {
  const names = Array.from({ length: header.parts }, (_, i) => partName(header.name, i));
  // The filters' memory sized from the parts' headers, each filter copied into it as its part is read: one part's
  // read at a time, not every part's, is held besides (a 16 MiB array is a copy: storage/map-size.ts).
  const views = blooms ?? sharedBloomViews(names.map((name) => storedBloomWords(kv, name) ?? 0));
  return names.map((name, i) => {
    const data = readKeySet(kv, mapped, name, blooms?.[i]);
    if (data === undefined) throw new Error(`no stored set ${name}`);
    if (blooms === undefined) views[i]!.set(data.bloom);
    return { ...data, bloom: views[i]! };
  });
}

/** Removes a base no reader holds any more (a part per transaction), and its chain's pointer first if that still names it (a chain dropped to a whole compile). */
export function removeBase(kv: Kv, name: string): void {
  const chain = name.slice('base/'.length, name.lastIndexOf('/'));
  if (readPointer(kv, chain)?.name === name) kv.transact(() => kv.remove('watchedSets', pointerKey(chain)));
  const parts = kv.get<{ parts: number }>('watchedSets', name)?.parts ?? 0;
  for (let i = 0; i < parts; i++) kv.transact(() => removeKeySet(kv, partName(name, i)));
  kv.transact(() => kv.remove('watchedSets', name));
}

/** The chain's stored versions other than its pointer's: those a crash or a merge left behind. */
export function strayBases(kv: Pick<Kv, 'keys' | 'get'>, chain: string): string[] {
  const keep = readPointer(kv, chain)?.name;
  const prefix = prefixOf(chain);
  return kv
    .keys('watchedSets', { start: prefix, end: `${prefix}\uffff` })
    .filter((k) => !k.slice(prefix.length).includes('/') && k !== keep);
}
