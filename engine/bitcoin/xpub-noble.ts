import { normalizeZ } from '@noble/curves/abstract/curve.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToNumberBE } from '@noble/curves/utils.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha512 } from '@noble/hashes/sha2.js';
import { addressOf, type Branch, type ExtendedKey } from './xpub.js';

/**
 * The first derivation, on @noble/curves' BigInt arithmetic (about 2,500
 * addresses/s here): the reference the fast path (secp256k1-derive.ts) is
 * tested against, and bench:bitcoin's baseline (bench/bitcoin.ts). Throws on an invalid
 * child instead of skipping it.
 */
const N = secp256k1.Point.Fn.ORDER;

function nobleChildren(
  parentKey: Uint8Array,
  chainCode: Uint8Array,
  from: number,
  count: number,
): Array<{ chainCode: Uint8Array; publicKey: Uint8Array }> {
  const parent = secp256k1.Point.fromBytes(parentKey);
  // The HMAC keyed with the chain code once; each child hashes its own message from a copy of that state.
  const keyed = hmac.create(sha512, chainCode);
  const data = new Uint8Array(37);
  data.set(parentKey, 0);
  const view = new DataView(data.buffer);
  const out: Array<{ chainCode: Uint8Array; point: InstanceType<typeof secp256k1.Point> }> = [];
  for (let i = from; i < from + count; i++) {
    view.setUint32(33, i);
    const I = keyed.clone().update(data).digest();
    const tweak = bytesToNumberBE(I.subarray(0, 32));
    if (tweak === 0n || tweak >= N) throw new Error(`child ${i} is invalid (BIP-32)`);
    out.push({ chainCode: I.slice(32), point: secp256k1.Point.BASE.multiply(tweak).add(parent) });
  }
  const affine = normalizeZ(
    secp256k1.Point,
    out.map((c) => c.point),
  );
  return out.map((c, k) => ({ chainCode: c.chainCode, publicKey: affine[k]!.toBytes(true) }));
}

export function nobleDerivePublicKeys(
  key: Pick<ExtendedKey, 'publicKey' | 'chainCode'>,
  branch: number,
  from: number,
  count: number,
): Uint8Array[] {
  const [node] = nobleChildren(key.publicKey, key.chainCode, branch, 1);
  return nobleChildren(node!.publicKey, node!.chainCode, from, count).map((c) => c.publicKey);
}

export function nobleDeriveAddresses(key: ExtendedKey, branch: Branch, from: number, count: number): string[] {
  return nobleDerivePublicKeys(key, branch, from, count).map((publicKey) => addressOf(publicKey, key.type));
}
