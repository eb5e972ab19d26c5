import { KeySet, buildKeySet, type KeySetData } from '../match/key-set.js';
import { eachHit, type ProbeKeys, type SetData } from '../match/layered.js';
import { FilterSet, addRef, mergeKeys, type FilterSetData } from '../match/filter-set.js';
import { addressKeySet, addressesIn, type AddressKey } from '../match/watched-keys.js';
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

/** A stored EVM address (0x and 40 lowercase hex digits) as its 20 bytes: key set 0's keys. */
export const evmAddressKey: AddressKey = {
  width: 20,
  // Digit by digit (no regular expression, no Buffer): tens of millions of them in a compile.
  write(address, out, at) {
    if (address.length !== 42 || address.charCodeAt(0) !== 48 || address.charCodeAt(1) !== 120) throw notAddress(address);
    for (let i = 0; i < 20; i++) {
      const hi = HEX[address.charCodeAt(2 + 2 * i)] ?? 255;
      const lo = HEX[address.charCodeAt(3 + 2 * i)] ?? 255;
      if ((hi | lo) > 15) throw notAddress(address);
      out[at + i] = (hi << 4) | lo;
    }
  },
};

/** Each lowercase hex digit's value by its character code; 255 for any other character. */
const HEX = new Uint8Array(128).fill(255);
for (let d = 0; d < 16; d++) HEX['0123456789abcdef'.charCodeAt(d)] = d;

const notAddress = (address: string): RangeError => new RangeError(`${address} is not a 20-byte 0x-prefixed lowercase hex key`);

/** The filter set of streams whose address set is compiled (`addresses`: engine/match/watched-keys.ts): the topics of the allAddresses streams beside it. */
export function evmFilterSet(
  version: number,
  streams: ReadonlyArray<Pick<WatchedStream, 'index' | 'allAddresses' | 'topic0'>>,
  addresses: SetData,
  seed?: number,
): FilterSetData {
  const topics = mergeKeys(streams.filter((s) => s.allAddresses).flatMap((s) => s.topic0.map((t) => [hexKey(t, 32), s.index] as const)));
  return { version, family: 'evm', sets: [addresses, buildKeySet(32, topics, seed)], every: [] };
}

/** Compiles the watched keys of `streams` (their addresses in any case); `seed` mixes into every hash (a new one per version). */
export function compileFilterSet(version: number, streams: readonly WatchedStream[], seed = 0x9e3779b9): FilterSetData {
  const byStream = new Map(streams.map((s) => [String(s.index), s.addresses.map((a) => a.toLowerCase())]));
  const entries = streams.map((s) => ({ index: s.index, id: String(s.index), derived: new Uint8Array(0) }));
  return evmFilterSet(version, streams, addressKeySet(evmAddressKey, entries, addressesIn(byStream), seed), seed);
}

/** The addresses section against key set 0, then the topics section against key set 1. */
export function walkProbe(set: FilterSet, probe: Uint8Array): Map<number, number[]> {
  const p = readProbe(probe);
  const dv = new DataView(probe.buffer, probe.byteOffset, probe.byteLength);
  const out = new Map<number, number[]>();
  const [addresses, topics] = set.sets as [ProbeKeys, ProbeKeys];
  // eachHit: a plain key set takes a section together, with the lanes the column carries (version 2); nothing is
  // allocated for a key no stream watches (most of them), and a hit's streams are read from the postings in place.
  if (addresses.size > 0)
    eachHit(addresses, dv, p.addressesAt, p.addressCount, p.lanesAt, (i, at, postings) =>
      addRef(out, postings, at, dv.getUint32(p.addressRefsAt + i * 4, true)),
    );
  if (topics.size > 0)
    eachHit(topics, dv, p.topicsAt, p.topicCount, p.topicLanesAt, (i, at, postings) =>
      addRef(out, postings, at, dv.getUint32(p.topicRefsAt + i * 4, true)),
    );
  return out;
}

/** An EVM filter set with its two key sets by name. */
export class EvmFilterSet extends FilterSet {
  constructor(data: FilterSetData) {
    super(data, walkProbe);
  }

  /** The addresses' key set, when it is a plain one (not layered). */
  get addresses(): KeySet {
    return plain(this.sets[0]!);
  }

  get topics(): KeySet {
    return plain(this.sets[1]!);
  }
}

function plain(s: ProbeKeys): KeySet {
  if (!(s instanceof KeySet)) throw new TypeError('a layered key set, not a plain one');
  return s;
}
