/**
 * The key encoding of the Data API's index tables (HEX_KEYED_TABLES): keys stay `/`-separated strings for
 * the engine, and each hex segment is stored as its bytes, about half its text. Those tables hold hundreds
 * of millions of keys made mostly of addresses, hashes and padded numbers (storage/README.md, "Key
 * encoding"), so their keys were half of what the indexes took on disk.
 *
 * A segment is, in the stored key:
 * - `0x` and an even number (8 or more) of lower-case hex digits: byte 1, its byte count, its bytes;
 * - an even number (6 or more) of lower-case hex digits alone (a padded block number, log index, token id):
 *   byte 2, its byte count, its bytes;
 * - anything else: its UTF-8 (the `/` between segments too).
 * Segments of one kind and length sort as their text does, and a prefix ending in `/` stays a prefix, which is
 * all the index reads need: their keys hold fixed-width hex at each place, and their ranges end at a segment
 * boundary or with `\uffff` (above every byte a segment can start with) or `\u0000` (below).
 * A key written before this encoding (plain UTF-8, storage schema 4 and older) reads back as the same string.
 */

const EVEN_0X = 1;
const BARE = 2;
const SLASH = 47;
/** Shorter hex is not worth its two header bytes. */
const MIN_0X = 10;
const MIN_BARE = 6;

/** 0–15 for a lower-case hex digit's char code, −1 otherwise. */
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;
const nibble = (c: number): number => (c < 128 ? NIBBLE[c]! : -1);

function allHex(key: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (nibble(key.charCodeAt(i)) < 0) return false;
  return true;
}

/** The tag a segment [from, to) is stored with, or 0 for text. */
function tagOf(key: string, from: number, to: number): number {
  const n = to - from;
  if (n % 2 === 1) return 0;
  if (n >= MIN_0X && key.charCodeAt(from) === 48 && key.charCodeAt(from + 1) === 120) return allHex(key, from + 2, to) ? EVEN_0X : 0;
  return n >= MIN_BARE && allHex(key, from, to) ? BARE : 0;
}

/** lmdb-js keyEncoder.writeKey: the key's bytes into `target` from `start`; returns where they end. */
export function writeHexKey(key: string | Uint8Array, target: Uint8Array, start: number): number {
  if (typeof key !== 'string') {
    target.set(key, start);
    return start + key.length;
  }
  let at = start;
  let from = 0;
  for (;;) {
    let to = key.indexOf('/', from);
    if (to < 0) to = key.length;
    const tag = tagOf(key, from, to);
    if (tag !== 0) {
      const hexFrom = tag === EVEN_0X ? from + 2 : from;
      target[at++] = tag;
      target[at++] = (to - hexFrom) >> 1;
      for (let i = hexFrom; i < to; i += 2) target[at++] = (NIBBLE[key.charCodeAt(i)]! << 4) | NIBBLE[key.charCodeAt(i + 1)]!;
    } else {
      for (let i = from; i < to; i++) {
        const c = key.charCodeAt(i);
        // The tags: a text key never holds them (keys are printable), so a stored key reads back one way.
        if (c === EVEN_0X || c === BARE)
          throw new RangeError(`a key of a hex-keyed table holds the control character ${c}: ${JSON.stringify(key)}`);
        if (c < 0x80) target[at++] = c;
        else {
          at += Buffer.from(target.buffer, target.byteOffset, target.byteLength).write(key.slice(i, to), at, 'utf8');
          break;
        }
      }
    }
    if (to === key.length) return at;
    target[at++] = SLASH;
    from = to + 1;
  }
}

/**
 * Buffer's own slices, called on lmdb-js's key buffer where it lies: one native call makes a segment's flat string
 * (a key read char by char is a rope of many pieces, flattened again by each comparison and slice of it). They are
 * Node's own, not documented API (what toString('hex' | 'utf8') calls; storage/codec.ts uses hexSlice too): a Node
 * upgrade past the pinned 20 checks they are still there.
 */
const slices = Buffer.prototype as unknown as Record<'hexSlice' | 'utf8Slice', (this: Uint8Array, start: number, end: number) => string>;
const hexOf = (source: Uint8Array, from: number, to: number): string => slices.hexSlice.call(source, from, to);
/** Text bytes [from, to) of `source` (the `/` between segments, short words): UTF-8. */
const text = (source: Uint8Array, from: number, to: number): string => slices.utf8Slice.call(source, from, to);

/** lmdb-js keyEncoder.readKey: the string key of the bytes [start, end) of `source`. */
export function readHexKey(source: Uint8Array, start: number, end: number): string {
  let out = '';
  let from = start;
  let i = start;
  while (i < end) {
    const b = source[i]!;
    if (b !== EVEN_0X && b !== BARE) {
      i++;
      continue;
    }
    if (i > from) out += text(source, from, i);
    const n = source[i + 1]!;
    out += b === EVEN_0X ? `0x${hexOf(source, i + 2, i + 2 + n)}` : hexOf(source, i + 2, i + 2 + n);
    i += 2 + n;
    from = i;
  }
  return end > from ? out + text(source, from, end) : out;
}

/** The encoder lmdb-js takes as `keyEncoder`. */
export const hexKeys = { writeKey: writeHexKey, readKey: readHexKey };

/** A key's stored bytes (tests, migrations). */
export function hexKeyBytes(key: string): Buffer {
  const b = Buffer.allocUnsafe(key.length * 3 + 4);
  return b.subarray(0, writeHexKey(key, b, 0));
}
