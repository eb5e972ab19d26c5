import { Decoder, Encoder, ExtData, ExtensionCodec } from '@msgpack/msgpack';
import { hexOf } from '../engine/evm/codec.js';

/**
 * Every stored value is msgpack. A lower-case 0x hex string (an address, a hash, a topic, a quantity: most of
 * what the indexes hold) is stored as its bytes, half its text: msgpack extension 1 (even digits) or 2 (odd
 * digits, a quantity's: its bytes with a leading 0 nibble), read back as the same string. Other strings (a
 * checksummed address among them) stay text. One shared encoder/decoder avoids per-call allocation.
 */
// Their own numbering: block records have their own codec and extensions (engine/evm/codec.ts), never mixed with these.
const EVEN_HEX = 1;
const ODD_HEX = 2;
const HEX = /^0x[0-9a-f]*$/;

const extensions = new ExtensionCodec();
// Encoded by the string hook below, never from an object.
extensions.register({ type: EVEN_HEX, encode: () => null, decode: (data) => `0x${hexOf(data)}` });
extensions.register({ type: ODD_HEX, encode: () => null, decode: (data) => `0x${hexOf(data).slice(1)}` });

/** Short strings are not worth an extension's header. */
const MIN_HEX_LENGTH = 10;

/** The extension a string is stored as, or undefined for text. */
function hexExt(s: string): ExtData | undefined {
  if (s.length < MIN_HEX_LENGTH || s.charCodeAt(0) !== 48 || s.charCodeAt(1) !== 120 || !HEX.test(s)) return undefined;
  const odd = s.length % 2 === 1;
  return new ExtData(odd ? ODD_HEX : EVEN_HEX, Buffer.from(odd ? `0${s.slice(2)}` : s.slice(2), 'hex'));
}

/** 0–15 for a lower-case hex digit's char code, −1 otherwise. */
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;
const nibble = (c: number): number => (c < 128 ? NIBBLE[c]! : -1);

/** The encoder's own state, as encodeExtension writes an extension's header and then its bytes. */
interface EncoderState {
  bytes: Uint8Array;
  pos: number;
  ensureBufferSizeToWrite(size: number): void;
  writeU8(v: number): void;
  writeU16(v: number): void;
  writeU32(v: number): void;
  writeI8(v: number): void;
}

/**
 * hexExt's extension written straight into the encoder's buffer, the digits decoded as they are checked: the same
 * bytes as encodeExtension(hexExt(s)) writes, without the regular expression, the ExtData and the Buffer of each
 * string (the Data API's rows hold thousands of them a block). False, with nothing written, when `s` is not one.
 */
function writeHex(e: EncoderState, s: string): boolean {
  if (s.length < MIN_HEX_LENGTH || s.charCodeAt(0) !== 48 || s.charCodeAt(1) !== 120) return false;
  const odd = s.length % 2 === 1;
  const size = (s.length - 1) >> 1;
  const start = e.pos;
  // Header as encodeExtension writes it (fixext 4/8/16, else ext 8/16/32; a hex string is 4 bytes at least).
  if (size === 4) e.writeU8(0xd6);
  else if (size === 8) e.writeU8(0xd7);
  else if (size === 16) e.writeU8(0xd8);
  else if (size < 0x100) {
    e.writeU8(0xc7);
    e.writeU8(size);
  } else if (size < 0x10000) {
    e.writeU8(0xc8);
    e.writeU16(size);
  } else {
    e.writeU8(0xc9);
    e.writeU32(size);
  }
  e.writeI8(odd ? ODD_HEX : EVEN_HEX);
  e.ensureBufferSizeToWrite(size);
  const bytes = e.bytes;
  let at = e.pos;
  // An odd count of digits: a leading 0 nibble (hexExt's `0${…}`).
  let i = odd ? 1 : 2;
  let hi = 0;
  for (; i < s.length; i += 2) {
    if (i >= 2) hi = nibble(s.charCodeAt(i));
    const lo = nibble(s.charCodeAt(i + 1));
    if ((hi | lo) < 0) {
      // Not lower-case hex after all: nothing of it stays written.
      e.pos = start;
      return false;
    }
    bytes[at++] = (hi << 4) | lo;
  }
  e.pos = at;
  return true;
}

const encoder = new Encoder({ ignoreUndefined: true, extensionCodec: extensions });
// The encoder's value step (map keys are written apart, as text): @msgpack/msgpack has no hook for strings.
type ValueStep = (this: Encoder, value: unknown, depth: number) => void;
const internals = encoder as unknown as { doEncode: ValueStep; encodeExtension(ext: ExtData): void };
const encodeValue = internals.doEncode;
internals.doEncode = function (value, depth) {
  if (typeof value !== 'string' || !writeHex(this as unknown as EncoderState, value)) encodeValue.call(this, value, depth);
};

/** The extension hook as it was written first (tests: writeHex must write what it writes). */
export function packByExtData(value: unknown): Uint8Array {
  const e = new Encoder({ ignoreUndefined: true, extensionCodec: extensions });
  const inner = e as unknown as { doEncode: ValueStep; encodeExtension(ext: ExtData): void };
  const step = inner.doEncode;
  inner.doEncode = function (v, depth) {
    const ext = typeof v === 'string' ? hexExt(v) : undefined;
    if (ext === undefined) step.call(this, v, depth);
    else inner.encodeExtension.call(this, ext);
  };
  return e.encode(value);
}
const decoder = new Decoder({ extensionCodec: extensions });

export const pack = (value: unknown): Uint8Array => encoder.encode(value);
/** The encoding as a view of the encoder's own buffer: valid until the next pack, for a write that copies at once (putSync). */
export const packShared = (value: unknown): Uint8Array => encoder.encodeSharedRef(value);
export const unpack = <T>(bytes: Uint8Array): T => decoder.decode(bytes) as T;

// The hook rides on the encoder's internals: a version of @msgpack/msgpack without them must stop the start,
// not write text where this layout promises bytes.
if (pack(`0x${'00'.repeat(20)}`).length !== 23)
  throw new Error('storage/codec.ts: the hex hook is not in effect with this @msgpack/msgpack');
if (unpack(pack('0x0a1b2c3d4e5f')) !== '0x0a1b2c3d4e5f' || unpack(pack('0x0a1b2c3d4e5')) !== '0x0a1b2c3d4e5')
  throw new Error('storage/codec.ts: hex strings do not read back as written');
