import { ed25519 } from '@noble/curves/ed25519.js';
import { sha3_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import bs58 from 'bs58';
import { getAddress, isHex, recoverMessageAddress } from 'viem/utils';

/** Signature checks per chain family. Each returns false for a well-formed signature that does not verify. */

export class SignatureFormatError extends Error {
  override name = 'SignatureFormatError';
}

/** EIP-191 personal_sign by `address` (v as 27/28 or 0/1). */
export async function verifyEvm(message: string, signature: string, address: string): Promise<boolean> {
  if (!isHex(signature) || signature.length !== 132)
    throw new SignatureFormatError('an EIP-191 signature is 65 bytes of hex (0x and 130 digits)');
  const v = parseInt(signature.slice(130), 16);
  if (![0, 1, 27, 28].includes(v)) throw new SignatureFormatError('the recovery byte v must be 27, 28, 0 or 1');
  const normalized = `${signature.slice(0, 130)}${(v < 27 ? v + 27 : v).toString(16)}` as `0x${string}`;
  try {
    return getAddress(await recoverMessageAddress({ message, signature: normalized })) === getAddress(address);
  } catch {
    return false; // r or s out of range: no signer can be recovered
  }
}

/** The 32-byte ed25519 key of a Solana address (base58), or undefined if it is not one. */
export function solanaPublicKey(address: string): Uint8Array | undefined {
  // Base58 decoding is quadratic in length: check the shape of a 32-byte key first.
  if (!/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(address)) return undefined;
  try {
    const key = bs58.decode(address);
    return key.length === 32 ? key : undefined;
  } catch {
    return undefined;
  }
}

/** ed25519 over the UTF-8 bytes of the message; signature in base58. */
export function verifySolana(message: string, signatureBase58: string, address: string): boolean {
  let sig: Uint8Array;
  if (!/^[1-9A-HJ-NP-Za-km-z]{64,90}$/.test(signatureBase58)) throw new SignatureFormatError('a Solana signature is 64 bytes in base58');
  try {
    sig = bs58.decode(signatureBase58);
  } catch {
    throw new SignatureFormatError('a Solana signature is base58');
  }
  if (sig.length !== 64) throw new SignatureFormatError('a Solana signature is 64 bytes');
  const key = solanaPublicKey(address);
  return key !== undefined && safeVerify(sig, utf8ToBytes(message), key);
}

/** The legacy Ed25519 Aptos account address of a public key: sha3-256(publicKey ‖ 0x00). */
export function aptosAddressOf(publicKeyHex: string): string {
  return `0x${bytesToHex(sha3_256(concatBytes(hexToBytes(publicKeyHex.replace(/^0x/, '')), new Uint8Array([0]))))}`;
}

/** What an Aptos wallet may have wrapped around the message when signing it. */
export interface AptosContext {
  address: string;
  nonce: string;
  /** The dapp origin a wallet writes as `application:` (the message URI's origin). */
  application: string;
  chainId: number;
}

const SIWA_PREFIX = sha3_256(utf8ToBytes('SIGN_IN_WITH_APTOS::'));

/**
 * The byte strings an Aptos wallet signs for `message`: the message itself; the
 * signMessage full message `APTOS\n[address: …\n][application: …\n][chainId: …\n]message: …\nnonce: …`
 * with any of its optional lines; and the AIP-116 domain-separated form.
 */
export function aptosSignedForms(message: string, ctx: AptosContext): Uint8Array[] {
  const forms = [utf8ToBytes(message), concatBytes(SIWA_PREFIX, utf8ToBytes(message))];
  for (let mask = 0; mask < 8; mask++) {
    const lines = ['APTOS'];
    if (mask & 1) lines.push(`address: ${ctx.address}`);
    if (mask & 2) lines.push(`application: ${ctx.application}`);
    if (mask & 4) lines.push(`chainId: ${ctx.chainId}`);
    lines.push(`message: ${message}`, `nonce: ${ctx.nonce}`);
    forms.push(utf8ToBytes(lines.join('\n')));
  }
  return forms;
}

/** ed25519 by `publicKeyHex` over the message or one of its wallet wrappings; signature hex. */
export function verifyAptos(message: string, signatureHex: string, publicKeyHex: string, ctx: AptosContext): boolean {
  if (!/^(0x)?[0-9a-fA-F]{128}$/.test(signatureHex)) throw new SignatureFormatError('an Aptos signature is 64 bytes of hex');
  const sig = hexToBytes(signatureHex.replace(/^0x/, ''));
  const key = hexToBytes(publicKeyHex.replace(/^0x/, ''));
  return aptosSignedForms(message, ctx).some((bytes) => safeVerify(sig, bytes, key));
}

function safeVerify(sig: Uint8Array, msg: Uint8Array, key: Uint8Array): boolean {
  try {
    return ed25519.verify(sig, msg, key);
  } catch {
    return false; // a point that is not on the curve verifies nothing
  }
}
