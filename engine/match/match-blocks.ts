import { blockKey } from '../ingest/chain-store.js';
import type { Kv } from '../ports.js';
import type { Matchings, MatchPool } from './ports.js';
import { FilterSet, type FilterSetData } from './filter-set.js';
import type { ResolveStored } from './layered.js';

/**
 * Matching blocks' probe columns against a chain's filter set, wherever it
 * runs: in a match worker, or on the main thread for a round too small to be
 * worth a worker's round trip.
 */

/** Each thread's filter set per chain, replaced when a new version arrives. */
export class FilterSets {
  private readonly sets = new Map<string, FilterSet>();

  /** `resolve`: how this thread reads a base kept in the store, posted by its ref (a worker's own views). */
  constructor(
    private readonly matching: Matchings,
    private readonly resolve?: ResolveStored,
  ) {}

  of(chain: string, data: FilterSetData): FilterSet {
    const cur = this.sets.get(chain);
    if (cur !== undefined && cur.version === data.version) return cur;
    const walk = this.matching(data.family)?.walk;
    if (walk === undefined) throw new Error(`no matching for ${data.family} chains`);
    const next = new FilterSet(data, walk, this.resolve);
    this.sets.set(chain, next);
    return next;
  }
}

/**
 * Per block, in order, the matches of its probe column; `probe` reads a column (valid until the next
 * read, so it is matched at once), undefined for a block without one (pruned, rolled back): no match.
 */
export function matchBlocks(
  set: FilterSet,
  chain: string,
  numbers: readonly number[],
  probe: (key: string) => Uint8Array | undefined,
): Array<Map<number, number[]>> {
  return numbers.map((n) => {
    const bytes = probe(blockKey(chain, n));
    return bytes === undefined ? new Map() : set.match(bytes);
  });
}

/**
 * The pool for rounds of more than `maxBlocks` blocks (catching up); smaller ones (a new head, its
 * confirmation) are matched here at once: a block's probe column takes tens of µs to walk, a round trip
 * to a worker and back far more, and the announced block is waiting on it.
 */
export function inlineSmallRounds(pool: MatchPool, kv: Pick<Kv, 'getRaw'>, maxBlocks: number, matching: Matchings): MatchPool {
  const sets = new FilterSets(matching);
  return {
    match(chain, numbers, filter) {
      if (numbers.length > maxBlocks) return pool.match(chain, numbers, filter);
      return Promise.resolve(matchBlocks(sets.of(chain, filter), chain, numbers, (key) => kv.getRaw('probes', key)));
    },
    close: () => pool.close(),
  };
}
