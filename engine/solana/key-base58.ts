/**
 * The one hand-written base58 path: a Solana key's text into its 32 bytes, which preparing a block does for
 * each of a slot's distinct keys (~10,000 on mainnet). bs58 (which every other base58 text goes through)
 * took 7 to 10 times as long per key: on such a slot, about as long again as the whole prepare
 * (bench/base58.ts, docs/decisions/base58.md). Byte-identical to bs58 (tested against it).
 */
const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE58_ALPHABET.length; i++) DIGIT[BASE58_ALPHABET.charCodeAt(i)] = i;

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
