import { buildKeySet } from '../match/key-set.js';
import { mergeKeys, type FilterSet, type FilterSetData } from '../match/filter-set.js';
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
  const set = (of: (e: WatchedSolanaStream) => readonly string[]) => buildKeySet(32, mergeKeys(entries.flatMap((e) => of(e).map((k) => [decodeKey(k), e.index] as const))), seed);
  return {
    version,
    family: 'solana',
    sets: [set((e) => e.addresses), set((e) => e.programIds), set((e) => e.mintAddresses)],
    every: entries.filter((e) => e.allAddresses).map((e) => e.index),
  };
}

/** The probe column (engine/solana/probe.ts) against the three key sets; refs are transaction indexes. */
export const walkSolanaProbe = (set: FilterSet, probe: Uint8Array): Map<number, number[]> => solanaProbeMatch(set.sets, probe);
