/**
 * A set of fixed-width raw keys (20-byte addresses, 32-byte topics), each with
 * the list of streams watching it, probed straight from bytes (a probe column
 * read from LMDB) without making a string or a copy.
 *
 * Addresses and topics are hash outputs, so their own words index the filter
 * (no hash function call): every word mixed into two 32-bit lanes with a
 * multiply, so that vanity addresses sharing a prefix do not pile into one block
 * (lanes(): no seed, so that a probe column can carry them, written once per
 * block: writeKeyLanes), then the set's seed mixed into the lanes. A split-block bloom filter
 * (8 × 32-bit words per 32-byte block, one bit set per word; 16 bits per key)
 * answers most probes; only its positives look in the exact open-addressing table.
 */
import { sharedArray, sharedWords } from './shared-words.js';

const SALT = new Uint32Array([0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31]);

/** The second lane of the last lanes() call (a module field: the probe loops allocate nothing). */
let lane2 = 0;

/**
 * The two 32-bit lanes of the `words` words of a key at `at` (two multipliers, every word in both), the same
 * whatever the set: what a probe column carries per key (engine/evm/probe.ts), so that matching reads two words a
 * key instead of hashing it. Answers the first lane; the second is in lane2.
 */
function lanes(dv: DataView, at: number, words: number): number {
  // Every key has five words or more: those five written out, the rest (a 32-byte key's three) in the loop.
  const w0 = dv.getUint32(at, true);
  const w1 = dv.getUint32(at + 4, true);
  const w2 = dv.getUint32(at + 8, true);
  const w3 = dv.getUint32(at + 12, true);
  const w4 = dv.getUint32(at + 16, true);
  let a = Math.imul(0x9e3779b9 ^ w0, 0x85ebca6b);
  a ^= a >>> 15;
  let b = Math.imul(~0x9e3779b9 ^ w0, 0x27d4eb2f);
  b ^= b >>> 13;
  a = Math.imul(a ^ w1, 0x85ebca6b);
  a ^= a >>> 15;
  b = Math.imul(b ^ w1, 0x27d4eb2f);
  b ^= b >>> 13;
  a = Math.imul(a ^ w2, 0x85ebca6b);
  a ^= a >>> 15;
  b = Math.imul(b ^ w2, 0x27d4eb2f);
  b ^= b >>> 13;
  a = Math.imul(a ^ w3, 0x85ebca6b);
  a ^= a >>> 15;
  b = Math.imul(b ^ w3, 0x27d4eb2f);
  b ^= b >>> 13;
  a = Math.imul(a ^ w4, 0x85ebca6b);
  a ^= a >>> 15;
  b = Math.imul(b ^ w4, 0x27d4eb2f);
  b ^= b >>> 13;
  for (let w = 5; w < words; w++) {
    const word = dv.getUint32(at + w * 4, true);
    a = Math.imul(a ^ word, 0x85ebca6b);
    a ^= a >>> 15;
    b = Math.imul(b ^ word, 0x27d4eb2f);
    b ^= b >>> 13;
  }
  a = Math.imul(a ^ (a >>> 16), 0xc2b2ae35);
  b = Math.imul(b ^ (b >>> 16), 0x165667b1);
  lane2 = b ^ (b >>> 15);
  return a ^ (a >>> 13);
}

/** Writes the two lanes of the `width`-byte key at `at` in `dv` to `out` at `outAt` (8 bytes, little-endian). */
export function writeKeyLanes(dv: DataView, at: number, width: 20 | 32, out: DataView, outAt: number): void {
  out.setInt32(outAt, lanes(dv, at, width / 4), true);
  out.setInt32(outAt + 4, lane2, true);
}

/**
 * A set's first hash from a key's first lane: its seed mixed in, h1 picking the table slot (low bits) and the bloom
 * block. The multiply's high half folded onto its low half makes every bit depend on every bit of lane ^ seed, so
 * keys whose lanes collide in their low bits under one seed do not under another.
 */
function seeded(lane1: number, seed: number): number {
  const x = Math.imul(lane1 ^ seed, 0x85ebca6b);
  return x ^ (x >>> 16);
}

/**
 * Which of 2^bits parts of a set in parts holds the key at `at` (its second and fourth words mixed: addresses and
 * script hashes are uniform there, vanity prefixes aside).
 */
export function partOf(dv: DataView, at: number, bits: number): number {
  if (bits === 0) return 0;
  return Math.imul(dv.getUint32(at + 4, true) ^ Math.imul(dv.getUint32(at + 12, true), 0x85ebca6b), 0x9e3779b1) >>> (32 - bits);
}

/**
 * Probes of a column taken together (probeColumn): the misses of a chunk's blocks wait together, once a chunk; its
 * blocks (8 KiB) stay in the first-level cache. 128 measured best once blocks lay in one line each (key-sets.md).
 */
const CHUNK = 128;
const chunkH1 = new Int32Array(CHUNK);
const chunkH2 = new Int32Array(CHUNK);
const chunkBase = new Int32Array(CHUNK);
const chunkPassed = new Int32Array(CHUNK);
const chunkPart = new Int32Array(CHUNK);
/**
 * The parts of the column pass under way, as flat arrays: no object load per key (a plain set's pass 14.9 M → 18.8 M
 * probes/s at 100 M keys, docs/decisions/key-sets.md). partFrom: where a part's filter starts in the one array all
 * the parts' filters are views of (sharedBlooms), so that a key's block is one index into one array.
 */
const MAX_PARTS = 256;
const partSeed = new Int32Array(MAX_PARTS);
const partSeed2 = new Int32Array(MAX_PARTS);
const partMask = new Int32Array(MAX_PARTS);
const partFrom = new Int32Array(MAX_PARTS);
/** The whole buffer of a set in parts' filters, as words (made once a buffer). */
const wholeBuffers = new WeakMap<ArrayBufferLike, Uint32Array>();
/** The indices of the keys of the last column pass (asked for its misses) its bloom filter let through that no table holds, and how many. */
let bloomMisses = new Uint32Array(64);
let bloomMissCount = 0;
/** The column pass's answer: triples (key index in the column, find()'s answer, part), valid until the next call. */
let columnHits = new Uint32Array(768);
/** Where the touch pass's loads go, so that they are not optimized away. */
let touched = 0;

/** 1 when the block at `base` of `bloom` has every bit of h2 set, else 0: no branch per word (the column pass). */
function blockPasses(bloom: Uint32Array, base: number, h2: number): number {
  return (
    (bloom[base]! >>> (Math.imul(h2, 0x47b6137b) >>> 27)) &
    (bloom[base + 1]! >>> (Math.imul(h2, 0x44974d91) >>> 27)) &
    (bloom[base + 2]! >>> (Math.imul(h2, 0x8824ad5b) >>> 27)) &
    (bloom[base + 3]! >>> (Math.imul(h2, 0xa2b7289d) >>> 27)) &
    (bloom[base + 4]! >>> (Math.imul(h2, 0x705495c7) >>> 27)) &
    (bloom[base + 5]! >>> (Math.imul(h2, 0x2df1424b) >>> 27)) &
    (bloom[base + 6]! >>> (Math.imul(h2, 0x9efc4947) >>> 27)) &
    (bloom[base + 7]! >>> (Math.imul(h2, 0x5c6bfb31) >>> 27)) &
    1
  );
}

export interface KeySetInput {
  /** Key bytes, `width` each. */
  key: Uint8Array;
  /** Streams (their indices in the compiled filter set) watching the key. */
  streams: number[];
}

/**
 * The arrays of a key set, in shared memory: posted to the match workers as they
 * are (a SharedArrayBuffer is shared, not copied), so every worker probes the
 * same bytes the main thread built.
 */
export interface KeySetData {
  width: 20 | 32;
  seed: number;
  size: number;
  bloom: Uint32Array;
  slots: Uint32Array;
  /** Per slot: 0 when empty, else 1 + offset of its postings (count, then stream indices). */
  postingAt: Uint32Array;
  postings: Uint32Array;
}

/** Builds the bloom filter and the exact table of `entries` (distinct keys) in shared memory. */
export function buildKeySet(width: 20 | 32, entries: readonly KeySetInput[], seed = 0x9e3779b9): KeySetData {
  const postings = entries.reduce((a, e) => a + 1 + e.streams.length, 0);
  return fillKeySet(width, entries.length, postings, seed, (insert) => {
    for (const e of entries) {
      if (e.key.byteLength !== width) throw new RangeError(`a key is ${e.key.byteLength} bytes, not ${width}`);
      insert(new DataView(e.key.buffer, e.key.byteOffset, width), 0, e.streams);
    }
  });
}

/**
 * A key set of `size` distinct keys whose postings take `postings` words (a count and the streams of each key), sized
 * as buildKeySet sizes it and filled by `fill`, which inserts each key from bytes where it lies (no object per key:
 * what a set of tens of millions of keys needs).
 */
export function fillKeySet(
  width: 20 | 32,
  size: number,
  postings: number,
  seed: number,
  fill: (insert: (dv: DataView, at: number, streams: ArrayLike<number>) => void) => void,
): KeySetData {
  const data = allocKeySet(width, size, postings, seed);
  const set = new KeySet(data);
  let p = 0;
  let n = 0;
  fill((dv, at, streams) => {
    if (++n > size) throw new RangeError(`more than the ${size} keys announced`);
    p = set.insert(dv, at, streams, p);
  });
  if (n !== size) throw new RangeError(`${n} keys inserted, ${size} announced`);
  return data;
}

/** How a key set's arrays are made: its table's highest load, and in shared memory (posted to workers) or the thread's own (written to the store). */
export interface KeySetLayout {
  /** The most keys per table slot (the table a power of two): 0.5 unless told; a stored set takes 0.75. */
  load?: number;
  shared?: boolean;
}

/** The words of a bloom filter of `size` keys: 16 bits per key, in whole 256-bit blocks, a power of two. */
const bloomWords = (size: number): number => 8 * 2 ** Math.max(0, Math.ceil(Math.log2(Math.max(1, (size * 16) / 256))));

/** The empty arrays of a key set of `size` keys and `postings` words, in `layout`. */
export function allocKeySet(width: 20 | 32, size: number, postings: number, seed: number, layout: KeySetLayout = {}): KeySetData {
  const { load = 0.5, shared: inShared = true } = layout;
  const words = (length: number): Uint32Array => (inShared ? sharedArray(length) : new Uint32Array(Math.max(1, length)));
  const capacity = 2 ** Math.ceil(Math.log2(Math.max(2, Math.ceil(size / load))));
  return {
    width,
    seed: seed >>> 0,
    size,
    bloom: inShared ? sharedWords(bloomWords(size)) : words(bloomWords(size)),
    slots: words(capacity * (width / 4)),
    postingAt: words(capacity),
    postings: words(postings),
  };
}

export class KeySet {
  readonly size: number;
  readonly width: 20 | 32;
  private readonly seed: number;
  /** What the second lane is xored with: the bits of each word of a block move with the seed too. */
  private readonly seed2: number;
  private readonly words: number;
  private readonly bloom: Uint32Array;
  private readonly blockMask: number;
  private readonly slots: Uint32Array;
  private readonly postingAt: Uint32Array;
  /** Per key: its stream count, then its stream indices; find() gives where a key's streams start. */
  readonly postings: Uint32Array;
  private readonly slotMask: number;
  /** This set as the one part of a column pass. */
  private readonly alone: readonly KeySet[] = [this];
  // The last hash, in fields rather than a returned pair: the probe loop allocates nothing.
  private h1 = 0;
  private h2 = 0;

  constructor(data: KeySetData) {
    this.width = data.width;
    this.seed = data.seed;
    this.seed2 = Math.imul(data.seed ^ 0x5bd1e995, 0x9e3779b1);
    this.size = data.size;
    this.words = data.width / 4;
    this.bloom = data.bloom;
    this.blockMask = Math.max(1, data.bloom.length >>> 3) - 1;
    this.slots = data.slots;
    this.postingAt = data.postingAt;
    this.postings = data.postings;
    this.slotMask = data.postingAt.length - 1;
  }

  /** Adds the key at `at` in `dv` (while building): returns where the next postings go. */
  insert(dv: DataView, at: number, streams: ArrayLike<number>, p: number): number {
    this.place(dv, at, p + 1);
    return this.writePostings(streams, p);
  }

  /**
   * Adds the key at `at` in `dv` (while building) with postings already written at `posting` (1 + their offset, as
   * postingAt holds it): the keys of one stream alone share one posting (a stored set: 4 bytes a key fewer).
   */
  insertAt(dv: DataView, at: number, posting: number): void {
    this.place(dv, at, posting);
  }

  /** Writes the postings at `p` (a count and the streams) for insertAt: where the next postings go. */
  writePostings(streams: ArrayLike<number>, p: number): number {
    this.postings[p++] = streams.length;
    for (let i = 0; i < streams.length; i++) this.postings[p++] = streams[i]!;
    return p;
  }

  /**
   * Loads the bloom word and the table slot the key at `at` would go to, and nothing else (what it read: so that the
   * loads stay): a build warms a run of keys first, their cache misses overlapping, then inserts them.
   */
  warm(dv: DataView, at: number): number {
    this.hash(dv, at);
    return this.bloom[this.blockBase()]! ^ this.postingAt[this.h1 & this.slotMask]! ^ this.slots[(this.h1 & this.slotMask) * this.words]!;
  }

  private place(dv: DataView, at: number, posting: number): void {
    this.hash(dv, at);
    this.addToBloom();
    let slot = this.h1 & this.slotMask;
    while (this.postingAt[slot] !== 0 && !this.sameKey(slot, dv, at)) slot = (slot + 1) & this.slotMask;
    if (this.postingAt[slot] !== 0) throw new RangeError('a key is listed twice; merge its streams first');
    for (let w = 0; w < this.words; w++) this.slots[slot * this.words + w] = dv.getUint32(at + w * 4, true);
    this.postingAt[slot] = posting;
  }

  /** The streams watching the key at `at` in `dv`, as a view of the postings (empty when none). */
  lookup(dv: DataView, at: number): Uint32Array {
    const p = this.find(dv, at);
    return p === 0 ? EMPTY : this.postings.subarray(p, p + this.postings[p - 1]!);
  }

  /**
   * The single-key form of probeColumn(), allocating nothing: 0 when no stream watches the key at `at`,
   * else p, its streams being postings[p … p + postings[p - 1]). The bloom test exits at the first clear bit
   * (a key at a time has no other misses to overlap).
   */
  find(dv: DataView, at: number): number {
    const h1 = seeded(lanes(dv, at, this.words), this.seed);
    const h2 = lane2 ^ this.seed2;
    // inBloom(), the SALT words inline.
    const bloom = this.bloom;
    const base = ((Math.imul(h1, 0x9e3779b1) >>> 7) & this.blockMask) * 8;
    if ((bloom[base]! & (1 << (Math.imul(h2, 0x47b6137b) >>> 27))) === 0) return 0;
    if ((bloom[base + 1]! & (1 << (Math.imul(h2, 0x44974d91) >>> 27))) === 0) return 0;
    if ((bloom[base + 2]! & (1 << (Math.imul(h2, 0x8824ad5b) >>> 27))) === 0) return 0;
    if ((bloom[base + 3]! & (1 << (Math.imul(h2, 0xa2b7289d) >>> 27))) === 0) return 0;
    if ((bloom[base + 4]! & (1 << (Math.imul(h2, 0x705495c7) >>> 27))) === 0) return 0;
    if ((bloom[base + 5]! & (1 << (Math.imul(h2, 0x2df1424b) >>> 27))) === 0) return 0;
    if ((bloom[base + 6]! & (1 << (Math.imul(h2, 0x9efc4947) >>> 27))) === 0) return 0;
    if ((bloom[base + 7]! & (1 << (Math.imul(h2, 0x5c6bfb31) >>> 27))) === 0) return 0;
    return this.inTable(h1, dv, at);
  }

  /**
   * find() over the `count` keys of a probe column at keysAt, keysAt + width, …, in passes over chunks of CHUNK keys,
   * so that the bloom filter's cache misses (a set whose filter is far larger than the cache) overlap instead of
   * coming one a probe (KeySet.probeParts, this set its only part). Answers how many keys some stream watches;
   * columnHits holds them: (index, find()'s answer, 0) triples.
   */
  probeColumn(dv: DataView, keysAt: number, count: number, lanesAt: number, misses = false): number {
    return KeySet.probeParts(this.alone, 0, dv, keysAt, count, lanesAt, misses);
  }

  /**
   * The column pass over a set in 2^bits parts (one key set each, partOf(key, bits) holding a key): each key's part
   * and hashes (from the column's lanes at lanesAt, 8 bytes a key, or computed here when lanesAt is -1), then one word
   * of each key's block in its part's filter loaded and nothing else (the loads independent, so dozens in flight),
   * then the blocks tested without a branch per word (in cache now), then the part's exact table for what passes.
   * Answers how many keys some stream watches; columnHits holds them: (index, the part's find() answer, part)
   * triples, in column order. docs/decisions/key-sets.md has the measurements.
   */
  static probeParts(
    parts: readonly KeySet[],
    bits: number,
    dv: DataView,
    keysAt: number,
    count: number,
    lanesAt: number,
    misses = false,
  ): number {
    const { width, words } = parts[0]!;
    if (parts.length > MAX_PARTS) throw new RangeError(`${parts.length} parts: a column pass takes at most ${MAX_PARTS}`);
    const bloom = parts.length === 1 ? parts[0]!.bloom : KeySet.wholeOf(parts);
    for (let p = 0; p < parts.length; p++) {
      const set = parts[p]!;
      partSeed[p] = set.seed;
      partSeed2[p] = set.seed2;
      partMask[p] = set.blockMask;
      partFrom[p] = parts.length === 1 ? 0 : (set.bloom.byteOffset - bloom.byteOffset) >>> 2;
    }
    // The module's arrays in locals: what the loop writes is then known to be a Uint32Array.
    let out = columnHits;
    let missed = bloomMisses;
    let hits = 0;
    let m2 = 0;
    for (let from = 0; from < count; from += CHUNK) {
      const m = Math.min(CHUNK, count - from);
      for (let i = 0, at = keysAt + from * width, o = lanesAt + from * 8; i < m; i++, at += width, o += 8) {
        const part = bits === 0 ? 0 : partOf(dv, at, bits);
        let h1: number;
        if (lanesAt >= 0) {
          h1 = seeded(dv.getInt32(o, true), partSeed[part]!);
          chunkH2[i] = dv.getInt32(o + 4, true) ^ partSeed2[part]!;
        } else {
          h1 = seeded(lanes(dv, at, words), partSeed[part]!);
          chunkH2[i] = lane2 ^ partSeed2[part]!;
        }
        chunkH1[i] = h1;
        chunkPart[i] = part;
        chunkBase[i] = partFrom[part]! + ((Math.imul(h1, 0x9e3779b1) >>> 7) & partMask[part]!) * 8;
      }
      let x = 0;
      for (let i = 0; i < m; i++) x ^= bloom[chunkBase[i]!]!;
      touched ^= x;
      let n = 0;
      for (let i = 0; i < m; i++) {
        chunkPassed[n] = i;
        n += blockPasses(bloom, chunkBase[i]!, chunkH2[i]!);
      }
      for (let k = 0; k < n; k++) {
        const i = chunkPassed[k]!;
        const part = chunkPart[i]!;
        const p = parts[part]!.inTable(chunkH1[i]!, dv, keysAt + (from + i) * width);
        if (p === 0) {
          if (!misses) continue;
          if (m2 === missed.length) {
            const grown = new Uint32Array(missed.length * 2);
            grown.set(missed);
            bloomMisses = missed = grown;
          }
          missed[m2++] = from + i;
          continue;
        }
        if (3 * hits + 3 > out.length) {
          const grown = new Uint32Array(out.length * 2);
          grown.set(out);
          columnHits = out = grown;
        }
        out[3 * hits] = from + i;
        out[3 * hits + 1] = p;
        out[3 * hits + 2] = part;
        hits++;
      }
    }
    bloomMissCount = m2;
    return hits;
  }

  /**
   * The one array the filters of a set in parts are views of (sharedBlooms put them in one buffer): the column pass
   * indexes it with each part's offset instead of loading each key's part's array.
   */
  private static wholeOf(parts: readonly KeySet[]): Uint32Array {
    const { buffer } = parts[0]!.bloom;
    for (const p of parts)
      if (p.bloom.buffer !== buffer) throw new TypeError("a set in parts needs its parts' filters in one buffer (sharedBlooms)");
    let whole = wholeBuffers.get(buffer);
    if (whole === undefined) wholeBuffers.set(buffer, (whole = new Uint32Array(buffer, 0, buffer.byteLength >>> 2)));
    return whole;
  }

  /**
   * Sets the bloom bits of every key of `sets` in the filter of `parts` (each key in its part's: partOf), so that a
   * column pass lets them through (a layered set's change layers: their keys then cost nothing on the keys no layer
   * holds). Atomics.or: other threads set bits in the same shared words. The filter must be this process's memory
   * (shared or not), never a view of the store's map: openBase copies a stored one into shared memory, which workers
   * are posted. Bits only ever added: a key a layer no longer holds stays a false positive until the base is replaced.
   */
  static admit(parts: readonly KeySet[], bits: number, sets: readonly KeySet[]): void {
    for (const s of sets) {
      const dv = new DataView(s.slots.buffer, s.slots.byteOffset, s.slots.byteLength);
      // A run of keys' blocks found and loaded first (their misses overlap: the base's filter is large), then set.
      let m = 0;
      const run = (): void => {
        let x = 0;
        for (let i = 0; i < m; i++) x ^= parts[chunkPart[i]!]!.bloom[chunkBase[i]!]!;
        touched ^= x;
        for (let i = 0; i < m; i++) {
          const bloom = parts[chunkPart[i]!]!.bloom;
          const base = chunkBase[i]!;
          const h2 = chunkH2[i]!;
          // Read first: once a thread has set a key's bits, another only reads them.
          for (let w = 0; w < 8; w++) {
            const bit = 1 << (Math.imul(h2, SALT[w]!) >>> 27);
            if ((bloom[base + w]! & bit) === 0) Atomics.or(bloom, base + w, bit);
          }
        }
        m = 0;
      };
      for (let slot = 0; slot < s.postingAt.length; slot++) {
        if (s.postingAt[slot] === 0) continue;
        const part = partOf(dv, slot * s.width, bits);
        const set = parts[part]!;
        const h1 = seeded(lanes(dv, slot * s.width, s.words), set.seed);
        chunkPart[m] = part;
        chunkH2[m] = lane2 ^ set.seed2;
        chunkBase[m] = ((Math.imul(h1, 0x9e3779b1) >>> 7) & set.blockMask) * 8;
        if (++m === CHUNK) run();
      }
      run();
    }
  }

  /** The keys of the last column pass asked for `misses` that passed the bloom filter but are in no table: how many, and their indices (in column order). */
  static get bloomMisses(): { count: number; indices: Uint32Array } {
    return { count: bloomMissCount, indices: bloomMisses };
  }

  /** find() for a key whose two lanes are known (a column's): no hashing. */
  findLanes(dv: DataView, at: number, lane1: number, l2: number): number {
    const h1 = seeded(lane1, this.seed);
    if (blockPasses(this.bloom, ((Math.imul(h1, 0x9e3779b1) >>> 7) & this.blockMask) * 8, l2 ^ this.seed2) === 0) return 0;
    return this.inTable(h1, dv, at);
  }

  /** The column pass's hits: (index of the key in the column, find()'s answer, part) triples, valid until its next call. */
  get columnHits(): Uint32Array {
    return columnHits;
  }

  /** KeySet.admit into this set's filter. */
  admit(sets: readonly KeySet[]): void {
    KeySet.admit(this.alone, 0, sets);
  }

  /** The array a column hit's answer points into: this set's postings (a set in parts: its part's). */
  postingsOf(_part: number): Uint32Array {
    return this.postings;
  }

  /** Whether the bloom filter lets the key through (for measuring its false positives). */
  mayContain(dv: DataView, at: number): boolean {
    this.hash(dv, at);
    return this.inBloom();
  }

  /** Bytes held by the bloom filter and the table. */
  get bytes(): number {
    return this.bloom.byteLength + this.slots.byteLength + this.postingAt.byteLength + this.postings.byteLength;
  }

  /** The exact table from h1: linear probing, the key's first five words compared from locals, the rest by sameKey. */
  private inTable(h1: number, dv: DataView, at: number): number {
    const slots = this.slots;
    const postingAt = this.postingAt;
    const words = this.words;
    const mask = this.slotMask;
    const w0 = dv.getUint32(at, true);
    const w1 = dv.getUint32(at + 4, true);
    const w2 = dv.getUint32(at + 8, true);
    const w3 = dv.getUint32(at + 12, true);
    const w4 = dv.getUint32(at + 16, true);
    for (let slot = h1 & mask; ; slot = (slot + 1) & mask) {
      const posting = postingAt[slot]!;
      if (posting === 0) return 0;
      const k = slot * words;
      if (
        slots[k] === w0 &&
        slots[k + 1] === w1 &&
        slots[k + 2] === w2 &&
        slots[k + 3] === w3 &&
        slots[k + 4] === w4 &&
        (words === 5 || this.sameKey(slot, dv, at))
      )
        return posting;
    }
  }

  private sameKey(slot: number, dv: DataView, at: number): boolean {
    const base = slot * this.words;
    for (let w = 0; w < this.words; w++) if (this.slots[base + w] !== dv.getUint32(at + w * 4, true)) return false;
    return true;
  }

  // The key's lanes with the set's seed: h1 picks the table slot (low bits) and the bloom block (high bits of a
  // remix), h2 the bit in each word of the block.
  private hash(dv: DataView, at: number): void {
    this.h1 = seeded(lanes(dv, at, this.words), this.seed);
    this.h2 = lane2 ^ this.seed2;
  }

  private blockBase(): number {
    return ((Math.imul(this.h1, 0x9e3779b1) >>> 7) & this.blockMask) * 8;
  }

  private addToBloom(): void {
    const base = this.blockBase();
    for (let i = 0; i < 8; i++) this.bloom[base + i]! |= 1 << (Math.imul(this.h2, SALT[i]!) >>> 27);
  }

  private inBloom(): boolean {
    const base = this.blockBase();
    const h2 = this.h2;
    for (let i = 0; i < 8; i++) if ((this.bloom[base + i]! & (1 << (Math.imul(h2, SALT[i]!) >>> 27))) === 0) return false;
    return true;
  }
}

const EMPTY = new Uint32Array(0);
