import type { Kv, Table } from './ports.js';

/**
 * Walks the keys of `table` under `prefix` (the whole table for '') in batches of `batch` keys, each batch in a write
 * transaction of its own: `visit` gets a batch's keys, read before it writes (writing while a cursor walks them
 * would move it), and answers how many rows it changed; returns their sum. A run cut short (a migration stopped) is
 * finished by the next. Each batch starts at the last key of the previous one (changed, removed or not), read again
 * and skipped: `key + '\u0000'` is no bound in a hex-keyed table, where it would sort past the key's siblings.
 */
export function inKeyBatches(
  kv: Pick<Kv, 'keys' | 'transact'>,
  table: Table,
  prefix: string,
  batch: number,
  visit: (keys: readonly string[]) => number,
): number {
  let changed = 0;
  let from: string | undefined;
  for (;;) {
    const seen = kv.transact(() => {
      const start = from ?? prefix;
      const keys = kv
        .keys(table, {
          ...(start === '' ? {} : { start }),
          ...(prefix === '' ? {} : { end: `${prefix}\uffff` }),
          limit: batch + (from === undefined ? 0 : 1),
        })
        .filter((k) => k !== from);
      if (keys.length > 0) from = keys.at(-1);
      changed += visit(keys);
      return keys.length;
    });
    if (seen < batch) return changed;
  }
}
