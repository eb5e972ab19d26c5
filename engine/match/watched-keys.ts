import { fillKeySet, type KeySetData } from './key-set.js';

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

  /** Where the next key goes (its bytes to be written there by the caller), with its stream. */
  next(stream: number): number {
    if (this.count === this.streams.length) this.grow();
    this.streams[this.count] = stream;
    return this.count++ * this.width;
  }

  /** Keys of `width` bytes end to end (a derived run), each for `stream`. */
  addRun(run: Uint8Array, stream: number): void {
    if (run.length % this.width !== 0) throw new RangeError(`a run of ${run.length} bytes is no whole number of ${this.width}-byte keys`);
    for (let at = 0; at < run.length; at += this.width) this.keys.set(run.subarray(at, at + this.width), this.next(stream));
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
export interface AddressEntry {
  index: number;
  id: string;
  derived: Uint8Array;
}

/** The key set of the entries' stored addresses (read by `read`) and derived keys, each key with every stream watching it. */
export function addressKeySet(key: AddressKey, entries: readonly AddressEntry[], read: AddressReader, seed: number): KeySetData {
  const pairs = new KeyPairs(key.width);
  for (const e of entries) {
    read(e.id, (address) => {
      const at = pairs.next(e.index);
      key.write(address, pairs.keys, at);
    });
    if (e.derived.length > 0) pairs.addRun(e.derived, e.index);
  }
  return keySetOfPairs(pairs, seed);
}

/**
 * The key set of the pairs: a key listed by several streams gets them all (sorted), a stream listing a key twice
 * counts once. Distinct keys are found through an open-addressing table of pair numbers (head of each key's chain of
 * pairs) over the flat key array, compared word by word.
 */
export function keySetOfPairs(pairs: KeyPairs, seed: number): KeySetData {
  const { width, count: n, streams } = pairs;
  const words = width / 4;
  // The keys' words as stored (the machine's byte order): equal bytes, equal words.
  const kw = new Uint32Array(pairs.keys.buffer, 0, n * words);
  const capacity = 2 ** Math.ceil(Math.log2(Math.max(2, n * 2)));
  const mask = capacity - 1;
  /** Per table slot: 0, or 1 + the first pair of a distinct key. */
  const head = new Uint32Array(capacity);
  /** Per pair: 1 + the next pair of the same key and another stream, or 0. */
  const next = new Uint32Array(n);
  let distinct = 0;
  let postings = 0;
  for (let i = 0; i < n; i++) {
    const at = i * words;
    let h = 0x9e3779b9;
    for (let w = 0; w < words; w++) h = Math.imul(h ^ kw[at + w]!, 0x85ebca6b) ^ (h >>> 15);
    h = Math.imul(h ^ (h >>> 16), 0xc2b2ae35);
    let slot = (h ^ (h >>> 13)) & mask;
    for (;;) {
      const j = head[slot]!;
      if (j === 0) {
        head[slot] = i + 1;
        distinct++;
        postings += 2;
        break;
      }
      if (sameWords(kw, (j - 1) * words, at, words)) {
        let k = j;
        let listed = false;
        for (; ; k = next[k - 1]!) {
          if (streams[k - 1] === streams[i]) listed = true;
          if (listed || next[k - 1] === 0) break;
        }
        if (!listed) {
          next[i] = next[j - 1]!;
          next[j - 1] = i + 1;
          postings++;
        }
        break;
      }
      slot = (slot + 1) & mask;
    }
  }
  const list: number[] = [];
  return fillKeySet(width, distinct, postings, seed, (insert) => {
    const dv = new DataView(pairs.keys.buffer);
    for (let slot = 0; slot < capacity; slot++) {
      const j = head[slot]!;
      if (j === 0) continue;
      list.length = 0;
      for (let k = j; k !== 0; k = next[k - 1]!) list.push(streams[k - 1]!);
      if (list.length > 1) list.sort((a, b) => a - b);
      insert(dv, (j - 1) * width, list);
    }
  });
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
