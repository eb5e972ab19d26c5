import type { Entry, Kv, Table } from '../../ports.js';

/** Entries read at a time. */
const CHUNK = 1_000;

/** A table's entries from `start` down to `end` (exclusive), newest first, read a chunk at a time (a day of a busy token's swaps is long). */
export function* newestFirst<T>(kv: Kv, table: Table, start: string, end: string): Generator<Entry<T>> {
  for (let from = start, last: string | undefined; ; ) {
    const rows = kv.range<T>(table, { start: from, end, reverse: true, limit: CHUNK });
    for (const r of rows) if (r.key !== last) yield r;
    if (rows.length < CHUNK) return;
    last = from = rows[rows.length - 1]!.key;
  }
}
