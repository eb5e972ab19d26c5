import type { ChainFamily } from '../chains/registry.js';
import type { WatchedEntry } from './families.js';
import type { FilterSetData } from './filter-set.js';

/** The match workers (a piscina pool in workers/pool.ts): a chain's blocks tested against a compiled filter set. */
export interface MatchPool {
  /** Per block, in order: stream index → probe refs of its items that concern the stream. */
  match(chain: string, numbers: readonly number[], filter: FilterSetData): Promise<Array<Map<number, number[]>>>;
  close(): Promise<void>;
}

/**
 * Compiles a chain's filter set from what its streams watch (the family's compile, engine/match/families.ts):
 * in a worker thread for a large watchlist, so the serving thread goes on answering meanwhile.
 */
export interface FilterCompiler {
  compile(task: CompileTask): Promise<FilterSetData>;
}

export interface CompileTask {
  chain: string;
  family: ChainFamily;
  version: number;
  entries: WatchedEntry[];
  seed: number;
}
