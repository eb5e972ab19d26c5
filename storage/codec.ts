import { Decoder, Encoder, ExtData, ExtensionCodec } from '@msgpack/msgpack';

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

/**
 * The bytes as hex digits. Most of a read's time goes to these strings (a transfer holds five), so the view is
 * read in place by Buffer's own hexSlice (what toString('hex') calls) rather than wrapped in a new Buffer first.
 */
const hexSlice = (Buffer.prototype as unknown as { hexSlice?: (this: Uint8Array, start: number, end: number) => string }).hexSlice;
const hexOf: (data: Uint8Array) => string =
  hexSlice !== undefined
    ? (data) => hexSlice.call(data, 0, data.length)
    : (data) => Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('hex');

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

const encoder = new Encoder({ ignoreUndefined: true, extensionCodec: extensions });
// The encoder's value step (map keys are written apart, as text): @msgpack/msgpack has no hook for strings.
type ValueStep = (this: Encoder, value: unknown, depth: number) => void;
const internals = encoder as unknown as { doEncode: ValueStep; encodeExtension(ext: ExtData): void };
const encodeValue = internals.doEncode;
internals.doEncode = function (value, depth) {
  const ext = typeof value === 'string' ? hexExt(value) : undefined;
  if (ext === undefined) encodeValue.call(this, value, depth);
  else internals.encodeExtension.call(this, ext);
};
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
