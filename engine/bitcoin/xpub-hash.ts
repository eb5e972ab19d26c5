/**
 * SHA-256 and RIPEMD-160 of one short message (≤ 55 bytes: a single padded
 * block) into a caller's buffer, for the addresses of the derivation's hot
 * loop: a public key's HASH160 and a base58check checksum. @noble/hashes
 * builds a hasher (buffers, a DataView) per call, which with the garbage it
 * leaves was a sixth of an address's time. Tested against @noble/hashes.
 */
const SHA256_K = Uint32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
  0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
  0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
  0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
  0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
  0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const SHA256_IV = Uint32Array.from([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);

const block = new Uint8Array(64);
const W = new Uint32Array(64);
const state = new Uint32Array(8);

/** The padded block of a message of at most 55 bytes: message, 0x80, zeros, its bit length (big- or little-endian). */
function pad(msg: Uint8Array, bigEndian: boolean): void {
  if (msg.length > 55) throw new RangeError('one block only: at most 55 bytes');
  block.fill(0);
  block.set(msg);
  block[msg.length] = 0x80;
  const bits = msg.length * 8;
  if (bigEndian) (block[62] = bits >>> 8), (block[63] = bits & 0xff);
  else (block[56] = bits & 0xff), (block[57] = bits >>> 8);
}

const rotr = (x: number, n: number): number => (x >>> n) | (x << (32 - n));
const rotl = (x: number, n: number): number => (x << n) | (x >>> (32 - n));

/** SHA-256 of a message of at most 55 bytes, written to out[offset … offset + 31]. */
export function sha256Short(msg: Uint8Array, out: Uint8Array, offset = 0): void {
  pad(msg, true);
  for (let i = 0; i < 16; i++) W[i] = (block[4 * i]! << 24) | (block[4 * i + 1]! << 16) | (block[4 * i + 2]! << 8) | block[4 * i + 3]!;
  for (let i = 16; i < 64; i++) {
    const w15 = W[i - 15]!,
      w2 = W[i - 2]!;
    W[i] = (rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10)) + W[i - 7]! + (rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3)) + W[i - 16]!;
  }
  let [a, b, c, d, e, f, g, h] = SHA256_IV as unknown as [number, number, number, number, number, number, number, number];
  for (let i = 0; i < 64; i++) {
    const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + SHA256_K[i]! + W[i]!) | 0;
    const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    (h = g), (g = f), (f = e), (e = (d + t1) | 0), (d = c), (c = b), (b = a), (a = (t1 + t2) | 0);
  }
  state.set([a, b, c, d, e, f, g, h]);
  for (let i = 0; i < 8; i++) {
    const v = (state[i]! + SHA256_IV[i]!) >>> 0;
    out[offset + 4 * i] = v >>> 24;
    out[offset + 4 * i + 1] = v >>> 16;
    out[offset + 4 * i + 2] = v >>> 8;
    out[offset + 4 * i + 3] = v;
  }
}

// RIPEMD-160: the message-word order and rotations of the left and right lines, 80 steps each.
const RHO = [7, 4, 13, 1, 10, 6, 15, 3, 12, 0, 9, 5, 2, 14, 11, 8];
const orders = (first: number[]): number[] => {
  const out = [first];
  for (let r = 1; r < 5; r++) out.push(out[r - 1]!.map((k) => RHO[k]!));
  return out.flat();
};
const IDX_L = Uint8Array.from(orders(Array.from({ length: 16 }, (_, i) => i)));
const IDX_R = Uint8Array.from(orders(Array.from({ length: 16 }, (_, i) => (9 * i + 5) % 16)));
const SHIFTS = [
  [11, 14, 15, 12, 5, 8, 7, 9, 11, 13, 14, 15, 6, 7, 9, 8],
  [12, 13, 11, 15, 6, 9, 9, 7, 12, 15, 11, 13, 7, 8, 7, 7],
  [13, 15, 14, 11, 7, 7, 6, 8, 13, 14, 13, 12, 5, 5, 6, 9],
  [14, 11, 12, 14, 8, 6, 5, 5, 15, 12, 15, 14, 9, 9, 8, 6],
  [15, 12, 13, 13, 9, 5, 8, 6, 14, 11, 12, 11, 8, 6, 5, 5],
];
const SHIFT_L = Uint8Array.from({ length: 80 }, (_, i) => SHIFTS[i >> 4]![IDX_L[i]!]!);
const SHIFT_R = Uint8Array.from({ length: 80 }, (_, i) => SHIFTS[i >> 4]![IDX_R[i]!]!);
const K_L = [0x00000000, 0x5a827999, 0x6ed9eba1, 0x8f1bbcdc, 0xa953fd4e];
const K_R = [0x50a28be6, 0x5c4dd124, 0x6d703ef3, 0x7a6d76e9, 0x00000000];
const RIPEMD_IV: readonly [number, number, number, number, number] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
const X = new Uint32Array(16);

/** The round function of group 0 … 4. */
function f(group: number, x: number, y: number, z: number): number {
  if (group === 0) return x ^ y ^ z;
  if (group === 1) return (x & y) | (~x & z);
  if (group === 2) return (x | ~y) ^ z;
  if (group === 3) return (x & z) | (y & ~z);
  return x ^ (y | ~z);
}

/** RIPEMD-160 of a message of at most 55 bytes, written to out[offset … offset + 19]. */
export function ripemd160Short(msg: Uint8Array, out: Uint8Array, offset = 0): void {
  pad(msg, false);
  for (let i = 0; i < 16; i++) X[i] = block[4 * i]! | (block[4 * i + 1]! << 8) | (block[4 * i + 2]! << 16) | (block[4 * i + 3]! << 24);
  const [h0, h1, h2, h3, h4] = RIPEMD_IV;
  let al = h0,
    bl = h1,
    cl = h2,
    dl = h3,
    el = h4,
    ar = h0,
    br = h1,
    cr = h2,
    dr = h3,
    er = h4;
  for (let i = 0; i < 80; i++) {
    const group = i >> 4;
    const tl = (rotl((al + f(group, bl, cl, dl) + X[IDX_L[i]!]! + K_L[group]!) | 0, SHIFT_L[i]!) + el) | 0;
    (al = el), (el = dl), (dl = rotl(cl, 10)), (cl = bl), (bl = tl);
    const tr = (rotl((ar + f(4 - group, br, cr, dr) + X[IDX_R[i]!]! + K_R[group]!) | 0, SHIFT_R[i]!) + er) | 0;
    (ar = er), (er = dr), (dr = rotl(cr, 10)), (cr = br), (br = tr);
  }
  const h = [(h1 + cl + dr) | 0, (h2 + dl + er) | 0, (h3 + el + ar) | 0, (h4 + al + br) | 0, (h0 + bl + cr) | 0];
  for (let i = 0; i < 5; i++) {
    const v = h[i]!;
    out[offset + 4 * i] = v;
    out[offset + 4 * i + 1] = v >>> 8;
    out[offset + 4 * i + 2] = v >>> 16;
    out[offset + 4 * i + 3] = v >>> 24;
  }
}

const digest = new Uint8Array(32);

/** RIPEMD-160(SHA-256(msg)) of a message of at most 55 bytes (a public key, a witness program). */
export function hash160Short(msg: Uint8Array): Uint8Array {
  sha256Short(msg, digest);
  const out = new Uint8Array(20);
  ripemd160Short(digest, out);
  return out;
}

/** The base58check checksum of a payload of at most 55 bytes: the first 4 bytes of SHA-256(SHA-256(payload)). */
export function checksumInto(payload: Uint8Array, out: Uint8Array, offset: number): void {
  sha256Short(payload, digest);
  sha256Short(digest, digest);
  out.set(digest.subarray(0, 4), offset);
}
