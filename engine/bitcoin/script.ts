import {
  OP_0,
  OP_1,
  OP_16,
  OP_CHECKMULTISIG,
  OP_CHECKSIG,
  OP_DUP,
  OP_EQUAL,
  OP_EQUALVERIFY,
  OP_HASH160,
  OP_PUSHDATA1,
  OP_PUSHDATA2,
  OP_PUSHDATA4,
  OP_RETURN,
} from './opcodes.js';
import { base58check, segwitV0 } from './address-encoding.js';
import { bech32m } from './encoding.js';

/**
 * An output script (scriptPubKey) read as Bitcoin Core's Solver reads it: its
 * type under Core's names, and its mainnet address when it has one. Bare
 * multisig, pay-to-pubkey and nulldata have none (Core ≥ 22 gives them no
 * `address` either).
 */
export type ScriptType =
  | 'pubkeyhash'
  | 'scripthash'
  | 'witness_v0_keyhash'
  | 'witness_v0_scripthash'
  | 'witness_v1_taproot'
  | 'witness_unknown'
  /** Pay-to-anchor (Core ≥ 28): OP_1 <0x4e73>, anyone can spend; its address is bc1pfeessrawgf. */
  | 'anchor'
  | 'multisig'
  | 'pubkey'
  | 'nulldata'
  | 'nonstandard';

export interface ScriptInfo {
  type: ScriptType;
  /** The mainnet address paid to; undefined when the type has no address form. */
  address: string | undefined;
}

/** Core's type of `script`, from its bytes alone (no address is encoded: the probe column calls this per output). */
export function scriptType(s: Uint8Array): ScriptType {
  const n = s.length;
  if (n === 25 && s[0] === OP_DUP && s[1] === OP_HASH160 && s[2] === 20 && s[23] === OP_EQUALVERIFY && s[24] === OP_CHECKSIG)
    return 'pubkeyhash';
  if (n === 23 && s[0] === OP_HASH160 && s[1] === 20 && s[22] === OP_EQUAL) return 'scripthash';
  const version = witnessVersion(s);
  if (version === 0) return n === 22 ? 'witness_v0_keyhash' : n === 34 ? 'witness_v0_scripthash' : 'nonstandard';
  if (version === 1 && n === 34) return 'witness_v1_taproot';
  if (version === 1 && n === 4 && s[2] === 0x4e && s[3] === 0x73) return 'anchor';
  if (version !== undefined) return 'witness_unknown';
  if (n >= 1 && s[0] === OP_RETURN && isPushOnly(s, 1)) return 'nulldata';
  if (n >= 2 && s[n - 1] === OP_CHECKSIG && s[0] === n - 2 && isPubKey(s.subarray(1, n - 1))) return 'pubkey';
  if (isMultisig(s)) return 'multisig';
  return 'nonstandard';
}

/** Whether outputs of this type have an address (what a stream can watch). */
export const hasAddress = (type: ScriptType): boolean =>
  type.startsWith('witness_') || type === 'pubkeyhash' || type === 'scripthash' || type === 'anchor';

/** Type and mainnet address of `script`. */
export function classifyScript(script: Uint8Array): ScriptInfo {
  const type = scriptType(script);
  return { type, address: hasAddress(type) ? addressOf(script, type) : undefined };
}

function addressOf(s: Uint8Array, type: ScriptType): string {
  if (type === 'pubkeyhash') return base58Address(0x00, s.subarray(3, 23));
  if (type === 'scripthash') return base58Address(0x05, s.subarray(2, 22));
  const version = witnessVersion(s)!;
  // BIP-350: version 0 keeps bech32, every later version bech32m.
  return version === 0 ? segwitV0('bc', s.subarray(2)) : bech32m.encode('bc', [version, ...bech32m.toWords(s.subarray(2))], 90);
}

/** A base58check address: the version byte and the 20-byte hash. */
const base58Address = (version: number, hash160: Uint8Array): string => base58check(Uint8Array.of(version, ...hash160));

/** The witness version of a witness program (BIP-141: a version opcode, then one push of 2–40 bytes), else undefined. */
function witnessVersion(s: Uint8Array): number | undefined {
  if (s.length < 4 || s.length > 42 || s[1] !== s.length - 2) return undefined;
  const op = s[0]!;
  if (op === OP_0) return 0;
  return op >= OP_1 && op <= OP_16 ? op - OP_1 + 1 : undefined;
}

/** Core's CPubKey::ValidSize: a compressed key (02/03, 33 bytes) or an uncompressed or hybrid one (04/06/07, 65 bytes). */
function isPubKey(key: Uint8Array): boolean {
  const h = key[0];
  if (h === 2 || h === 3) return key.length === 33;
  return (h === 4 || h === 6 || h === 7) && key.length === 65;
}

/** OP_m <pubkey>… OP_n OP_CHECKMULTISIG with 1 ≤ m ≤ n ≤ 16 keys, as Core's MatchMultisig. */
function isMultisig(s: Uint8Array): boolean {
  const n = s.length;
  if (n < 3 || s[n - 1] !== OP_CHECKMULTISIG) return false;
  const m = smallInt(s[0]!);
  const keys = smallInt(s[n - 2]!);
  if (m === undefined || keys === undefined || m < 1 || keys < m) return false;
  let at = 1;
  let count = 0;
  while (at < n - 2) {
    const len = s[at]!;
    if (at + 1 + len > n - 2 || !isPubKey(s.subarray(at + 1, at + 1 + len))) return false;
    at += 1 + len;
    count++;
  }
  return count === keys;
}

const smallInt = (op: number): number | undefined => (op >= OP_1 && op <= OP_16 ? op - OP_1 + 1 : undefined);

/** Whether the script from `at` holds only pushes (opcodes up to OP_16), each complete. */
function isPushOnly(s: Uint8Array, at: number): boolean {
  const dv = new DataView(s.buffer, s.byteOffset, s.byteLength);
  while (at < s.length) {
    const op = s[at++]!;
    if (op > OP_16) return false;
    let len = 0;
    if (op < OP_PUSHDATA1) len = op;
    else if (op === OP_PUSHDATA1) {
      if (at + 1 > s.length) return false;
      len = s[at]!;
      at += 1;
    } else if (op === OP_PUSHDATA2) {
      if (at + 2 > s.length) return false;
      len = dv.getUint16(at, true);
      at += 2;
    } else if (op === OP_PUSHDATA4) {
      if (at + 4 > s.length) return false;
      len = dv.getUint32(at, true);
      at += 4;
    }
    if (at + len > s.length) return false;
    at += len;
  }
  return true;
}
