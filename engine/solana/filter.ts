import type { FilterSet, FilterSetData } from '../match/filter-set.js';
import { buildKeySet, type KeySetInput } from '../match/key-set.js';
import type { SetData } from '../match/layered.js';
import { addressKeySet, addressesIn, type AddressKey } from '../match/watched-keys.js';
import { decodeKey } from './key.js';
import { solanaProbeMatch } from './probe.js';

/**
 * Solana's filter set: three sets of 32-byte keys, in SolProbeKind order (the
 * probe walker picks each entry's set by its kind): the streams' watched
 * addresses, their programIds, their mintAddresses. A stream's selectors
 * combine as OR. allAddresses streams want every transaction but votes (the
 * webhook builder adds those to what their keys matched).
 */
export interface WatchedSolanaStream {
  index: number;
  /** Watched addresses (base58, as stored). */
  addresses: readonly string[];
  programIds: readonly string[];
  mintAddresses: readonly string[];
  allAddresses: boolean;
}

/** A stored address (base58, as given) as key set 0's key. */
export const solanaAddressKey: AddressKey = { width: 32, write: (address, out, at) => out.set(decodeKey(address), at) };

/** The filter set of streams whose address set is compiled (`addresses`: engine/match/watched-keys.ts): their programs and mints beside it. */
export function solanaFilterSet(
  version: number,
  entries: ReadonlyArray<Omit<WatchedSolanaStream, 'addresses'>>,
  addresses: SetData,
  seed?: number,
): FilterSetData {
  const set = (of: (e: Omit<WatchedSolanaStream, 'addresses'>) => readonly string[]) => buildKeySet(32, mergeTexts(entries, of), seed);
  return {
    version,
    family: 'solana',
    sets: [addresses, set((e) => e.programIds), set((e) => e.mintAddresses)],
    every: entries.filter((e) => e.allAddresses).map((e) => e.index),
  };
}

export function compileSolanaFilter(version: number, entries: readonly WatchedSolanaStream[], seed = 0x9e3779b9): FilterSetData {
  const byStream = new Map(entries.map((e) => [String(e.index), e.addresses]));
  const ids = entries.map((e) => ({ index: e.index, id: String(e.index), derived: new Uint8Array(0) }));
  return solanaFilterSet(version, entries, addressKeySet(solanaAddressKey, ids, addressesIn(byStream), seed), seed);
}

/** The probe column (engine/solana/probe.ts) against the three key sets; refs are transaction indexes. */
export const walkSolanaProbe = (set: FilterSet, probe: Uint8Array): Map<number, number[]> => solanaProbeMatch(set.sets, probe);

/**
 * mergeKeys (engine/match/filter-set.ts) on the base58 text, each distinct key decoded once: a 32-byte key has
 * one base58 text, so the text tells keys apart as well as their bytes, without a string made of each key's bytes
 * (a watchlist of a million addresses compiled in a third of the time).
 */
function mergeTexts<E extends { index: number }>(entries: readonly E[], of: (e: E) => readonly string[]): KeySetInput[] {
  const byText = new Map<string, number[]>();
  for (const e of entries) {
    for (const text of of(e)) {
      const streams = byText.get(text);
      if (streams === undefined) byText.set(text, [e.index]);
      // A stream's keys come together: listed twice, it is the last.
      else if (streams[streams.length - 1] !== e.index) streams.push(e.index);
    }
  }
  return Array.from(byText, ([text, streams]) => ({ key: decodeKey(text), streams }));
}
