import { secp256k1 } from '@noble/curves/secp256k1.js';
import { fe, fromBigInt } from './secp256k1-field.js';
import { compressed, dbl, DOUBLING, fromAffine, INFINITY, jacobian, madd, toAffine, type Affine, type Jacobian } from './secp256k1-point.js';
import { baseMultiply } from './secp256k1-table.js';

/** The group order n, big-endian: a tweak is valid only below it. */
const N_BYTES = Uint8Array.from(Buffer.from(secp256k1.Point.Fn.ORDER.toString(16), 'hex'));

const belowN = (k: Uint8Array): boolean => {
  for (let i = 0; i < 32; i++) if (k[i] !== N_BYTES[i]) return k[i]! < N_BYTES[i]!;
  return false;
};

const isZeroScalar = (k: Uint8Array): boolean => k.every((b) => b === 0);

/** Children converted to affine together, CHUNK at a time (one inversion each); their Jacobian sums are reused. */
const CHUNK = 256;
const sums = Array.from({ length: CHUNK }, jacobian);

/**
 * The compressed keys tweak·G + parent for each 32-byte tweak (BIP-32's I_L);
 * `undefined` where BIP-32 calls the child invalid (tweak ≥ n, or the sum is
 * the point at infinity): the wallet skips that index.
 */
export function tweakedKeys(parent: Uint8Array, tweaks: readonly Uint8Array[]): Array<Uint8Array | undefined> {
  const P = secp256k1.Point.fromBytes(parent).toAffine();
  const K: Affine = { x: fe(), y: fe() };
  fromBigInt(K.x, P.x);
  fromBigInt(K.y, P.y);
  const keys: Array<Uint8Array | undefined> = new Array(tweaks.length).fill(undefined);
  for (let first = 0; first < tweaks.length; first += CHUNK) {
    // The valid children of this chunk: their indexes in `tweaks`, their sums in `sums`.
    const valid: number[] = [];
    for (let i = first; i < Math.min(first + CHUNK, tweaks.length); i++) if (tweakedSum(sums[valid.length]!, tweaks[i]!, K)) valid.push(i);
    toAffine(sums, valid.length, (v, p) => {
      keys[valid[v]!] = compressed(p);
    });
  }
  return keys;
}

/** sum := tweak·G + K; false if the child is invalid (tweak ≥ n, or the sum is infinity). */
function tweakedSum(sum: Jacobian, tweak: Uint8Array, K: Affine): boolean {
  if (!belowN(tweak)) return false;
  // 0·G + K = K: valid in BIP-32, but the comb needs a nonzero k.
  if (isZeroScalar(tweak)) {
    fromAffine(sum, K);
    return true;
  }
  baseMultiply(sum, tweak);
  const met = madd(sum, sum, K, true);
  if (met === DOUBLING) dbl(sum, sum);
  return met !== INFINITY;
}
