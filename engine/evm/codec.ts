import { Decoder, ExtensionCodec } from '@msgpack/msgpack';

/**
 * Compact storage of JSON-RPC values (blocks, receipts, logs, traces) that
 * comes back exactly: even-length hex strings ("0x" data and most quantities)
 * are stored as their bytes; odd-length quantities as integers when exact, else
 * as their nibbles; known field names as one-byte numbers. Decoding writes the
 * very same strings back (node output is lower-case hex), so a round trip is
 * exact; anything else is kept as it is.
 */
const KEYS = [
  'hash',
  'parentHash',
  'number',
  'timestamp',
  'miner',
  'gasUsed',
  'gasLimit',
  'baseFeePerGas',
  'difficulty',
  'totalDifficulty',
  'extraData',
  'logsBloom',
  'mixHash',
  'nonce',
  'receiptsRoot',
  'sha3Uncles',
  'size',
  'stateRoot',
  'transactionsRoot',
  'uncles',
  'withdrawals',
  'withdrawalsRoot',
  'blobGasUsed',
  'excessBlobGas',
  'parentBeaconBlockRoot',
  'requestsHash',
  'from',
  'to',
  'gas',
  'gasPrice',
  'maxFeePerGas',
  'maxPriorityFeePerGas',
  'input',
  'value',
  'type',
  'v',
  'r',
  's',
  'yParity',
  'chainId',
  'accessList',
  'address',
  'storageKeys',
  'contractAddress',
  'cumulativeGasUsed',
  'effectiveGasPrice',
  'status',
  'root',
  'logs',
  'topics',
  'data',
  'removed',
  'calls',
  'output',
  'error',
  'revertReason',
  'index',
  'validatorIndex',
  'amount',
  'blobVersionedHashes',
  'maxFeePerBlobGas',
  'blobGasPrice',
  'authorizationList',
  'receipt',
  'traceAddress',
  'txIndex',
  'transactions',
  'internal',
] as const;

// A prototype-free object: a key lookup per field is the hot path.
const KEY_INDEX: Record<string, number | undefined> = Object.assign(
  Object.create(null) as object,
  Object.fromEntries(KEYS.map((k, i) => [k, i])),
);
/**
 * The bytes as hex digits, read in place by Buffer's own hexSlice (what toString('hex') calls) rather than copied
 * into a new Buffer first: most of a record's decode, and of a stored value's read (storage/codec.ts), is these strings.
 */
const hexSlice = (Buffer.prototype as unknown as { hexSlice?: (this: Uint8Array, start: number, end: number) => string }).hexSlice;
export const hexOf: (data: Uint8Array) => string =
  hexSlice !== undefined
    ? (data) => hexSlice.call(data, 0, data.length)
    : (data) => Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('hex');

const EXT_ODD_HEX = 1;
const EXT_NUMBER = 2;

const extensions = new ExtensionCodec();
// An odd-length quantity too large for a double: its nibbles, with the leading zero nibble implied.
// (The encoder below writes these itself; the codec only decodes.)
extensions.register({
  type: EXT_ODD_HEX,
  encode: () => null,
  decode: (data: Uint8Array) => new OddHex(`0x${hexOf(data).slice(1)}`),
});
// A JSON number that really is a number (a plain integer on the wire means a hex quantity).
extensions.register({
  type: EXT_NUMBER,
  encode: () => null,
  decode: (data: Uint8Array) => new JsonNumber(Buffer.from(data).readDoubleBE(0)),
});

class OddHex {
  constructor(readonly text: string) {}
}
class JsonNumber {
  constructor(readonly value: number) {}
}

// On the wire an object is an array: a marker, then key, value, key, value…; a plain
// array that happens to start with a marker is escaped by another marker.
const OBJ = '\u0000o';
const ARR = '\u0000a';

/**
 * The encoder writes msgpack itself, in one pass over the node's values: a block
 * has some 8,000 strings, and the cost is per string, so each is looked at once
 * (a hex write decodes and stops at the first non-hex character; toLowerCase returns
 * the same string when nothing changes, so a round trip stays exact).
 */
let buf = Buffer.allocUnsafe(1 << 20);
let at = 0;

function ensure(n: number): void {
  if (at + n <= buf.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, at + n));
  buf.copy(bigger, 0, 0, at);
  buf = bigger;
}

/** Header of a msgpack value of `len` bytes in one of three size classes (str, bin, ext), written at `o`. */
function sizedHeader(o: number, len: number, c8: number, c16: number, c32: number): number {
  if (len < 0x100) {
    buf[o] = c8;
    buf[o + 1] = len;
    return 2;
  }
  if (len < 0x10000) {
    buf[o] = c16;
    buf.writeUInt16BE(len, o + 1);
    return 3;
  }
  buf[o] = c32;
  buf.writeUInt32BE(len, o + 1);
  return 5;
}
const headerSize = (len: number): number => (len < 0x100 ? 2 : len < 0x10000 ? 3 : 5);

function writeArrayHeader(n: number): void {
  if (n < 16) buf[at++] = 0x90 | n;
  else if (n < 0x10000) {
    buf[at] = 0xdc;
    buf.writeUInt16BE(n, at + 1);
    at += 3;
  } else {
    buf[at] = 0xdd;
    buf.writeUInt32BE(n, at + 1);
    at += 5;
  }
}

function writeUint(n: number): void {
  if (n < 0x80) buf[at++] = n;
  else if (n < 0x100) {
    buf[at++] = 0xcc;
    buf[at++] = n;
  } else if (n < 0x10000) {
    buf[at] = 0xcd;
    buf.writeUInt16BE(n, at + 1);
    at += 3;
  } else if (n < 0x100000000) {
    buf[at] = 0xce;
    buf.writeUInt32BE(n, at + 1);
    at += 5;
  } else {
    buf[at] = 0xcf;
    buf.writeUInt32BE(Math.floor(n / 0x100000000), at + 1);
    buf.writeUInt32BE(n >>> 0, at + 5);
    at += 9;
  }
}

function writeStr(s: string): void {
  ensure(s.length * 3 + 5);
  // A short ASCII string (a call type, a field name): written here, without two calls into Buffer.
  if (s.length < 32 && writeShortAscii(s)) return;
  const len = Buffer.byteLength(s);
  if (len < 32) buf[at++] = 0xa0 | len;
  else at += sizedHeader(at, len, 0xd9, 0xda, 0xdb);
  at += buf.write(s, at, len, 'utf8');
}

function writeShortAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return false;
    buf[at + 1 + i] = c;
  }
  buf[at] = 0xa0 | s.length;
  at += 1 + s.length;
  return true;
}

/** Hex digits of a non-negative safe integer. */
const hexDigits = (n: number): number =>
  n < 0x100000000 ? (35 - Math.clz32(n)) >> 2 : 8 + ((35 - Math.clz32(Math.floor(n / 0x100000000))) >> 2);
const FIXEXT: Record<number, number> = { 1: 0xd4, 2: 0xd5, 4: 0xd6, 8: 0xd7, 16: 0xd8 };

/** Lower-case hex digit values by character code; 255 for any other character (upper case included). */
const NIBBLE = new Uint8Array(0x10000).fill(255);
for (let c = 0; c < 16; c++) NIBBLE['0123456789abcdef'.charCodeAt(c)] = c;
/**
 * Up to this many bytes are hex-decoded here, a character pair at a time: for hashes, addresses and
 * quantities a slice and a call into Buffer.write cost more than the decode. Longer data goes to Buffer.write.
 */
const SHORT_HEX = 64;

/** `v`'s hex digits from 2 to its end as bytes at `o`; false at a character that is not lower-case hex. */
function decodeShortHex(v: string, o: number): boolean {
  for (let i = 2; i < v.length; i += 2) {
    const hi = NIBBLE[v.charCodeAt(i)]!;
    const lo = NIBBLE[v.charCodeAt(i + 1)]!;
    if ((hi | lo) > 15) return false;
    buf[o++] = (hi << 4) | lo;
  }
  return true;
}

/** An odd-length quantity of up to 13 digits (52 bits, exact in a double) as its value; -1 when it is not lower-case hex. */
function shortQuantity(v: string): number {
  let num = 0;
  for (let i = 2; i < v.length; i++) {
    const d = NIBBLE[v.charCodeAt(i)]!;
    if (d > 15) return -1;
    num = num * 16 + d;
  }
  return num;
}

/** "0x…" lower-case hex, written as bytes or an integer; false when it is not that. */
function writeHex(v: string): boolean {
  const n = v.length;
  if ((n & 1) === 0) {
    // Even length: the bytes.
    const len = (n - 2) >> 1;
    ensure(len + 5);
    const hs = headerSize(len);
    if (
      len > 0 &&
      (len <= SHORT_HEX ? !decodeShortHex(v, at + hs) : buf.write(v.slice(2), at + hs, len, 'hex') !== len || v.toLowerCase() !== v)
    )
      return false;
    at += sizedHeader(at, len, 0xc4, 0xc5, 0xc6) + len;
    return true;
  }
  // Odd length: a quantity without leading zero ("0x0" stays a string), as an integer when a double holds it exactly.
  if (v.charCodeAt(2) === 48) return false;
  ensure(16);
  if (n <= 15) {
    const num = shortQuantity(v);
    if (num < 0) return false;
    writeUint(num);
    return true;
  }
  if (v.toLowerCase() !== v) return false;
  const num = parseInt(v, 16);
  if (Number.isSafeInteger(num)) {
    if (hexDigits(num) !== n - 2) return false;
    writeUint(num);
    return true;
  }
  // Too large: its nibbles, with a leading zero nibble.
  const len = (n - 1) >> 1;
  ensure(len + 6);
  const hs = FIXEXT[len] !== undefined ? 1 : headerSize(len);
  if (buf.write(`0${v.slice(2)}`, at + hs + 1, len, 'hex') !== len) return false;
  if (hs === 1) buf[at] = FIXEXT[len]!;
  else sizedHeader(at, len, 0xc7, 0xc8, 0xc9);
  buf[at + hs] = EXT_ODD_HEX;
  at += hs + 1 + len;
  return true;
}

function writeValue(v: unknown): void {
  if (typeof v === 'string') {
    if (!(v.length >= 2 && v.charCodeAt(0) === 48 && v.charCodeAt(1) === 120 && writeHex(v))) writeStr(v);
    return;
  }
  ensure(16);
  if (v === null || v === undefined) buf[at++] = 0xc0;
  else if (typeof v === 'boolean') buf[at++] = v ? 0xc3 : 0xc2;
  else if (typeof v === 'number') {
    // A JSON number that really is a number (a plain integer on the wire means a hex quantity).
    buf[at] = 0xd7;
    buf[at + 1] = EXT_NUMBER;
    buf.writeDoubleBE(v, at + 2);
    at += 10;
  } else if (Array.isArray(v)) {
    const escape = v[0] === OBJ || v[0] === ARR;
    writeArrayHeader(v.length + (escape ? 1 : 0));
    if (escape) writeStr(ARR);
    for (let i = 0; i < v.length; i++) writeValue(v[i]);
  } else if (typeof v === 'object') writeObject(v as Record<string, unknown>);
  else throw new TypeError(`cannot store a ${typeof v}`);
}

/** A field name: one byte when it is a known one. */
function writeKey(k: string): void {
  const index = KEY_INDEX[k];
  if (index === undefined) writeStr(k);
  else {
    ensure(1);
    buf[at++] = index;
  }
}

/** An object as the wire has it, without the fields in `drop` (encoding a part of a node's answer as stored, with no copy made first). */
function writeObject(o: Record<string, unknown>, drop?: ReadonlySet<string>): void {
  const keys = Object.keys(o);
  ensure(5);
  let kept = keys.length;
  if (drop !== undefined) for (let i = 0; i < keys.length; i++) if (drop.has(keys[i]!)) kept--;
  writeArrayHeader(1 + 2 * kept);
  writeStr(OBJ);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    if (drop?.has(k) === true) continue;
    writeKey(k);
    writeValue(o[k]);
  }
}

/** Writes msgpack for the values `write` gives, in order, to one buffer; returns a copy of the bytes (the buffer is reused). */
export interface WireWriter {
  value(v: unknown): void;
  /** An object (`drop`: fields left out), written as writeValue writes it. */
  object(o: Record<string, unknown>, drop?: ReadonlySet<string>): void;
  /** The header of an object of `fields` fields, each written next by key() then a value. */
  objectHeader(fields: number): void;
  key(k: string): void;
  arrayHeader(n: number): void;
}

const writer: WireWriter = {
  value: writeValue,
  object: writeObject,
  objectHeader(fields) {
    ensure(5);
    writeArrayHeader(1 + 2 * fields);
    writeStr(OBJ);
  },
  key: writeKey,
  arrayHeader(n) {
    ensure(5);
    writeArrayHeader(n);
  },
};

export function encodeWire(write: (w: WireWriter) => void): Uint8Array {
  at = 0;
  write(writer);
  return Uint8Array.prototype.slice.call(buf, 0, at);
}

/** Values → msgpack bytes (a copy: the encoder's buffer is reused). */
export const encodeRpc = (value: unknown): Uint8Array => encodeWire((w) => w.value(value));

// One decoder for every read: msgpack's decode() builds a new Decoder per call, and RecordView decodes many small items.
const decoder = new Decoder({ extensionCodec: extensions });

/** msgpack bytes → the values, with every hex string as it was. */
export function decodeRpc<T>(bytes: Uint8Array): T {
  return fromWire(decoder.decode(bytes)) as T;
}

function fromWire(v: unknown): unknown {
  if (v instanceof Uint8Array) return `0x${hexOf(v)}`;
  if (v instanceof OddHex) return v.text;
  if (v instanceof JsonNumber) return v.value;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return `0x${v.toString(16)}`;
  if (Array.isArray(v)) {
    if (v[0] === OBJ) {
      const o: Record<string, unknown> = {};
      for (let i = 1; i < v.length; i += 2) {
        const k = v[i];
        o[typeof k === 'number' ? KEYS[k]! : String(k)] = fromWire(v[i + 1]);
      }
      return o;
    }
    const from = v[0] === ARR ? 1 : 0;
    const out = new Array<unknown>(v.length - from);
    for (let i = from; i < v.length; i++) out[i - from] = fromWire(v[i]);
    return out;
  }
  return v;
}

/**
 * Reading stored values in place: the record's structure is walked by its
 * msgpack headers alone, so a reader can decode just the items it wants.
 */
export interface WireRange {
  start: number;
  end: number;
}

const u16 = (b: Uint8Array, o: number): number => (b[o]! << 8) | b[o + 1]!;
const u32 = (b: Uint8Array, o: number): number => ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;

// Bytes taken by a msgpack value of fixed size, by its first byte (0 = sized by a length or a count).
const FIXED = new Uint8Array(256);
for (let c = 0; c < 0x80; c++) FIXED[c] = 1;
for (let c = 0xe0; c < 0x100; c++) FIXED[c] = 1;
for (const [c, n] of [
  [0xc0, 1],
  [0xc2, 1],
  [0xc3, 1],
  [0xca, 5],
  [0xcb, 9],
  [0xcc, 2],
  [0xcd, 3],
  [0xce, 5],
  [0xcf, 9],
  [0xd0, 2],
  [0xd1, 3],
  [0xd2, 5],
  [0xd3, 9],
  [0xd4, 3],
  [0xd5, 4],
  [0xd6, 6],
  [0xd7, 10],
  [0xd8, 18],
] as const)
  FIXED[c] = n;

/** Where the value at `o` ends, found from headers alone: nothing is decoded. */
export function skipValue(b: Uint8Array, o: number): number {
  let pending = 1;
  while (pending > 0) {
    if (o >= b.length) throw new RangeError('stored value ends early');
    pending--;
    const c = b[o]!;
    const fixed = FIXED[c]!;
    if (fixed > 0) o += fixed;
    else if (c < 0x90) {
      pending += 2 * (c & 0x0f);
      o += 1;
    } else if (c < 0xa0) {
      pending += c & 0x0f;
      o += 1;
    } else if (c < 0xc0) o += 1 + (c & 0x1f);
    else {
      switch (c) {
        case 0xc4:
        case 0xd9:
          o += 2 + b[o + 1]!;
          break;
        case 0xc5:
        case 0xda:
          o += 3 + u16(b, o + 1);
          break;
        case 0xc6:
        case 0xdb:
          o += 5 + u32(b, o + 1);
          break;
        case 0xc7:
          o += 3 + b[o + 1]!;
          break;
        case 0xc8:
          o += 4 + u16(b, o + 1);
          break;
        case 0xc9:
          o += 6 + u32(b, o + 1);
          break;
        case 0xdc:
          pending += u16(b, o + 1);
          o += 3;
          break;
        case 0xdd:
          pending += u32(b, o + 1);
          o += 5;
          break;
        case 0xde:
          pending += 2 * u16(b, o + 1);
          o += 3;
          break;
        case 0xdf:
          pending += 2 * u32(b, o + 1);
          o += 5;
          break;
        default:
          throw new RangeError(`byte ${o} (0x${c.toString(16)}) starts no msgpack value`);
      }
    }
  }
  if (o > b.length) throw new RangeError('stored value ends early');
  return o;
}

/** The element count of the array at `o` and where its first element starts; null for nil. */
function arrayAt(b: Uint8Array, o: number): [count: number, first: number] | null {
  const c = b[o];
  if (c === 0xc0) return null;
  if (c !== undefined && c >= 0x90 && c < 0xa0) return [c & 0x0f, o + 1];
  if (c === 0xdc) return [u16(b, o + 1), o + 3];
  if (c === 0xdd) return [u32(b, o + 1), o + 5];
  throw new RangeError(`byte ${o} starts no stored array`);
}

/** The short string at `o` (a marker or a field name) and where it ends; undefined when the value is not one. */
function stringAt(b: Uint8Array, o: number): [text: string, end: number] | undefined {
  const c = b[o]!;
  const [len, at] = c >= 0xa0 && c < 0xc0 ? [c & 0x1f, o + 1] : c === 0xd9 ? [b[o + 1]!, o + 2] : [-1, 0];
  if (len < 0) return undefined;
  // Field names are short ASCII: read without making a Buffer.
  let text = '';
  for (let i = at; i < at + len; i++) {
    if (b[i]! >= 0x80) return [Buffer.from(b.buffer, b.byteOffset + at, len).toString('utf8'), at + len];
    text += String.fromCharCode(b[i]!);
  }
  return [text, at + len];
}

/** Reads a value in place itself and says where it ends; undefined leaves it to be skipped. */
export type WireWalk = (key: string, at: number) => number | undefined;

/** The fields of the stored object at `o`, each with where its value lies, and where the object ends; `walk` may read a field's value on the way, so it is not skipped first. */
export function wireFields(b: Uint8Array, o: number, walk?: WireWalk): { fields: Map<string, WireRange>; end: number } {
  const head = arrayAt(b, o);
  const marker = head === null ? undefined : stringAt(b, head[1]);
  if (head === null || marker?.[0] !== OBJ) throw new RangeError(`byte ${o} starts no stored object`);
  const fields = new Map<string, WireRange>();
  let at = marker[1];
  for (let i = 1; i < head[0]; i += 2) {
    let key: string;
    if (b[at]! < 0x80) key = KEYS[b[at++]!] ?? String(b[at - 1]);
    else {
      const s = stringAt(b, at);
      if (s === undefined) throw new RangeError(`byte ${at} starts no field name`);
      [key, at] = s;
    }
    const end = walk?.(key, at) ?? skipValue(b, at);
    fields.set(key, { start: at, end });
    at = end;
  }
  return { fields, end: at };
}

/** Where each element of the stored array at `o` lies, and where the array ends; null for nil. `walk` may read each element on the way. */
export function wireItems(b: Uint8Array, o: number, walk?: (at: number) => number): { items: WireRange[]; end: number } | null {
  const head = arrayAt(b, o);
  if (head === null) return null;
  let [count, at] = head;
  // An array whose first element is a marker string carries an escape marker first.
  if (count > 0 && stringAt(b, at)?.[0] === ARR) {
    at = skipValue(b, at);
    count--;
  }
  const items: WireRange[] = new Array<WireRange>(count);
  for (let i = 0; i < count; i++) {
    const end = walk === undefined ? skipValue(b, at) : walk(at);
    items[i] = { start: at, end };
    at = end;
  }
  return { items, end: at };
}

/** One stored value in place, decoded. */
export const decodeRpcAt = <T>(b: Uint8Array, r: WireRange): T => decodeRpc<T>(b.subarray(r.start, r.end));
