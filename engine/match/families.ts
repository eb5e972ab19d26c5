import type { ChainFamily } from '../chains/registry.js';
import { compileBitcoinFilter, walkBitcoinProbe } from '../bitcoin/filter.js';
import { compileFilterSet, walkProbe } from '../evm/filter.js';
import { compileSolanaFilter, walkSolanaProbe } from '../solana/filter.js';
import type { FilterSetData, ProbeWalk } from './filter-set.js';

/**
 * What the shared matcher asks of each chain family: how to compile the
 * watchlist's streams into a filter set, and how to walk a block's probe column
 * against it (in a match worker or on the main thread).
 */
export interface WatchedEntry {
  index: number;
  /** Watched addresses as stored. */
  addresses: readonly string[];
  allAddresses: boolean;
  /** EVM: the topic0s of an allAddresses stream. */
  topic0: readonly string[];
  /**
   * Bitcoin: script hashes of the addresses derived from the stream's xpubs, DERIVED_KEY_BYTES each, end to end:
   * one array, which a compile posted to the pool clones at once (forty thousand arrays, a stream's thousand xpubs,
   * cloned one by one held the serving thread for tens of ms).
   */
  derived: Uint8Array;
  /** Solana: the programs a stream's transactions may invoke (top-level or inner instructions), base58. */
  programIds: readonly string[];
  /** Solana: the token mints a stream's transactions may hold balances of (pre/post token balances), base58. */
  mintAddresses: readonly string[];
}

/** The bytes of a derived key (a script hash). */
export const DERIVED_KEY_BYTES = 32;

/** No derived keys: every family's entries but a Bitcoin stream with xpubs. */
export const NO_DERIVED = new Uint8Array(0);

interface Family {
  compile(version: number, entries: readonly WatchedEntry[], seed: number): FilterSetData;
  walk: ProbeWalk;
}

const FAMILIES: Partial<Record<ChainFamily, Family>> = {
  evm: { compile: compileFilterSet, walk: walkProbe },
  bitcoin: { compile: compileBitcoinFilter, walk: walkBitcoinProbe },
  solana: { compile: compileSolanaFilter, walk: walkSolanaProbe },
};

/** The family's matching, or an error for one that has none (Aptos: sign-in only). */
export function familyOf(family: ChainFamily): Family {
  const f = FAMILIES[family];
  if (f === undefined) throw new Error(`no matching for ${family} chains`);
  return f;
}

/** Whether the family's blocks can be matched yet (a family without matching has its block events drained unmatched). */
export const hasMatching = (family: ChainFamily): boolean => FAMILIES[family] !== undefined;
