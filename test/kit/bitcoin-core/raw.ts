import {
  fillPrevouts,
  type BtcBlock,
  type BtcInput,
  type BtcOutput,
  type BtcTransaction,
  type PrevoutLookup,
} from '../../../engine/bitcoin/block.js';
import { sha256d } from '../../../engine/bitcoin/hash.js';

/**
 * Serialized Bitcoin blocks and transactions (the wire format; BIP-144 for
 * segwit) read into their parts, with the ids and sizes Bitcoin Core reports:
 * txid (without witness), hash (wtxid), size, vsize, weight. Ids are shown as
 * Core shows them, byte-reversed hex. Values stay in satoshis. The server never
 * reads this format (Core's getblock JSON is what it follows): the tests and
 * benches read the real mainnet blocks of the fixtures with it, and turn them
 * into the Bitcoin family's blocks (blockFromRaw).
 */
export type RawInput = Omit<BtcInput, 'prevout'>;
export type RawOutput = BtcOutput;
export interface RawTransaction extends Omit<BtcTransaction, 'vin' | 'vout'> {
  vin: RawInput[];
  vout: RawOutput[];
}

export interface RawHeader {
  hash: string;
  version: number;
  previousblockhash: string;
  merkleroot: string;
  time: number;
  bits: number;
  nonce: number;
}

export interface RawBlock {
  header: RawHeader;
  size: number;
  strippedsize: number;
  weight: number;
  tx: RawTransaction[];
}

export class RawFormatError extends Error {
  override name = 'RawFormatError';
}

/** Core's display form of a 32-byte hash: the bytes reversed, as hex. */
export const displayHash = (bytes: Uint8Array): string => Buffer.from(bytes).reverse().toString('hex');

class Reader {
  at = 0;
  private readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number): void {
    if (this.at + n > this.bytes.length) throw new RawFormatError(`truncated at byte ${this.at} (needs ${n} more)`);
  }
  u8(): number {
    this.need(1);
    return this.bytes[this.at++]!;
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.at, true);
    this.at += 4;
    return v;
  }
  i32(): number {
    this.need(4);
    const v = this.view.getInt32(this.at, true);
    this.at += 4;
    return v;
  }
  u64(): number {
    this.need(8);
    const v = this.view.getBigUint64(this.at, true);
    this.at += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RawFormatError(`an output value of ${v} satoshis`);
    return Number(v);
  }
  varint(): number {
    const first = this.u8();
    if (first < 0xfd) return first;
    if (first === 0xfd) {
      this.need(2);
      const v = this.view.getUint16(this.at, true);
      this.at += 2;
      return v;
    }
    if (first === 0xfe) return this.u32();
    return this.u64();
  }
  bytesOf(n: number): Uint8Array {
    this.need(n);
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  /** A count of items each at least `min` bytes: refused when the rest cannot hold them (a corrupt count must not allocate). */
  count(min: number): number {
    const n = this.varint();
    if (n * min > this.bytes.length - this.at) throw new RawFormatError(`a count of ${n} at byte ${this.at} exceeds what is left`);
    return n;
  }
}

const ZERO_TXID = '0'.repeat(64);

function readTransaction(r: Reader): RawTransaction {
  const start = r.at;
  const version = r.i32();
  // BIP-144: a marker 0x00 and flag 0x01 where the input count would be.
  let segwit = false;
  if (r.bytes[r.at] === 0x00 && r.bytes[r.at + 1] === 0x01) {
    segwit = true;
    r.at += 2;
  }
  const inputsAt = r.at;
  const vin: RawInput[] = [];
  for (let i = r.count(41); i > 0; i--) {
    const txid = displayHash(r.bytesOf(32));
    const vout = r.u32();
    const scriptSig = r.bytesOf(r.varint());
    vin.push({ txid, vout, scriptSig, sequence: r.u32(), witness: [] });
  }
  const vout: RawOutput[] = [];
  for (let i = r.count(9); i > 0; i--) {
    const value = r.u64();
    vout.push({ value, script: r.bytesOf(r.varint()) });
  }
  const outputsEnd = r.at;
  if (segwit) for (const input of vin) for (let k = r.count(1); k > 0; k--) input.witness.push(r.bytesOf(r.varint()));
  const witnessEnd = r.at;
  const locktime = r.u32();
  const size = r.at - start;
  // The txid hashes the transaction without marker, flag and witness.
  const stripped = segwit
    ? Buffer.concat([r.bytes.subarray(start, start + 4), r.bytes.subarray(inputsAt, outputsEnd), r.bytes.subarray(witnessEnd, r.at)])
    : r.bytes.subarray(start, r.at);
  const weight = stripped.length * 3 + size;
  const txid = displayHash(sha256d(stripped));
  const isCoinbase = vin.length === 1 && vin[0]!.txid === ZERO_TXID && vin[0]!.vout === 0xffffffff;
  return {
    txid,
    hash: segwit ? displayHash(sha256d(r.bytes.subarray(start, r.at))) : txid,
    version,
    locktime,
    size,
    vsize: Math.ceil(weight / 4),
    weight,
    vin,
    vout,
    isCoinbase,
  };
}

/** One serialized transaction, all of `bytes`. */
export function parseTransaction(bytes: Uint8Array): RawTransaction {
  const r = new Reader(bytes);
  const tx = readTransaction(r);
  if (r.at !== bytes.length) throw new RawFormatError(`${bytes.length - r.at} bytes after the transaction`);
  return tx;
}

/** One serialized block, all of `bytes`: its header (hash = double SHA-256 of the 80 bytes) and transactions. */
export function parseBlock(bytes: Uint8Array): RawBlock {
  const r = new Reader(bytes);
  const head = r.bytesOf(80);
  const hr = new Reader(head);
  const header: RawHeader = {
    hash: displayHash(sha256d(head)),
    version: hr.i32(),
    previousblockhash: displayHash(hr.bytesOf(32)),
    merkleroot: displayHash(hr.bytesOf(32)),
    time: hr.u32(),
    bits: hr.u32(),
    nonce: hr.u32(),
  };
  const tx: RawTransaction[] = [];
  for (let n = r.count(60); n > 0; n--) tx.push(readTransaction(r));
  if (r.at !== bytes.length) throw new RawFormatError(`${bytes.length - r.at} bytes after the block's transactions`);
  const strippedsize = bytes.length - tx.reduce((n, t) => n + t.size - (t.weight - t.size) / 3, 0);
  return { header, size: bytes.length, strippedsize, weight: strippedsize * 3 + bytes.length, tx };
}

/** The merkle root of txids (display form in, display form out), as the header carries it. */
export function merkleRoot(txids: readonly string[]): string {
  if (txids.length === 0) throw new RawFormatError('a block has at least its coinbase');
  let level: Uint8Array[] = txids.map((id) => Buffer.from(id, 'hex').reverse());
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    // An odd level pairs its last hash with itself.
    for (let i = 0; i < level.length; i += 2) next.push(sha256d(Buffer.concat([level[i]!, level[i + 1] ?? level[i]!])));
    level = next;
  }
  return displayHash(level[0]!);
}

/** A serialized transaction's parts; its inputs' prevouts from `lookup` where it knows them. */
export function txFromRaw(t: RawTransaction, lookup?: PrevoutLookup): BtcTransaction {
  const { vin, vout, ...fields } = t;
  return {
    ...fields,
    vin: vin.map((i) => ({ ...i, prevout: t.isCoinbase ? undefined : lookup?.(i.txid, i.vout) })),
    vout: vout.map((o) => ({ value: o.value, script: o.script })),
  };
}

/**
 * A serialized block (parseBlock) at `height` (the block does not say it; the
 * caller knows it). Inputs spending an earlier output of the same block are resolved
 * from the block itself, the others through `lookup`.
 */
export function blockFromRaw(raw: RawBlock, height: number, lookup?: PrevoutLookup): BtcBlock {
  const h = raw.header;
  const block: BtcBlock = {
    header: {
      hash: h.hash,
      height,
      time: h.time,
      previousblockhash: h.previousblockhash,
      merkleroot: h.merkleroot,
      bits: h.bits,
      version: h.version,
      nonce: h.nonce,
      nTx: raw.tx.length,
      size: raw.size,
      strippedsize: raw.strippedsize,
      weight: raw.weight,
    },
    txs: raw.tx.map((t) => txFromRaw(t)),
  };
  fillPrevouts(block.txs, lookup ?? (() => undefined));
  return block;
}
