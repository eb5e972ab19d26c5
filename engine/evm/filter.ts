import { buildKeySet, type KeySet } from '../match/key-set.js';
import { FilterSet, addRef, mergeKeys, type FilterSetData } from '../match/filter-set.js';
import { readProbe } from './probe.js';

/**
 * An EVM chain's filter set: key set 0 holds every watched address (20 bytes),
 * key set 1 every topic0 of the allAddresses streams (32 bytes); the walker
 * reads the probe column's two sections against them (engine/evm/probe.ts).
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

const KEY_FORM = { 20: /^0x[0-9a-f]{40}$/, 32: /^0x[0-9a-f]{64}$/ } as const;

function hexKey(hex: string, width: 20 | 32): Uint8Array {
  const k = hex.toLowerCase();
  if (!KEY_FORM[width].test(k)) throw new RangeError(`${hex} is not a ${width}-byte 0x-prefixed hex key`);
  return Buffer.from(k.slice(2), 'hex');
}

/** Compiles the watched keys of `streams`; `seed` mixes into every hash (a new one per version). */
export function compileFilterSet(version: number, streams: readonly WatchedStream[], seed?: number): FilterSetData {
  const addresses = mergeKeys(streams.flatMap((s) => s.addresses.map((a) => [hexKey(a, 20), s.index] as const)));
  const topics = mergeKeys(streams.filter((s) => s.allAddresses).flatMap((s) => s.topic0.map((t) => [hexKey(t, 32), s.index] as const)));
  return { version, family: 'evm', sets: [buildKeySet(20, addresses, seed), buildKeySet(32, topics, seed)], every: [] };
}

/** The addresses section against key set 0, then the topics section against key set 1. */
export function walkProbe(set: FilterSet, probe: Uint8Array): Map<number, number[]> {
  const p = readProbe(probe);
  const dv = new DataView(probe.buffer, probe.byteOffset, probe.byteLength);
  const out = new Map<number, number[]>();
  const [addresses, topics] = set.sets as [KeySet, KeySet];
  // KeySet.probeColumn: the section's keys taken together, with the lanes the column carries (version 2); nothing is
  // allocated for a key no stream watches (most of them), and a hit's streams are read from the postings in place.
  if (addresses.size > 0) {
    const n = addresses.probeColumn(dv, p.addressesAt, p.addressCount, p.lanesAt);
    const hits = addresses.columnHits;
    for (let k = 0; k < n; k++) addRef(out, addresses.postings, hits[2 * k + 1]!, dv.getUint32(p.addressRefsAt + hits[2 * k]! * 4, true));
  }
  if (topics.size > 0) {
    const n = topics.probeColumn(dv, p.topicsAt, p.topicCount, p.topicLanesAt);
    const hits = topics.columnHits;
    for (let k = 0; k < n; k++) addRef(out, topics.postings, hits[2 * k + 1]!, dv.getUint32(p.topicRefsAt + hits[2 * k]! * 4, true));
  }
  return out;
}

/** An EVM filter set with its two key sets by name. */
export class EvmFilterSet extends FilterSet {
  constructor(data: FilterSetData) {
    super(data, walkProbe);
  }

  get addresses(): KeySet {
    return this.sets[0]!;
  }

  get topics(): KeySet {
    return this.sets[1]!;
  }
}
