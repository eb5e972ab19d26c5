import type { Kv } from '../ports.js';
import type { KeySetData } from './key-set.js';

/**
 * A key set kept in the store and read back in place: the first step of the watched set on disk
 * (docs/decisions/watched-set.md). Its four arrays are stored as values of `watchedSets` under `NAME/ARRAY`, with a
 * header under `NAME`; read back through the store's `mapped` read, an array of more than 16 MiB is a view of the
 * store's memory map (file-backed pages, shared by every thread and process that maps the store, none of it
 * anonymous memory), a smaller one a copy. A stored set is never rewritten in place: a new version is written under
 * a new name, and a name is removed only once no reader holds its views (pages of a removed value are reused).
 *
 * Views are not SharedArrayBuffers: a thread reads its own from its own handle; posting them would copy the map.
 */

/** The arrays of a key set, in their stored order. */
const ARRAYS = ['bloom', 'slots', 'postingAt', 'postings'] as const;

/** The largest array one value holds: lmdb-js views the map in windows of 0xf0000000 bytes, a value within one. */
export const MAX_ARRAY_BYTES = 0xf000_0000 - 0x10_0000;

interface Header {
  width: 20 | 32;
  seed: number;
  size: number;
  /** Words of each array, in ARRAYS' order. */
  words: number[];
}

/**
 * Reads a stored value so that it stays valid while the entry stands: a view of the map, or a copy
 * (storage/env.ts: Store.mapped).
 */
export type MappedRead = (key: string) => Uint8Array | undefined;

/** Writes `data` as the set `name` (inside the caller's write transaction: header and arrays commit together). */
export function writeKeySet(kv: Pick<Kv, 'put' | 'putRaw'>, name: string, data: KeySetData): void {
  const words = ARRAYS.map((a) => data[a].length);
  for (const a of ARRAYS)
    if (data[a].byteLength > MAX_ARRAY_BYTES)
      throw new RangeError(`${name}: ${a} is ${data[a].byteLength} bytes, more than one value holds`);
  for (const a of ARRAYS) {
    const bytes = new Uint8Array(data[a].buffer, data[a].byteOffset, data[a].byteLength);
    // lmdb-js must not be handed a SharedArrayBuffer's bytes (a later write then crashed the process): a copy.
    kv.putRaw('watchedSets', `${name}/${a}`, bytes.buffer instanceof SharedArrayBuffer ? Uint8Array.prototype.slice.call(bytes) : bytes);
  }
  const header: Header = { width: data.width, seed: data.seed, size: data.size, words };
  kv.put('watchedSets', name, header);
}

/**
 * The set `name` as stored, its arrays read with `mapped`; undefined when there is none. A torn set is an error.
 * `bloom`: its filter, already in this thread's memory (a base's shared one), not read again.
 */
export function readKeySet(kv: Pick<Kv, 'get'>, mapped: MappedRead, name: string, bloom?: Uint32Array): KeySetData | undefined {
  const header = kv.get<Header>('watchedSets', name);
  if (header === undefined) return undefined;
  if (bloom !== undefined && bloom.length !== header.words[0])
    throw new Error(`${name}/bloom: ${bloom.length} words given, the header says ${header.words[0]}`);
  const [stored, slots, postingAt, postings] = ARRAYS.map((a, i) => {
    if (a === 'bloom' && bloom !== undefined) return bloom;
    const bytes = mapped(`${name}/${a}`);
    const words = header.words[i]!;
    if (bytes?.byteLength !== words * 4)
      throw new Error(`${name}/${a}: ${bytes?.byteLength ?? 'no'} bytes stored, the header says ${words * 4}`);
    // A view where the value lies 4-byte aligned (values on their own pages are), else a copy that is.
    return bytes.byteOffset % 4 === 0
      ? new Uint32Array(bytes.buffer, bytes.byteOffset, words)
      : new Uint32Array(Uint8Array.prototype.slice.call(bytes).buffer);
  }) as [Uint32Array, Uint32Array, Uint32Array, Uint32Array];
  return { width: header.width, seed: header.seed, size: header.size, bloom: stored, slots, postingAt, postings };
}

/** The words of the stored set `name`'s bloom filter (its header's), undefined when there is none. */
export function storedBloomWords(kv: Pick<Kv, 'get'>, name: string): number | undefined {
  return kv.get<Header>('watchedSets', name)?.words[0];
}

/** Removes the set `name` (once no reader holds its views). */
export function removeKeySet(kv: Kv, name: string): void {
  for (const a of ARRAYS) kv.remove('watchedSets', `${name}/${a}`);
  kv.remove('watchedSets', name);
}
