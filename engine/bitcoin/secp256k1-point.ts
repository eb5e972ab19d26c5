import { add, fe, inv, isOdd, isZero, mul, mulSmall, sqr, sub, toBytes, type Fe } from './secp256k1-field.js';

/**
 * secp256k1 points on the field of secp256k1-field.ts: Jacobian (X, Y, Z) for
 * sums (x = X/Z², y = Y/Z³, no inversion per addition), affine (x, y) for the
 * added points (a table entry, the parent key), and a batch conversion back
 * to affine with one inversion for all (Montgomery's trick).
 */
export interface Jacobian {
  x: Fe;
  y: Fe;
  z: Fe;
}

export interface Affine {
  x: Fe;
  y: Fe;
}

export const jacobian = (): Jacobian => ({ x: fe(), y: fe(), z: fe() });

/** Jacobian p := affine q, Z = 1. */
export function fromAffine(p: Jacobian, q: Affine): void {
  p.x.set(q.x);
  p.y.set(q.y);
  p.z.fill(0);
  p.z[0] = 1;
}

/** What an addition met: `ADDED` the sum, or the two special cases the formula cannot compute. */
const ADDED = 0;
export const DOUBLING = 1; // p = q: use dbl
export const INFINITY = 2; // p = −q

// Temporaries of madd and dbl (single-threaded, never re-entered).
const zz = fe(),
  u2 = fe(),
  s2 = fe(),
  h = fe(),
  r = fe(),
  hh = fe(),
  hhh = fe(),
  v = fe(),
  t = fe();

/**
 * out := p + q (madd-2004-hmv: 8M + 3S); out may be p. Assumes p ≠ ±q unless
 * `check`: then p = ±q is detected (H ≡ 0) and reported, `out` untouched.
 */
export function madd(out: Jacobian, p: Jacobian, q: Affine, check = false): number {
  sqr(zz, p.z);
  mul(u2, q.x, zz);
  mul(t, p.z, zz);
  mul(s2, q.y, t);
  sub(h, u2, p.x);
  sub(r, s2, p.y);
  if (check && isZero(h)) return isZero(r) ? DOUBLING : INFINITY;
  sqr(hh, h);
  mul(hhh, h, hh);
  mul(v, p.x, hh);
  mul(t, p.y, hhh);
  mul(out.z, p.z, h);
  sqr(out.x, r);
  sub(out.x, out.x, hhh);
  sub(out.x, out.x, v);
  sub(out.x, out.x, v);
  sub(v, v, out.x);
  mul(out.y, r, v);
  sub(out.y, out.y, t);
  return ADDED;
}

/** out := 2p (dbl-2009-l, a = 0); out may be p. */
export function dbl(out: Jacobian, p: Jacobian): void {
  const a = zz,
    b = u2,
    c = s2,
    d = h,
    e = r;
  sqr(a, p.x);
  sqr(b, p.y);
  sqr(c, b);
  add(d, p.x, b);
  sqr(d, d);
  sub(d, d, a);
  sub(d, d, c);
  add(d, d, d); // D = 2((X + B)² − A − C)
  mulSmall(e, a, 3);
  mul(out.z, p.y, p.z);
  add(out.z, out.z, out.z);
  sqr(out.x, e);
  sub(out.x, out.x, d);
  sub(out.x, out.x, d);
  sub(d, d, out.x);
  mul(out.y, e, d);
  mulSmall(c, c, 8);
  sub(out.y, out.y, c);
}

/** Prefix products of batchInvert, kept between calls (allocating typed arrays dominated the profile). */
const prefix: Fe[] = [];
const rest = fe(),
  inverse = fe();

/**
 * The inverses of values[0 … n − 1] (none ≡ 0) with one field inversion for
 * them all (Montgomery's trick: 3 multiplications each); `each` gets them from
 * n − 1 down to 0 in a scratch element valid only during the call, and must
 * not change values[0 … i].
 */
export function batchInvert(values: readonly Fe[], n: number, each: (i: number, inverse: Fe) => void): void {
  if (n === 0) return;
  while (prefix.length < n) prefix.push(fe());
  // prefix[i] = v_0 · … · v_i
  prefix[0]!.set(values[0]!);
  for (let i = 1; i < n; i++) mul(prefix[i]!, prefix[i - 1]!, values[i]!);
  inv(rest, prefix[n - 1]!); // 1 / (v_0 · … · v_i), walking i down
  for (let i = n - 1; i >= 0; i--) {
    if (i > 0) {
      mul(inverse, rest, prefix[i - 1]!);
      mul(rest, rest, values[i]!);
    } else inverse.set(rest);
    each(i, inverse);
  }
}

const zInv2 = fe();
const affine: Affine = { x: fe(), y: fe() };
const zs: Fe[] = [];

/** Each of points[0 … n − 1] (none at infinity: Z ≢ 0) in affine form, one inversion for all; `each` gets a scratch point, valid only during the call. */
export function toAffine(points: readonly Jacobian[], n: number, each: (i: number, p: Affine) => void): void {
  zs.length = 0;
  for (let i = 0; i < n; i++) zs.push(points[i]!.z);
  batchInvert(zs, n, (i, zInv) => {
    const p = points[i]!;
    sqr(zInv2, zInv);
    mul(affine.x, p.x, zInv2);
    mul(zInv2, zInv2, zInv);
    mul(affine.y, p.y, zInv2);
    each(i, affine);
  });
}

const lambda = fe(),
  x3 = fe(),
  dy = fe();

/** p := p + q in affine coordinates given 1/(q.x − p.x) (p ≠ ±q): λ = (q.y − p.y)/(q.x − p.x), x = λ² − p.x − q.x, y = λ(p.x − x) − p.y. */
export function affineAdd(p: Affine, q: Affine, inverseDx: Fe): void {
  sub(dy, q.y, p.y);
  mul(lambda, dy, inverseDx);
  sqr(x3, lambda);
  sub(x3, x3, p.x);
  sub(x3, x3, q.x);
  sub(dy, p.x, x3);
  mul(dy, lambda, dy);
  sub(p.y, dy, p.y);
  p.x.set(x3);
}

/** SEC1 compressed encoding: 02/03 (y's parity) ‖ x. */
export function compressed(p: Affine): Uint8Array {
  const bytes = new Uint8Array(33);
  bytes[0] = isOdd(p.y) ? 3 : 2;
  toBytes(bytes, 1, p.x);
  return bytes;
}
