import { secp256k1 } from '@noble/curves/secp256k1.js';
import { canonical, fe, fromBigInt, LIMBS } from './secp256k1-field.js';
import { dbl, fromAffine, jacobian, madd, toAffine, type Affine, type Jacobian } from './secp256k1-point.js';

/**
 * Fixed-base multiplication k·G by a comb of unsigned windows: k's bits cut
 * into WINDOW-bit digits d_j, and k·G = Σ d_j·(2^(WINDOW·j)·G), each term read
 * from a table built once. No doublings at all: one mixed addition per nonzero
 * digit. For 0 < k < n the partial sums never meet ±(the next term) (the sum so
 * far is below 2^(WINDOW·j), the term at least that, and together they stay
 * below n), so the plain addition formula is always right here.
 */
export const WINDOW = 12;
export const DIGITS = Math.ceil(256 / WINDOW);
const PER_WINDOW = (1 << WINDOW) - 1; // d = 1 … 2^WINDOW − 1
/** Coordinates per entry: x then y, 11 limbs each. */
const STRIDE = 2 * LIMBS;

/** Entry (j, d) at ((j · PER_WINDOW) + d − 1) · STRIDE. Canonical limbs are < 2^24: exact in float32, half the memory of float64. */
let table: Float32Array | undefined;

/** Jacobian points reused by build, one chunk at a time. */
const CHUNK = 256;

function build(): Float32Array {
  const out = new Float32Array(DIGITS * PER_WINDOW * STRIDE);
  const G = secp256k1.Point.BASE.toAffine();
  const base: Affine = { x: fe(), y: fe() };
  fromBigInt(base.x, G.x);
  fromBigInt(base.y, G.y);
  const points = Array.from({ length: CHUNK }, jacobian);
  for (let j = 0; j < DIGITS; j++) {
    // d·B for d = 1 … 2^WINDOW − 1, then d = 2^WINDOW: the next window's base; CHUNK at a time.
    for (let first = 1; first <= PER_WINDOW + 1; first += CHUNK) {
      const n = Math.min(CHUNK, PER_WINDOW + 2 - first);
      for (let i = 0; i < n; i++) {
        const d = first + i;
        const p = points[i]!;
        if (d === 1) fromAffine(p, base);
        else if (d === 2) dbl(p, points[0]!);
        else madd(p, points[i === 0 ? CHUNK - 1 : i - 1]!, base);
      }
      toAffine(points, n, (i, a) => {
        const d = first + i;
        // Canonical, so every limb is below 2^24 and exact in float32.
        canonical(a.x, a.x);
        canonical(a.y, a.y);
        if (d <= PER_WINDOW) {
          const at = (j * PER_WINDOW + d - 1) * STRIDE;
          out.set(a.x, at);
          out.set(a.y, at + LIMBS);
        } else {
          base.x.set(a.x);
          base.y.set(a.y);
        }
      });
    }
  }
  return out;
}

/** Digit j of a 32-byte big-endian scalar: bits WINDOW·j … WINDOW·(j + 1) − 1, read from the 3 bytes holding them. */
export function digit(scalar: Uint8Array, j: number): number {
  const bit = WINDOW * j;
  const byte = 31 - (bit >> 3);
  const chunk = scalar[byte]! | ((byte >= 1 ? scalar[byte - 1]! : 0) << 8) | ((byte >= 2 ? scalar[byte - 2]! : 0) << 16);
  return (chunk >>> (bit & 7)) & PER_WINDOW;
}

/** out := d·2^(WINDOW·j)·G (affine, canonical) for a digit 0 < d < 2^WINDOW. */
export function loadEntry(out: Affine, j: number, d: number): void {
  const t = (table ??= build());
  const at = (j * PER_WINDOW + d - 1) * STRIDE;
  for (let i = 0; i < LIMBS; i++) {
    out.x[i] = t[at + i]!;
    out.y[i] = t[at + LIMBS + i]!;
  }
}

const entry: Affine = { x: fe(), y: fe() };

/** out := k·G for a 32-byte big-endian k with 0 < k < n (the caller checks the range). */
export function baseMultiply(out: Jacobian, k: Uint8Array): void {
  let empty = true;
  for (let j = 0; j < DIGITS; j++) {
    const d = digit(k, j);
    if (d === 0) continue;
    loadEntry(entry, j, d);
    if (empty) fromAffine(out, entry);
    else madd(out, out, entry);
    empty = false;
  }
}

/** Builds the table now (about 0.1–0.3 s) rather than on the first derivation. */
export function prepareTable(): void {
  table ??= build();
}
