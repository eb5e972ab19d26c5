import { KeySet, partOf, type KeySetData } from './key-set.js';

/**
 * A chain's watched addresses as a base and change layers over it (docs/decisions/watched-set.md): the base a large
 * key set compiled once (kept in the store and read in place: engine/match/stored-base.ts), each layer the changes
 * made since, as two small key sets: per key, the streams that added it and those that removed it (the last change of
 * a stream to a key counts). A probe asks the base, then each layer from the oldest: a key no layer holds (nearly
 * all) costs one bloom test per layer on top of the base's, and those filters are small enough to stay in cache.
 */

/** One layer of changes over a base. */
export interface ChangeLayerData {
  adds: KeySetData;
  removes: KeySetData;
  /**
   * 1 (shared memory) once the layer's keys are let through its base's filter (KeySet.admit): the first thread that
   * lays it over its base does it, the others then skip it. A layer is laid over one base only (its chain's).
   */
  admitted?: Int32Array;
}

/** A change layer as a thread probes it. */
interface ChangeLayer {
  adds: KeySet;
  removes: KeySet;
  admitted?: Int32Array;
}

/**
 * A base kept in the store as a thread posts it to another: its name and its bloom filter (in shared memory), not
 * its table, which the receiving thread reads from the store in place itself (views are not shared between threads).
 */
export interface StoredSetRef extends Omit<KeySetData, 'slots' | 'postingAt' | 'postings'> {
  stored: string;
}

/**
 * A base (in parts: partOf says which holds a key) and its change layers (oldest first); `stored`: the base's name in
 * the store, when it is kept there.
 */
export interface LayeredSetData {
  base: Array<KeySetData | StoredSetRef>;
  layers: ChangeLayerData[];
  stored?: string;
}

/** A key set of a filter set: plain, or layered. */
export type SetData = KeySetData | LayeredSetData;

/** What a family's probe walker asks of a key set (KeySet's probe part): a key at a time, or a column's section together. */
export interface ProbeKeys {
  readonly size: number;
  readonly width: 20 | 32;
  /** 0 when no stream watches the key at `at`, else p: its streams are postings[p … p + postings[p - 1]). */
  find(dv: DataView, at: number): number;
  /** Read right after find(): the array its answer points into. */
  readonly postings: Uint32Array;
  /**
   * find() over the `count` keys of a section at keysAt, keysAt + width, … (their hash lanes at `lanesAt`, −1 when the
   * column has none), taken together (KeySet.probeParts): how many keys some stream watches, listed in columnHits;
   * with `misses`, those its bloom filter let through that no table holds listed too (KeySet.bloomMisses).
   */
  probeColumn(dv: DataView, keysAt: number, count: number, lanesAt: number, misses?: boolean): number;
  /** probeColumn()'s hits in column order: (index in the section, answer, part) triples, valid until the next pass. */
  readonly columnHits: Uint32Array;
  /** The array a hit's answer points into, by the hit's part. */
  postingsOf(part: number): Uint32Array;
  /** Lets every key of `sets` through this set's bloom filter from now on (KeySet.admit). */
  admit(sets: readonly KeySet[]): void;
}

/**
 * Calls `hit` with each key of a probe column's section that some stream watches, in column order (its index in the
 * section, find()'s answer, the postings that answer points into): the set's column pass (probeColumn), whatever
 * the set, plain, in parts or layered.
 */
export function eachHit(
  keys: ProbeKeys,
  dv: DataView,
  keysAt: number,
  count: number,
  lanesAt: number,
  hit: (index: number, at: number, postings: Uint32Array) => void,
): void {
  const n = keys.probeColumn(dv, keysAt, count, lanesAt);
  const hits = keys.columnHits;
  for (let k = 0; k < n; k++) hit(hits[3 * k]!, hits[3 * k + 1]!, keys.postingsOf(hits[3 * k + 2]!));
}

export const isLayered = (s: SetData): s is LayeredSetData => (s as LayeredSetData).layers !== undefined;

/** Reads a stored base's table in place (this thread's views) from its ref. */
export type ResolveStored = (ref: StoredSetRef) => KeySetData;

/** The set as a thread probes it: a KeySet, or a LayeredKeySet (a stored base posted by ref read with `resolve`). */
export function probeKeys(s: SetData, resolve?: ResolveStored): ProbeKeys {
  if (!isLayered(s)) return new KeySet(s);
  const parts = s.base.map((p) => new KeySet('stored' in p ? resolveRef(p as StoredSetRef, resolve) : p));
  const base = parts.length === 1 ? parts[0]! : new PartedKeySet(parts);
  return new LayeredKeySet(
    base,
    s.layers.map((l) => ({
      adds: new KeySet(l.adds),
      removes: new KeySet(l.removes),
      ...(l.admitted === undefined ? {} : { admitted: l.admitted }),
    })),
  );
}

function resolveRef(ref: StoredSetRef, resolve: ResolveStored | undefined): KeySetData {
  if (resolve === undefined) throw new Error(`no reader of stored sets here for ${ref.stored}`);
  return resolve(ref);
}

/** The set as posted to another thread: a stored base by its ref (name and bloom filter), not its views. */
export function postable(s: SetData): SetData {
  if (!isLayered(s) || s.stored === undefined) return s;
  const stored = s.stored;
  return {
    ...s,
    base: s.base.map((p, i) => {
      if ('stored' in p) return p;
      const { slots: _s, postingAt: _p, postings: _q, ...ref } = p as KeySetData;
      return { ...ref, stored: partName(stored, i) };
    }),
  };
}

/** The name of a stored base's part `i`. */
export const partName = (name: string, i: number): string => `${name}/p${i}`;

/** A base in parts, each a key set of the keys partOf gives it: a probe asks the one part. */
export class PartedKeySet implements ProbeKeys {
  readonly size: number;
  readonly width: 20 | 32;
  private readonly bits: number;
  private current: Uint32Array;

  constructor(private readonly parts: readonly KeySet[]) {
    this.bits = Math.log2(parts.length);
    if (!Number.isInteger(this.bits)) throw new RangeError(`${parts.length} parts, not a power of two`);
    this.size = parts.reduce((n, p) => n + p.size, 0);
    this.width = parts[0]!.width;
    this.current = parts[0]!.postings;
  }

  get postings(): Uint32Array {
    return this.current;
  }

  find(dv: DataView, at: number): number {
    const part = this.parts[partOf(dv, at, this.bits)]!;
    this.current = part.postings;
    return part.find(dv, at);
  }

  /** One pass over the section, each key routed to its part (KeySet.probeParts): a key costs one bloom block, in its part's filter. */
  probeColumn(dv: DataView, keysAt: number, count: number, lanesAt: number, misses = false): number {
    return KeySet.probeParts(this.parts, this.bits, dv, keysAt, count, lanesAt, misses);
  }

  admit(sets: readonly KeySet[]): void {
    KeySet.admit(this.parts, this.bits, sets);
  }

  get columnHits(): Uint32Array {
    return this.parts[0]!.columnHits;
  }

  postingsOf(part: number): Uint32Array {
    return this.parts[part]!.postings;
  }
}

/** The part of a LayeredKeySet's column hit whose answer the layers changed: it points into the set's own scratch. */
const LAID = 0xffff_ffff;

export class LayeredKeySet implements ProbeKeys {
  readonly size: number;
  readonly width: 20 | 32;
  private current: Uint32Array;
  /** Merged answers: count, then streams, each; find() writes one at 0, the column pass one per key it lays. */
  private scratch: Uint32Array = new Uint32Array(64);
  /** The layers' key sets that hold any key (adds and removes, oldest layer first): those asked about a key. */
  private readonly changed: KeySet[];
  /** The column pass's keys some layer changes (indices in the section), and its hits when there are any. */
  private touched: Uint32Array = new Uint32Array(64);
  private laidHits: Uint32Array = new Uint32Array(192);
  private hits: Uint32Array;

  constructor(
    private readonly base: ProbeKeys,
    private readonly layers: readonly ChangeLayer[],
  ) {
    this.size = layers.reduce((n, l) => n + l.adds.size, base.size);
    this.width = base.width;
    this.current = base.postings;
    this.changed = layers.flatMap((l) => [l.adds, l.removes]).filter((s) => s.size > 0);
    // The layers' keys let through the base's filter (once per layer: its `admitted`): the column pass then asks the
    // layers only about the keys the base's filter lets through (its hits and its false positives), not every key.
    for (const l of layers) {
      if (l.admitted !== undefined && Atomics.load(l.admitted, 0) === 1) continue;
      base.admit([l.adds, l.removes].filter((s) => s.size > 0));
      if (l.admitted !== undefined) Atomics.store(l.admitted, 0, 1);
    }
    this.hits = base.columnHits;
  }

  get postings(): Uint32Array {
    return this.current;
  }

  find(dv: DataView, at: number): number {
    const p = this.base.find(dv, at);
    let touched = false;
    for (const s of this.changed) {
      if (s.find(dv, at) !== 0) {
        touched = true;
        break;
      }
    }
    if (!touched) {
      this.current = this.base.postings;
      return p;
    }
    const laid = this.laid(dv, at, this.base.postings, p, 0);
    this.current = this.scratch;
    return laid;
  }

  /**
   * The base's column pass, its bloom filter holding the layers' keys too (admit): a key it stops is in no layer
   * either; of those it lets through (its hits, and the keys no table of it holds), the layers are asked about each
   * (from the column's lanes: no hashing), and the few they change get find()'s answer, laid in the scratch (part
   * LAID). A key no layer holds keeps the base's answer as it is.
   */
  probeColumn(dv: DataView, keysAt: number, count: number, lanesAt: number): number {
    const changing = this.changed.length > 0;
    const n = this.base.probeColumn(dv, keysAt, count, lanesAt, changing);
    const base = this.base.columnHits;
    if (!changing) {
      this.hits = base;
      return n;
    }
    const { count: misses, indices } = KeySet.bloomMisses;
    let t = 0;
    for (let k = 0, j = 0; k < n || j < misses; ) {
      const index = j === misses || (k < n && base[3 * k]! < indices[j]!) ? base[3 * k++]! : indices[j++]!;
      if (!this.changes(dv, keysAt + index * this.width, lanesAt < 0 ? -1 : lanesAt + index * 8)) continue;
      if (this.touched.length === t) this.touched = grown(this.touched, 2 * t);
      this.touched[t++] = index;
    }
    if (t === 0) {
      this.hits = base;
      return n;
    }
    const touched = this.touched;
    if (this.laidHits.length < 3 * (n + t)) this.laidHits = new Uint32Array(6 * (n + t));
    const out = this.laidHits;
    let hits = 0;
    let q = 0;
    for (let k = 0, j = 0; k < n || j < t; ) {
      const index = j === t || (k < n && base[3 * k]! < touched[j]!) ? base[3 * k]! : touched[j]!;
      let p = 0;
      let part = 0;
      if (k < n && base[3 * k] === index) {
        p = base[3 * k + 1]!;
        part = base[3 * k + 2]!;
        k++;
      }
      if (j < t && touched[j] === index) {
        while (j < t && touched[j] === index) j++;
        p = this.laid(dv, keysAt + index * this.width, p === 0 ? EMPTY : this.base.postingsOf(part), p, q);
        if (p === 0) continue;
        part = LAID;
        q = p + this.scratch[p - 1]!;
      }
      out[3 * hits] = index;
      out[3 * hits + 1] = p;
      out[3 * hits + 2] = part;
      hits++;
    }
    this.hits = out;
    return hits;
  }

  get columnHits(): Uint32Array {
    return this.hits;
  }

  /** Whether some layer holds the key at `at` (its lanes at `lanesAt`, −1: none). */
  private changes(dv: DataView, at: number, lanesAt: number): boolean {
    if (lanesAt < 0) return this.changed.some((s) => s.find(dv, at) !== 0);
    const lane1 = dv.getInt32(lanesAt, true);
    const l2 = dv.getInt32(lanesAt + 4, true);
    for (const s of this.changed) if (s.findLanes(dv, at, lane1, l2) !== 0) return true;
    return false;
  }

  /** A layered set is no base: nothing is laid over it. */
  admit(): void {
    throw new TypeError('a layered set is not the base of another');
  }

  postingsOf(part: number): Uint32Array {
    return part === LAID ? this.scratch : this.base.postingsOf(part);
  }

  /**
   * The streams of the key at `at` with the layers laid over the base's answer `p` (into `postings`): the later layer
   * and the later change counting. Written at `q` in the scratch (count, then streams): its answer (q + 1), 0 when
   * no stream is left.
   */
  private laid(dv: DataView, at: number, postings: Uint32Array, p: number, q: number): number {
    const streams = p === 0 ? [] : Array.from(postings.subarray(p, p + postings[p - 1]!));
    for (const l of this.layers) {
      const gone = l.removes.lookup(dv, at);
      const added = l.adds.lookup(dv, at);
      for (let i = streams.length - 1; i >= 0; i--) if (gone.includes(streams[i]!) || added.includes(streams[i]!)) streams.splice(i, 1);
      for (const s of added) streams.push(s);
    }
    if (streams.length === 0) return 0;
    if (this.scratch.length < q + 1 + streams.length) this.scratch = grown(this.scratch, 2 * (q + 1 + streams.length));
    this.scratch[q] = streams.length;
    this.scratch.set(streams, q + 1);
    return q + 1;
  }
}

/** A copy of `a` in a longer array. */
function grown(a: Uint32Array, length: number): Uint32Array {
  const out = new Uint32Array(length);
  out.set(a);
  return out;
}

const EMPTY = new Uint32Array(0);
