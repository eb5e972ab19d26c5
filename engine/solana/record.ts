import { KEY_BYTES, KeyTable, encodeKey } from './key.js';
import { isVoteTransaction } from './probe.js';
import type { RpcTokenBalance } from './rpc-json.js';
import type { SolBlock, SolInnerInstructions, SolInstruction, SolTransaction } from './scan.js';
import { recordViews } from '../ingest/record-views.js';

/**
 * The stored form of a Solana slot: what a webhook body needs of each
 * transaction and nothing else (no log messages, lamport balances or rewards),
 * packed and read in place. The block's distinct keys sit once in a table and
 * transactions name them by id (a slot names ~30,000 keys, a third of them
 * distinct); a table of offsets lets a body decode the transactions a stream
 * matched and not the other thousands.
 *
 *   u8 version (1)
 *   u64 slot | u64 parentSlot | u8 flags (1: blockHeight known, 2: blockTime known) | u64 blockHeight | f64 blockTime
 *   blockhash 32 | previousBlockhash 32
 *   u32 keyCount | keyCount × 32-byte key
 *   u32 txCount | (txCount + 1) × u32 offset of each transaction (the last: the end)
 *   per transaction:
 *     u8 flags (VOTE, V0, ERR, INNER, PRE, POST) | var len + signature (base58 text)
 *     | var fee | [var len + err (JSON text)]
 *     | var static, loaded writable, loaded readonly counts | a var key id per account key
 *     | var n | n × instruction | [var n | n × (var index | var m | m × inner instruction)]
 *     | [var n | n × token balance (pre)] | [var n | n × token balance (post)]
 *   instruction: var programIdIndex | var n | n × var account index | var len + data (base58 text) | var stackHeight + 1 (0: null)
 *   token balance: var accountIndex | var mint id | var owner id + 1 (0: absent) | var programId id + 1 (0: absent)
 *                  | var len + amount | u8 decimals | u8 uiAmount known | [f64 uiAmount] | var len + uiAmountString
 *
 * Signatures and instruction data stay base58 text: bodies print them as that, and nothing matches on them.
 * var is LEB128; the rest little-endian.
 */
const VERSION = 1;
const HEIGHT_KNOWN = 1;
const TIME_KNOWN = 2;

const VOTE = 1;
const V0 = 2;
const ERR = 4;
const INNER = 8;
const PRE = 16;
const POST = 32;

const HEADER_BYTES = 1 + 8 + 8 + 1 + 8 + 8 + 2 * KEY_BYTES;

export class SolRecordFormatError extends Error {
  override name = 'SolRecordFormatError';
}

/** A growing buffer (a record's size is known only once written; it is a small part of the answer it came from). */
class Writer {
  at = 0;
  buf: Buffer;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(Math.max(256, size));
  }
  room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(grown, 0, 0, this.at);
    this.buf = grown;
  }
  u8(v: number): void {
    this.room(1);
    this.buf[this.at++] = v;
  }
  var(v: number): void {
    this.room(8);
    while (v >= 0x80) {
      this.buf[this.at++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.at++] = v;
  }
  f64(v: number): void {
    this.room(8);
    this.at = this.buf.writeDoubleLE(v, this.at);
  }
  /** Text whose characters are all below 0x80 (base58, digits) or, with utf8, any. */
  text(s: string, utf8 = false): void {
    const n = utf8 ? Buffer.byteLength(s) : s.length;
    this.var(n);
    this.room(n);
    if (utf8) this.at += this.buf.write(s, this.at, n, 'utf8');
    // Base58 and digits: a short one by a loop here, which costs less than Buffer's write and its checks.
    else if (n > 64)
      this.at += (this.buf as unknown as { latin1Write(s: string, at: number, n: number): number }).latin1Write(s, this.at, n);
    else for (let k = 0; k < n; k++) this.buf[this.at++] = s.charCodeAt(k);
  }
}

/** A slot's header: what the record keeps of the block beside its transactions. */
export type SolBlockHeader = Omit<SolBlock, 'transactions'>;

/**
 * A record written a transaction at a time (prepare writes each as the scanner reads it, so a slot's
 * transactions never pile up as objects), its keys added to `keys` (the probe column shares its ids).
 */
export class SolRecordWriter {
  private readonly w = new Writer(1 << 20);
  private offsets: number[] = [];
  /** The ids of the last transaction's account keys (the probe column takes them rather than look them up again). */
  keyIds = new Int32Array(256);

  constructor(readonly keys: KeyTable = new KeyTable()) {}

  add(t: SolTransaction): void {
    this.offsets.push(this.w.at);
    if (t.accountKeys.length > this.keyIds.length) this.keyIds = new Int32Array(t.accountKeys.length * 2);
    writeTx(this.w, t, this.keys, this.keyIds);
  }

  /** The record, with the block's header. */
  finish(block: SolBlockHeader): Uint8Array {
    const { keys, w, offsets } = this;
    const n = offsets.length;
    offsets.push(w.at);
    const prevHash = keys.id(block.previousBlockhash);
    const hash = keys.id(block.blockhash);
    const table = keys.bytes;
    const tableAt = HEADER_BYTES + 4 + table.length + 4;
    const txsAt = tableAt + (n + 1) * 4;
    const out = Buffer.allocUnsafeSlow(txsAt + w.at);
    let at = out.writeUInt8(VERSION, 0);
    at = out.writeBigUInt64LE(BigInt(block.slot), at);
    at = out.writeBigUInt64LE(BigInt(block.parentSlot), at);
    at = out.writeUInt8((block.blockHeight === null ? 0 : HEIGHT_KNOWN) | (block.blockTime === null ? 0 : TIME_KNOWN), at);
    at = out.writeBigUInt64LE(BigInt(block.blockHeight ?? 0), at);
    at = out.writeDoubleLE(block.blockTime ?? 0, at);
    out.set(table.subarray(hash * KEY_BYTES, hash * KEY_BYTES + KEY_BYTES), at);
    out.set(table.subarray(prevHash * KEY_BYTES, prevHash * KEY_BYTES + KEY_BYTES), at + KEY_BYTES);
    at = out.writeUInt32LE(keys.count, HEADER_BYTES);
    out.set(table, at);
    at = out.writeUInt32LE(n, at + table.length);
    for (let i = 0; i <= n; i++) at = out.writeUInt32LE(offsets[i]! + txsAt, at);
    w.buf.copy(out, txsAt, 0, w.at);
    return out;
  }
}

/** The record of `block` (keys added to `keys`, which then holds the block's key table). */
export function encodeSolRecord(block: SolBlock, keys: KeyTable = new KeyTable()): Uint8Array {
  const writer = new SolRecordWriter(keys);
  for (const t of block.transactions) writer.add(t);
  return writer.finish(block);
}

function writeTx(w: Writer, t: SolTransaction, keys: KeyTable, keyIds: Int32Array): void {
  w.u8(
    (isVoteTransaction(t) ? VOTE : 0) |
      (t.version === 0 ? V0 : 0) |
      (t.err === null ? 0 : ERR) |
      (t.innerInstructions === null ? 0 : INNER) |
      (t.preTokenBalances === null ? 0 : PRE) |
      (t.postTokenBalances === null ? 0 : POST),
  );
  w.text(t.signature);
  w.var(t.fee);
  if (t.err !== null) w.text(t.err, true);
  w.var(t.staticKeys);
  w.var(t.loadedWritable);
  w.var(t.accountKeys.length - t.staticKeys - t.loadedWritable);
  for (let k = 0; k < t.accountKeys.length; k++) w.var((keyIds[k] = keys.id(t.accountKeys[k]!)));
  w.var(t.instructions.length);
  for (const ix of t.instructions) writeInstruction(w, ix);
  if (t.innerInstructions !== null) {
    w.var(t.innerInstructions.length);
    for (const g of t.innerInstructions) {
      w.var(g.index);
      w.var(g.instructions.length);
      for (const ix of g.instructions) writeInstruction(w, ix);
    }
  }
  if (t.preTokenBalances !== null) writeBalances(w, t.preTokenBalances, keys);
  if (t.postTokenBalances !== null) writeBalances(w, t.postTokenBalances, keys);
}

function writeInstruction(w: Writer, ix: SolInstruction): void {
  w.var(ix.programIdIndex);
  w.var(ix.accounts.length);
  for (const a of ix.accounts) w.var(a);
  w.text(ix.data);
  w.var(ix.stackHeight === null ? 0 : ix.stackHeight + 1);
}

function writeBalances(w: Writer, list: readonly RpcTokenBalance[], keys: KeyTable): void {
  w.var(list.length);
  for (const b of list) {
    w.var(b.accountIndex);
    w.var(keys.id(b.mint));
    w.var(b.owner === undefined ? 0 : keys.id(b.owner) + 1);
    w.var(b.programId === undefined ? 0 : keys.id(b.programId) + 1);
    const a = b.uiTokenAmount;
    w.text(a.amount);
    w.u8(a.decimals);
    w.u8(a.uiAmount === null ? 0 : 1);
    if (a.uiAmount !== null) w.f64(a.uiAmount);
    w.text(a.uiAmountString);
  }
}

class Reader {
  constructor(
    readonly buf: Buffer,
    public at: number,
  ) {}
  u8(): number {
    return this.buf[this.at++]!;
  }
  var(): number {
    let v = 0;
    for (let scale = 1; ; scale *= 0x80) {
      const b = this.buf[this.at++]!;
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
    }
  }
  f64(): number {
    this.at += 8;
    return this.buf.readDoubleLE(this.at - 8);
  }
  text(utf8 = false): string {
    const n = this.var();
    this.at += n;
    return this.buf.toString(utf8 ? 'utf8' : 'latin1', this.at - n, this.at);
  }
}

/** A slot's header as the record holds it. */
export interface SolRecordHeader {
  slot: number;
  parentSlot: number;
  blockHeight: number | null;
  blockTime: number | null;
  blockhash: string;
  previousBlockhash: string;
}

/** A slot record read in place: the header and tables at once, each transaction when asked for; each key's text made once. */
export class SolRecordView {
  /** Transactions decoded so far. */
  decoded = 0;
  readonly header: SolRecordHeader;
  readonly txCount: number;
  readonly keyCount: number;
  private readonly tableAt: number;
  private readonly texts: Array<string | undefined>;

  private constructor(private readonly buf: Buffer) {
    const flags = buf[17]!;
    this.header = {
      slot: Number(buf.readBigUInt64LE(1)),
      parentSlot: Number(buf.readBigUInt64LE(9)),
      blockHeight: (flags & HEIGHT_KNOWN) !== 0 ? Number(buf.readBigUInt64LE(18)) : null,
      blockTime: (flags & TIME_KNOWN) !== 0 ? buf.readDoubleLE(26) : null,
      blockhash: encodeKey(buf.subarray(34, 34 + KEY_BYTES)),
      previousBlockhash: encodeKey(buf.subarray(34 + KEY_BYTES, HEADER_BYTES)),
    };
    this.keyCount = buf.readUInt32LE(HEADER_BYTES);
    const countAt = HEADER_BYTES + 4 + this.keyCount * KEY_BYTES;
    this.txCount = buf.readUInt32LE(countAt);
    this.tableAt = countAt + 4;
    this.texts = new Array<string | undefined>(this.keyCount);
  }

  /** Views of stored and of owned bytes (engine/ingest/record-views.ts). */
  private static readonly views = recordViews((bytes) => SolRecordView.over(bytes));
  static readonly of = SolRecordView.views.of;
  static readonly shared = SolRecordView.views.shared;

  private static over(bytes: Uint8Array): SolRecordView {
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (buf[0] !== VERSION) throw new SolRecordFormatError(`Solana slot record version ${buf[0]} is not ${VERSION}`);
    if (buf.length < HEADER_BYTES + 8) throw new SolRecordFormatError(`a Solana slot record of ${buf.length} bytes`);
    const keys = buf.readUInt32LE(HEADER_BYTES);
    if (HEADER_BYTES + 8 + keys * KEY_BYTES > buf.length) throw new SolRecordFormatError('the key table runs past the record');
    const view = new SolRecordView(buf);
    const end = view.tableAt + view.txCount * 4;
    if (end + 4 > buf.length || buf.readUInt32LE(end) !== buf.length)
      throw new SolRecordFormatError('the offset table does not end at the end of the record');
    return view;
  }

  /** Key `id` of the table, as base58 (made once per view). */
  key(id: number): string {
    if (id >= this.keyCount) throw new SolRecordFormatError(`key ${id} of a table of ${this.keyCount}`);
    let text = this.texts[id];
    if (text === undefined) {
      const at = HEADER_BYTES + 4 + id * KEY_BYTES;
      this.texts[id] = text = encodeKey(this.buf.subarray(at, at + KEY_BYTES));
    }
    return text;
  }

  /** Whether transaction `index` is a vote (probe.ts's rule), without decoding it. */
  isVote(index: number): boolean {
    return (this.buf[this.offset(index)]! & VOTE) !== 0;
  }

  /** Transaction `index`'s signature (its id), without decoding the rest. */
  signature(index: number): string {
    return new Reader(this.buf, this.offset(index) + 1).text();
  }

  /** Transaction `index`, decoded alone: the SolTransaction the scan read. */
  tx(index: number): SolTransaction {
    this.decoded++;
    const r = new Reader(this.buf, this.offset(index));
    const flags = r.u8();
    const signature = r.text();
    const fee = r.var();
    const err = (flags & ERR) !== 0 ? r.text(true) : null;
    const staticKeys = r.var();
    const loadedWritable = r.var();
    const total = staticKeys + loadedWritable + r.var();
    const accountKeys = new Array<string>(total);
    for (let k = 0; k < total; k++) accountKeys[k] = this.key(r.var());
    const instructions = new Array<SolInstruction>(r.var());
    for (let k = 0; k < instructions.length; k++) instructions[k] = readInstruction(r);
    let innerInstructions: SolInnerInstructions[] | null = null;
    if ((flags & INNER) !== 0) {
      innerInstructions = new Array<SolInnerInstructions>(r.var());
      for (let g = 0; g < innerInstructions.length; g++) {
        const gIndex = r.var();
        const list = new Array<SolInstruction>(r.var());
        for (let k = 0; k < list.length; k++) list[k] = readInstruction(r);
        innerInstructions[g] = { index: gIndex, instructions: list };
      }
    }
    const preTokenBalances = (flags & PRE) !== 0 ? this.balances(r) : null;
    const postTokenBalances = (flags & POST) !== 0 ? this.balances(r) : null;
    return {
      signature,
      fee,
      err,
      version: (flags & V0) !== 0 ? 0 : 'legacy',
      accountKeys,
      staticKeys,
      loadedWritable,
      instructions,
      innerInstructions,
      preTokenBalances,
      postTokenBalances,
    };
  }

  private balances(r: Reader): RpcTokenBalance[] {
    const out = new Array<RpcTokenBalance>(r.var());
    for (let k = 0; k < out.length; k++) {
      const accountIndex = r.var();
      const mint = this.key(r.var());
      const owner = r.var();
      const programId = r.var();
      const amount = r.text();
      const decimals = r.u8();
      const uiAmount = r.u8() === 1 ? r.f64() : null;
      const b: RpcTokenBalance = { accountIndex, mint, uiTokenAmount: { amount, decimals, uiAmount, uiAmountString: r.text() } };
      if (owner !== 0) b.owner = this.key(owner - 1);
      if (programId !== 0) b.programId = this.key(programId - 1);
      out[k] = b;
    }
    return out;
  }

  private offset(index: number): number {
    if (!Number.isInteger(index) || index < 0 || index >= this.txCount) throw new RangeError(`slot record has no transaction ${index}`);
    return this.buf.readUInt32LE(this.tableAt + index * 4);
  }
}

function readInstruction(r: Reader): SolInstruction {
  const programIdIndex = r.var();
  const accounts = new Array<number>(r.var());
  for (let k = 0; k < accounts.length; k++) accounts[k] = r.var();
  const data = r.text();
  const h = r.var();
  return { programIdIndex, accounts, data, stackHeight: h === 0 ? null : h - 1 };
}
