import { difficultyOf, type BtcBlock, type BtcHeader, type BtcInput, type BtcOutput, type BtcTransaction } from './block.js';
import { recordViews } from '../ingest/record-views.js';

/**
 * The stored form of a Bitcoin block: one packed value, written in two passes
 * (sizes, then bytes) and read in place. A table of offsets says where each
 * transaction starts, so the matcher decodes the few transactions a stream
 * matched and not the other thousands.
 *
 *   u8 version (1)
 *   header: hash 32 | previousblockhash 32 | merkleroot 32 |
 *           u32 height, time, bits, version (i32), nonce, nTx, size, strippedsize, weight
 *   u32 txCount | (txCount + 1) × u32 offset of each transaction (the last: the end)
 *   per transaction:
 *     txid 32 | i32 version | u32 locktime, size, vsize, weight | u8 flags (1: coinbase, 2: witness)
 *     | [hash 32, when it differs from txid: with witness only]
 *     var inputCount | var outputCount
 *     per input:  txid 32 | u32 vout | u32 sequence | var len + scriptSig | var n, n × (var len + item)
 *                 | u8 prevout known | [u64 value | var len + script]
 *     per output: u64 value | var len + script
 *
 * Ids are stored as Core shows them (display order); u32/u64 little-endian; var is LEB128.
 */
const VERSION = 1;
const HEADER_BYTES = 1 + 3 * 32 + 9 * 4;
const TX_FIXED = 32 + 5 * 4 + 1;
const COINBASE = 1;
const WITNESS = 2;
const TWO_32 = 2 ** 32;

const varSize = (n: number): number => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);
const bytesSize = (b: Uint8Array): number => varSize(b.length) + b.length;

function txSize(t: BtcTransaction): number {
  let n = TX_FIXED + (t.hash === t.txid ? 0 : 32) + varSize(t.vin.length) + varSize(t.vout.length);
  for (const i of t.vin) {
    n += 32 + 8 + bytesSize(i.scriptSig) + varSize(i.witness.length) + 1;
    for (const w of i.witness) n += bytesSize(w);
    if (i.prevout !== undefined) n += 8 + bytesSize(i.prevout.script);
  }
  for (const o of t.vout) n += 8 + bytesSize(o.script);
  return n;
}

class Writer {
  at = 0;
  constructor(readonly buf: Buffer) {}
  hash(hex: string): void {
    if (this.buf.write(hex, this.at, 32, 'hex') !== 32) throw new RangeError(`${hex} is not a 32-byte hash`);
    this.at += 32;
  }
  u8(v: number): void {
    this.buf[this.at++] = v;
  }
  u32(v: number): void {
    this.at = this.buf.writeUInt32LE(v >>> 0, this.at);
  }
  u64(v: number): void {
    this.u32(v % TWO_32);
    this.u32(Math.floor(v / TWO_32));
  }
  var(v: number): void {
    while (v >= 0x80) {
      this.buf[this.at++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.at++] = v;
  }
  bytes(b: Uint8Array): void {
    this.var(b.length);
    this.buf.set(b, this.at);
    this.at += b.length;
  }
}

/** The record of `block`. */
export function encodeRecord(block: BtcBlock): Uint8Array {
  const { header: h, txs } = block;
  const sizes = txs.map(txSize);
  const tableBytes = 4 + (txs.length + 1) * 4;
  const w = new Writer(Buffer.allocUnsafe(HEADER_BYTES + tableBytes + sizes.reduce((a, b) => a + b, 0)));
  w.u8(VERSION);
  w.hash(h.hash);
  w.hash(h.previousblockhash);
  w.hash(h.merkleroot);
  for (const v of [h.height, h.time, h.bits, h.version, h.nonce, h.nTx, h.size, h.strippedsize, h.weight]) w.u32(v);
  w.u32(txs.length);
  let offset = HEADER_BYTES + tableBytes;
  for (const s of sizes) {
    w.u32(offset);
    offset += s;
  }
  w.u32(offset);
  for (const t of txs) writeTx(w, t);
  return w.buf;
}

function writeTx(w: Writer, t: BtcTransaction): void {
  w.hash(t.txid);
  w.u32(t.version);
  w.u32(t.locktime);
  w.u32(t.size);
  w.u32(t.vsize);
  w.u32(t.weight);
  const witness = t.hash !== t.txid;
  w.u8((t.isCoinbase ? COINBASE : 0) | (witness ? WITNESS : 0));
  if (witness) w.hash(t.hash);
  w.var(t.vin.length);
  w.var(t.vout.length);
  for (const i of t.vin) {
    w.hash(i.txid);
    w.u32(i.vout);
    w.u32(i.sequence);
    w.bytes(i.scriptSig);
    w.var(i.witness.length);
    for (const item of i.witness) w.bytes(item);
    w.u8(i.prevout === undefined ? 0 : 1);
    if (i.prevout !== undefined) {
      w.u64(i.prevout.value);
      w.bytes(i.prevout.script);
    }
  }
  for (const o of t.vout) {
    w.u64(o.value);
    w.bytes(o.script);
  }
}

export class RecordFormatError extends Error {
  override name = 'RecordFormatError';
}

class Reader {
  constructor(
    readonly buf: Buffer,
    public at: number,
  ) {}
  hash(): string {
    this.at += 32;
    return this.buf.toString('hex', this.at - 32, this.at);
  }
  u8(): number {
    return this.buf[this.at++]!;
  }
  u32(): number {
    this.at += 4;
    return this.buf.readUInt32LE(this.at - 4);
  }
  i32(): number {
    this.at += 4;
    return this.buf.readInt32LE(this.at - 4);
  }
  u64(): number {
    const lo = this.u32();
    return lo + this.u32() * TWO_32;
  }
  var(): number {
    let v = 0;
    for (let scale = 1; ; scale *= 0x80) {
      const b = this.buf[this.at++]!;
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
    }
  }
  /** A view into the record (no copy). */
  bytes(): Uint8Array {
    const n = this.var();
    this.at += n;
    return this.buf.subarray(this.at - n, this.at);
  }
}

/** A block record read in place: the header and offset table at once, each transaction when asked for. */
export class BtcRecordView {
  /** Transactions decoded so far. */
  decoded = 0;
  readonly header: BtcHeader;
  readonly txCount: number;

  private constructor(
    private readonly buf: Buffer,
    private readonly tableAt: number,
  ) {
    const r = new Reader(buf, 1);
    const hash = r.hash();
    const previousblockhash = r.hash();
    const merkleroot = r.hash();
    const [height, time, bits] = [r.u32(), r.u32(), r.u32()];
    const version = r.i32();
    const [nonce, nTx, size, strippedsize, weight] = [r.u32(), r.u32(), r.u32(), r.u32(), r.u32()];
    this.header = { hash, height, time, previousblockhash, merkleroot, bits, version, nonce, nTx, size, strippedsize, weight };
    this.txCount = r.u32();
  }

  /** Views of stored and of owned bytes (engine/ingest/record-views.ts). */
  private static readonly views = recordViews((bytes) => BtcRecordView.over(bytes));
  static readonly of = BtcRecordView.views.of;
  static readonly shared = BtcRecordView.views.shared;

  private static over(bytes: Uint8Array): BtcRecordView {
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (buf[0] !== VERSION) throw new RecordFormatError(`Bitcoin block record version ${buf[0]} is not ${VERSION}`);
    if (buf.length < HEADER_BYTES + 8) throw new RecordFormatError(`a Bitcoin block record of ${buf.length} bytes`);
    const view = new BtcRecordView(buf, HEADER_BYTES + 4);
    const end = view.tableAt + view.txCount * 4;
    if (end + 4 > buf.length || buf.readUInt32LE(end) !== buf.length)
      throw new RecordFormatError('the offset table does not end at the end of the record');
    return view;
  }

  /** Core's difficulty, from bits. */
  get difficulty(): number {
    return difficultyOf(this.header.bits);
  }

  /** A transaction's txid, without decoding it. */
  txid(index: number): string {
    return this.buf.toString('hex', this.offset(index), this.offset(index) + 32);
  }

  /** Transaction `index`, decoded alone (scripts are views into the record). */
  tx(index: number): BtcTransaction {
    this.decoded++;
    const r = new Reader(this.buf, this.offset(index));
    const txid = r.hash();
    const version = r.i32();
    const [locktime, size, vsize, weight] = [r.u32(), r.u32(), r.u32(), r.u32()];
    const flags = r.u8();
    const isCoinbase = (flags & COINBASE) !== 0;
    const hash = (flags & WITNESS) !== 0 ? r.hash() : txid;
    const vin = new Array<BtcInput>(r.var());
    const vout = new Array<BtcOutput>(r.var());
    for (let k = 0; k < vin.length; k++) {
      const input: BtcInput = { txid: r.hash(), vout: r.u32(), sequence: r.u32(), scriptSig: r.bytes(), witness: [], prevout: undefined };
      for (let n = r.var(); n > 0; n--) input.witness.push(r.bytes());
      if (r.u8() === 1) input.prevout = { value: r.u64(), script: r.bytes() };
      vin[k] = input;
    }
    for (let k = 0; k < vout.length; k++) vout[k] = { value: r.u64(), script: r.bytes() };
    return { txid, hash, version, locktime, size, vsize, weight, isCoinbase, vin, vout };
  }

  private offset(index: number): number {
    if (!Number.isInteger(index) || index < 0 || index >= this.txCount) throw new RangeError(`block record has no transaction ${index}`);
    return this.buf.readUInt32LE(this.tableAt + index * 4);
  }
}
