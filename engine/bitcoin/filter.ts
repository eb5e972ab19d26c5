import { buildKeySet } from '../match/key-set.js';
import { mergeKeys, type FilterSet, type FilterSetData } from '../match/filter-set.js';
import { decodeAddress } from './address.js';
import { bitcoinProbeMatch, scriptKey } from './probe.js';

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
  /** Script hashes of the addresses derived from the stream's xpubs (inside their gap windows), 32 bytes each, end to end. */
  derived: Uint8Array;
  allAddresses: boolean;
}

/** The probe column's key of a mainnet address taken before (its Taproot key was checked then: not again at each compile). */
export const addressKey = (address: string): Uint8Array => scriptKey(decodeAddress(address, { checkTaprootKey: false }).script);

export function compileBitcoinFilter(version: number, wallets: readonly WatchedWallet[], seed?: number): FilterSetData {
  const keys = mergeKeys(
    wallets.flatMap((w) => [
      ...w.addresses.map((a) => [addressKey(a), w.index] as const),
      ...derivedKeys(w.derived).map((k) => [k, w.index] as const),
    ]),
  );
  return {
    version,
    family: 'bitcoin',
    sets: [buildKeySet(32, keys, seed)],
    every: wallets.filter((w) => w.allAddresses).map((w) => w.index),
  };
}

/** Each 32-byte key of a run of them, as a view. */
const derivedKeys = (run: Uint8Array): Uint8Array[] =>
  Array.from({ length: run.length / 32 }, (_, i) => run.subarray(i * 32, (i + 1) * 32));

/** The probe column (engine/bitcoin/probe.ts) against key set 0. */
export const walkBitcoinProbe = (set: FilterSet, probe: Uint8Array): Map<number, number[]> => bitcoinProbeMatch(set.sets[0]!, probe);
