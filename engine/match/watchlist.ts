import type { Kv } from '../ports.js';
import { watchedOf } from '../streams/families.js';
import type { StoredStream, StreamRecord } from '../streams/model.js';
import { topic0Hash } from '../streams/schemas.js';
import { findChain } from '../chains/registry.js';
import { familyOf, type WatchedEntry } from './families.js';
import type { FilterSetData } from './filter-set.js';

/**
 * What every stream watches, kept in memory beside the store and compiled per
 * chain into a filter set on demand. A change bumps the version of the chains
 * its stream lists (before and after the change); the next block matched on
 * such a chain compiles (once) and publishes the new set, so a change takes
 * effect from the next block on, none missed, and other chains keep theirs.
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
  topic0: readonly string[];
}

export class Watchlist {
  private readonly streams = new Map<string, Watched>();
  private readonly addresses = new Map<string, Set<string>>();
  /** Versions count up across chains; each chain keeps the version of its last change, so a change recompiles only the chains it concerns. */
  private counter = 0;
  private readonly versions = new Map<string, number>();
  private readonly compiled = new Map<string, CompiledChain>();

  constructor(
    private readonly seedOf: (chain: string, version: number) => number = () => 0x9e3779b9,
    /** Bitcoin: the script hashes derived from a stream's xpubs (engine/bitcoin/xpub-windows.ts). */
    private readonly derivedOf: (id: string) => readonly Uint8Array[] = () => [],
  ) {}

  /** Loads every stream and its addresses (at start). */
  load(kv: Kv): void {
    for (const { value } of kv.range<StoredStream>('streams')) this.stream(watchedOf(value));
    for (const { key } of kv.range('streamAddresses')) {
      const at = key.lastIndexOf('/');
      this.addressesOf(key.slice(0, at)).add(key.slice(at + 1));
    }
  }

  /** A stream was created or its definition changed. */
  stream(s: Pick<StreamRecord, 'id' | 'tenantId' | 'chainIds' | 'allAddresses' | 'topic0'>): void {
    const next = { tenantId: s.tenantId, chainIds: s.chainIds, allAddresses: s.allAddresses, topic0: (s.topic0 ?? []).map(topic0Hash) };
    // An update that leaves what matching reads alone (a description, a webhook URL) recompiles nothing.
    if (JSON.stringify(this.streams.get(s.id)) === JSON.stringify(next)) return;
    this.changed(s.id);
    this.streams.set(s.id, next);
    this.changed(s.id);
  }

  removed(id: string): void {
    this.changed(id);
    this.streams.delete(id);
    this.addresses.delete(id);
  }

  /** Addresses (lowercase) added to or removed from a stream. */
  addressesChanged(id: string, added: readonly string[], removed: readonly string[]): void {
    if (added.length === 0 && removed.length === 0) return;
    const set = this.addressesOf(id);
    for (const a of added) set.add(a);
    for (const a of removed) set.delete(a);
    this.changed(id);
  }

  /** The addresses derived from a stream's xpubs changed (an xpub added or removed, a window moved on). */
  derivedChanged(id: string): void {
    this.changed(id);
  }

  /** The chain's filter set at the current version, compiled when something changed since the last call. */
  compile(chain: string): CompiledChain {
    const cur = this.compiled.get(chain);
    const version = this.versions.get(chain) ?? 0;
    if (cur !== undefined && cur.filter.version === version) return cur;
    const streams: Array<{ id: string; tenantId: string }> = [];
    const watched: WatchedEntry[] = [];
    for (const [id, s] of this.streams) {
      if (!s.chainIds.includes(chain)) continue;
      // programIds and mintAddresses: Solana streams' (the streams side fills them in).
      watched.push({ index: streams.length, addresses: [...(this.addresses.get(id) ?? [])], allAddresses: s.allAddresses, topic0: s.topic0, derived: this.derivedOf(id), programIds: [], mintAddresses: [] });
      streams.push({ id, tenantId: s.tenantId });
    }
    const family = familyOf(findChain(chain)?.family ?? 'evm');
    const next = { filter: family.compile(version, watched, this.seedOf(chain, version)), streams };
    this.compiled.set(chain, next);
    return next;
  }

  /** The chains the stream lists (before and after a change, as it is called on both sides) need compiling again. */
  private changed(id: string): void {
    const version = ++this.counter;
    for (const chain of this.streams.get(id)?.chainIds ?? []) this.versions.set(chain, version);
  }

  /** The stream's watched addresses (lowercase). */
  watched(id: string): ReadonlySet<string> {
    return this.addresses.get(id) ?? NONE;
  }

  private addressesOf(id: string): Set<string> {
    let set = this.addresses.get(id);
    if (set === undefined) this.addresses.set(id, (set = new Set()));
    return set;
  }
}

const NONE: ReadonlySet<string> = new Set();
