import type { ChainFamily } from '../chains/registry.js';
import type { KeySetInput } from './key-set.js';
import { probeKeys, type ProbeKeys, type ResolveStored, type SetData } from './layered.js';
import type { BaseHeader } from './stored-base.js';

/**
 * The compiled filter set of one chain: the keys its streams watch, each with
 * the streams that want it, in key sets of the chain family's widths (EVM:
 * addresses and topic0s; Bitcoin: script hashes), published by version: rebuilt
 * when streams change, and when their addresses change but for a large chain's
 * address set, which is a base kept in the store with the changes laid over it
 * (engine/match/bases.ts). Matching a block walks its probe
 * column once, in the family's format (the family's FamilyMatching is the
 * walker), and says, per stream, which items (probe refs: kind << 24 | index)
 * concern it; only those are decoded later.
 */

/** A compiled filter set as plain data in shared memory: what the main thread publishes to the workers. */
export interface FilterSetData {
  version: number;
  family: ChainFamily;
  /** The family's key sets, in the order its probe walker reads them (the addresses' set, 0, may be layered: engine/match/layered.ts). */
  sets: SetData[];
  /** Streams that want every item of a block (allAddresses): each gets the ref EVERY, after its keys' refs. */
  every: number[];
  /** The base its address set was kept in the store as (a compile in the pool with `store`). */
  base?: BaseHeader;
}

/** The ref a stream of `every` gets: the whole block concerns it. */
export const EVERY = 0xffffffff;

/** Walks a probe column in the family's format: per stream index, the refs of the items that concern it. */
export type ProbeWalk = (set: FilterSet, probe: Uint8Array) => Map<number, number[]>;

export class FilterSet {
  readonly version: number;
  readonly family: ChainFamily;
  readonly sets: ProbeKeys[];
  readonly every: readonly number[];

  /** `resolve`: how this thread reads a base kept in the store, posted by its ref. */
  constructor(
    data: FilterSetData,
    private readonly walk: ProbeWalk,
    resolve?: ResolveStored,
  ) {
    this.version = data.version;
    this.family = data.family;
    this.sets = data.sets.map((s) => probeKeys(s, resolve));
    this.every = data.every;
  }

  /**
   * Per stream index, the probe refs of the block's items that concern it, in probe order; a stream of `every`
   * has EVERY after them (its keys' refs kept: Solana's allAddresses leaves votes out, which its programIds may match).
   */
  match(probe: Uint8Array): Map<number, number[]> {
    const out = this.walk(this, probe);
    for (const s of this.every) {
      const refs = out.get(s);
      if (refs === undefined) out.set(s, [EVERY]);
      else refs.push(EVERY);
    }
    return out;
  }
}

/**
 * Appends `ref` to each stream listed at postings[at … at + postings[at - 1]) (what KeySet.find answered).
 *
 * A block's hits come many to a stream: while the same `out` is filled (a new Map per block, never cleared in
 * between), a stream's list is found by its index rather than by a Map lookup per hit (the probe loop's largest
 * cost after the bloom filter where hits are many); `out` is read the first time a stream comes.
 */
export function addRef(out: Map<number, number[]>, postings: Uint32Array, at: number, ref: number): void {
  if (out !== refsOut) {
    for (const s of listed) listOf[s] = undefined;
    listed.length = 0;
    refsOut = out;
  }
  const end = at + postings[at - 1]!;
  for (let k = at; k < end; k++) {
    const s = postings[k]!;
    const known = s < listOf.length ? listOf[s] : undefined;
    if (known !== undefined) {
      known.push(ref);
      continue;
    }
    let refs = out.get(s);
    if (refs === undefined) out.set(s, (refs = [ref]));
    else refs.push(ref);
    while (listOf.length <= s) listOf.push(undefined);
    listOf[s] = refs;
    listed.push(s);
  }
}

/** addRef's cache: the Map it fills, and per stream index that Map's list (the streams listed, to clear them). */
let refsOut: Map<number, number[]> | undefined;
const listOf: Array<number[] | undefined> = [];
const listed: number[] = [];

/** One entry per distinct key with every stream that watches it (a stream listing a key twice counts once). */
export function mergeKeys(pairs: Iterable<readonly [Uint8Array, number]>): KeySetInput[] {
  const byKey = new Map<string, { key: Uint8Array; streams: Set<number> }>();
  for (const [key, stream] of pairs) {
    const id = Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
    let entry = byKey.get(id);
    if (entry === undefined) byKey.set(id, (entry = { key, streams: new Set() }));
    entry.streams.add(stream);
  }
  return [...byKey.values()].map((e) => ({ key: e.key, streams: [...e.streams] }));
}

/**
 * Matches of a run of blocks packed in one Uint32Array, so a worker hands them
 * back by transfer rather than by structured clone of maps:
 *   per block: streamCount, then per stream: streamIndex, refCount, refs…
 */
export function packMatches(blocks: ReadonlyArray<Map<number, number[]>>): Uint32Array {
  let size = 0;
  for (const m of blocks) {
    size++;
    for (const refs of m.values()) size += 2 + refs.length;
  }
  const out = new Uint32Array(size);
  let o = 0;
  for (const m of blocks) {
    out[o++] = m.size;
    for (const [stream, refs] of m) {
      out[o++] = stream;
      out[o++] = refs.length;
      out.set(refs, o);
      o += refs.length;
    }
  }
  return out;
}

export function unpackMatches(packed: Uint32Array, count: number): Array<Map<number, number[]>> {
  const out: Array<Map<number, number[]>> = [];
  let o = 0;
  for (let b = 0; b < count; b++) {
    const m = new Map<number, number[]>();
    const streams = packed[o++]!;
    for (let s = 0; s < streams; s++) {
      const stream = packed[o++]!;
      const n = packed[o++]!;
      // A plain loop: Array.from over a subarray view would allocate the view and go through the iterator.
      const refs = new Array<number>(n);
      for (let k = 0; k < n; k++) refs[k] = packed[o + k]!;
      m.set(stream, refs);
      o += n;
    }
    out.push(m);
  }
  return out;
}
