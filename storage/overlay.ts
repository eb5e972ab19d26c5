import type { Entry, Kv, KvOverlay, Table } from '../engine/ports.js';
import { packShared, unpack } from './codec.js';
import { hexKeyBytes } from './hex-keys.js';

/**
 * Kv.overlay on the LMDB store (storage/env.ts): writes kept in memory, as the bytes the store would hold,
 * and read back over the store's own until they are durable. A writer that reads what it wrote (the Data
 * API's indexes: a balance, then the same balance a block later) no longer needs a write transaction open on
 * the event loop while it works: it works here, between requests, and `seal` hands what it wrote to LMDB's
 * write thread as one unit (Kv.writeBehind), whose B-tree work and commit run off the event loop.
 */

/** A table's writes: key → the bytes stored, or null for a removal. */
type Writes = Map<string, Uint8Array | null>;
/** Writes by table: one layer (the one being written, or a sealed one not durable yet). */
type Layer = Map<Table, Writes>;

/**
 * Where a layer's values are copied, end to end: thousands of rows a block, each its own ArrayBuffer, cost the
 * garbage collector more than writing them (every backing store is tracked apart); views of a few large ones do not.
 */
class Slab {
  private buffer = new Uint8Array(1 << 20);
  private used = 0;

  /** A view of `bytes` copied into the slab (never written again: a view stays valid, an outgrown buffer kept by its views). */
  copy(bytes: Uint8Array): Uint8Array {
    if (this.used + bytes.byteLength > this.buffer.byteLength) {
      this.buffer = new Uint8Array(Math.max(this.buffer.byteLength, bytes.byteLength) * 2);
      this.used = 0;
    }
    const at = this.used;
    this.buffer.set(bytes, at);
    this.used += bytes.byteLength;
    return this.buffer.subarray(at, this.used);
  }
}

/** What the overlay needs of the store under it: its reads, its writes and write-behind, and its tables' key order. */
export interface OverlayBase extends Pick<Kv, 'get' | 'getRaw' | 'has' | 'range' | 'keys' | 'count' | 'putRaw' | 'remove' | 'writeBehind'> {
  /** Whether the table's keys are stored by storage/hex-keys.ts (their order is that of those bytes). */
  hexKeyed(table: Table): boolean;
}

const refused = (what: string) => (): never => {
  throw new Error(`${what} inside a Kv overlay: its writes are sealed as one unit`);
};

export function overlay(base: OverlayBase): KvOverlay {
  let building: Layer = new Map();
  let slab = new Slab();
  /** Sealed layers not yet durable, oldest first. */
  const sealed: Layer[] = [];

  /** The latest write of a key: undefined when the overlay has none (read the store). */
  const written = (table: Table, key: string): Uint8Array | null | undefined => {
    const mine = building.get(table)?.get(key);
    if (mine !== undefined) return mine;
    for (let i = sealed.length - 1; i >= 0; i--) {
      const w = sealed[i]!.get(table)?.get(key);
      if (w !== undefined) return w;
    }
    return undefined;
  };
  const write = (table: Table, key: string | Uint8Array, bytes: Uint8Array | null): void => {
    const k = typeof key === 'string' ? key : Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
    let writes = building.get(table);
    if (writes === undefined) building.set(table, (writes = new Map()));
    writes.set(k, bytes);
  };

  /** A key as the store orders it: the bytes it is stored under. */
  const order = (table: Table): ((key: string) => Buffer) =>
    base.hexKeyed(table) ? (key) => hexKeyBytes(key) : (key) => Buffer.from(key, 'utf8');

  /**
   * The overlay's latest write of each key of `table` in the range (start ≤ key < end; reversed: start ≥ key >
   * end), with the bytes it is stored under, in no order.
   */
  const inRange = (
    table: Table,
    opts: { start?: string; end?: string; reverse?: boolean },
  ): Array<{ key: string; bytes: Uint8Array | null; at: Buffer }> => {
    const layers = [...sealed, building].map((l) => l.get(table)).filter((w): w is Writes => w !== undefined && w.size > 0);
    if (layers.length === 0) return [];
    const latest = new Map<string, Uint8Array | null>();
    for (const w of layers) for (const [k, b] of w) latest.set(k, b);
    const at = order(table);
    const lo = opts.reverse ? opts.end : opts.start;
    const hi = opts.reverse ? opts.start : opts.end;
    const loAt = lo === undefined ? undefined : at(lo);
    const hiAt = hi === undefined ? undefined : at(hi);
    const out: Array<{ key: string; bytes: Uint8Array | null; at: Buffer }> = [];
    for (const [key, bytes] of latest) {
      const k = at(key);
      // Forward: lo ≤ k < hi. Reversed: lo < k ≤ hi (start is the high end, included; end the low one, excluded).
      if (loAt !== undefined && (opts.reverse ? Buffer.compare(k, loAt) <= 0 : Buffer.compare(k, loAt) < 0)) continue;
      if (hiAt !== undefined && (opts.reverse ? Buffer.compare(k, hiAt) > 0 : Buffer.compare(k, hiAt) >= 0)) continue;
      out.push({ key, bytes, at: k });
    }
    return out;
  };

  const kv: KvOverlay = {
    get<T>(table: Table, key: string): T | undefined {
      const w = written(table, key);
      if (w === undefined) return base.get<T>(table, key);
      return w === null ? undefined : unpack<T>(w);
    },
    getRaw(table, key) {
      const w = written(table, key);
      if (w === undefined) return base.getRaw(table, key);
      return w === null ? undefined : w;
    },
    has(table, key) {
      const w = written(table, key);
      return w === undefined ? base.has(table, key) : w !== null;
    },
    // The encoder's own buffer, copied into the slab before the next encoding.
    put: (table, key, value) => write(table, key, slab.copy(packShared(value))),
    // Copied: the caller may hand a view of a buffer it reuses (the store's read buffer).
    putRaw: (table, key, bytes) => write(table, key, slab.copy(bytes)),
    remove: (table, key) => write(table, key, null),
    range<T>(table: Table, opts: { start?: string; end?: string; limit?: number; reverse?: boolean } = {}): Array<Entry<T>> {
      const mine = inRange(table, opts);
      if (mine.length === 0) return base.range<T>(table, opts);
      // Each write of the overlay hides at most one entry of the store's: that many more are read.
      const limit = opts.limit === undefined ? undefined : opts.limit + mine.length;
      const stored = base.range<T>(table, { ...opts, ...(limit === undefined ? {} : { limit }) });
      const over = new Set(mine.map((m) => m.key));
      const at = order(table);
      const merged = [
        ...stored.filter((e) => !over.has(e.key)).map((e) => ({ entry: e, at: at(e.key) })),
        ...mine.filter((m) => m.bytes !== null).map((m) => ({ entry: { key: m.key, value: unpack<T>(m.bytes!) }, at: m.at })),
      ];
      merged.sort((a, b) => (opts.reverse ? Buffer.compare(b.at, a.at) : Buffer.compare(a.at, b.at)));
      // A store's range cut at its limit ends where what it read ends: nothing past its last key can be kept.
      const cut =
        limit !== undefined && stored.length === limit
          ? merged.filter((m) => {
              const last = at(stored.at(-1)!.key);
              return opts.reverse ? Buffer.compare(m.at, last) >= 0 : Buffer.compare(m.at, last) <= 0;
            })
          : merged;
      const out = cut.map((m) => m.entry);
      return opts.limit === undefined ? out : out.slice(0, opts.limit);
    },
    keys(table, opts) {
      return kv.range<unknown>(table, opts).map((e) => e.key);
    },
    count(table, opts) {
      const mine = inRange(table, opts);
      if (mine.length === 0) return base.count(table, opts);
      const limit = opts.limit === undefined ? undefined : opts.limit + mine.length;
      let n = base.count(table, { ...opts, ...(limit === undefined ? {} : { limit }) });
      for (const m of mine) {
        const stored = base.has(table, m.key);
        if (stored && m.bytes === null) n--;
        else if (!stored && m.bytes !== null) n++;
      }
      return opts.limit === undefined ? n : Math.min(n, opts.limit);
    },
    removeRange(table, opts) {
      const keys = kv.keys(table, opts);
      for (const key of keys) write(table, key, null);
      return keys.length;
    },
    transact: refused('a transaction'),
    transactAsync: refused('a transaction'),
    writeBehind: refused('a write-behind'),
    overlay: refused('an overlay'),
    seal(check) {
      const layer = building;
      building = new Map();
      slab = new Slab();
      if (check !== undefined && !check()) return Promise.resolve(false);
      if (layer.size === 0) return Promise.resolve(true);
      sealed.push(layer);
      const done = base.writeBehind(() => {
        for (const [table, writes] of layer)
          for (const [key, bytes] of writes) {
            if (bytes === null) base.remove(table, key);
            else base.putRaw(table, key, bytes);
          }
      });
      // Settled: read from the store again.
      const drop = (): void => void sealed.splice(sealed.indexOf(layer), 1);
      return done.then(
        () => {
          drop();
          return true;
        },
        (err: unknown) => {
          drop();
          throw err;
        },
      );
    },
    discard() {
      building = new Map();
      slab = new Slab();
    },
    get pending() {
      return sealed.length;
    },
    get unsealed() {
      let n = 0;
      for (const writes of building.values()) n += writes.size;
      return n;
    },
  };
  return kv;
}
