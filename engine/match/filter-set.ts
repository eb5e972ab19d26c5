import { readProbe } from '../evm/probe.js';
import { KeySet, buildKeySet, type KeySetData } from './key-set.js';

/**
 * The compiled filter set of one chain: every watched address and every topic0
 * of the allAddresses streams, each with the streams that want it, rebuilt when
 * streams or their addresses change and published by version. Matching a block
 * walks its probe column once and says, per stream, which items (probe refs:
 * kind << 24 | index) concern it; only those are decoded later.
 */
export interface WatchedStream {
  /** The stream's index in the set (the caller keeps the index → stream id table). */
  index: number;
  /** Watched addresses, 0x-prefixed hex (any case). */
  addresses: readonly string[];
  /** allAddresses streams: every log whose topic0 is one of these (0x-prefixed 32-byte hex). */
  allAddresses: boolean;
  topic0: readonly string[];
}

/** A compiled filter set as plain data in shared memory: what the main thread publishes to the workers. */
export interface FilterSetData {
  version: number;
  addresses: KeySetData;
  topics: KeySetData;
}

/** Compiles the watched keys of `streams`; `seed` mixes into every hash (a new one per version). */
export function compileFilterSet(version: number, streams: readonly WatchedStream[], seed?: number): FilterSetData {
  return {
    version,
    addresses: buildKeySet(20, merge(streams.flatMap((s) => s.addresses.map((a) => [a, s.index] as const)), 20), seed),
    topics: buildKeySet(32, merge(streams.filter((s) => s.allAddresses).flatMap((s) => s.topic0.map((t) => [t, s.index] as const)), 32), seed),
  };
}

export class FilterSet {
  readonly version: number;
  readonly addresses: KeySet;
  readonly topics: KeySet;

  constructor(data: FilterSetData) {
    this.version = data.version;
    this.addresses = new KeySet(data.addresses);
    this.topics = new KeySet(data.topics);
  }

  /** Per stream index, the probe refs of the block's items that concern it, in probe order (addresses first, then topics). */
  match(probe: Uint8Array): Map<number, number[]> {
    const p = readProbe(probe);
    const dv = new DataView(probe.buffer, probe.byteOffset, probe.byteLength);
    const out = new Map<number, number[]>();
    // KeySet.find rather than lookup: nothing is allocated for a key no stream watches (most of them),
    // and a hit's streams are read from the postings in place.
    if (this.addresses.size > 0) {
      const set = this.addresses;
      for (let i = 0; i < p.addressCount; i++) {
        const hit = set.find(dv, p.addressesAt + i * 20);
        if (hit !== 0) add(out, set.postings, hit, dv.getUint32(p.addressRefsAt + i * 4, true));
      }
    }
    if (this.topics.size > 0) {
      const set = this.topics;
      for (let i = 0; i < p.topicCount; i++) {
        const hit = set.find(dv, p.topicsAt + i * 32);
        if (hit !== 0) add(out, set.postings, hit, dv.getUint32(p.topicRefsAt + i * 4, true));
      }
    }
    return out;
  }
}

/** Appends `ref` to each stream listed at postings[at … at + postings[at - 1]). */
function add(out: Map<number, number[]>, postings: Uint32Array, at: number, ref: number): void {
  const end = at + postings[at - 1]!;
  for (let k = at; k < end; k++) {
    const s = postings[k]!;
    const refs = out.get(s);
    if (refs === undefined) out.set(s, [ref]);
    else refs.push(ref);
  }
}

const KEY_FORM = { 20: /^0x[0-9a-f]{40}$/, 32: /^0x[0-9a-f]{64}$/ } as const;

/** One entry per distinct key with every stream that watches it (a stream listing a key twice counts once). */
function merge(pairs: ReadonlyArray<readonly [string, number]>, width: 20 | 32): Array<{ key: Uint8Array; streams: number[] }> {
  const byKey = new Map<string, Set<number>>();
  for (const [hex, stream] of pairs) {
    const k = hex.toLowerCase();
    if (!KEY_FORM[width].test(k)) throw new RangeError(`${hex} is not a ${width}-byte 0x-prefixed hex key`);
    let set = byKey.get(k);
    if (set === undefined) byKey.set(k, (set = new Set()));
    set.add(stream);
  }
  return [...byKey].map(([k, streams]) => ({ key: Buffer.from(k.slice(2), 'hex'), streams: [...streams] }));
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
