import type { ChainFamily } from '../chains/registry.js';
import type { Watched } from '../streams/family.js';
import type { StoredStream } from '../streams/model.js';
import type { FilterSetData, ProbeWalk } from './filter-set.js';
import type { SetData } from './layered.js';
import type { ChangeLayerData } from './layered.js';
import type { AddressKey } from './watched-keys.js';

/** The match workers (a piscina pool in workers/pool.ts): a chain's blocks tested against a compiled filter set. */
export interface MatchPool {
  /** Per block, in order: stream index → probe refs of its items that concern the stream. */
  match(chain: string, numbers: readonly number[], filter: FilterSetData): Promise<Array<Map<number, number[]>>>;
  close(): Promise<void>;
}

/**
 * Compiles a chain's filter set from what its streams watch (the family's compile, FamilyMatching):
 * in a worker thread for a large watchlist, so the serving thread goes on answering meanwhile.
 */
export interface FilterCompiler {
  compile(task: CompileTask): Promise<FilterSetData>;
  /** Builds a change layer from the watch log (engine/match/bases.ts); none: built on the calling thread. */
  layer?(task: LayerTask): Promise<LayerResult>;
}

export interface CompileTask {
  chain: string;
  family: ChainFamily;
  version: number;
  entries: WatchedEntry[];
  seed: number;
  /**
   * Keep the address set in the store as the chain's base (engine/match/stored-base.ts) when compiled in the pool:
   * entries[i].index is i. The answer's `base` then names it.
   */
  store?: boolean;
}

/** A family's own watched keys beyond addresses, by name, as its compile reads them (EVM: topic0; Solana: programIds, mintAddresses). */
export type WatchedKeys = Readonly<Record<string, readonly string[]>>;

/** One stream of a chain as its family's compile takes it. */
export interface WatchedEntry {
  index: number;
  /** The stream's id: its addresses are read from the store (`streamAddresses`) by the thread that compiles. */
  id: string;
  /** How many addresses it watches (its record's amountOfAddresses): what the compile's size is judged by. */
  count: number;
  allAddresses: boolean;
  /** The family's own keys (what its stream family's `watched` answers). */
  keys: WatchedKeys;
  /**
   * Keys the family derives from the stream off the serving thread (the Watchlist's derivedOf), DERIVED_KEY_BYTES
   * each, end to end: one array, which a compile posted to the pool clones at once (forty thousand arrays, a
   * stream's thousand extended keys, cloned one by one held the serving thread for tens of ms).
   */
  derived: Uint8Array;
}

/** The bytes of a derived key (a script hash). */
export const DERIVED_KEY_BYTES = 32;

/** No derived keys: what every stream has but those whose family derives some. */
export const NO_DERIVED = new Uint8Array(0);

/**
 * A chain family's match step: how a stored address becomes its key, the compile of what its streams watch into a
 * filter set (given the key set of their addresses and derived keys, compiled from raw bytes: engine/match/watched-keys.ts),
 * and the walk of a block's probe column against it.
 */
export interface FamilyMatching {
  addressKey: AddressKey;
  compile(version: number, entries: readonly WatchedEntry[], seed: number, addresses: SetData): FilterSetData;
  walk: ProbeWalk;
}

/** The family's match step by name; undefined for a family without matching (its blocks' events are drained unmatched). */
export type Matchings = (family: ChainFamily) => FamilyMatching | undefined;

/** What the watchlist asks of the registry of families (built in app/). */
export interface WatchFamilies {
  matching: Matchings;
  /** What a stored stream of any family watches (by its family's rule, records of no family included). */
  watched(s: StoredStream): Watched;
}

/** A layer of the watch log's changes after `after`, as the pool builds it. */
export interface LayerTask {
  chain: string;
  family: string;
  after: number;
  /** Index of each stream in the chain's numbering (streams not listed are another chain's, or gone). */
  index: Record<string, number>;
  seed: number;
}

export interface LayerResult {
  /** The last change it holds. */
  upTo: number;
  layer: ChangeLayerData;
  /** Keys changed (adds and removals). */
  keys: number;
  /** Streams created after `after` (a start checks its streams against the base's with them). */
  created: string[];
}
