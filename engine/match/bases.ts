import type { Kv } from '../ports.js';
import { isLayered, type ChangeLayerData, type LayeredSetData } from './layered.js';
import type { LayerResult, LayerTask, MatchPool } from './ports.js';
export type { LayerResult, LayerTask } from './ports.js';
import { openBase, pointers, readPointer, removeBase, strayBases, type BaseHeader } from './stored-base.js';
import type { MappedRead } from './stored-key-set.js';
import { changesAfter, pruneChanges, watchSeq } from '../streams/watch-log.js';
import { KeyPairs, REMOVES, changeSetsOfPairs, type AddressKey } from './watched-keys.js';
import type { KeySetData } from './key-set.js';

/**
 * The layers of each chain's watched addresses (docs/decisions/watched-set.md): a base kept in the store and read
 * in place, L1 (the changes logged since the base, up to some number, built in the pool from the watch log) and L0
 * (the changes after that, held here as they were told and built again at each compile: a few ms). L0 past
 * L0_KEYS starts a new L1; L1 past its bound starts a merge: a new base compiled in the pool from `streamAddresses`
 * and stored, then its L1, then the switch. A replaced base is removed once no match task that names it runs (the
 * pool's acknowledgement: each task's end), never on a timer.
 */

/** Builds a layer from the watch log as the store `kv` holds it now (a worker's snapshot, or this thread's). */
export function buildLayer(kv: Pick<Kv, 'get' | 'range'>, key: AddressKey, task: LayerTask): LayerResult {
  const upTo = watchSeq(kv);
  const pairs = new KeyPairs(key.width);
  const created: string[] = [];
  changesAfter(
    kv,
    task.after,
    (_seq, c) => {
      if (c.created === true) created.push(c.id);
      const index = task.index[c.id];
      if (index === undefined || c.addresses === undefined) return;
      const word = c.add === true ? index : (index | REMOVES) >>> 0;
      for (const a of c.addresses) pairs.addAddress(key, a, word);
    },
    upTo,
  );
  return { upTo, layer: changeSetsOfPairs(pairs, task.seed), keys: pairs.count, created };
}

/** The numbering of a base's streams, then `appended`, then the `ids` not numbered yet (appended to a copy). */
function numbered(
  header: BaseHeader,
  appended: readonly string[],
  ids: Iterable<string>,
): { index: Map<string, number>; appended: string[] } {
  const index = new Map(header.streams.map((id, i) => [id, i]));
  const out = [...appended];
  out.forEach((id, i) => index.set(id, header.streams.length + i));
  for (const id of ids) {
    if (index.has(id)) continue;
    index.set(id, header.streams.length + out.length);
    out.push(id);
  }
  return { index, appended: out };
}

/** A change as the watchlist is told it, kept for L0. */
interface Told {
  seq: number;
  id: string;
  add: boolean;
  addresses: readonly string[];
}

/** A chain's base and layers. */
export interface ChainLayers {
  header: BaseHeader;
  /** The base's parts. */
  data: KeySetData[];
  /** Streams listing the chain that the base does not hold, by index after the base's: append-only while it stands. */
  appended: string[];
  l1?: LayerResult;
  /** A new L1, or a merge, under way. */
  busy?: Promise<void>;
}

/** The store as the layers use it: reads, the map, and writes for removals. */
interface LayerStore {
  kv: Kv;
  mapped: MappedRead;
}

export class Bases {
  private readonly chains = new Map<string, ChainLayers>();
  private told: Told[] = [];
  private readonly running = new Map<string, number>();
  private readonly retired = new Set<string>();
  /** Bases being taken (a start, a compile that stores): the changes told meanwhile are kept for their L0. */
  private pending = 0;

  constructor(
    private readonly store: LayerStore,
    readonly opts: { l0Keys?: number; mergeKeys?: (baseKeys: number) => number } = {},
  ) {}

  /** The chain's layers, if it has a base loaded. */
  of(chain: string): ChainLayers | undefined {
    return this.chains.get(chain);
  }

  /** The chain's stored pointer (undefined: none kept). */
  pointer(chain: string): BaseHeader | undefined {
    return readPointer(this.store.kv, chain);
  }

  /** Removes what a crash or an earlier run left of the chain's stored versions (at start: no reader holds them). */
  sweep(chain: string): void {
    for (const name of strayBases(this.store.kv, chain)) removeBase(this.store.kv, name);
  }

  /** Takes `header` as the chain's base (`blooms`: its parts' filters in shared memory when the compile made them), with L1 `l1`; the previous one is retired. */
  adopt(chain: string, header: BaseHeader, l1: LayerResult | undefined, blooms?: readonly Uint32Array[]): ChainLayers {
    const data = openBase(this.store.kv, this.store.mapped, header, blooms);
    const prev = this.chains.get(chain);
    const next: ChainLayers = { header, data, appended: [], ...(l1 === undefined ? {} : { l1 }) };
    this.chains.set(chain, next);
    if (prev !== undefined && prev.header.name !== header.name) this.retire(prev.header.name);
    this.trim();
    return next;
  }

  /** Removes a kept base no thread has read (and its pointer). */
  forget(chain: string, name: string): void {
    if (this.chains.get(chain)?.header.name === name) this.chains.delete(chain);
    removeBase(this.store.kv, name);
  }

  /** Forgets the chain's layers (its streams changed chains: a full compile follows). */
  drop(chain: string): void {
    const prev = this.chains.get(chain);
    this.chains.delete(chain);
    if (prev !== undefined) this.retire(prev.header.name);
  }

  /** A base is being taken: changes told from now on are kept for it; call the answer once it is (or is not). */
  expect(): () => void {
    this.pending++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.pending--;
      this.trim();
    };
  }

  /** An address change, in log order (`seq`: its number). */
  tell(id: string, added: readonly string[], removed: readonly string[], seq: number): void {
    if (this.chains.size === 0 && this.pending === 0) return;
    if (added.length > 0) this.told.push({ seq, id, add: true, addresses: added });
    if (removed.length > 0) this.told.push({ seq, id, add: false, addresses: removed });
  }

  /** The index of each stream in the chain's numbering: the base's, then those appended (appending `ids` not numbered yet). */
  numbering(layers: ChainLayers, ids: Iterable<string>): Map<string, number> {
    const { index, appended } = numbered(layers.header, layers.appended, ids);
    layers.appended = appended;
    return index;
  }

  /** L0: the changes told after L1 (or the base) to streams numbered in `index`, as a layer; and how many keys it holds. */
  l0(layers: ChainLayers, key: AddressKey, index: ReadonlyMap<string, number>, seed: number): { layer: ChangeLayerData; keys: number } {
    const after = layers.l1?.upTo ?? layers.header.seq;
    const pairs = new KeyPairs(key.width);
    for (const t of this.told) {
      if (t.seq <= after) continue;
      const i = index.get(t.id);
      if (i === undefined) continue;
      const word = t.add ? i : (i | REMOVES) >>> 0;
      for (const a of t.addresses) pairs.addAddress(key, a, word);
    }
    return { layer: changeSetsOfPairs(pairs, seed), keys: pairs.count };
  }

  /** The address set of a compile: the base and its layers (L0 given). */
  layered(layers: ChainLayers, l0: ChangeLayerData): LayeredSetData {
    return { base: layers.data, layers: [...(layers.l1 === undefined ? [] : [layers.l1.layer]), l0], stored: layers.header.name };
  }

  /**
   * Keys told after the chain's L1 (or base) to the streams `on` says list the chain: what its L0 holds, counted
   * without building it (another chain's changes are not this chain's to fold).
   */
  toldKeys(layers: ChainLayers, on: (id: string) => boolean): number {
    const after = layers.l1?.upTo ?? layers.header.seq;
    let n = 0;
    for (const t of this.told) if (t.seq > after && on(t.id)) n += t.addresses.length;
    return n;
  }

  /** Whether L0 holds enough for a new L1, and L1 enough for a merge. */
  due(layers: ChainLayers, l0Keys: number): 'merge' | 'l1' | undefined {
    if (layers.busy !== undefined) return undefined;
    const merge = (this.opts.mergeKeys ?? ((n) => Math.max(2_000_000, n / 50)))(layers.data.reduce((n, p) => n + p.size, 0));
    if ((layers.l1?.keys ?? 0) + l0Keys > merge) return 'merge';
    return l0Keys > (this.opts.l0Keys ?? L0_KEYS) ? 'l1' : undefined;
  }

  /** A match task naming `names` runs: none of them is removed till it ends. */
  hold(names: readonly string[]): () => void {
    for (const n of names) this.running.set(n, (this.running.get(n) ?? 0) + 1);
    return () => {
      for (const n of names) {
        const left = this.running.get(n)! - 1;
        if (left > 0) this.running.set(n, left);
        else this.running.delete(n);
        if (left === 0 && this.retired.has(n)) this.removeSoon(n);
      }
    };
  }

  /** The watch log's rows every chain's base holds are pruned; the told changes every chain's L1 holds are dropped. */
  private trim(): void {
    const bases = [...this.chains.values()];
    if (this.pending > 0) return;
    if (bases.length === 0) {
      this.told = [];
      return;
    }
    const held = Math.min(...bases.map((b) => b.l1?.upTo ?? b.header.seq));
    this.told = this.told.filter((t) => t.seq > held);
    // Up to what every chain's kept base holds (a chain not started yet included: its start reads the rows after its own).
    const stored = Math.min(...pointers(this.store.kv).map((h) => h.seq));
    if (stored > 0 && Number.isFinite(stored)) this.store.kv.transact(() => pruneChanges(this.store.kv, stored));
  }

  /** A new L1 for the chain (built elsewhere) replaces the old one. */
  l1Built(chain: string, l1: LayerResult): void {
    const layers = this.chains.get(chain);
    if (layers === undefined || (layers.l1 !== undefined && layers.l1.upTo >= l1.upTo)) return;
    layers.l1 = l1;
    this.trim();
  }

  private retire(name: string): void {
    this.retired.add(name);
    if (!this.running.has(name)) this.removeSoon(name);
  }

  /** After this turn: a round that was handed the base in this one posts its task (and holds it) first. */
  private removeSoon(name: string): void {
    setImmediate(() => {
      if (this.running.has(name) || !this.retired.delete(name)) return;
      removeBase(this.store.kv, name);
    });
  }

  /** The store the layers read (a layer built on this thread reads the watch log there). */
  get kv(): Kv {
    return this.store.kv;
  }
}

/** The pool, with each match task holding the bases its filter set names until it ends (their removal waits for it). */
export function holdingPool(pool: MatchPool, bases: Bases): MatchPool {
  return {
    async match(chain, numbers, filter) {
      const names = filter.sets.flatMap((s) => (isLayered(s) && s.stored !== undefined ? [s.stored] : []));
      const release = bases.hold(names);
      try {
        return await pool.match(chain, numbers, filter);
      } finally {
        release();
      }
    },
    close: () => pool.close(),
  };
}

/** Keys of L0 from which a new L1 is built (in the pool): L0 is built again at each compile on the serving thread. */
const L0_KEYS = 64_000;
