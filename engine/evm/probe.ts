import { writeKeyLanes } from '../match/key-set.js';
import type { BlockRecord } from './record.js';

/**
 * The probe column of a block: every address and topic a stream may watch, as
 * raw bytes in one packed value, each with the item it came from, so a matcher
 * scans it from LMDB without decoding the block record.
 *
 *   u8 version (2) | u32 addressCount | u32 topicCount
 *   addressCount × 20-byte address | addressCount × u32 ref
 *   topicCount × 32-byte topic0     | topicCount × u32 ref
 *   addressCount × 8-byte lanes     | topicCount × 8-byte lanes
 *
 * ref = kind << 24 | index (the transaction, log or internal-call ordinal in the block). The lanes are each key's
 * two hash lanes (engine/match/key-set.ts, writeKeyLanes), computed once here so that matching reads them instead of
 * hashing every key of every block it matches. Version 1 (before the lanes; columns written before them stay as they
 * are) is read too: its keys are hashed when matched.
 */
export const enum ProbeKind {
  TxFrom = 0,
  TxTo = 1,
  ContractCreated = 2,
  LogEmitter = 3,
  /** An indexed log topic holding an address (Transfer/Approval from, to, owner, spender, operator). */
  LogTopicAddress = 4,
  InternalFrom = 5,
  InternalTo = 6,
  Topic0 = 7,
}

export const PROBE_HEADER = 9;
const VERSION = 2;
/** Bytes of a key's lanes. */
const LANES = 8;

/** A 32-byte topic whose first 12 bytes are zero carries an address. */
const isAddressTopic = (t: string): boolean => t.length === 66 && t.startsWith('0x000000000000000000000000');

/** Grows as needed; reused from block to block (the column is copied out at the end). */
let scratch = Buffer.allocUnsafe(1 << 16);

export function buildProbe(r: BlockRecord): Uint8Array {
  // Hex strings and refs first, then one pass writes the bytes where they go.
  const addrs: string[] = [];
  const addrRefs: number[] = [];
  const topics: string[] = [];
  const topicRefs: number[] = [];
  const addr = (hex: unknown, kind: ProbeKind, index: number): void => {
    if (typeof hex !== 'string' || hex.length !== 42) return;
    addrs.push(hex);
    addrRefs.push((kind << 24) | index);
  };
  let logOrdinal = 0;
  r.txs.forEach((t, i) => {
    addr(t.tx['from'], ProbeKind.TxFrom, i);
    addr(t.tx['to'], ProbeKind.TxTo, i);
    addr(t.receipt['contractAddress'], ProbeKind.ContractCreated, i);
    for (const l of t.logs) {
      addr(l.address, ProbeKind.LogEmitter, logOrdinal);
      const topic0 = l.topics[0];
      if (topic0?.length === 66) {
        topics.push(topic0);
        topicRefs.push((ProbeKind.Topic0 << 24) | logOrdinal);
      }
      for (let k = 1; k < l.topics.length; k++) {
        const topic = l.topics[k]!;
        if (isAddressTopic(topic)) {
          addrs.push(topic);
          addrRefs.push((ProbeKind.LogTopicAddress << 24) | logOrdinal);
        }
      }
      logOrdinal++;
    }
  });
  (r.internal ?? []).forEach((c, i) => {
    addr(c.from, ProbeKind.InternalFrom, i);
    addr(c.to, ProbeKind.InternalTo, i);
  });
  const size = PROBE_HEADER + addrs.length * (24 + LANES) + topics.length * (36 + LANES);
  if (scratch.length < size) scratch = Buffer.allocUnsafe(size * 2);
  const out = scratch;
  out.writeUInt8(VERSION, 0);
  out.writeUInt32LE(addrs.length, 1);
  out.writeUInt32LE(topics.length, 5);
  let o = PROBE_HEADER;
  // Fixed strides whatever the text holds; an address topic is written from its last 40 hex digits.
  for (const a of addrs) {
    out.fill(0, o, o + 20).write(a.slice(a.length - 40), o, 20, 'hex');
    o += 20;
  }
  for (const ref of addrRefs) o = out.writeUInt32LE(ref >>> 0, o);
  for (const t of topics) {
    out.fill(0, o, o + 32).write(t.slice(2), o, 32, 'hex');
    o += 32;
  }
  for (const ref of topicRefs) o = out.writeUInt32LE(ref >>> 0, o);
  const dv = new DataView(out.buffer, out.byteOffset, size);
  for (let k = 0, at = PROBE_HEADER; k < addrs.length; k++, at += 20, o += LANES) writeKeyLanes(dv, at, 20, dv, o);
  const topicsAt = PROBE_HEADER + addrs.length * 24;
  for (let k = 0, at = topicsAt; k < topics.length; k++, at += 32, o += LANES) writeKeyLanes(dv, at, 32, dv, o);
  return Uint8Array.prototype.slice.call(out, 0, size);
}

/** A view of a probe column (no copy): counts and offsets of its sections. */
export interface ProbeView {
  bytes: Uint8Array;
  addressCount: number;
  topicCount: number;
  addressesAt: number;
  addressRefsAt: number;
  topicsAt: number;
  topicRefsAt: number;
  /** Where the addresses' lanes start (8 bytes each, then the topics'), or -1: a column of version 1 has none. */
  lanesAt: number;
  topicLanesAt: number;
}

export function readProbe(bytes: Uint8Array): ProbeView {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = dv.getUint8(0);
  if (version !== VERSION && version !== 1) throw new Error(`probe column version ${version} is neither ${VERSION} nor 1`);
  const addressCount = dv.getUint32(1, true);
  const topicCount = dv.getUint32(5, true);
  const addressesAt = PROBE_HEADER;
  const addressRefsAt = addressesAt + addressCount * 20;
  const topicsAt = addressRefsAt + addressCount * 4;
  const topicRefsAt = topicsAt + topicCount * 32;
  const lanesAt = version === 1 ? -1 : topicRefsAt + topicCount * 4;
  const topicLanesAt = version === 1 ? -1 : lanesAt + addressCount * LANES;
  return { bytes, addressCount, topicCount, addressesAt, addressRefsAt, topicsAt, topicRefsAt, lanesAt, topicLanesAt };
}
