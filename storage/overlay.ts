import type { Entry, Kv, KvOverlay, Table } from '../engine/ports.js';
import { packShared, unpack } from './codec.js';
import { WriteLog } from './write-log.js';
import type { Expected } from './writer.js';
import { hexKeyBytes } from './hex-keys.js';

/**
 * Kv.overlay on the LMDB store (storage/env.ts): writes kept in memory, as the bytes the store would hold,
 * and read back over the store's own until they are durable. A writer that reads what it wrote (the Data
 * API's indexes: a balance, then the same balance a block later) no longer needs a write transaction open on
 * the event loop while it works: it works here, between requests, logging each write (storage/write-log.ts),
 * and `seal` hands the log to the store's writer thread (storage/writer.ts), which writes it in a transaction
 * of its own once the store is checked to hold what the unit was built on.
 */

/** A table's writes: key → the bytes stored, or null for a removal. */
type Writes = Map<string, Uint8Array | null>;
/** Writes by table: one layer (the one being written, or a sealed one not durable yet). */
type Layer = Map<Table, Writes>;

/** What the overlay needs of the store under it: its reads, its writer thread, and its tables' key order and numbers. */
export interface OverlayBase extends Pick<Kv, 'get' | 'getRaw' | 'has' | 'range' | 'keys' | 'count'> {
  /** Whether the table's keys are stored by storage/hex-keys.ts (their order is that of those bytes). */
  hexKeyed(table: Table): boolean;
  /** The table's number in a write log (storage/write-log.ts). */
  tableIndex(table: Table): number;
  /** Writes a log as one unit if the store holds what `expect` says (storage/writer.ts). */
  write(log: Uint8Array, expect: Expected): Promise<boolean>;
}

const refused = (what: string) => (): never => {
  throw new Error(`${what} inside a Kv overlay: its writes are sealed as one unit`);
};

export function overlay(base: OverlayBase, writeOnly: ReadonlySet<Table> = new Set()): KvOverlay {
  let building: Layer = new Map();
  let log = new WriteLog(base.tableIndex);
  /** Sealed layers not yet durable, oldest first. */
  const sealed: Layer[] = [];

  const unread = (table: Table): void => {
    if (writeOnly.has(table)) throw new Error(`${table} is written only in this overlay: its writes are not read back`);
  };
  /** The latest write of a key: undefined when the overlay has none (read the store). */
  const written = (table: Table, key: string): Uint8Array | null | undefined => {
    unread(table);
    const mine = building.get(table)?.get(key);
    if (mine !== undefined) return mine;
    for (let i = sealed.length - 1; i >= 0; i--) {
      const w = sealed[i]!.get(table)?.get(key);
      if (w !== undefined) return w;
    }
    return undefined;
  };
  /** Logs a write for the writer thread, and keeps its bytes (a view of the log's) for the overlay's reads. */
  const write = (table: Table, key: string | Uint8Array, bytes: Uint8Array | null): void => {
    const k = typeof key === 'string' ? key : Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
    // Kept for no read: into the unit alone (a unit's writes are most of the young objects the collector copies).
    if (writeOnly.has(table)) return void log.write(table, k, bytes, false);
    let writes = building.get(table);
    if (writes === undefined) building.set(table, (writes = new Map()));
    writes.set(k, log.write(table, k, bytes));
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
    unread(table);
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
      // A table written only: the store's bytes (what a key's first write saves for a reorg; each key of these tables
      // is written by one block).
      if (writeOnly.has(table)) return base.getRaw(table, key);
      const w = written(table, key);
      if (w === undefined) return base.getRaw(table, key);
      return w === null ? undefined : w;
    },
    has(table, key) {
      const w = written(table, key);
      return w === undefined ? base.has(table, key) : w !== null;
    },
    // The encoder's own buffer (and a caller's bytes, maybe a view of the store's read buffer): the log copies them.
    put: (table, key, value) => write(table, key, packShared(value)),
    putRaw: (table, key, bytes) => write(table, key, bytes),
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
    seal(expect = []) {
      const layer = building;
      const unit = log;
      building = new Map();
      log = new WriteLog(base.tableIndex);
      if (unit.count === 0) return Promise.resolve(true);
      sealed.push(layer);
      // Settled: read from the store again.
      const drop = (): void => void sealed.splice(sealed.indexOf(layer), 1);
      return base.write(unit.take(), expect).then(
        (wrote) => {
          drop();
          return wrote;
        },
        (err: unknown) => {
          drop();
          throw err;
        },
      );
    },
    discard() {
      building = new Map();
      log = new WriteLog(base.tableIndex);
    },
    get pending() {
      return sealed.length;
    },
    get unsealed() {
      return log.count;
    },
  };
  return kv;
}
