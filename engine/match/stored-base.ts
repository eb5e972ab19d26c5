import type { Kv } from '../ports.js';
import type { KeySetData } from './key-set.js';
import { readKeySet, removeKeySet, writeKeySet, type MappedRead } from './stored-key-set.js';

/**
 * A chain's base: the key set of its watched addresses kept in the store (`watchedSets`) and read in place
 * (docs/decisions/watched-set.md). A version's arrays and header go under its own name in one write transaction,
 * then the chain's pointer to it in a transaction of its own, last: a crash between the two leaves the pointer on the
 * previous version, whole (the new one's rows, named by no pointer, are removed at the next start). The pointer says
 * the last change of the watch log (engine/streams/watch-log.ts) the version holds, and its streams in index order.
 */
export interface BaseHeader {
  name: string;
  /** The last watch-log change the base holds. */
  seq: number;
  /** Stream ids by their index in the base's postings. */
  streams: string[];
}

const pointerKey = (chain: string): string => `chain/${chain}`;
const prefixOf = (chain: string): string => `base/${chain}/`;

/** The chain's current base, if one is kept. */
export const readPointer = (kv: Pick<Kv, 'get'>, chain: string): BaseHeader | undefined =>
  kv.get<BaseHeader>('watchedSets', pointerKey(chain));

/** Every chain's kept base. */
export const pointers = (kv: Pick<Kv, 'range'>): BaseHeader[] =>
  kv.range<BaseHeader>('watchedSets', { start: 'chain/', end: 'chain/\uffff' }).map((e) => e.value);

/** Writes `data` (arrays in the thread's own memory: lmdb-js is not handed shared memory) as the chain's base at `seq`, the pointer last. */
export function writeBase(kv: Kv, chain: string, seq: number, streams: string[], data: KeySetData): BaseHeader {
  const prev = readPointer(kv, chain);
  // A new name each time: a version is never rewritten in place (readers may hold views of it).
  const gen = prev === undefined ? 1 : Number(prev.name.slice(prev.name.lastIndexOf('.') + 1)) + 1;
  const header: BaseHeader = { name: `${prefixOf(chain)}${seq}.${gen}`, seq, streams };
  kv.transact(() => writeKeySet(kv, header.name, data));
  kv.transact(() => kv.put('watchedSets', pointerKey(chain), header));
  return header;
}

/** The base's table as views of the map (and copies of its small arrays), its bloom filter copied into shared memory (`bloom`: already there). */
export function openBase(kv: Pick<Kv, 'get'>, mapped: MappedRead, name: string, bloom?: Uint32Array): KeySetData {
  const data = readKeySet(kv as Kv, mapped, name);
  if (data === undefined) throw new Error(`no stored set ${name}`);
  if (bloom !== undefined) return { ...data, bloom };
  const shared = new Uint32Array(new SharedArrayBuffer(data.bloom.byteLength));
  shared.set(data.bloom);
  return { ...data, bloom: shared };
}

/** Removes a base no reader holds any more, and its chain's pointer if that still names it (a chain dropped to a whole compile). */
export function removeBase(kv: Kv, name: string): void {
  const chain = name.slice('base/'.length, name.lastIndexOf('/'));
  kv.transact(() => {
    if (readPointer(kv, chain)?.name === name) kv.remove('watchedSets', pointerKey(chain));
    removeKeySet(kv, name);
  });
}

/** The chain's stored versions other than its pointer's: those a crash or a merge left behind. */
export function strayBases(kv: Pick<Kv, 'keys' | 'get'>, chain: string): string[] {
  const keep = readPointer(kv, chain)?.name;
  const prefix = prefixOf(chain);
  return kv
    .keys('watchedSets', { start: prefix, end: `${prefix}\uffff` })
    .filter((k) => !k.slice(prefix.length).includes('/') && k !== keep);
}
