import type { FilterSet, FilterSetData } from '../match/filter-set.js';
import { buildKeySet, type KeySetInput } from '../match/key-set.js';
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

export function compileSolanaFilter(version: number, entries: readonly WatchedSolanaStream[], seed?: number): FilterSetData {
  const set = (of: (e: WatchedSolanaStream) => readonly string[]) => buildKeySet(32, mergeTexts(entries, of), seed);
  return {
    version,
    family: 'solana',
    sets: [set((e) => e.addresses), set((e) => e.programIds), set((e) => e.mintAddresses)],
    every: entries.filter((e) => e.allAddresses).map((e) => e.index),
  };
}

/** The probe column (engine/solana/probe.ts) against the three key sets; refs are transaction indexes. */
export const walkSolanaProbe = (set: FilterSet, probe: Uint8Array): Map<number, number[]> => solanaProbeMatch(set.sets, probe);

/**
 * mergeKeys (engine/match/filter-set.ts) on the base58 text, each distinct key decoded once: a 32-byte key has
 * one base58 text, so the text tells keys apart as well as their bytes, without a string made of each key's bytes
 * (a watchlist of a million addresses compiled in a third of the time).
 */
function mergeTexts(entries: readonly WatchedSolanaStream[], of: (e: WatchedSolanaStream) => readonly string[]): KeySetInput[] {
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
