import type { Kv } from '../ports.js';
import { NO_DERIVED, type FilterCompiler, type WatchedEntry, type WatchFamilies } from './ports.js';
import type { Watched as StreamWatched } from '../streams/family.js';
import type { StoredStream } from '../streams/model.js';
import { findChain, type ChainFamily } from '../chains/registry.js';
import { inlineCompiler } from './compile.js';
import type { FilterSetData } from './filter-set.js';
import { storedAddresses, type AddressReader } from './watched-keys.js';

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
  /** The stream (id and tenant) of each index of the filter set. */
  streams: ReadonlyArray<{ id: string; tenantId: string }>;
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

  constructor({
    families,
    seedOf = () => 0x9e3779b9,
    derivedOf = () => NO_DERIVED,
    addresses,
  }: {
    /** The registry of families: each family's compile, and what a stored stream watches. */
    families: WatchFamilies;
    seedOf?: (chain: string, version: number) => number;
    /** Keys a family derives from a stream (Bitcoin: the script hashes of its xpubs' windows, engine/bitcoin/xpub-windows.ts). */
    derivedOf?: (id: string) => Uint8Array;
    /** Where this thread reads a stream's addresses when it compiles (the store load() reads, unless given). */
    addresses?: AddressReader;
  }) {
    this.families = families;
    this.seedOf = seedOf;
    this.derivedOf = derivedOf;
    this.addresses = addresses;
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
    this.changed(s.id);
    this.streams.set(s.id, { ...next, count });
    this.changed(s.id);
  }

  removed(id: string): void {
    this.changed(id);
    this.streams.delete(id);
  }

  /** Addresses (in their stored form: EVM lowercase, Solana as given) added to or removed from a stream: committed to the store, which the next compile reads. */
  addressesChanged(id: string, added: readonly string[], removed: readonly string[]): void {
    if (added.length === 0 && removed.length === 0) return;
    const s = this.streams.get(id);
    if (s !== undefined) s.count = Math.max(0, s.count + added.length - removed.length);
    this.changed(id);
  }

  /** The addresses derived from a stream's xpubs changed (an xpub added or removed, a window moved on). */
  derivedChanged(id: string): void {
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
    const { streams, entries } = this.watchedOn(chain);
    const family = findChain(chain)?.family;
    if (family === undefined) throw new Error(`no chain ${chain} in the registry`);
    const task = { chain, family, version, entries, seed: this.seedOf(chain, version) };
    const done = this.current.compile(task).then((filter) => {
      const next = { filter, streams };
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

  /** Whether the family's blocks can be matched yet (a family without matching has its block events drained unmatched). */
  hasMatching(family: ChainFamily): boolean {
    return this.families.matching(family) !== undefined;
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

/** Addresses read per page of the load (and a hundredth as many streams): some tens of ms of the serving thread each. */
const LOAD_PAGE = 10_000;
