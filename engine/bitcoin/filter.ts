import { sha256 } from '@noble/hashes/sha2.js';
import { buildKeySet } from '../match/key-set.js';
import { addRef, mergeKeys, type FilterSet, type FilterSetData } from '../match/filter-set.js';
import { decodeAddress } from './address.js';

/**
 * Bitcoin's filter set: key set 0 holds the script hash (sha256 of the
 * scriptPubKey, Electrum's form: uniform bytes, and a P2PKH and a P2WPKH of one
 * key stay apart) of every watched address and every address derived from a
 * stream's xpubs; allAddresses streams want every transaction of a block.
 */
export interface WatchedWallet {
  index: number;
  /** Watched addresses as stored (base58 as given, bech32 lower-case). */
  addresses: readonly string[];
  /** Script hashes of the addresses derived from the stream's xpubs (inside their gap windows). */
  derived: readonly Uint8Array[];
  allAddresses: boolean;
}

/** The probe column's key of an output script. */
export const scriptKey = (script: Uint8Array): Uint8Array => sha256(script);

/** The probe column's key of a mainnet address. */
export const addressKey = (address: string): Uint8Array => scriptKey(decodeAddress(address).script);

export function compileBitcoinFilter(version: number, wallets: readonly WatchedWallet[], seed?: number): FilterSetData {
  const keys = mergeKeys(wallets.flatMap((w) => [...w.addresses.map((a) => [addressKey(a), w.index] as const), ...w.derived.map((k) => [k, w.index] as const)]));
  return { version, family: 'bitcoin', sets: [buildKeySet(32, keys, seed)], every: wallets.filter((w) => w.allAddresses).map((w) => w.index) };
}

/** The probe column (engine/bitcoin/probe.ts): u8 version | u32 count | count × 32-byte key | count × u32 ref. */
export function walkBitcoinProbe(set: FilterSet, probe: Uint8Array): Map<number, number[]> {
  const out = new Map<number, number[]>();
  const keys = set.sets[0]!;
  if (keys.size === 0) return out;
  const dv = new DataView(probe.buffer, probe.byteOffset, probe.byteLength);
  const count = dv.getUint32(1, true);
  const refsAt = 5 + count * 32;
  for (let i = 0; i < count; i++) {
    const hit = keys.find(dv, 5 + i * 32);
    if (hit !== 0) addRef(out, keys.postings, hit, dv.getUint32(refsAt + i * 4, true));
  }
  return out;
}
