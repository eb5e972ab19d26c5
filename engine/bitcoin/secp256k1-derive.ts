import { secp256k1 } from '@noble/curves/secp256k1.js';
import { fe, fromBigInt, isZero, sub, type Fe } from './secp256k1-field.js';
import {
  batchInvert,
  affineAdd,
  compressed,
  dbl,
  DOUBLING,
  INFINITY,
  jacobian,
  madd,
  toAffine,
  type Affine,
  type Jacobian,
} from './secp256k1-point.js';
import { baseMultiply, digit, DIGITS, loadEntry } from './secp256k1-table.js';

/** The group order n, big-endian: a tweak is valid only below it. */
const N_BYTES = Uint8Array.from(Buffer.from(secp256k1.Point.Fn.ORDER.toString(16), 'hex'));

const belowN = (k: Uint8Array): boolean => {
  for (let i = 0; i < 32; i++) if (k[i] !== N_BYTES[i]) return k[i]! < N_BYTES[i]!;
  return false;
};

const isZeroScalar = (k: Uint8Array): boolean => k.every((b) => b === 0);

/**
 * Parents' points by their compressed keys: decompressing (a square root in
 * BigInt) cost about as much as a dozen children, and a wallet asks for the
 * same branch nodes' next addresses again and again. Bounded: cleared when full.
 */
const parents = new Map<string, Affine>();
const PARENTS_MAX = 4096;

function affineOf(parent: Uint8Array): Affine {
  const id = Buffer.from(parent.buffer, parent.byteOffset, parent.byteLength).toString('hex');
  let K = parents.get(id);
  if (K === undefined) {
    const P = secp256k1.Point.fromBytes(parent).toAffine();
    K = { x: fe(), y: fe() };
    fromBigInt(K.x, P.x);
    fromBigInt(K.y, P.y);
    if (parents.size >= PARENTS_MAX) parents.clear();
    parents.set(id, K);
  }
  return K;
}

/** Children computed together: CHUNK at a time, their scratch points reused between calls. */
const CHUNK = 2048;
/**
 * From this many children on, the comb adds in affine coordinates, all
 * children's additions of a window sharing one inversion: 5M + 1S per
 * addition instead of a mixed Jacobian addition's 8M + 3S, but one inversion
 * (about 270 multiplications) per window per chunk, which only pays on many.
 */
const AFFINE_FROM = 128;

const sums: Jacobian[] = [];
const accs: Affine[] = [];
const dxs: Fe[] = [];
/** The table entries being added, one per pending addition, so each is loaded once (loading it again for the addition was 5% of the time). */
const entries: Affine[] = [];

/**
 * The compressed keys tweak·G + parent for each 32-byte tweak (BIP-32's I_L);
 * `undefined` where BIP-32 calls the child invalid (tweak ≥ n, or the sum is
 * the point at infinity): the wallet skips that index.
 */
export function tweakedKeys(parent: Uint8Array, tweaks: readonly Uint8Array[]): Array<Uint8Array | undefined> {
  const K = affineOf(parent);
  const keys: Array<Uint8Array | undefined> = new Array(tweaks.length).fill(undefined);
  // Children the comb computes: 0 < tweak < n. Tweak 0 is K itself; tweak ≥ n is invalid.
  const combed: number[] = [];
  tweaks.forEach((tweak, i) => {
    if (isZeroScalar(tweak)) keys[i] = compressed(K);
    else if (belowN(tweak)) combed.push(i);
  });
  for (let first = 0; first < combed.length; first += CHUNK) {
    const chunk = combed.slice(first, first + CHUNK);
    if (chunk.length >= AFFINE_FROM) affineChunk(K, chunk, tweaks, keys);
    else jacobianChunk(K, chunk, tweaks, keys);
  }
  return keys;
}

/** keys[i] for i in `chunk`: each comb in Jacobian coordinates, then all converted to affine with one inversion. */
function jacobianChunk(K: Affine, chunk: readonly number[], tweaks: readonly Uint8Array[], keys: Array<Uint8Array | undefined>): void {
  const valid: number[] = [];
  for (const i of chunk) {
    while (sums.length <= valid.length) sums.push(jacobian());
    if (jacobianSum(sums[valid.length]!, tweaks[i]!, K)) valid.push(i);
  }
  toAffine(sums, valid.length, (v, p) => {
    keys[valid[v]!] = compressed(p);
  });
}

/** sum := tweak·G + K for 0 < tweak < n; false if that is the point at infinity. */
function jacobianSum(sum: Jacobian, tweak: Uint8Array, K: Affine): boolean {
  baseMultiply(sum, tweak);
  const met = madd(sum, sum, K, true);
  if (met === DOUBLING) dbl(sum, sum);
  return met !== INFINITY;
}

/**
 * keys[i] for i in `chunk`: the comb run window by window over all children
 * at once in affine coordinates, each window's additions sharing one
 * inversion, then K added the same way. A child whose sum meets ±K (x equal:
 * a doubling or infinity, never in practice) goes the Jacobian way instead.
 */
function affineChunk(K: Affine, chunk: readonly number[], tweaks: readonly Uint8Array[], keys: Array<Uint8Array | undefined>): void {
  while (accs.length < chunk.length) accs.push({ x: fe(), y: fe() }), dxs.push(fe()), entries.push({ x: fe(), y: fe() });
  const started = new Uint8Array(chunk.length);
  const adding: number[] = []; // adding[0 … n − 1]: slots in accs whose addition is pending, their q.x − p.x in dxs
  for (let j = 0; j < DIGITS; j++) {
    let n = 0;
    for (let c = 0; c < chunk.length; c++) {
      const d = digit(tweaks[chunk[c]!]!, j);
      if (d === 0) continue;
      if (started[c] === 0) {
        loadEntry(accs[c]!, j, d);
        started[c] = 1;
        continue;
      }
      loadEntry(entries[n]!, j, d);
      sub(dxs[n]!, entries[n]!.x, accs[c]!.x);
      adding[n++] = c;
    }
    batchInvert(dxs, n, (k, inverse) => affineAdd(accs[adding[k]!]!, entries[k]!, inverse));
  }
  let n = 0;
  const odd: number[] = [];
  for (let c = 0; c < chunk.length; c++) {
    sub(dxs[n]!, K.x, accs[c]!.x);
    if (isZero(dxs[n]!)) odd.push(chunk[c]!);
    else adding[n++] = c;
  }
  batchInvert(dxs, n, (k, inverse) => {
    const c = adding[k]!;
    affineAdd(accs[c]!, K, inverse);
    keys[chunk[c]!] = compressed(accs[c]!);
  });
  jacobianChunk(K, odd, tweaks, keys);
}
