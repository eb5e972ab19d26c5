import type { Table } from '../engine/ports.js';

/**
 * A unit of writes as bytes, for the store's writer thread (storage/writer.ts): each write is its table (an index
 * into the store's TABLES), its key as UTF-8, and its value's bytes (or none: a removal), end to end in one
 * buffer that moves to the thread without a copy of each.
 *
 *   u8 table · u16 key length · key · i32 value length (−1: removal) · value
 */
export class WriteLog {
  // Unfilled: every byte below `used` is written before it is read, and nothing past it is read.
  private bytes = Buffer.allocUnsafe(1 << 20);
  private view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  private used = 0;
  /** Writes logged. */
  count = 0;

  constructor(private readonly tableIndex: (table: Table) => number) {}

  /**
   * Logs a write; answers a view of the value's bytes in the log (never written again) when `kept` (a plain
   * Uint8Array: a Buffer's subarray is a FastBuffer made in JavaScript, several times the cost).
   */
  write(table: Table, key: string, value: Uint8Array | null, kept = true): Uint8Array | null {
    // UTF-8 takes at most 3 bytes a UTF-16 unit.
    this.reserve(7 + key.length * 3 + (value?.byteLength ?? 0));
    const at = this.used;
    this.bytes[at] = this.tableIndex(table);
    const keyLength = this.bytes.write(key, at + 3, 'utf8');
    this.view.setUint16(at + 1, keyLength, true);
    let end = at + 3 + keyLength;
    this.view.setInt32(end, value === null ? -1 : value.byteLength, true);
    end += 4;
    let view: Uint8Array | null = null;
    if (value !== null) {
      this.bytes.set(value, end);
      if (kept) view = new Uint8Array(this.bytes.buffer, this.bytes.byteOffset + end, value.byteLength);
      end += value.byteLength;
    }
    this.used = end;
    this.count++;
    return view;
  }

  /** A copy of what was logged, in a buffer of its own (to move to the thread). */
  take(): Uint8Array {
    return new Uint8Array(this.bytes.subarray(0, this.used));
  }

  private reserve(size: number): void {
    if (this.used + size <= this.bytes.byteLength) return;
    // A new buffer: views handed out of the old one stay valid (it is kept by them and never written again).
    const next = Buffer.allocUnsafe(Math.max(this.bytes.byteLength * 2, this.used + size));
    next.set(this.bytes.subarray(0, this.used));
    this.bytes = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }
}

/** Each write of a log, in order. */
export function* readLog(log: Uint8Array): Generator<{ table: number; key: string; value: Uint8Array | null }> {
  const view = new DataView(log.buffer, log.byteOffset, log.byteLength);
  const text = Buffer.from(log.buffer, log.byteOffset, log.byteLength);
  let at = 0;
  while (at < log.byteLength) {
    const table = log[at]!;
    const keyLength = view.getUint16(at + 1, true);
    const key = text.toString('utf8', at + 3, at + 3 + keyLength);
    at += 3 + keyLength;
    const length = view.getInt32(at, true);
    at += 4;
    const value = length < 0 ? null : log.subarray(at, at + length);
    if (length > 0) at += length;
    yield { table, key, value };
  }
}
