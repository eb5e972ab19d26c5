import { KeySet, allocKeySet, partOf, type KeySetData, type KeySetLayout } from './key-set.js';
import type { ChangeLayerData } from './layered.js';

/**
 * The key set of a chain's watched addresses compiled from raw key bytes: each stored address written as its key
 * into one flat array (a stream index beside it), distinct keys found through an index table over that array, and
 * the key set filled from it (fillKeySet). No object is made per address, so the compile's memory is its arrays
 * (about 36 bytes a watched address beside the key set) and no Map bounds its size (V8 refuses one of more than
 * 16.7 M entries): docs/decisions/watched-set.md.
 */

/** How a family turns a stored address into its key: the keys' width, and the writer of one key into `out` at `at`. */
export interface AddressKey {
  width: 20 | 32;
  /** Writes the key of `address` (in its stored form) at out[at … at + width); throws for an address of another form. */
  write(address: string, out: Uint8Array, at: number): void;
}

/** The stored addresses of a stream (streamAddresses), each handed to `visit` in its stored form. */
export type AddressReader = (streamId: string, visit: (address: string) => void) => void;

/** (key, stream index) pairs in flat arrays that grow by doubling. */
export class KeyPairs {
  keys: Uint8Array;
  streams: Uint32Array;
  count = 0;

  constructor(
    readonly width: 20 | 32,
    capacity = 1_024,
  ) {
    this.keys = new Uint8Array(capacity * width);
    this.streams = new Uint32Array(capacity);
  }

  /**
   * Where the next key goes, with its stream; its bytes are the caller's to write there, into `keys` as it is after
   * this call (the call may replace the array: `keys.set(key, next(s))` reads the old one first; addAddress).
   */
  next(stream: number): number {
    if (this.count === this.streams.length) this.grow();
    this.streams[this.count] = stream;
    return this.count++ * this.width;
  }

  /** `address`'s key (written by `key`) for `stream`. */
  addAddress(key: AddressKey, address: string, stream: number): void {
    const at = this.next(stream);
    key.write(address, this.keys, at);
  }

  /** Keys of `width` bytes end to end (a derived run), each for `stream`. */
  addRun(run: Uint8Array, stream: number): void {
    if (run.length % this.width !== 0) throw new RangeError(`a run of ${run.length} bytes is no whole number of ${this.width}-byte keys`);
    for (let from = 0; from < run.length; from += this.width) {
      // next() before this.keys is read: it may grow the array (counts that undercount leave it short).
      const at = this.next(stream);
      this.keys.set(run.subarray(from, from + this.width), at);
    }
  }

  private grow(): void {
    const keys = new Uint8Array(this.keys.length * 2);
    keys.set(this.keys);
    const streams = new Uint32Array(this.streams.length * 2);
    streams.set(this.streams);
    this.keys = keys;
    this.streams = streams;
  }
}

/** One stream of a compile as the address set takes it. */
interface AddressEntry {
  index: number;
  id: string;
  derived: Uint8Array;
  /** Its stored addresses, as its record counts them: the pairs' arrays are made that size at once (no doubling). */
  count?: number;
}

/** The key set of the entries' stored addresses (read by `read`) and derived keys, each key with every stream watching it. */
export function addressKeySet(
  key: AddressKey,
  entries: readonly AddressEntry[],
  read: AddressReader,
  seed: number,
  layout?: KeySetLayout,
): KeySetData {
  return keySetOfPairs(addressPairs(key, entries, read), seed, layout);
}

/**
 * The same keys as a stored base's parts: split by partOf into as many key sets as keep each under `partKeys` keys
 * (one LMDB value must stay under 2 GiB: LMDB writes an overflow run in one pwrite, which Linux cuts at 2 GiB), dense.
 */
export function addressKeyParts(
  key: AddressKey,
  entries: readonly AddressEntry[],
  read: AddressReader,
  seed: number,
  partKeys = PART_KEYS,
): KeySetData[] {
  return pairParts(addressPairs(key, entries, read), seed, partKeys);
}

/** The pairs' keys as a stored base's parts (addressKeyParts), from pairs already read. */
export function pairParts(pairs: KeyPairs, seed: number, partKeys = PART_KEYS): KeySetData[] {
  const bits = Math.max(0, Math.ceil(Math.log2(pairs.count / partKeys)));
  return fillParts(pairs, indexPairs(pairs, false), seed, { load: 0.75, shared: false }, EVERY, bits);
}

/** Keys per part of a stored base, at most (the table of 2^24 slots of 20 bytes: 320 MiB). */
const PART_KEYS = 12_000_000;

function addressPairs(key: AddressKey, entries: readonly AddressEntry[], read: AddressReader): KeyPairs {
  const counted = entries.reduce((n, e) => n + (e.count ?? 0) + e.derived.length / key.width, 0);
  const pairs = new KeyPairs(key.width, Math.max(1_024, counted));
  for (const e of entries) {
    read(e.id, (address) => pairs.addAddress(key, address, e.index));
    if (e.derived.length > 0) pairs.addRun(e.derived, e.index);
  }
  return pairs;
}

/** The top bit of a pair's stream word: the pair removes the key from the stream (a change layer's), rather than adds it. */
export const REMOVES = 0x8000_0000;

/**
 * The key set of the pairs: a key listed by several streams gets them all (sorted), a stream listing a key twice
 * counts once. `layout.load` above 0.5 also shares one posting among the keys of one stream alone (a stored set).
 */
export function keySetOfPairs(pairs: KeyPairs, seed: number, layout?: KeySetLayout): KeySetData {
  return fillParts(pairs, indexPairs(pairs, false), seed, layout ?? {}, EVERY)[0]!;
}

/**
 * A change layer's two key sets from pairs in the order of the changes (a stream word with REMOVES for a removal):
 * per key and stream the last change counts, an add in `adds`, a removal in `removes`.
 */
export function changeSetsOfPairs(pairs: KeyPairs, seed: number): ChangeLayerData {
  const index = indexPairs(pairs, true);
  return {
    adds: fillParts(pairs, index, seed, {}, ADDS)[0]!,
    removes: fillParts(pairs, index, seed, {}, REMOVALS)[0]!,
    admitted: new Int32Array(new SharedArrayBuffer(4)),
  };
}

/**
 * Distinct keys of the pairs: per pair, whether it is the first of its key (a bit of `first`), and 1 + the next pair
 * of the same key and another stream, or 0 (a pair neither first nor next of any: a repeat, dropped).
 */
interface PairIndex {
  first: Uint32Array;
  next: Uint32Array;
}

/**
 * Finds the distinct keys through an open-addressing table of pair numbers over the flat key array, compared word by
 * word (the table dropped once done: 4 bytes a slot, two slots a pair). A (key, stream) listed again is dropped, or
 * with `last` takes the later pair's word (its change).
 */
function indexPairs(pairs: KeyPairs, last: boolean): PairIndex {
  const { width, count: n, streams } = pairs;
  const words = width / 4;
  // The keys' words as stored (the machine's byte order): equal bytes, equal words.
  const kw = new Uint32Array(pairs.keys.buffer, 0, n * words);
  const capacity = 2 ** Math.ceil(Math.log2(Math.max(2, n * 2)));
  const mask = capacity - 1;
  const head = new Uint32Array(capacity);
  const next = new Uint32Array(n);
  const first = new Uint32Array(Math.ceil(n / 32));
  const slots = new Uint32Array(WARM);
  let warmed = 0;
  for (let from = 0; from < n; from += WARM) {
    const to = Math.min(n, from + WARM);
    // The run's table slots found and loaded first (their misses in flight together), then each pair placed.
    for (let i = from; i < to; i++) {
      const at = i * words;
      let h = 0x9e3779b9;
      for (let w = 0; w < words; w++) h = Math.imul(h ^ kw[at + w]!, 0x85ebca6b) ^ (h >>> 15);
      h = Math.imul(h ^ (h >>> 16), 0xc2b2ae35);
      slots[i - from] = (h ^ (h >>> 13)) & mask;
      warmed ^= head[slots[i - from]!]!;
    }
    for (let i = from; i < to; i++) {
      const at = i * words;
      for (let slot = slots[i - from]!; ; slot = (slot + 1) & mask) {
        const j = head[slot]!;
        if (j === 0) {
          head[slot] = i + 1;
          first[i >>> 5]! |= 1 << (i & 31);
          break;
        }
        if (sameWords(kw, (j - 1) * words, at, words)) {
          const stream = streams[i]! & ~REMOVES;
          let k = j;
          for (; ; k = next[k - 1]!) if ((streams[k - 1]! & ~REMOVES) === stream || next[k - 1] === 0) break;
          if ((streams[k - 1]! & ~REMOVES) === stream) {
            if (last) streams[k - 1] = streams[i]!;
          } else {
            next[i] = next[j - 1]!;
            next[j - 1] = i + 1;
          }
          break;
        }
      }
    }
  }
  sink ^= warmed;
  return { first, next };
}

/** Keys warmed together before they are inserted (KeySet.warm), and where what the warming read goes. */
const WARM = 32;
let sink = 0;

/** Which pairs' streams a key set takes: every pair's, the adds of a change layer, or its removals. */
const EVERY = 0;
const ADDS = 1;
const REMOVALS = 2;
type Wanted = typeof EVERY | typeof ADDS | typeof REMOVALS;

const takes = (word: number, wanted: Wanted): boolean => wanted === EVERY || ((word & REMOVES) === 0) === (wanted === ADDS);

/**
 * The key sets of the indexed keys with the streams `wanted`, keys with none left out, in 2^bits parts (partOf: a
 * stored base's). The pairs are read in their order (a stream's keys one after another, as they were read), twice:
 * the sizes of each part, then the keys inserted into their part's set; only the sets' own slots and bloom blocks are
 * touched at random. `layout.load` above 0.5 also shares one posting among the keys of one stream alone (a stored set).
 */
function fillParts(
  pairs: KeyPairs,
  { first, next }: PairIndex,
  seed: number,
  layout: KeySetLayout,
  wanted: Wanted,
  bits = 0,
): KeySetData[] {
  const { width, streams, count: n } = pairs;
  const sharing = (layout.load ?? 0.5) > 0.5;
  const parts = 2 ** bits;
  const dv = new DataView(pairs.keys.buffer);
  let top = 0;
  for (let i = 0; i < n; i++) top = Math.max(top, streams[i]! & ~REMOVES);
  // Sizes first: keys, postings (a stream alone on its keys: one posting shared by them when sharing), per part.
  const sizes = new Float64Array(parts);
  const postings = new Float64Array(parts);
  /** Per part and stream alone on some of its keys (sharing): 1 + the offset of its one posting, at the postings' start. */
  const alone = new Float64Array(parts * (top + 1));
  const alones = new Float64Array(parts);
  for (let i = 0; i < n; i++) {
    if ((first[i >>> 5]! & (1 << (i & 31))) === 0) continue;
    let count = 0;
    let one = 0;
    for (let k = i + 1; k !== 0; k = next[k - 1]!) if (takes(streams[k - 1]!, wanted) && count++ === 0) one = streams[k - 1]! & ~REMOVES;
    if (count === 0) continue;
    const part = partOf(dv, i * width, bits);
    sizes[part]!++;
    if (sharing && count === 1) {
      if (alone[part * (top + 1) + one] === 0) alone[part * (top + 1) + one] = 1 + 2 * alones[part]!++;
    } else postings[part]! += 1 + count;
  }
  const data = Array.from({ length: parts }, (_, part) =>
    allocKeySet(width, sizes[part]!, 2 * alones[part]! + postings[part]!, seed, layout),
  );
  const sets = data.map((d) => new KeySet(d));
  const p = alones.map((a) => 2 * a);
  for (let part = 0; part < parts; part++)
    for (let s = 0; s <= top; s++) {
      const at = alone[part * (top + 1) + s]!;
      if (at !== 0) sets[part]!.writePostings([s], at - 1);
    }
  const list: number[] = [];
  let warmed = 0;
  for (let from = 0; from < n; from += WARM) {
    const to = Math.min(n, from + WARM);
    // The run's keys' bloom words and slots loaded first (misses in flight together), then each key inserted.
    for (let i = from; i < to; i++)
      if ((first[i >>> 5]! & (1 << (i & 31))) !== 0) warmed ^= sets[partOf(dv, i * width, bits)]!.warm(dv, i * width);
    for (let i = from; i < to; i++) {
      if ((first[i >>> 5]! & (1 << (i & 31))) === 0) continue;
      list.length = 0;
      for (let k = i + 1; k !== 0; k = next[k - 1]!) if (takes(streams[k - 1]!, wanted)) list.push(streams[k - 1]! & ~REMOVES);
      if (list.length === 0) continue;
      const part = partOf(dv, i * width, bits);
      const set = sets[part]!;
      if (sharing && list.length === 1) set.insertAt(dv, i * width, alone[part * (top + 1) + list[0]!]!);
      else {
        if (list.length > 1) list.sort((a, b) => a - b);
        p[part] = set.insert(dv, i * width, list, p[part]!);
      }
    }
  }
  sink ^= warmed;
  return data;
}

function sameWords(kw: Uint32Array, a: number, b: number, words: number): boolean {
  for (let w = 0; w < words; w++) if (kw[a + w] !== kw[b + w]) return false;
  return true;
}

/** A reader over addresses held in memory, by stream id (callers that have them as lists: a replay, a test). */
export const addressesIn =
  (byStream: ReadonlyMap<string, readonly string[]>): AddressReader =>
  (id, visit) => {
    for (const a of byStream.get(id) ?? []) visit(a);
  };

/** A reader over the store's `streamAddresses` rows (`stream/address`), a page of keys at a time. */
export function storedAddresses(keys: (opts: { start: string; end: string; limit: number }) => Iterable<string>): AddressReader {
  return (id, visit) => {
    const prefix = `${id}/`;
    const end = `${id}/\uffff`;
    for (let start = prefix, first = true; ; first = false) {
      let n = 0;
      let last = '';
      for (const key of keys({ start, end, limit: PAGE + 1 })) {
        n++;
        if (!first && key === start) continue;
        visit(key.slice(prefix.length));
        last = key;
      }
      if (n < PAGE + 1 || last === '') return;
      start = last;
    }
  };
}

/** Keys read per page of a stream's addresses. */
const PAGE = 10_000;
