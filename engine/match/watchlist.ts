import type { Kv } from '../ports.js';
import { NO_DERIVED, type FamilyMatching, type FilterCompiler, type MatchPool, type WatchedEntry, type WatchFamilies } from './ports.js';
import type { Watched as StreamWatched } from '../streams/family.js';
import type { StoredStream } from '../streams/model.js';
import { findChain, type ChainFamily } from '../chains/registry.js';
import { inlineCompiler } from './compile.js';
import type { FilterSetData } from './filter-set.js';
import { storedAddresses, type AddressReader } from './watched-keys.js';
import { holdingPool, type Bases, type ChainLayers, type LayerResult } from './bases.js';
import { layerHere } from './compile.js';
import { isLayered, type StoredSetRef } from './layered.js';

/**
 * What every stream watches, compiled per chain into a filter set on demand (off the serving thread for a large
 * one). Kept here: each stream's definition (chains, allAddresses, the family's keys) and how many addresses it
 * watches, never the addresses themselves: those stay in the store (`streamAddresses`), read by the thread that
 * compiles (docs/decisions/watched-set.md). A change bumps the version of the chains its stream lists (before and
 * after the change); the next block matched on such a chain compiles (once) and publishes the new set, so a change
 * takes effect from the next block on, none missed, and other chains keep theirs.
 */
export interface CompiledChain {
  filter: FilterSetData;
  /** The stream (id and tenant) of each index of the filter set; none for an index the chain's streams no longer use (a stored base's stream removed, or moved to other chains). */
  streams: ReadonlyArray<{ id: string; tenantId: string } | undefined>;
}

interface Watched {
  tenantId: string;
  chainIds: readonly string[];
  allAddresses: boolean;
  keys: StreamWatched['keys'];
}

/** A stream of the watchlist: its definition, and how many addresses it watches (its record's amountOfAddresses). */
interface Listed extends Watched {
  count: number;
}

/** A chain's streams as the family's compile takes them: `streams[i]` is the stream of entry index i. */
export interface WatchedOn {
  streams: Array<{ id: string; tenantId: string }>;
  entries: WatchedEntry[];
}

export class Watchlist {
  private readonly streams = new Map<string, Listed>();
  /** Versions count up across chains; each chain keeps the version of its last change, so a change recompiles only the chains it concerns. */
  private counter = 0;
  private readonly versions = new Map<string, number>();
  private readonly compiled = new Map<string, CompiledChain>();
  private readonly compiling = new Map<string, { version: number; done: Promise<CompiledChain> }>();
  private loaded: Promise<void> = Promise.resolve();
  private isLoaded = true;
  private compiler: FilterCompiler | undefined;
  private addresses: AddressReader | undefined;
  private readonly families: WatchFamilies;
  private readonly seedOf: (chain: string, version: number) => number;
  private readonly derivedOf: (id: string) => Uint8Array;
  /** The chains' stored bases and change layers (none: every change compiles the chain's whole set again). */
  private readonly bases: Bases | undefined;
  /** Chains whose kept base this run tried to start from. */
  private readonly started = new Set<string>();
  private readonly failed: (what: string, err: unknown) => void;

  constructor({
    families,
    seedOf = () => 0x9e3779b9,
    derivedOf = () => NO_DERIVED,
    addresses,
    bases,
    failed = () => {},
  }: {
    /** The registry of families: each family's compile, and what a stored stream watches. */
    families: WatchFamilies;
    seedOf?: (chain: string, version: number) => number;
    /** Keys a family derives from a stream (Bitcoin: the script hashes of its xpubs' windows, engine/bitcoin/xpub-windows.ts). */
    derivedOf?: (id: string) => Uint8Array;
    /** Where this thread reads a stream's addresses when it compiles (the store load() reads, unless given). */
    addresses?: AddressReader;
    /** Bases kept in the store and change layers over them (engine/match/bases.ts). */
    bases?: Bases;
    /** A background step of the layers (a new L1, a merge) failed: it is tried again at a later change. */
    failed?: (what: string, err: unknown) => void;
  }) {
    this.families = families;
    this.seedOf = seedOf;
    this.derivedOf = derivedOf;
    this.addresses = addresses;
    this.bases = bases;
    this.failed = failed;
  }

  /**
   * Loads every stream's record (at start), a page at a time with `pause` (a turn of the event loop) between
   * pages; no address is read (a compile reads them). Changes made meanwhile are applied as they come. Compiling
   * waits for the load to end.
   */
  load(kv: Kv, pause: () => Promise<void> = () => Promise.resolve()): Promise<void> {
    this.addresses ??= storedAddresses((opts) => kv.keys('streamAddresses', opts));
    this.isLoaded = false;
    this.loaded = this.loadPages(kv, pause).then(() => void (this.isLoaded = true));
    return this.loaded;
  }

  private async loadPages(kv: Kv, pause: () => Promise<void>): Promise<void> {
    for (let start: string | undefined; ; ) {
      await pause();
      const page = kv.range<StoredStream>('streams', { ...(start === undefined ? {} : { start }), limit: LOAD_PAGE / 100 + 1 });
      for (const { key, value } of page) if (key !== start) this.stream({ ...value, ...this.families.watched(value) });
      if (page.length < LOAD_PAGE / 100 + 1) break;
      start = page.at(-1)!.key;
    }
  }

  /** A stream was created or its definition changed. */
  stream(s: Pick<StoredStream, 'id' | 'tenantId'> & Partial<Pick<StoredStream, 'amountOfAddresses'>> & StreamWatched): void {
    const next: Watched = { tenantId: s.tenantId, chainIds: s.chainIds, allAddresses: s.allAddresses, keys: s.keys };
    const was = this.streams.get(s.id);
    const count = s.amountOfAddresses ?? was?.count ?? 0;
    // An update that leaves what matching reads alone (a description, a webhook URL) recompiles nothing.
    if (was !== undefined && JSON.stringify({ ...was, count: undefined }) === JSON.stringify(next)) {
      was.count = count;
      return;
    }
    // A stream that had addresses before and now lists a chain more: that chain's base does not hold them.
    if (was !== undefined && was.count > 0) for (const c of next.chainIds) if (!was.chainIds.includes(c)) this.bases?.drop(c);
    this.changed(s.id);
    this.streams.set(s.id, { ...next, count });
    this.changed(s.id);
  }

  removed(id: string): void {
    this.changed(id);
    this.streams.delete(id);
  }

  /** Addresses (in their stored form: EVM lowercase, Solana as given) added to or removed from a stream: committed to the store, which the next compile reads. */
  addressesChanged(id: string, added: readonly string[], removed: readonly string[], seq?: number): void {
    if (added.length === 0 && removed.length === 0) return;
    const s = this.streams.get(id);
    if (s !== undefined) s.count = Math.max(0, s.count + added.length - removed.length);
    // Laid over the bases as L0; a change without its number in the watch log cannot be: its chains compile whole.
    if (seq !== undefined) this.bases?.tell(id, added, removed, seq);
    else for (const c of s?.chainIds ?? []) this.bases?.drop(c);
    this.changed(id);
    // A burst of changes folds into L1 in the pool as it comes, not at the next block: L0 stays small to build.
    const bases = this.bases;
    if (bases === undefined) return;
    for (const c of s?.chainIds ?? []) {
      const layers = bases.of(c);
      const listing = (other: string): boolean => this.streams.get(other)?.chainIds.includes(c) === true;
      const due = layers === undefined ? undefined : bases.due(layers, bases.toldKeys(layers, listing));
      if (layers !== undefined && due !== undefined) this.background(bases, layers, c, due);
    }
  }

  /** The addresses derived from a stream's xpubs changed (an xpub added or removed, a window moved on). */
  derivedChanged(id: string): void {
    for (const c of this.streams.get(id)?.chainIds ?? []) this.bases?.drop(c);
    this.changed(id);
  }

  /**
   * The chain's filter set at the current version, compiled when something changed since the last call (by the
   * compiler given to compileWith, the calling thread's until then), once the load has ended. A set being
   * compiled for the current version is waited for rather than compiled again; one being compiled for an older
   * version is waited for too, and then the version current by then is compiled: one compile per chain at a time,
   * so a burst of changes (xpubs added one after another) compiles the latest once rather than every version at
   * once, each holding a worker the others' blocks and xpub windows wait for.
   */
  async compile(chain: string): Promise<CompiledChain> {
    await this.loaded;
    let version: number;
    for (;;) {
      version = this.versions.get(chain) ?? 0;
      const cur = this.compiled.get(chain);
      if (cur !== undefined && cur.filter.version === version) return cur;
      const running = this.compiling.get(chain);
      if (running === undefined) break;
      if (running.version === version) return running.done;
      await running.done.catch(() => undefined);
    }
    const family = findChain(chain)?.family;
    if (family === undefined) throw new Error(`no chain ${chain} in the registry`);
    const done = this.build(chain, family, version).then((next) => {
      const { filter } = next;
      // A newer version compiled meanwhile (a change, then a quicker compile) is kept.
      if ((this.compiled.get(chain)?.filter.version ?? -1) < version) this.compiled.set(chain, next);
      return next;
    });
    this.compiling.set(chain, { version, done });
    const forget = (): void => {
      if (this.compiling.get(chain)?.done === done) this.compiling.delete(chain);
    };
    done.then(forget, forget);
    return done;
  }

  /**
   * The chain's set if it is compiled at the current version; else undefined, with the compile started. For a
   * reader that must not wait (the Bitcoin mempool, polled inside the follower's sync: waiting on a large
   * compile would hold the chain's blocks back) and tries again at its next poll.
   */
  ready(chain: string): CompiledChain | undefined {
    const cur = this.compiled.get(chain);
    if (cur !== undefined && this.isLoaded && cur.filter.version === (this.versions.get(chain) ?? 0)) return cur;
    // Its failure is the matcher's to report (it awaits the same compile).
    this.compile(chain).catch(() => undefined);
    return undefined;
  }

  /**
   * The chain's set at `version`: over its base and change layers when it has a base (started from the one kept in
   * the store at the first compile of this run), else compiled whole (kept in the store as its base when compiled in
   * the pool, and then laid over like any).
   */
  private async build(chain: string, family: ChainFamily, version: number): Promise<CompiledChain> {
    const seed = this.seedOf(chain, version);
    const bases = this.bases;
    const m = this.families.matching(family);
    if (bases === undefined || m === undefined) {
      const { streams, entries } = this.watchedOn(chain);
      return { filter: await this.current.compile({ chain, family, version, entries, seed }), streams };
    }
    if (bases.of(chain) === undefined && !this.started.has(chain)) {
      this.started.add(chain);
      await this.startBase(bases, chain, family);
    }
    const over = this.overBase(bases, m, chain, version, seed);
    if (over !== undefined) return over;
    const { streams, entries } = this.watchedOn(chain);
    const store = !entries.some((e) => e.derived.length > 0);
    const taken = bases.expect();
    try {
      const filter = await this.current.compile({ chain, family, version, entries, seed, store });
      if (filter.base === undefined) return { filter, streams };
      bases.adopt(chain, filter.base, undefined, refBloom(filter));
    } finally {
      taken();
    }
    return this.overBase(bases, m, chain, version, seed) ?? this.build(chain, family, version);
  }

  /** The chain's set over its base, its L1 and an L0 built now; undefined when it has no base (or one of its streams derives keys). */
  private overBase(bases: Bases, m: FamilyMatching, chain: string, version: number, seed: number): CompiledChain | undefined {
    const layers = bases.of(chain);
    if (layers === undefined) return undefined;
    const listed = [...this.streams].filter(([, s]) => s.chainIds.includes(chain));
    if (listed.some(([id]) => this.derivedOf(id).length > 0)) {
      bases.drop(chain);
      return undefined;
    }
    const index = bases.numbering(
      layers,
      listed.map(([id]) => id),
    );
    const streams = new Array<{ id: string; tenantId: string } | undefined>(layers.header.streams.length + layers.appended.length);
    const entries: WatchedEntry[] = listed.map(([id, s]) => {
      const i = index.get(id)!;
      streams[i] = { id, tenantId: s.tenantId };
      return { index: i, id, count: s.count, allAddresses: s.allAddresses, keys: s.keys, derived: NO_DERIVED };
    });
    const { layer, keys } = bases.l0(layers, m.addressKey, index, seed);
    const filter = m.compile(version, entries, seed, bases.layered(layers, layer));
    const due = bases.due(layers, keys);
    if (due !== undefined) this.background(bases, layers, chain, due);
    return { filter, streams: listed.length === 0 ? [] : streams };
  }

  /**
   * The base kept for the chain, if it holds every stream listing it but those created since (whose changes the
   * watch log holds): taken with an L1 of the log's changes after it. Else none (and a full compile follows).
   */
  private async startBase(bases: Bases, chain: string, family: ChainFamily): Promise<void> {
    bases.sweep(chain);
    const header = bases.pointer(chain);
    if (header === undefined) return;
    const taken = bases.expect();
    try {
      let layers: ChainLayers;
      try {
        layers = bases.adopt(chain, header, undefined);
      } catch (err) {
        // A base that cannot be read (torn by a disk fault, say) is dropped: a whole compile follows.
        this.failed('reading the kept watched set', err);
        bases.forget(chain, header.name);
        return;
      }
      const held = new Set(header.streams);
      const l1 = await this.layerOf(bases, chain, family, layers);
      const created = new Set(l1?.created);
      const listed = [...this.streams].filter(([id, s]) => s.chainIds.includes(chain) && !held.has(id));
      if (l1 === undefined || listed.some(([id]) => !created.has(id))) bases.drop(chain);
      else bases.l1Built(chain, l1);
    } finally {
      taken();
    }
  }

  /**
   * An L1 of the watch log's changes after the base, numbered as the chain's streams are (those created meanwhile
   * appended: built again when one was created while it was built); undefined if it could not settle.
   */
  private async layerOf(bases: Bases, chain: string, family: ChainFamily, layers: ChainLayers): Promise<LayerResult | undefined> {
    for (let tries = 0; tries < 3; tries++) {
      const ids = [...this.streams].filter(([, s]) => s.chainIds.includes(chain)).map(([id]) => id);
      const index = bases.numbering(layers, ids);
      const task = { chain, family, after: layers.header.seq, index: Object.fromEntries(index), seed: layers.data[0]!.seed };
      const l1 = this.current.layer !== undefined ? await this.current.layer(task) : layerHere(this.families.matching, task, bases.kv);
      const missed = l1.created.some((id) => !index.has(id) && this.streams.get(id)?.chainIds.includes(chain) === true);
      if (!missed) return l1;
    }
    return undefined;
  }

  /** A new L1, or a merge (a new base compiled and kept, with its L1), in the background: matching goes on over the layers meanwhile. */
  private background(bases: Bases, layers: ChainLayers, chain: string, due: 'l1' | 'merge'): void {
    const family = findChain(chain)!.family;
    layers.busy = (async () => {
      if (due === 'l1') {
        const l1 = await this.layerOf(bases, chain, family, layers);
        if (l1 !== undefined) bases.l1Built(chain, l1);
        return;
      }
      const { entries } = this.watchedOn(chain);
      const taken = bases.expect();
      try {
        const filter = await this.current.compile({
          chain,
          family,
          version: -1,
          entries,
          seed: this.seedOf(chain, ++this.counter),
          store: true,
        });
        if (filter.base === undefined || bases.of(chain) !== layers) return;
        const next: ChainLayers = { header: filter.base, data: layers.data, appended: [] };
        const l1 = await this.layerOf(bases, chain, family, next);
        if (l1 === undefined || bases.of(chain) !== layers) return;
        bases.adopt(chain, filter.base, l1, refBloom(filter)).appended = next.appended;
        // The next compile reads the new base; the old one goes once no match task names it.
        this.versions.set(chain, ++this.counter);
      } finally {
        taken();
      }
    })()
      .catch((err: unknown) => this.failed(due === 'l1' ? 'building a change layer' : 'merging the changes into a new base', err))
      .finally(() => {
        layers.busy = undefined;
      });
  }

  /** Whether the family's blocks can be matched yet (a family without matching has its block events drained unmatched). */
  hasMatching(family: ChainFamily): boolean {
    return this.families.matching(family) !== undefined;
  }

  /** The pool, its match tasks holding the stored bases their sets name (engine/match/bases.ts). */
  holding(pool: MatchPool): MatchPool {
    return this.bases === undefined ? pool : holdingPool(pool, this.bases);
  }

  /** Where filter sets compile from now on (the worker pool, once it is up). */
  compileWith(compiler: FilterCompiler): void {
    this.compiler = compiler;
  }

  /** The compiler until compileWith: this thread's, reading addresses where load() reads (none without a store). */
  private get current(): FilterCompiler {
    this.compiler ??= inlineCompiler(this.families.matching, (id, visit) => this.addresses?.(id, visit));
    return this.compiler;
  }

  /** What `compile` hands the chain's family: every stream listing the chain, with what it watches. */
  watchedOn(chain: string): WatchedOn {
    const out: WatchedOn = { streams: [], entries: [] };
    for (const [id, s] of this.streams) {
      if (!s.chainIds.includes(chain)) continue;
      out.entries.push({
        index: out.streams.length,
        id,
        count: s.count,
        allAddresses: s.allAddresses,
        keys: s.keys,
        derived: this.derivedOf(id),
      });
      out.streams.push({ id, tenantId: s.tenantId });
    }
    return out;
  }

  /** The chains the stream lists (before and after a change, as it is called on both sides) need compiling again. */
  private changed(id: string): void {
    const version = ++this.counter;
    for (const chain of this.streams.get(id)?.chainIds ?? []) this.versions.set(chain, version);
  }
}

/** The shared bloom filters of a set a compile kept in the store (its address set's parts, by ref). */
function refBloom(filter: FilterSetData): Uint32Array[] | undefined {
  const s = filter.sets[0];
  return s !== undefined && isLayered(s) ? s.base.map((p) => (p as StoredSetRef).bloom) : undefined;
}

/** Addresses read per page of the load (and a hundredth as many streams): some tens of ms of the serving thread each. */
const LOAD_PAGE = 10_000;
