/**
 * The field of secp256k1 (p = 2^256 − 2^32 − 977) without BigInt, for the hot
 * loop of public-key derivation (engine/bitcoin/secp256k1-derive.ts): BigInt
 * allocates on every operation and its `%` dominates noble's scalar multiply.
 *
 * An element is 11 limbs in a Float64Array, little-endian radix 2^24, each in
 * [0, 2^24 + 2^22) (carries are done in one round for every limb at once, which
 * leaves a limb slightly loose), congruent mod p, unique only once `canonical`.
 * Doubles multiply exactly up to 2^53: a product of two limbs is < 2^48.4 and a
 * column of 11 of them < 2^52.1, so a whole 11 × 11 product is summed without
 * carries and reduced once. 24 bits also align limbs to bytes (3 a limb).
 * Not constant time: public keys only.
 */
export type Fe = Float64Array;

export const LIMBS = 11;
const RADIX = 16777216; // 2^24
const INV_RADIX = 1 / RADIX;
/** 2^264 ≡ 2^8·(2^32 + 977) = 2^40 + 250112 (mod p): a limb at 11 + i folds into limbs i (× 250112) and i + 1 (× 2^16). */
const FOLD_LO = 250112;
const FOLD_HI = 65536;

/** Column sums of a product before reduction (21 used; 2 spare for carries). */
const C = new Float64Array(2 * LIMBS + 2);

export const fe = (): Fe => new Float64Array(LIMBS);
/** Scratch: canonical's v + (2^32 + 977), and the canonical copies read by isZero, isOdd, toBytes. */
const WRAP = fe();
const SUM = fe();

/**
 * Carries C[0 … top − 1] into 24-bit limbs and folds everything at 2^264 and
 * above back down, until the value fits 11 limbs; writes them to `out`.
 * Works for negative sums too (Math.floor carries borrow).
 */
function reduce(out: Fe, top: number): void {
  for (;;) {
    let carry = 0;
    for (let k = 0; k < top; k++) {
      const v = C[k]! + carry;
      carry = Math.floor(v * INV_RADIX);
      C[k] = v - carry * RADIX;
    }
    if (carry !== 0) C[top++] = carry;
    if (top <= LIMBS) break;
    for (let k = LIMBS; k < top; k++) {
      const h = C[k]!;
      C[k] = 0;
      C[k - LIMBS] = C[k - LIMBS]! + h * FOLD_LO;
      C[k - LIMBS + 1] = C[k - LIMBS + 1]! + h * FOLD_HI;
    }
    top = Math.max(LIMBS, top - LIMBS + 1);
  }
  for (let k = 0; k < LIMBS; k++) out[k] = C[k]!;
  for (let k = LIMBS; k < C.length; k++) C[k] = 0;
}

/** Limb k := the low 24 bits of v (0 ≤ v < 2^28) plus the carry from limb k − 1; returns v's carry. */
function settle(out: Fe, k: number, v: number, below: number): number {
  const q = Math.floor(v * INV_RADIX);
  out[k] = v - q * RADIX + below;
  return q;
}

/**
 * The carry out of limb 10 (weight 2^264, a few units) folded into limbs 0
 * and 1, which may end up to 2^22 above 2^24: inside the product bound.
 * With settle, one carry round with every limb at once (no carry chain).
 */
function foldTop(out: Fe, q: number): void {
  out[0] = out[0]! + q * FOLD_LO;
  out[1] = out[1]! + q * FOLD_HI;
}

export function add(out: Fe, a: Fe, b: Fe): void {
  let q = 0;
  for (let k = 0; k < LIMBS; k++) q = settle(out, k, a[k]! + b[k]!, q);
  foldTop(out, q);
}

/**
 * 2^10·p in limbs, each raised so that a limb of any operand (< 2^24 + 2^22)
 * can be taken from it without going negative: a − b = a + (D − b).
 */
const D = (() => {
  const d = fe();
  fromBigInt(d, 1024n * (2n ** 256n - 2n ** 32n - 977n));
  for (let k = 0; k < LIMBS - 1; k++) {
    d[k] = d[k]! + 2 * RADIX;
    d[k + 1] = d[k + 1]! - 2;
  }
  return d;
})();

export function sub(out: Fe, a: Fe, b: Fe): void {
  let q = 0;
  for (let k = 0; k < LIMBS; k++) q = settle(out, k, a[k]! + (D[k]! - b[k]!), q);
  foldTop(out, q);
}

/** a·m for a small m (≤ 2^3). */
export function mulSmall(out: Fe, a: Fe, m: number): void {
  let q = 0;
  for (let k = 0; k < LIMBS; k++) q = settle(out, k, a[k]! * m, q);
  foldTop(out, q);
}

/** C[0 … 20], the column sums of a product, reduced into `out` (generated, unrolled: locals stay in registers). */
function reduceWide(out: Fe): void {
  // Columns 11 … 20 split at 2^24 (h·2^24 + l) so that folding them (× 2^40 + 250112) stays below 2^53.
  const c11 = C[11]!,
    h0 = Math.floor(c11 * INV_RADIX),
    l0 = c11 - h0 * RADIX;
  const c12 = C[12]!,
    h1 = Math.floor(c12 * INV_RADIX),
    l1 = c12 - h1 * RADIX;
  const c13 = C[13]!,
    h2 = Math.floor(c13 * INV_RADIX),
    l2 = c13 - h2 * RADIX;
  const c14 = C[14]!,
    h3 = Math.floor(c14 * INV_RADIX),
    l3 = c14 - h3 * RADIX;
  const c15 = C[15]!,
    h4 = Math.floor(c15 * INV_RADIX),
    l4 = c15 - h4 * RADIX;
  const c16 = C[16]!,
    h5 = Math.floor(c16 * INV_RADIX),
    l5 = c16 - h5 * RADIX;
  const c17 = C[17]!,
    h6 = Math.floor(c17 * INV_RADIX),
    l6 = c17 - h6 * RADIX;
  const c18 = C[18]!,
    h7 = Math.floor(c18 * INV_RADIX),
    l7 = c18 - h7 * RADIX;
  const c19 = C[19]!,
    h8 = Math.floor(c19 * INV_RADIX),
    l8 = c19 - h8 * RADIX;
  const c20 = C[20]!,
    h9 = Math.floor(c20 * INV_RADIX),
    l9 = c20 - h9 * RADIX;
  const d0 = C[0]! + l0 * FOLD_LO;
  const d1 = C[1]! + l1 * FOLD_LO + l0 * FOLD_HI + h0 * FOLD_LO;
  const d2 = C[2]! + l2 * FOLD_LO + l1 * FOLD_HI + h1 * FOLD_LO + h0 * FOLD_HI;
  const d3 = C[3]! + l3 * FOLD_LO + l2 * FOLD_HI + h2 * FOLD_LO + h1 * FOLD_HI;
  const d4 = C[4]! + l4 * FOLD_LO + l3 * FOLD_HI + h3 * FOLD_LO + h2 * FOLD_HI;
  const d5 = C[5]! + l5 * FOLD_LO + l4 * FOLD_HI + h4 * FOLD_LO + h3 * FOLD_HI;
  const d6 = C[6]! + l6 * FOLD_LO + l5 * FOLD_HI + h5 * FOLD_LO + h4 * FOLD_HI;
  const d7 = C[7]! + l7 * FOLD_LO + l6 * FOLD_HI + h6 * FOLD_LO + h5 * FOLD_HI;
  const d8 = C[8]! + l8 * FOLD_LO + l7 * FOLD_HI + h7 * FOLD_LO + h6 * FOLD_HI;
  const d9 = C[9]! + l9 * FOLD_LO + l8 * FOLD_HI + h8 * FOLD_LO + h7 * FOLD_HI;
  const d10 = C[10]! + l9 * FOLD_HI + h9 * FOLD_LO + h8 * FOLD_HI;
  const d11 = h9 * FOLD_HI;
  // One carry round, every limb at once (short dependency chains).
  const p0 = Math.floor(d0 * INV_RADIX);
  const p1 = Math.floor(d1 * INV_RADIX);
  const p2 = Math.floor(d2 * INV_RADIX);
  const p3 = Math.floor(d3 * INV_RADIX);
  const p4 = Math.floor(d4 * INV_RADIX);
  const p5 = Math.floor(d5 * INV_RADIX);
  const p6 = Math.floor(d6 * INV_RADIX);
  const p7 = Math.floor(d7 * INV_RADIX);
  const p8 = Math.floor(d8 * INV_RADIX);
  const p9 = Math.floor(d9 * INV_RADIX);
  const p10 = Math.floor(d10 * INV_RADIX);
  const p11 = Math.floor(d11 * INV_RADIX);
  // Limb 11 (weight 2^264) and the carry above it (2^288) folded again.
  const e11 = d11 - p11 * RADIX + p10;
  const e0 = d0 - p0 * RADIX + e11 * FOLD_LO;
  const e1 = d1 - p1 * RADIX + p0 + e11 * FOLD_HI + p11 * FOLD_LO;
  const e2 = d2 - p2 * RADIX + p1 + p11 * FOLD_HI;
  const e3 = d3 - p3 * RADIX + p2;
  const e4 = d4 - p4 * RADIX + p3;
  const e5 = d5 - p5 * RADIX + p4;
  const e6 = d6 - p6 * RADIX + p5;
  const e7 = d7 - p7 * RADIX + p6;
  const e8 = d8 - p8 * RADIX + p7;
  const e9 = d9 - p9 * RADIX + p8;
  const e10 = d10 - p10 * RADIX + p9;
  // A second round; its carry out of limb 10 folds into limbs 0 and 1, carried to limb 2.
  const r0 = Math.floor(e0 * INV_RADIX);
  const r1 = Math.floor(e1 * INV_RADIX);
  const r2 = Math.floor(e2 * INV_RADIX);
  const r3 = Math.floor(e3 * INV_RADIX);
  const r4 = Math.floor(e4 * INV_RADIX);
  const r5 = Math.floor(e5 * INV_RADIX);
  const r6 = Math.floor(e6 * INV_RADIX);
  const r7 = Math.floor(e7 * INV_RADIX);
  const r8 = Math.floor(e8 * INV_RADIX);
  const r9 = Math.floor(e9 * INV_RADIX);
  const r10 = Math.floor(e10 * INV_RADIX);
  const f0 = e0 - r0 * RADIX + r10 * FOLD_LO;
  const u0 = Math.floor(f0 * INV_RADIX);
  const f1 = e1 - r1 * RADIX + r0 + r10 * FOLD_HI + u0;
  const u1 = Math.floor(f1 * INV_RADIX);
  out[0] = f0 - u0 * RADIX;
  out[1] = f1 - u1 * RADIX;
  out[2] = e2 - r2 * RADIX + r1 + u1;
  out[3] = e3 - r3 * RADIX + r2;
  out[4] = e4 - r4 * RADIX + r3;
  out[5] = e5 - r5 * RADIX + r4;
  out[6] = e6 - r6 * RADIX + r5;
  out[7] = e7 - r7 * RADIX + r6;
  out[8] = e8 - r8 * RADIX + r7;
  out[9] = e9 - r9 * RADIX + r8;
  out[10] = e10 - r10 * RADIX + r9;
}

// mul and sqr: the 21 column sums unrolled (generated), then one reduction.
export function mul(out: Fe, a: Fe, b: Fe): void {
  const a0 = a[0]!,
    a1 = a[1]!,
    a2 = a[2]!,
    a3 = a[3]!,
    a4 = a[4]!,
    a5 = a[5]!,
    a6 = a[6]!,
    a7 = a[7]!,
    a8 = a[8]!,
    a9 = a[9]!,
    a10 = a[10]!;
  const b0 = b[0]!,
    b1 = b[1]!,
    b2 = b[2]!,
    b3 = b[3]!,
    b4 = b[4]!,
    b5 = b[5]!,
    b6 = b[6]!,
    b7 = b[7]!,
    b8 = b[8]!,
    b9 = b[9]!,
    b10 = b[10]!;
  C[0] = a0 * b0;
  C[1] = a0 * b1 + a1 * b0;
  C[2] = a0 * b2 + a1 * b1 + a2 * b0;
  C[3] = a0 * b3 + a1 * b2 + a2 * b1 + a3 * b0;
  C[4] = a0 * b4 + a1 * b3 + a2 * b2 + a3 * b1 + a4 * b0;
  C[5] = a0 * b5 + a1 * b4 + a2 * b3 + a3 * b2 + a4 * b1 + a5 * b0;
  C[6] = a0 * b6 + a1 * b5 + a2 * b4 + a3 * b3 + a4 * b2 + a5 * b1 + a6 * b0;
  C[7] = a0 * b7 + a1 * b6 + a2 * b5 + a3 * b4 + a4 * b3 + a5 * b2 + a6 * b1 + a7 * b0;
  C[8] = a0 * b8 + a1 * b7 + a2 * b6 + a3 * b5 + a4 * b4 + a5 * b3 + a6 * b2 + a7 * b1 + a8 * b0;
  C[9] = a0 * b9 + a1 * b8 + a2 * b7 + a3 * b6 + a4 * b5 + a5 * b4 + a6 * b3 + a7 * b2 + a8 * b1 + a9 * b0;
  C[10] = a0 * b10 + a1 * b9 + a2 * b8 + a3 * b7 + a4 * b6 + a5 * b5 + a6 * b4 + a7 * b3 + a8 * b2 + a9 * b1 + a10 * b0;
  C[11] = a1 * b10 + a2 * b9 + a3 * b8 + a4 * b7 + a5 * b6 + a6 * b5 + a7 * b4 + a8 * b3 + a9 * b2 + a10 * b1;
  C[12] = a2 * b10 + a3 * b9 + a4 * b8 + a5 * b7 + a6 * b6 + a7 * b5 + a8 * b4 + a9 * b3 + a10 * b2;
  C[13] = a3 * b10 + a4 * b9 + a5 * b8 + a6 * b7 + a7 * b6 + a8 * b5 + a9 * b4 + a10 * b3;
  C[14] = a4 * b10 + a5 * b9 + a6 * b8 + a7 * b7 + a8 * b6 + a9 * b5 + a10 * b4;
  C[15] = a5 * b10 + a6 * b9 + a7 * b8 + a8 * b7 + a9 * b6 + a10 * b5;
  C[16] = a6 * b10 + a7 * b9 + a8 * b8 + a9 * b7 + a10 * b6;
  C[17] = a7 * b10 + a8 * b9 + a9 * b8 + a10 * b7;
  C[18] = a8 * b10 + a9 * b9 + a10 * b8;
  C[19] = a9 * b10 + a10 * b9;
  C[20] = a10 * b10;
  reduceWide(out);
}

export function sqr(out: Fe, a: Fe): void {
  const a0 = a[0]!,
    a1 = a[1]!,
    a2 = a[2]!,
    a3 = a[3]!,
    a4 = a[4]!,
    a5 = a[5]!,
    a6 = a[6]!,
    a7 = a[7]!,
    a8 = a[8]!,
    a9 = a[9]!,
    a10 = a[10]!;
  C[0] = a0 * a0;
  C[1] = 2 * (a0 * a1);
  C[2] = 2 * (a0 * a2) + a1 * a1;
  C[3] = 2 * (a0 * a3 + a1 * a2);
  C[4] = 2 * (a0 * a4 + a1 * a3) + a2 * a2;
  C[5] = 2 * (a0 * a5 + a1 * a4 + a2 * a3);
  C[6] = 2 * (a0 * a6 + a1 * a5 + a2 * a4) + a3 * a3;
  C[7] = 2 * (a0 * a7 + a1 * a6 + a2 * a5 + a3 * a4);
  C[8] = 2 * (a0 * a8 + a1 * a7 + a2 * a6 + a3 * a5) + a4 * a4;
  C[9] = 2 * (a0 * a9 + a1 * a8 + a2 * a7 + a3 * a6 + a4 * a5);
  C[10] = 2 * (a0 * a10 + a1 * a9 + a2 * a8 + a3 * a7 + a4 * a6) + a5 * a5;
  C[11] = 2 * (a1 * a10 + a2 * a9 + a3 * a8 + a4 * a7 + a5 * a6);
  C[12] = 2 * (a2 * a10 + a3 * a9 + a4 * a8 + a5 * a7) + a6 * a6;
  C[13] = 2 * (a3 * a10 + a4 * a9 + a5 * a8 + a6 * a7);
  C[14] = 2 * (a4 * a10 + a5 * a9 + a6 * a8) + a7 * a7;
  C[15] = 2 * (a5 * a10 + a6 * a9 + a7 * a8);
  C[16] = 2 * (a6 * a10 + a7 * a9) + a8 * a8;
  C[17] = 2 * (a7 * a10 + a8 * a9);
  C[18] = 2 * (a8 * a10) + a9 * a9;
  C[19] = 2 * (a9 * a10);
  C[20] = a10 * a10;
  reduceWide(out);
}

/** a squared n times. */
function sqrN(out: Fe, a: Fe, n: number): void {
  sqr(out, a);
  for (let i = 1; i < n; i++) sqr(out, out);
}

// inv's temporaries, allocated once: x_k = a^(2^k − 1), `a` a copy of the argument.
const [a1, x2, x3, x6, x9, x11, x22, x44, x88, x176, x220, x223, tail] = Array.from({ length: 13 }, fe) as [
  Fe,
  Fe,
  Fe,
  Fe,
  Fe,
  Fe,
  Fe,
  Fe,
  Fe,
  Fe,
  Fe,
  Fe,
  Fe,
];
/** libsecp256k1's addition chain for p − 2 as steps `to := from^(2^squarings) · by` (255 squarings, 15 multiplications). */
const CHAIN: ReadonlyArray<readonly [to: Fe, from: Fe, squarings: number, by: Fe]> = [
  [x2, a1, 1, a1],
  [x3, x2, 1, a1],
  [x6, x3, 3, x3],
  [x9, x6, 3, x3],
  [x11, x9, 2, x2],
  [x22, x11, 11, x11],
  [x44, x22, 22, x22],
  [x88, x44, 44, x44],
  [x176, x88, 88, x88],
  [x220, x176, 44, x44],
  [x223, x220, 3, x3],
  [tail, x223, 23, x22],
  [tail, tail, 5, a1],
  [tail, tail, 3, x2],
  [tail, tail, 2, a1],
];

/** 1/a = a^(p − 2). a ≢ 0. */
export function inv(out: Fe, a: Fe): void {
  a1.set(a);
  for (const [to, from, squarings, by] of CHAIN) {
    sqrN(to, from, squarings);
    mul(to, to, by);
  }
  out.set(tail);
}

/**
 * The unique value in [0, p) as limbs (each < 2^24, top limb < 2^16): bits
 * 256 and up folded down (2^256 ≡ 2^32 + 977) until none is left, then p
 * subtracted if the value is still ≥ p.
 */
export function canonical(out: Fe, a: Fe): void {
  for (let k = 0; k < LIMBS; k++) C[k] = a[k]!;
  reduce(out, LIMBS);
  while (out[10]! >= 65536) {
    const h = Math.floor(out[10]! / 65536);
    for (let k = 0; k < LIMBS; k++) C[k] = out[k]!;
    C[10] = C[10]! - h * 65536;
    C[0] = C[0]! + h * 977;
    C[1] = C[1]! + h * 256; // 2^32 = 2^24 · 2^8
    reduce(out, LIMBS);
  }
  // v ≥ p exactly when v + (2^32 + 977) reaches 2^256; then that sum less 2^256 is v − p.
  for (let k = 0; k < LIMBS; k++) C[k] = out[k]!;
  C[0] = C[0]! + 977;
  C[1] = C[1]! + 256;
  reduce(WRAP, LIMBS);
  if (WRAP[10]! >= 65536) {
    WRAP[10] = WRAP[10]! - 65536;
    out.set(WRAP);
  }
}

export const isZero = (a: Fe): boolean => {
  canonical(SUM, a);
  return SUM.every((limb) => limb === 0);
};

/** The canonical value as big-endian 32 bytes at `offset`. */
export function toBytes(bytes: Uint8Array, offset: number, a: Fe): void {
  canonical(SUM, a);
  for (let k = 0; k < LIMBS; k++) {
    const end = offset + 32 - 3 * k;
    const limb = SUM[k]!;
    bytes[end - 1] = limb & 0xff;
    bytes[end - 2] = (limb >>> 8) & 0xff;
    if (k < 10) bytes[end - 3] = limb >>> 16;
  }
}

/** The canonical value's parity (a compressed key's prefix). */
export const isOdd = (a: Fe): boolean => {
  canonical(SUM, a);
  return (SUM[0]! & 1) === 1;
};

export const toBigInt = (a: Fe): bigint => a.reduceRight((acc, limb) => (acc << 24n) + BigInt(limb), 0n);

/** Any value in [0, 2^264) (more in the top limb, for constants). */
export function fromBigInt(out: Fe, v: bigint): void {
  for (let k = 0; k < LIMBS - 1; k++, v >>= 24n) out[k] = Number(v & 0xffffffn);
  out[LIMBS - 1] = Number(v);
}
