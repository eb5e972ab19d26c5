import { KeySet, allocKeySet, partOf, type KeySetData, type KeySetLayout } from './key-set.js';

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
  const pairs = addressPairs(key, entries, read);
  const bits = Math.max(0, Math.ceil(Math.log2(pairs.count / partKeys)));
  const index = indexPairs(pairs, false);
  const dv = new DataView(pairs.keys.buffer);
  // Each distinct key's part, once (a read of the key each: not again for every part).
  const partAt = new Uint8Array(index.head.length);
  for (let slot = 0; slot < partAt.length; slot++) {
    const j = index.head[slot]!;
    if (j !== 0) partAt[slot] = partOf(dv, (j - 1) * pairs.width, bits);
  }
  return Array.from({ length: 2 ** bits }, (_, part) =>
    fillPairs(
      pairs,
      index,
      seed,
      { load: 0.75, shared: false },
      () => true,
      (slot) => partAt[slot] === part,
    ),
  );
}

/** Keys per part of a stored base, at most (the table of 2^24 slots of 20 bytes: 320 MiB). */
const PART_KEYS = 12_000_000;

function addressPairs(key: AddressKey, entries: readonly AddressEntry[], read: AddressReader): KeyPairs {
  const pairs = new KeyPairs(key.width);
  for (const e of entries) {
    read(e.id, (address) => {
      const at = pairs.next(e.index);
      key.write(address, pairs.keys, at);
    });
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
  return fillPairs(pairs, indexPairs(pairs, false), seed, layout, () => true);
}

/**
 * A change layer's two key sets from pairs in the order of the changes (a stream word with REMOVES for a removal):
 * per key and stream the last change counts, an add in `adds`, a removal in `removes`.
 */
export function changeSetsOfPairs(pairs: KeyPairs, seed: number): { adds: KeySetData; removes: KeySetData } {
  const index = indexPairs(pairs, true);
  return {
    adds: fillPairs(pairs, index, seed, {}, (w) => (w & REMOVES) === 0),
    removes: fillPairs(pairs, index, seed, {}, (w) => (w & REMOVES) !== 0),
  };
}

/** Distinct keys of the pairs: per table slot, 0 or 1 + the first pair of a key; per pair, 1 + the next pair of the same key and another stream, or 0. */
interface PairIndex {
  head: Uint32Array;
  next: Uint32Array;
}

/**
 * Finds the distinct keys through an open-addressing table of pair numbers over the flat key array, compared word by
 * word. A (key, stream) listed again is dropped, or with `last` takes the later pair's word (its change).
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
      slot = (slot + 1) & mask;
    }
  }
  return { head, next };
}

/** The key set of the indexed keys (those whose index slots `inPart` takes) with the streams `wanted` (their words' low bits), keys with none left out. */
function fillPairs(
  pairs: KeyPairs,
  { head, next }: PairIndex,
  seed: number,
  layout: KeySetLayout = {},
  wanted: (word: number) => boolean,
  inPart: (slot: number) => boolean = () => true,
): KeySetData {
  const { width, streams } = pairs;
  const sharing = (layout.load ?? 0.5) > 0.5;
  // Sizes first: keys, postings (a stream alone on its keys: one posting shared by them when sharing).
  let size = 0;
  let postings = 0;
  /** Per stream alone on some keys (sharing): the offset of its one posting, at the postings' start. */
  const alone = new Map<number, number>();
  for (let slot = 0; slot < head.length; slot++) {
    let count = 0;
    let first = 0;
    if (head[slot] === 0 || !inPart(slot)) continue;
    for (let k = head[slot]!; k !== 0; k = next[k - 1]!)
      if (wanted(streams[k - 1]!)) {
        if (count++ === 0) first = streams[k - 1]! & ~REMOVES;
      }
    if (count === 0) continue;
    size++;
    if (sharing && count === 1) {
      if (!alone.has(first)) alone.set(first, alone.size * 2);
    } else postings += 1 + count;
  }
  const data = allocKeySet(width, size, alone.size * 2 + postings, seed, layout);
  const set = new KeySet(data);
  for (const [stream, at] of alone) set.writePostings([stream], at);
  let p = alone.size * 2;
  const list: number[] = [];
  const dv = new DataView(pairs.keys.buffer);
  for (let slot = 0; slot < head.length; slot++) {
    const j = head[slot]!;
    if (j === 0 || !inPart(slot)) continue;
    list.length = 0;
    for (let k = j; k !== 0; k = next[k - 1]!) if (wanted(streams[k - 1]!)) list.push(streams[k - 1]! & ~REMOVES);
    if (list.length === 0) continue;
    if (sharing && list.length === 1) set.insertAt(dv, (j - 1) * width, alone.get(list[0]!)! + 1);
    else {
      if (list.length > 1) list.sort((a, b) => a - b);
      p = set.insert(dv, (j - 1) * width, list, p);
    }
  }
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
