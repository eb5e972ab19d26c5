import { sha256d } from './hash.js';
import { checksumInto } from './xpub-hash.js';
import bs58 from 'bs58';

/**
 * Address encodings for hot loops (derivation, webhook bodies), byte-identical to
 * @scure/base's (tested against it) but faster on these short inputs: scure
 * converts radixes one digit at a time through generic code (base58check of a
 * P2PKH address took 9.6 µs, bech32 4.7 µs). The checksum is xpub-hash.ts's; the
 * base58 digits are bs58's (bench/base58.ts: a P2PKH address in half scure's
 * time; a hand-written codec saved 2 to 4 % of a derived address's time).
 */
/** Base58check of a payload of at most 55 bytes (an address's 21): payload ‖ the first 4 bytes of SHA-256(SHA-256(payload)). */
export function base58check(payload: Uint8Array): string {
  const bytes = new Uint8Array(payload.length + 4);
  bytes.set(payload);
  checksumInto(payload, bytes, payload.length);
  return bs58.encode(bytes);
}

const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

/** BIP-173's checksum state after one 5-bit value. */
function polymodStep(chk: number, value: number): number {
  const top = chk >>> 25;
  chk = ((chk & 0x1ffffff) << 5) ^ value;
  for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= GENERATOR[i]!;
  return chk;
}

/** A segwit v0 address (BIP-173 bech32) of a program on the human-readable part `hrp`. */
export function segwitV0(hrp: string, program: Uint8Array): string {
  const words = [0];
  let acc = 0,
    bits = 0;
  for (const byte of program) {
    acc = (acc << 8) | byte;
    bits += 8;
    for (; bits >= 5; bits -= 5) words.push((acc >>> (bits - 5)) & 31);
  }
  if (bits > 0) words.push((acc << (5 - bits)) & 31);
  let chk = 1;
  for (let i = 0; i < hrp.length; i++) chk = polymodStep(chk, hrp.charCodeAt(i) >> 5);
  chk = polymodStep(chk, 0);
  for (let i = 0; i < hrp.length; i++) chk = polymodStep(chk, hrp.charCodeAt(i) & 31);
  for (const w of words) chk = polymodStep(chk, w);
  for (let i = 0; i < 6; i++) chk = polymodStep(chk, 0);
  chk ^= 1;
  let out = `${hrp}1`;
  for (const w of words) out += CHARSET[w];
  for (let i = 0; i < 6; i++) out += CHARSET[(chk >>> (5 * (5 - i))) & 31];
  return out;
}

/** Longer base58check texts are refused undecoded: an extended key's 78 bytes and checksum take at most 112 digits (131 leaves room for payloads up to 90 bytes). */
const MAX_BASE58CHECK_CHARS = 131;

/** A base58check payload (an address's 21 bytes, an extended key's 78), or undefined when the text is not base58 or its checksum is wrong. */
export function base58checkDecode(text: string): Uint8Array | undefined {
  // Decoding is quadratic in the length: a megabyte of digits would hold the event loop for minutes.
  if (text.length > MAX_BASE58CHECK_CHARS) return undefined;
  const bytes = bs58.decodeUnsafe(text);
  if (bytes === undefined || bytes.length < 4) return undefined;
  const payload = bytes.subarray(0, bytes.length - 4);
  const sum = sha256d(payload);
  for (let k = 0; k < 4; k++) if (sum[k] !== bytes[payload.length + k]) return undefined;
  return payload;
}
