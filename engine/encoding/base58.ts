/**
 * Base58 (Bitcoin's alphabet, which Solana uses too) for hot loops: byte-identical
 * to @scure/base's and bs58's (tested against them) but several times faster on
 * these short inputs, which the generic codecs convert one digit at a time.
 * Bitcoin's addresses and extended keys (base58check) and Solana's 32-byte keys
 * and 64-byte signatures are all read and written here.
 */
const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const CHUNK = 58 ** 4; // < 2^24: a remainder times 2^24 plus a limb stays exact in a double

/** Base58 of bytes: big-endian 24-bit limbs divided by 58^4 until zero (4 digits each time), leading zero bytes as '1'. */
export function base58(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  const pad = (3 - (bytes.length % 3)) % 3;
  const limbs: number[] = [];
  for (let i = -pad; i < bytes.length; i += 3) limbs.push(((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0));
  const digits: number[] = []; // least significant first
  for (let first = 0; first < limbs.length; ) {
    let rest = 0;
    for (let i = first; i < limbs.length; i++) {
      const v = rest * 16777216 + limbs[i]!;
      limbs[i] = Math.floor(v / CHUNK);
      rest = v - limbs[i]! * CHUNK;
    }
    for (let k = 0; k < 4; k++, rest = Math.floor(rest / 58)) digits.push(rest % 58);
    while (first < limbs.length && limbs[first] === 0) first++;
  }
  while (digits.length > 0 && digits[digits.length - 1] === 0) digits.pop();
  let out = '1'.repeat(zeros);
  for (let k = digits.length - 1; k >= 0; k--) out += BASE58_ALPHABET[digits[k]!];
  return out;
}

const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE58_ALPHABET.length; i++) DIGIT[BASE58_ALPHABET.charCodeAt(i)] = i;

/** Base58 text into bytes, or undefined for a character outside the alphabet: the inverse of base58(), in 24-bit limbs (least significant first). */
export function base58Decode(text: string): Uint8Array | undefined {
  let zeros = 0;
  while (zeros < text.length && text.charCodeAt(zeros) === 0x31) zeros++;
  const limbs: number[] = [];
  for (let i = zeros; i < text.length; i++) {
    const code = text.charCodeAt(i);
    let carry = code < 128 ? DIGIT[code]! : -1;
    if (carry < 0) return undefined;
    for (let k = 0; k < limbs.length; k++) {
      const v = limbs[k]! * 58 + carry;
      limbs[k] = v % 16777216;
      carry = Math.floor(v / 16777216);
    }
    if (carry > 0) limbs.push(carry);
  }
  const bytes: number[] = [];
  for (const limb of limbs) bytes.push(limb & 255, (limb >>> 8) & 255, limb >>> 16);
  while (bytes.length > 0 && bytes[bytes.length - 1] === 0) bytes.pop();
  const out = new Uint8Array(zeros + bytes.length);
  for (let k = 0; k < bytes.length; k++) out[out.length - 1 - k] = bytes[k]!;
  return out;
}

/** 11 limbs of 24 bits: 33 bytes, one more than a key, so that a 33-byte value is seen (and refused) rather than wrapped. */
const LIMBS = 11;
const TWO_24 = 16777216;
const limbs = new Float64Array(LIMBS);

/**
 * Writes the 32 bytes that base58 `text` stands for at out[at … at + 32); false (out unchanged or partly written)
 * when the text is not base58 or does not stand for exactly 32 bytes. The hot path of a Solana block's keys: four
 * digits at a time into fixed 24-bit limbs (a limb times 58^4 plus a carry stays under 2^48, exact in a double),
 * only the limbs in use touched, nothing allocated.
 */
export function base58Decode32Into(text: string, out: Uint8Array, at: number): boolean {
  const n = text.length;
  if (n < 32 || n > 44) return false; // 32 bytes are 32 ('1' × 32) to 44 digits
  let zeros = 0;
  while (zeros < n && text.charCodeAt(zeros) === 0x31) zeros++;
  let used = 0;
  for (let i = zeros; i < n; ) {
    let carry = 0;
    let scale = 1;
    for (const end = Math.min(n, i + 4); i < end; i++) {
      const code = text.charCodeAt(i);
      const digit = code < 128 ? DIGIT[code]! : -1;
      if (digit < 0) return false;
      carry = carry * 58 + digit;
      scale *= 58;
    }
    for (let k = 0; k < used; k++) {
      const v = limbs[k]! * scale + carry;
      carry = Math.floor(v / TWO_24);
      limbs[k] = v - carry * TWO_24;
    }
    for (; carry > 0; carry = Math.floor(carry / TWO_24)) {
      if (used === LIMBS) return false;
      limbs[used++] = carry % TWO_24;
    }
  }
  // The value's own length in bytes (its most significant non-zero byte), plus one zero byte per leading '1'.
  const byteAt = (j: number): number => (((j / 3) | 0) < used ? (limbs[(j / 3) | 0]! >>> ((j % 3) * 8)) & 255 : 0); // j: 0 = least significant
  let len = used * 3;
  while (len > 0 && byteAt(len - 1) === 0) len--;
  if (zeros + len !== 32) return false;
  for (let j = 0; j < 32; j++) out[at + 31 - j] = byteAt(j);
  return true;
}
