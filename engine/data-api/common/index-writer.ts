import type { Entry, Kv, Table } from '../../ports.js';

/** What a key held before a block wrote it: msgpack bytes, or null for no key. */
export type Undo = Array<[table: Table, key: string, before: Uint8Array | null]>;

/**
 * The store as an index writes it: reads pass through, and the first write of each key in a block saves what it
 * held before. Tables an index may write are listed: a write elsewhere is a bug, refused.
 */
export class IndexWriter {
  private readonly saved = new Set<string>();
  constructor(
    private readonly kv: Kv,
    /** null: nothing is saved (a block already deeper than UNDO_BLOCKS below the head, as during a backfill). */
    private readonly undo: Undo | null,
  ) {}

  get<T>(table: Table, key: string): T | undefined {
    return this.kv.get<T>(table, key);
  }
  has(table: Table, key: string): boolean {
    return this.kv.has(table, key);
  }
  range<T>(table: Table, opts: { start?: string; end?: string; limit?: number; reverse?: boolean }): Array<Entry<T>> {
    return this.kv.range<T>(table, opts);
  }
  count(table: Table, opts: { start: string; end: string; limit?: number }): number {
    return this.kv.count(table, opts);
  }
  put(table: Table, key: string, value: unknown): void {
    this.save(table, key);
    this.kv.put(table, key, value);
  }
  remove(table: Table, key: string): void {
    if (!this.kv.has(table, key)) return;
    this.save(table, key);
    this.kv.remove(table, key);
  }

  private save(table: Table, key: string): void {
    if (this.undo === null) return;
    const id = `${table}\u0000${key}`;
    if (this.saved.has(id)) return;
    this.saved.add(id);
    const before = this.kv.getRaw(table, key);
    // A copy: the store hands out a Buffer over its read buffer, and Buffer#slice would share that memory.
    this.undo.push([table, key, before === undefined ? null : new Uint8Array(before)]);
  }
}

/** Puts back what each key held before the block (its undo rows, last first). */
export function takeBack(kv: Kv, undo: Undo): void {
  for (let i = undo.length - 1; i >= 0; i--) {
    const [table, key, before] = undo[i]!;
    if (before === null) kv.remove(table, key);
    else kv.putRaw(table, key, before);
  }
}
