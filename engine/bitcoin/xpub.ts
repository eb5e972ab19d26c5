import { createHmac } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { tweakedKeys } from './secp256k1-derive.js';
import { base58check, base58checkDecode, segwitV0 } from './address-encoding.js';
import { hash160Short as hash160 } from './xpub-hash.js';

/**
 * Extended public keys (BIP-32) of a mainnet wallet and the addresses they
 * derive: receive m/…/0/i and change m/…/1/i, of the script type the key's
 * version names (BIP-44 xpub: P2PKH, BIP-49 ypub: P2SH-P2WPKH, BIP-84 zpub:
 * P2WPKH). Only public derivation: a private key is refused, never read.
 */
export type ScriptType = 'p2pkh' | 'p2sh-p2wpkh' | 'p2wpkh';

export interface ExtendedKey {
  /** As given. */
  text: string;
  type: ScriptType;
  depth: number;
  /** Its index under its parent (≥ 2^31: hardened), as the key says. */
  childNumber: number;
  chainCode: Uint8Array;
  /** Compressed public key (33 bytes). */
  publicKey: Uint8Array;
}

export class ExtendedKeyError extends Error {
  override name = 'ExtendedKeyError';
}

/** SLIP-132 versions: mainnet public keys only (the others are named in the refusal). */
const PUBLIC: ReadonlyMap<number, ScriptType> = new Map([
  [0x0488b21e, 'p2pkh'], // xpub
  [0x049d7cb2, 'p2sh-p2wpkh'], // ypub
  [0x04b24746, 'p2wpkh'], // zpub
]);
const REFUSED: ReadonlyMap<number, string> = new Map([
  [0x043587cf, 'a testnet key (tpub)'],
  [0x044a5262, 'a testnet key (upub)'],
  [0x045f1cf6, 'a testnet key (vpub)'],
  [0x0488ade4, 'a private key (xprv)'],
  [0x049d7878, 'a private key (yprv)'],
  [0x04b2430c, 'a private key (zprv)'],
  [0x04358394, 'a private key (tprv)'],
  [0x044a4e28, 'a private key (uprv)'],
  [0x045f18bc, 'a private key (vprv)'],
]);

/** Reads an xpub, ypub or zpub; anything else (bad checksum, testnet, private, not a curve point) throws an ExtendedKeyError saying what it is. */
export function parseExtendedKey(text: string): ExtendedKey {
  const bytes = base58checkDecode(text.trim());
  if (bytes === undefined) throw new ExtendedKeyError('not an extended public key: bad base58 or checksum');
  if (bytes.length !== 78) throw new ExtendedKeyError(`not an extended public key: ${bytes.length} bytes, not 78`);
  const version = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0);
  const type = PUBLIC.get(version);
  if (type === undefined)
    throw new ExtendedKeyError(
      `${REFUSED.get(version) ?? `an unknown version 0x${version.toString(16).padStart(8, '0')}`}: give a mainnet xpub, ypub or zpub`,
    );
  const publicKey = bytes.slice(45, 78);
  try {
    secp256k1.Point.fromBytes(publicKey).assertValidity();
  } catch {
    throw new ExtendedKeyError('not an extended public key: its key is not a point of secp256k1');
  }
  return {
    text: text.trim(),
    type,
    depth: bytes[4]!,
    childNumber: new DataView(bytes.buffer, bytes.byteOffset).getUint32(9),
    chainCode: bytes.slice(13, 45),
    publicKey,
  };
}

/**
 * CKDpub (BIP-32) for the non-hardened children `from` … `from + count − 1` of
 * a parent: I = HMAC-SHA512(chainCode, K ‖ ser32(i)), child key I_L·G + K
 * (secp256k1-derive.ts), chain code I_R. An invalid child (BIP-32: I_L ≥ n or
 * the point at infinity, probability < 2^-127) is `undefined`: skip that index.
 */
function children(
  parentKey: Uint8Array,
  chainCode: Uint8Array,
  from: number,
  count: number,
): { I: Uint8Array[]; publicKeys: Array<Uint8Array | undefined> } {
  if (from < 0 || from + count > 0x80000000) throw new RangeError('non-hardened indexes are 0 … 2^31 − 1');
  const data = new Uint8Array(37);
  data.set(parentKey, 0);
  const view = new DataView(data.buffer);
  // node:crypto's HMAC: a third of noble's time (measured 3.5 µs against 9.5 µs).
  const I = Array.from({ length: count }, (_, k) => {
    view.setUint32(33, from + k);
    return createHmac('sha512', chainCode).update(data).digest();
  });
  return {
    I,
    publicKeys: tweakedKeys(
      parentKey,
      I.map((i) => i.subarray(0, 32)),
    ),
  };
}

/** prefix ‖ bytes (without spreading: this runs for every address). */
const prefixed = (prefix: readonly number[], bytes: Uint8Array): Uint8Array => {
  const out = new Uint8Array(prefix.length + bytes.length);
  out.set(prefix);
  out.set(bytes, prefix.length);
  return out;
};

/** The address of a compressed public key in a script type. */
export function addressOf(publicKey: Uint8Array, type: ScriptType): string {
  const h = hash160(publicKey);
  if (type === 'p2wpkh') return segwitV0('bc', h);
  if (type === 'p2pkh') return base58check(prefixed([0x00], h));
  // P2SH-P2WPKH: the script hash of the witness program 0 <20-byte key hash>.
  return base58check(prefixed([0x05], hash160(prefixed([0x00, 0x14], h))));
}

/** A wallet's branch: receive (0) or change (1). */
export type Branch = 0 | 1;

/** Branch nodes (…/0, …/1) by key: a wallet extends the same two branches call after call. */
const nodes = new WeakMap<object, Map<number, { publicKey: Uint8Array; chainCode: Uint8Array }>>();

function branchNode(key: Pick<ExtendedKey, 'publicKey' | 'chainCode'>, branch: number): { publicKey: Uint8Array; chainCode: Uint8Array } {
  let byBranch = nodes.get(key);
  if (byBranch === undefined) nodes.set(key, (byBranch = new Map()));
  let node = byBranch.get(branch);
  if (node === undefined) {
    const { I, publicKeys } = children(key.publicKey, key.chainCode, branch, 1);
    if (publicKeys[0] === undefined) throw new ExtendedKeyError(`branch ${branch} is invalid (BIP-32): this key has no such branch`);
    byBranch.set(branch, (node = { publicKey: publicKeys[0], chainCode: I[0]!.subarray(32) }));
  }
  return node;
}

/**
 * The public keys of …/branch/from … …/branch/(from + count − 1) under a key (non-hardened steps only).
 * An index BIP-32 calls invalid (probability < 2^-127) throws an ExtendedKeyError naming it; the batch
 * beneath (tweakedKeys) reports it as undefined, for a caller that would rather skip it.
 */
export function derivePublicKeys(
  key: Pick<ExtendedKey, 'publicKey' | 'chainCode'>,
  branch: number,
  from: number,
  count: number,
): Uint8Array[] {
  const node = branchNode(key, branch);
  return children(node.publicKey, node.chainCode, from, count).publicKeys.map((publicKey, k) => {
    if (publicKey === undefined) throw new ExtendedKeyError(`child ${from + k} is invalid (BIP-32): skip it`);
    return publicKey;
  });
}

/** deriveAddresses' slice: the affine chunk of secp256k1-derive.ts. */
const SLICE = 2048;

/**
 * The addresses `from` … `from + count − 1` of a branch (…/branch/i) of an extended key, in order. The
 * branch's node is derived once per call; callers extending a gap ask for the next range.
 */
export function deriveAddresses(key: ExtendedKey, branch: Branch, from: number, count: number): string[] {
  const addresses: string[] = [];
  // A slice at a time, so that the keys and HMAC outputs die young (kept for 20,000 at once, the garbage collector copied them).
  for (let k = 0; k < count; k += SLICE) {
    for (const publicKey of derivePublicKeys(key, branch, from + k, Math.min(SLICE, count - k)))
      addresses.push(addressOf(publicKey, key.type));
  }
  return addresses;
}
