import { inKeyBatches } from '../../key-batches.js';
import type { Entry, Kv, Table } from '../../ports.js';

/**
 * Lists kept as one row per (list, block) instead of one per entry (docs/decisions/index-writes.md, schema 13): an
 * address's `tx/` list (addressTxs) and a contract's `a/` list of logs (contractLogs). A mainnet block's 387 `tx/`
 * entries are 237 (address, block) pairs, its 209 `a/` entries 59 (contract, block) pairs; each row written costs
 * the indexes' build and the store's writer thread about the same, whatever it holds.
 *
 * The row `prefix + number (12 hex)` holds the block's entries in index order, each its index alone (an entry
 * whose value is `1`) or `[index, value]`. Readers see the entries as before: `groupedReads` answers a range of the
 * list with one entry per (block, index), keyed `prefix + number/index (6 hex)` as the per-entry rows were (so
 * pages, cursors and merges are unchanged). Per-entry rows still stored are read too: the schema-13 migration
 * leaves those of blocks that still have an undo row (a reorg takes them back as they were written).
 */

/** A block's entries of one list: each an index (value `1`) or `[index, value]`, in index order. */
export type GroupRow = Array<number | [number, unknown]>;

/** Where a grouped list's prefix ends in a key (the block number follows), or −1: a key of no grouped list. */
export type PrefixEnd = (key: string) => number;

/** The row of the list under `prefix` for block `number`. */
export const groupKey = (prefix: string, number: number): string => prefix + n12(number);

const n12 = (n: number): string => n.toString(16).padStart(12, '0');
const i6 = (i: number): string => i.toString(16).padStart(6, '0');
const BLOCK = /^[0-9a-f]{12}/;

/** A group row's entries as [index, value], in index order. */
export const groupEntries = (row: GroupRow): Array<[number, unknown]> => row.map((e) => (typeof e === 'number' ? [e, 1] : e));

/** Entries as a group row holds them (an entry of value `1` as its index alone). */
export const groupRow = (entries: ReadonlyArray<readonly [number, unknown]>): GroupRow => entries.map(([i, v]) => (v === 1 ? i : [i, v]));

/**
 * One entry of a grouped list by its per-entry key's end `rest` (number/index): its own row (a block with an undo
 * row, or a row written before grouping), else its block's group row. A point read where groupedReads serves ranges.
 */
export function groupedEntry<T>(kv: Pick<Kv, 'get'>, table: Table, prefix: string, rest: string): T | undefined {
  const own = kv.get<T>(table, prefix + rest);
  if (own !== undefined) return own;
  const row = kv.get<GroupRow>(table, prefix + rest.slice(0, 12));
  if (row === undefined) return undefined;
  const index = parseInt(rest.slice(13), 16);
  return groupEntries(row).find(([i]) => i === index)?.[1] as T | undefined;
}

/** `kv` whose ranges of `table` under a grouped list (`prefixEnd`) answer one entry per (block, index). */
export function groupedReads(kv: Kv, table: Table, prefixEnd: PrefixEnd): Kv {
  const grouped = Object.create(kv) as Kv;
  grouped.range = <T>(t: Table, opts: RangeOpts = {}): Array<Entry<T>> =>
    t === table ? (groupedRange(kv, table, prefixEnd, opts) as Array<Entry<T>>) : kv.range<T>(t, opts);
  return grouped;
}

interface RangeOpts {
  start?: string;
  end?: string;
  limit?: number;
  reverse?: boolean;
}

/**
 * Kv.range of a grouped list in its entries' keys: rows are read from where the first bound lies (a block's group
 * row whole) to the row of the block the other bound falls in, and their entries outside the bounds left out;
 * `limit` counts entries.
 */
function groupedRange(kv: Kv, table: Table, prefixEnd: PrefixEnd, opts: RangeOpts): Array<Entry<unknown>> {
  const probe = opts.start ?? opts.end;
  const end = probe === undefined ? -1 : prefixEnd(probe);
  const prefix = end < 0 ? '' : probe!.slice(0, end);
  if (end < 0 || (opts.start !== undefined && !opts.start.startsWith(prefix)) || (opts.end !== undefined && !opts.end.startsWith(prefix)))
    return kv.range(table, opts);
  const reverse = opts.reverse === true;
  const out: Array<Entry<unknown>> = [];
  if (opts.limit === 0) return out;
  /** The block a bound names (`prefix` + its number, then maybe `/` and an index), if it names one. */
  const blockOf = (bound: string | undefined): number | undefined => {
    const rest = bound?.slice(prefix.length);
    return rest !== undefined && BLOCK.test(rest) ? parseInt(rest.slice(0, 12), 16) : undefined;
  };
  const inside = (key: string): boolean =>
    reverse
      ? (opts.start === undefined || key <= opts.start) && (opts.end === undefined || key > opts.end)
      : (opts.start === undefined || key >= opts.start) && (opts.end === undefined || key < opts.end);
  /** The entries of a row inside the bounds, in the range's order, into `out`; true once `limit` is reached. */
  const take = (row: Entry<unknown>): boolean => {
    const rest = row.key.slice(prefix.length);
    // A per-entry row (number/index) is its own entry; a group row (number) holds its block's.
    const entries: Array<Entry<unknown>> =
      rest.length === 12 ? groupEntries(row.value as GroupRow).map(([i, value]) => ({ key: `${row.key}/${i6(i)}`, value })) : [row];
    if (reverse) entries.reverse();
    for (const e of entries) {
      if (!inside(e.key)) continue;
      out.push(e);
      if (opts.limit !== undefined && out.length >= opts.limit) return true;
    }
    return false;
  };
  // Where the rows are read from. Reversed: the bound itself (keys at or below it: its block's per-entry rows, then the
  // block's group row, stored before them). Forward: a block's group row sorts before its per-entry rows, so it is
  // read alone, and the rows from the bound on.
  let from = opts.start;
  const first = reverse ? undefined : blockOf(opts.start);
  if (first !== undefined) {
    const head = prefix + n12(first);
    const group = kv.get<GroupRow>(table, head);
    if (group !== undefined && take({ key: head, value: group })) return out;
    from = opts.start!.length > head.length + 1 ? opts.start : `${head}/`;
  }
  // Where they end: past every row of the block the other bound names (its per-entry rows end below `/\uffff`);
  // reversed, above the block before it.
  const last = blockOf(opts.end);
  const stop =
    last === undefined ? opts.end : !reverse ? `${prefix}${n12(last)}/\uffff` : last === 0 ? prefix : `${prefix}${n12(last - 1)}/\uffff`;
  let skip: string | undefined;
  for (;;) {
    // As many rows as entries are still wanted (each row holds one at least; only those at the bounds may hold none
    // inside them), and the last row read before, read again and skipped: a merge reading an entry at a time
    // (mergeRanges) reads a row for each, as it did when each entry was a row.
    const chunk = opts.limit === undefined ? undefined : opts.limit - out.length + (skip === undefined ? 0 : 1);
    const rows = kv.range<unknown>(table, {
      ...(from === undefined ? {} : { start: from }),
      ...(stop === undefined ? {} : { end: stop }),
      ...(chunk === undefined ? {} : { limit: chunk }),
      reverse,
    });
    for (const row of rows) if (row.key !== skip && take(row)) return out;
    if (chunk === undefined || rows.length < chunk) return out;
    // Went on from the last row read (skipped): `key + '\u0000'` is no bound in a hex-keyed table.
    from = skip = rows.at(-1)!.key;
  }
}

/**
 * The schema-13 migration of a grouped list (storage/env.ts upgradeSchema): the per-entry rows of `table` under
 * `prefix` (`prefix…number/index`, a grouped list's by `prefixEnd`) become a row per (list, block), `batch` keys
 * walked per transaction; a run cut short is finished by the next (a group row its batch ended in takes the rest of
 * its block's entries in). The rows of a block `kept` names (one that has an undo row: a reorg takes back the keys
 * the block wrote) stay per entry, which groupedReads reads too. Returns how many rows it replaced.
 */
export function regroup(
  kv: Kv,
  table: Table,
  prefix: string,
  prefixEnd: PrefixEnd,
  kept: (key: string, number: number) => boolean,
  batch = 10_000,
): number {
  return inKeyBatches(kv, table, prefix, batch, (keys) => {
    let replaced = 0;
    const groups = new Map<string, Array<[number, unknown]>>();
    for (const key of keys) {
      const end = prefixEnd(key);
      const rest = end < 0 ? '' : key.slice(end);
      if (rest.length !== 19 || !BLOCK.test(rest)) continue;
      const number = parseInt(rest.slice(0, 12), 16);
      if (kept(key, number)) continue;
      const group = key.slice(0, end + 12);
      let entries = groups.get(group);
      if (entries === undefined) groups.set(group, (entries = []));
      entries.push([parseInt(rest.slice(13), 16), kv.get(table, key)]);
      kv.remove(table, key);
      replaced++;
    }
    for (const [group, entries] of groups) {
      const had = kv.get<GroupRow>(table, group);
      const all = had === undefined ? entries : [...groupEntries(had), ...entries].sort((a, b) => a[0] - b[0]);
      kv.put(table, group, groupRow(all));
    }
    return replaced;
  });
}
