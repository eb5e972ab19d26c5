import type { SetData } from '../match/layered.js';
import type { FilterSet, FilterSetData } from '../match/filter-set.js';
import { addressKeySet, addressesIn, type AddressKey } from '../match/watched-keys.js';
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

/** A stored address as key set 0's key (its script hash). */
export const bitcoinAddressKey: AddressKey = { width: 32, write: (address, out, at) => out.set(addressKey(address), at) };

/** The filter set of wallets whose keys (addresses and derived ones) are compiled (`keys`: engine/match/watched-keys.ts). */
export const bitcoinFilterSet = (
  version: number,
  wallets: ReadonlyArray<Pick<WatchedWallet, 'index' | 'allAddresses'>>,
  keys: SetData,
): FilterSetData => ({
  version,
  family: 'bitcoin',
  sets: [keys],
  every: wallets.filter((w) => w.allAddresses).map((w) => w.index),
});

export function compileBitcoinFilter(version: number, wallets: readonly WatchedWallet[], seed = 0x9e3779b9): FilterSetData {
  const byStream = new Map(wallets.map((w) => [String(w.index), w.addresses]));
  const entries = wallets.map((w) => ({ index: w.index, id: String(w.index), derived: w.derived }));
  return bitcoinFilterSet(version, wallets, addressKeySet(bitcoinAddressKey, entries, addressesIn(byStream), seed));
}

/** The probe column (engine/bitcoin/probe.ts) against key set 0. */
export const walkBitcoinProbe = (set: FilterSet, probe: Uint8Array): Map<number, number[]> => bitcoinProbeMatch(set.sets[0]!, probe);
