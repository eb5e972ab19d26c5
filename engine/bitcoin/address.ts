import { schnorr } from '@noble/curves/secp256k1.js';
import { bytesToNumberBE } from '@noble/curves/utils.js';
import { base58checkDecode } from './address-encoding.js';
import { OP_0, OP_1, OP_CHECKSIG, OP_DUP, OP_EQUAL, OP_EQUALVERIFY, OP_HASH160 } from './opcodes.js';
import { bech32, bech32m } from './encoding.js';

/**
 * Bitcoin mainnet addresses as a stream takes them: P2PKH `1…`, P2SH `3…`,
 * P2WPKH / P2WSH `bc1q…` (bech32, BIP-173), Taproot `bc1p…` (bech32m, BIP-350),
 * checksums verified. Each is read into the output script it pays to: what a
 * block's outputs and spent outputs are matched against.
 */
export type AddressType = 'p2pkh' | 'p2sh' | 'p2wpkh' | 'p2wsh' | 'p2tr';

export interface DecodedAddress {
  /** As given, lower-cased for bech32 (its one canonical form). */
  address: string;
  type: AddressType;
  /** The scriptPubKey it pays to. */
  script: Uint8Array;
}

export class AddressError extends Error {
  override name = 'AddressError';
}

/**
 * Reads a mainnet address; anything else throws an AddressError saying what is wrong (testnet, checksum,
 * unknown kind). `checkTaprootKey` false skips the curve check of a Taproot key (~80 µs, most of a
 * decode): for addresses checked when they were taken.
 */
export function decodeAddress(text: string, opts: { checkTaprootKey?: boolean } = {}): DecodedAddress {
  const address = text.trim();
  const lower = address.toLowerCase();
  if (/^(tb1|bcrt1)/.test(lower) || /^[mn2]/.test(address))
    throw new AddressError(`${address} is a testnet address: only Bitcoin mainnet is followed`);
  if (lower.startsWith('bc1')) return decodeSegwit(address, opts.checkTaprootKey !== false);
  const bytes = base58checkDecode(address);
  if (bytes === undefined) throw new AddressError(`${address} is not a Bitcoin address: bad base58 or checksum`);
  if (bytes.length !== 21) throw new AddressError(`${address} is not a Bitcoin address: ${bytes.length - 1}-byte payload`);
  const hash = bytes.subarray(1);
  if (bytes[0] === 0x00)
    return { address, type: 'p2pkh', script: Uint8Array.of(OP_DUP, OP_HASH160, 20, ...hash, OP_EQUALVERIFY, OP_CHECKSIG) };
  if (bytes[0] === 0x05) return { address, type: 'p2sh', script: Uint8Array.of(OP_HASH160, 20, ...hash, OP_EQUAL) };
  throw new AddressError(`${address} is not a Bitcoin mainnet address (version byte ${bytes[0]})`);
}

function decodeSegwit(address: string, checkKey: boolean): DecodedAddress {
  if (address !== address.toLowerCase() && address !== address.toUpperCase())
    throw new AddressError(`${address} mixes upper and lower case`);
  const lower = address.toLowerCase() as `${string}1${string}`;
  // Version 0 is bech32, versions 1–16 bech32m: each checksum is tried for what it may carry.
  const decoded = tryDecode(bech32, lower) ?? tryDecode(bech32m, lower);
  if (decoded === undefined) throw new AddressError(`${address} is not a Bitcoin address: bad bech32 checksum`);
  const { words, m } = decoded;
  const version = words[0]!;
  if (version > 16) throw new AddressError(`${address} has witness version ${version}`);
  if ((version === 0) === m) throw new AddressError(`${address} uses the wrong checksum for witness version ${version} (BIP-350)`);
  let program: Uint8Array;
  try {
    program = bech32.fromWords(words.slice(1));
  } catch {
    throw new AddressError(`${address} is not a Bitcoin address: bad padding`);
  }
  if (program.length < 2 || program.length > 40) throw new AddressError(`${address} has a ${program.length}-byte witness program`);
  if (version === 0 && program.length !== 20 && program.length !== 32)
    throw new AddressError(`${address} has a ${program.length}-byte version 0 program (20 or 32)`);
  const script = Uint8Array.of(version === 0 ? OP_0 : OP_1 + version - 1, program.length, ...program);
  if (version === 0) return { address: lower, type: program.length === 20 ? 'p2wpkh' : 'p2wsh', script };
  if (version === 1 && program.length === 32) {
    // A Taproot output key is an x coordinate on the curve (BIP-341); anything else can never be spent.
    try {
      if (checkKey) schnorr.utils.lift_x(bytesToNumberBE(program));
    } catch {
      throw new AddressError(`${address} is not a Taproot address: its key is not a point of secp256k1`);
    }
    return { address: lower, type: 'p2tr', script };
  }
  throw new AddressError(`${address} is a witness version ${version} address with no defined output type`);
}

function tryDecode(codec: typeof bech32, text: `${string}1${string}`): { words: number[]; m: boolean } | undefined {
  try {
    const { prefix, words } = codec.decode(text, 90);
    if (prefix !== 'bc') return undefined;
    return { words: [...words], m: codec === bech32m };
  } catch {
    return undefined;
  }
}
