import { readProbe } from '../ingest/probe.js';
import { KeySet } from './key-set.js';

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

export class FilterSet {
  readonly addresses: KeySet;
  readonly topics: KeySet;

  constructor(
    readonly version: number,
    streams: readonly WatchedStream[],
  ) {
    this.addresses = new KeySet(20, merge(streams.flatMap((s) => s.addresses.map((a) => [a, s.index] as const)), 20));
    this.topics = new KeySet(32, merge(streams.filter((s) => s.allAddresses).flatMap((s) => s.topic0.map((t) => [t, s.index] as const)), 32));
  }

  /** Per stream index, the probe refs of the block's items that concern it, in probe order (addresses first, then topics). */
  match(probe: Uint8Array): Map<number, number[]> {
    const p = readProbe(probe);
    const dv = new DataView(probe.buffer, probe.byteOffset, probe.byteLength);
    const out = new Map<number, number[]>();
    const add = (streams: Uint32Array, ref: number): void => {
      for (let k = 0; k < streams.length; k++) {
        const s = streams[k]!;
        const refs = out.get(s);
        if (refs === undefined) out.set(s, [ref]);
        else refs.push(ref);
      }
    };
    if (this.addresses.size > 0) {
      for (let i = 0; i < p.addressCount; i++) {
        const hit = this.addresses.lookup(dv, p.addressesAt + i * 20);
        if (hit.length > 0) add(hit, dv.getUint32(p.addressRefsAt + i * 4, true));
      }
    }
    if (this.topics.size > 0) {
      for (let i = 0; i < p.topicCount; i++) {
        const hit = this.topics.lookup(dv, p.topicsAt + i * 32);
        if (hit.length > 0) add(hit, dv.getUint32(p.topicRefsAt + i * 4, true));
      }
    }
    return out;
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
