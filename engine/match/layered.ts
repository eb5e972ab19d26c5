import { KeySet, type KeySetData } from './key-set.js';

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

/** What a family's probe walker asks of a key set (KeySet's probe part). */
export interface ProbeKeys {
  readonly size: number;
  readonly width: 20 | 32;
  /** 0 when no stream watches the key at `at`, else p: its streams are postings[p … p + postings[p - 1]). */
  find(dv: DataView, at: number): number;
  /** Read right after find(): the array its answer points into. */
  readonly postings: Uint32Array;
}

/**
 * Calls `hit` with each key of a probe column's section that some stream watches (its index in the section, find()'s
 * answer, the postings that answer points into): a plain KeySet takes the section together (KeySet.probeColumn, with
 * the column's hash lanes at `lanesAt`, −1 when it has none), a layered set key by key.
 */
export function eachHit(
  keys: ProbeKeys,
  dv: DataView,
  keysAt: number,
  count: number,
  lanesAt: number,
  hit: (index: number, at: number, postings: Uint32Array) => void,
): void {
  if (keys instanceof KeySet) {
    const n = keys.probeColumn(dv, keysAt, count, lanesAt);
    const hits = keys.columnHits;
    for (let k = 0; k < n; k++) hit(hits[2 * k]!, hits[2 * k + 1]!, keys.postings);
    return;
  }
  for (let i = 0; i < count; i++) {
    const at = keys.find(dv, keysAt + i * keys.width);
    // Read after each find: a layered set answers into the array of the layer that held the key.
    if (at !== 0) hit(i, at, keys.postings);
  }
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
    s.layers.map((l) => ({ adds: new KeySet(l.adds), removes: new KeySet(l.removes) })),
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

/**
 * Which of 2^bits parts holds the key at `at` (its second and fourth words mixed: addresses and script hashes are
 * uniform there, vanity prefixes aside).
 */
export function partOf(dv: DataView, at: number, bits: number): number {
  if (bits === 0) return 0;
  return Math.imul(dv.getUint32(at + 4, true) ^ Math.imul(dv.getUint32(at + 12, true), 0x85ebca6b), 0x9e3779b1) >>> (32 - bits);
}

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
}

export class LayeredKeySet implements ProbeKeys {
  readonly size: number;
  readonly width: 20 | 32;
  private current: Uint32Array;
  /** A merged answer: count, then streams. */
  private scratch = new Uint32Array(64);

  constructor(
    private readonly base: ProbeKeys,
    private readonly layers: ReadonlyArray<{ adds: KeySet; removes: KeySet }>,
  ) {
    this.size = layers.reduce((n, l) => n + l.adds.size, base.size);
    this.width = base.width;
    this.current = base.postings;
  }

  get postings(): Uint32Array {
    return this.current;
  }

  find(dv: DataView, at: number): number {
    const p = this.base.find(dv, at);
    let touched = false;
    for (const l of this.layers) {
      if ((l.adds.size > 0 && l.adds.find(dv, at) !== 0) || (l.removes.size > 0 && l.removes.find(dv, at) !== 0)) {
        touched = true;
        break;
      }
    }
    if (!touched) {
      this.current = this.base.postings;
      return p;
    }
    const streams = p === 0 ? [] : Array.from(this.base.postings.subarray(p, p + this.base.postings[p - 1]!));
    for (const l of this.layers) {
      const gone = l.removes.lookup(dv, at);
      const added = l.adds.lookup(dv, at);
      for (let i = streams.length - 1; i >= 0; i--) if (gone.includes(streams[i]!) || added.includes(streams[i]!)) streams.splice(i, 1);
      for (const s of added) streams.push(s);
    }
    if (streams.length === 0) return 0;
    if (this.scratch.length < streams.length + 1) this.scratch = new Uint32Array(2 * (streams.length + 1));
    this.scratch[0] = streams.length;
    this.scratch.set(streams, 1);
    this.current = this.scratch;
    return 1;
  }
}
