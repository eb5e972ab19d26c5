import { decodeRpcAt, wireFields, wireItems, type WireRange } from './codec.js';
import type { InternalCall, Json, StoredLog } from './record.js';
import { recordViews } from '../ingest/record-views.js';

/**
 * A stored block record read in place: one walk over its msgpack headers
 * finds where each transaction, receipt, log and internal call lies, and an
 * item is decoded only when it is asked for (the matcher builds a webhook from
 * the few items a stream matched, not from the whole block).
 */
export class RecordView {
  /** Items decoded so far (header, transactions, receipts, logs, calls). */
  decoded = 0;
  private headerValue: Json | undefined;
  private readonly cache = new Map<string, unknown>();

  private constructor(
    private readonly bytes: Uint8Array,
    private readonly headerAt: WireRange,
    private readonly txAt: ReadonlyArray<{ tx: WireRange; receipt: WireRange }>,
    /** Each log's place, by its ordinal in the block (the probe column's log ref). */
    private readonly logAt: readonly WireRange[],
    /** Each log's transaction index, by ordinal. */
    private readonly logTxIndex: Uint32Array,
    /** The first log ordinal of each transaction, and one past the last. */
    private readonly firstLog: Uint32Array,
    private readonly callAt: readonly WireRange[] | null,
  ) {}

  /** Views of stored and of owned bytes (engine/ingest/record-views.ts). */
  private static readonly views = recordViews((bytes) => RecordView.over(bytes));
  static readonly of = RecordView.views.of;
  static readonly shared = RecordView.views.shared;

  private static over(bytes: Uint8Array): RecordView {
    const field = (m: Map<string, WireRange>, k: string): WireRange => {
      const r = m.get(k);
      if (r === undefined) throw new RangeError(`stored record has no ${k}`);
      return r;
    };
    const txAt: Array<{ tx: WireRange; receipt: WireRange }> = [];
    const logAt: WireRange[] = [];
    const logTx: number[] = [];
    const firstLog: number[] = [];
    let calls: WireRange[] | null = null;
    // One pass: the transactions and their logs are indexed as they are walked, the rest skipped.
    const readLogs = (at: number, txIndex: number): number | undefined => {
      const logs = wireItems(bytes, at);
      for (const l of logs?.items ?? []) {
        logAt.push(l);
        logTx.push(txIndex);
      }
      return logs?.end;
    };
    const readTx = (at: number): number => {
      firstLog.push(logAt.length);
      const index = txAt.length;
      const { fields, end } = wireFields(bytes, at, (k, a) => (k === 'logs' ? readLogs(a, index) : undefined));
      field(fields, 'logs');
      txAt.push({ tx: field(fields, 'tx'), receipt: field(fields, 'receipt') });
      return end;
    };
    const { fields: top } = wireFields(bytes, 0, (k, at) => {
      if (k === 'txs') return wireItems(bytes, at, readTx)?.end;
      if (k !== 'internal') return undefined;
      const items = wireItems(bytes, at);
      calls = items?.items ?? null;
      return items?.end;
    });
    field(top, 'txs');
    firstLog.push(logAt.length);
    return new RecordView(bytes, field(top, 'header'), txAt, logAt, Uint32Array.from(logTx), Uint32Array.from(firstLog), calls);
  }

  get header(): Json {
    return (this.headerValue ??= this.decode<Json>(this.headerAt));
  }

  get txCount(): number {
    return this.txAt.length;
  }

  get logCount(): number {
    return this.logAt.length;
  }

  /** One field of the header, decoded alone (a block's hash without its logsBloom). */
  headerField(key: string): unknown {
    return this.headerValue !== undefined ? this.headerValue[key] : this.field('h', this.headerAt, key);
  }

  /** One field of a transaction, decoded alone (its hash without its input). */
  txField(index: number, key: string): unknown {
    const whole = this.cache.get(`t${index}`) as Json | undefined;
    if (whole !== undefined) return whole[key];
    const at = this.txAt[index]?.tx;
    if (at === undefined) throw new RangeError(`block record has no item t${index}`);
    return this.field(`t${index}`, at, key);
  }

  /** The node's transaction object (without blockHash, blockNumber, transactionIndex). */
  tx(index: number): Json {
    return this.item(`t${index}`, () => this.txAt[index]?.tx);
  }

  receipt(index: number): Json {
    return this.item(`r${index}`, () => this.txAt[index]?.receipt);
  }

  log(ordinal: number): StoredLog {
    return this.item(`l${ordinal}`, () => this.logAt[ordinal]);
  }

  /** The transaction index of the log with this ordinal. */
  logTx(ordinal: number): number {
    if (ordinal >= this.logTxIndex.length) throw new RangeError(`block has no log ${ordinal}`);
    return this.logTxIndex[ordinal]!;
  }

  /** The ordinals of a transaction's logs: [first, end). */
  logsOf(txIndex: number): [first: number, end: number] {
    if (txIndex >= this.txAt.length) throw new RangeError(`block has no transaction ${txIndex}`);
    return [this.firstLog[txIndex]!, this.firstLog[txIndex + 1]!];
  }

  /** Whether the node traced calls for this block (false without a call tracer). */
  get traced(): boolean {
    return this.callAt !== null;
  }

  internal(index: number): InternalCall {
    return this.item(`c${index}`, () => this.callAt?.[index]);
  }

  /** A field of the stored object at `range`, found by its headers and decoded alone; cached under `item.key`. */
  private field(item: string, range: WireRange, key: string): unknown {
    const k = `${item}.${key}`;
    if (this.cache.has(k)) return this.cache.get(k);
    const at = wireFields(this.bytes, range.start).fields.get(key);
    const v = at === undefined ? undefined : this.decode<unknown>(at);
    this.cache.set(k, v);
    return v;
  }

  private item<T>(key: string, at: () => WireRange | undefined): T {
    let v = this.cache.get(key) as T | undefined;
    if (v === undefined) {
      const range = at();
      if (range === undefined) throw new RangeError(`block record has no item ${key}`);
      v = this.decode<T>(range);
      this.cache.set(key, v);
    }
    return v;
  }

  private decode<T>(range: WireRange): T {
    this.decoded++;
    return decodeRpcAt<T>(this.bytes, range);
  }
}
