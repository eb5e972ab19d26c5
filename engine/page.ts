import { badRequest } from './errors.js';
import type { Entry, Kv, Table } from './ports.js';

/**
 * Cursor paging over one key prefix of a table, in the envelope the hosted
 * service's SDK reads: `{result, total, page, page_size, cursor}`, with `cursor`
 * present only when another page follows (the SDK would otherwise try to page
 * by offset). The cursor is opaque: base64url of the next key.
 */
export interface Page<T> {
  result: T[];
  total: number;
  page: number;
  page_size: number;
  cursor?: string;
}

export const MAX_LIMIT = 100;

/**
 * `keep` pages over only the entries it keeps (streams of one family): the
 * range is then read whole, so use it for short ranges (a tenant's streams).
 */
export function page<T, R = T>(
  kv: Kv,
  table: Table,
  prefix: string,
  opts: { limit: number; cursor: string | null; newestFirst?: boolean; map?: (value: T, key: string) => R; keep?: (value: T) => boolean },
): Page<R> {
  const end = `${prefix}\uffff`;
  let from: string | undefined;
  if (opts.cursor !== null && opts.cursor !== '') {
    from = Buffer.from(opts.cursor, 'base64url').toString('utf8');
    if (!from.startsWith(prefix)) throw badRequest('cursor', 'not a cursor of this list');
  }
  const reverse = opts.newestFirst === true;
  const range = (start: string, limit?: number) =>
    kv.range<T>(table, { start, end: reverse ? prefix : end, reverse, ...(limit === undefined ? {} : { limit }) });
  const keep = opts.keep;
  let rows: Array<Entry<T>>;
  let total: number;
  if (keep === undefined) {
    // One more than asked: its key is the next page's cursor.
    rows = range(from ?? (reverse ? end : prefix), opts.limit + 1);
    total = kv.count(table, { start: prefix, end });
  } else {
    // The range read and decoded once, for the total and the page both (a tenant's 1,000 streams, every page).
    const kept = range(reverse ? end : prefix).filter((e) => keep(e.value));
    const at = from === undefined ? 0 : kept.findIndex((e) => (reverse ? e.key <= from : e.key >= from));
    rows = at < 0 ? [] : kept.slice(at, at + opts.limit + 1);
    total = kept.length;
  }
  const map = opts.map ?? ((v: T) => v as unknown as R);
  const out: Page<R> = { result: rows.slice(0, opts.limit).map((e) => map(e.value, e.key)), total, page: 0, page_size: opts.limit };
  const next = rows[opts.limit];
  if (next !== undefined) out.cursor = Buffer.from(next.key, 'utf8').toString('base64url');
  return out;
}

/**
 * A page of a key range read without counting it, for lists that can be long
 * (a token's transfers): at most limit + 2 entries are read, however long the
 * list. The cursor names the list it was made for, the last key returned and
 * the next page's number (base64url of JSON); the next page continues strictly
 * after that key (before it in reverse order), so keys that arrive meanwhile
 * on the other side, or a reorg that removes the key itself, shift nothing.
 */
export interface RangePage<T> {
  rows: Array<Entry<T>>;
  /** 0 for the first page, one more along each cursor. */
  page: number;
  /** null on the last page. */
  cursor: string | null;
}

interface RangeCursor {
  /** The list: what the caller says the cursor was made for (the query, its order). */
  l: string;
  /** The last key returned. */
  k: string;
  /** The next page's number. */
  p: number;
}

/**
 * `prefixes` may name several ranges of the table read as one list, ordered by
 * what follows each prefix (delivery logs: successes and failures are stored
 * apart and answered together); each range is read for at most limit + 2 entries.
 * `low` (inclusive) and `high` (exclusive) bound what follows each prefix (a block
 * range). `keep` drops entries (a filter the keys cannot express): the range is
 * then read on in chunks of limit + 2 until a page is kept or the range ends, or,
 * for one range, until `maxScan` entries were read: the page may then be short (even
 * empty), and its cursor goes on after the last entry read.
 */
export function rangePage<T>(
  kv: Kv,
  table: Table,
  prefixes: string | readonly string[],
  opts: RangeQuery & { keep?: (value: T, key: string) => boolean; maxScan?: number },
): RangePage<T> {
  const ranges = typeof prefixes === 'string' ? [prefixes] : prefixes;
  const { at, after } = continuing(opts, ranges);
  // One more than asked tells whether a page follows; one more again when the cursor's own key may still be there.
  const limit = opts.limit + (at === undefined ? 1 : 2);
  // Several ranges are merged by what follows each prefix: kept beside each entry (one range needs no merge).
  const merged = ranges.length > 1;
  const fresh: Array<Entry<T>> = [];
  const rests: string[] = [];
  // A filtered read of one range stops after maxScan entries: the page may be short, its cursor goes on from there.
  let scanned = 0;
  let stoppedAt: string | undefined;
  for (const prefix of ranges) {
    const lo = prefix + (opts.low ?? '');
    const hi = opts.high === undefined ? `${prefix}\uffff` : prefix + opts.high;
    let from = after === undefined ? undefined : prefix + after;
    // Where a filtered read goes on: the last key of its previous chunk, read again and skipped.
    let resumed: string | undefined;
    let kept = 0;
    for (;;) {
      const rows = opts.reverse
        ? kv.range<T>(table, { start: from ?? hi, end: lo, reverse: true, limit })
        : kv.range<T>(table, { start: from ?? lo, end: hi, limit });
      for (const r of rows) {
        if (r.key === resumed || r.key < lo || r.key >= hi || (opts.keep !== undefined && !opts.keep(r.value, r.key))) continue;
        // The cursor's own entry, and entries of its rest in other ranges (a tie), lie before or after it by their whole key.
        if (at !== undefined && r.key.slice(prefix.length) === after && (opts.reverse ? r.key >= at.k : r.key <= at.k)) continue;
        fresh.push(r);
        if (merged) rests.push(r.key.slice(prefix.length));
        kept++;
      }
      if (opts.keep === undefined || rows.length < limit || kept > opts.limit) break;
      scanned += rows.length;
      if (!merged && opts.maxScan !== undefined && scanned >= opts.maxScan) {
        stoppedAt = rows.at(-1)!.key;
        break;
      }
      from = resumed = rows.at(-1)!.key;
    }
  }
  let ordered = fresh;
  if (merged) {
    const order = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
    const sign = opts.reverse ? -1 : 1;
    const byRest = fresh.map((_, i) => i).sort((a, b) => (order(rests[a]!, rests[b]!) || order(fresh[a]!.key, fresh[b]!.key)) * sign);
    ordered = byRest.map((i) => fresh[i]!);
  }
  const out = ordered.length > opts.limit ? ordered.slice(0, opts.limit) : ordered;
  const page = at?.p ?? 0;
  if (stoppedAt !== undefined) return { rows: out, page, cursor: rangeCursor(opts.list, stoppedAt, page + 1) };
  return { rows: out, page, cursor: ordered.length > opts.limit ? rangeCursor(opts.list, out.at(-1)?.key ?? '', page + 1) : null };
}

/**
 * Ranges of a table read as one list by what follows each prefix, as rangePage's `prefixes` are, for lists where no
 * two ranges hold the same rest and `step` names the rest just past another in the list's order (a fixed-width
 * position): each range is read past the last entry taken, so nothing is read twice and nothing read is left
 * unanswered but the one entry that tells whether more follow. `want` entries at most; `more` whether any follow.
 * Reads at most want + 1 entries (rangePage reads limit + 2 from each range).
 */
export function mergeRanges<T>(
  kv: Kv,
  table: Table,
  prefixes: readonly string[],
  opts: { reverse: boolean; after?: string; low?: string; high?: string; step(rest: string, reverse: boolean): string | undefined },
  want: number,
): { rows: Array<Entry<T>>; more: boolean } {
  const lanes = prefixes.map((prefix) => ({
    prefix,
    lo: prefix + (opts.low ?? ''),
    hi: opts.high === undefined ? `${prefix}\uffff` : prefix + opts.high,
    /** The rest the next read starts at (included); undefined: the range's own end. */
    next: opts.after === undefined ? undefined : opts.step(opts.after, opts.reverse),
    done: opts.after !== undefined && opts.step(opts.after, opts.reverse) === undefined,
    /** The entry read and not taken yet. */
    head: undefined as Entry<T> | undefined,
  }));
  type Lane = (typeof lanes)[number];
  const read = (lane: Lane, n: number): Array<Entry<T>> => {
    if (lane.done) return [];
    const from = lane.next === undefined ? undefined : lane.prefix + lane.next;
    const rows = opts.reverse
      ? kv.range<T>(table, { start: from !== undefined && from < lane.hi ? from : lane.hi, end: lane.lo, reverse: true, limit: n })
      : kv.range<T>(table, { start: from !== undefined && from > lane.lo ? from : lane.lo, end: lane.hi, limit: n });
    const last = rows.at(-1);
    if (last !== undefined) lane.next = opts.step(last.key.slice(lane.prefix.length), opts.reverse);
    if (rows.length < n || lane.next === undefined) lane.done = true;
    return rows.filter((r) => r.key >= lane.lo && r.key < lane.hi);
  };
  const rest = (lane: Lane): string => lane.head!.key.slice(lane.prefix.length);
  const rows: Array<Entry<T>> = [];
  while (rows.length < want) {
    for (const lane of lanes) if (lane.head === undefined) lane.head = read(lane, 1)[0];
    const live = lanes.filter((l) => l.head !== undefined);
    if (live.length === 0) break;
    const first = live.reduce((a, b) => ((opts.reverse ? rest(b) > rest(a) : rest(b) < rest(a)) ? b : a));
    rows.push(first.head!);
    first.head = undefined;
    // The other ranges ended: the rest of this one in one read.
    if (live.length === 1) rows.push(...read(first, want - rows.length));
  }
  const more = lanes.some((l) => l.head !== undefined) || lanes.some((l) => read(l, 1).length > 0);
  return { rows, more };
}

/**
 * rangePage over ranges mergeRanges reads (no two hold the same rest; `step` names the next rest): a page reads at
 * most limit + 1 entries whatever the number of ranges. Its cursors are rangePage's.
 */
export function mergedRangePage<T>(
  kv: Kv,
  table: Table,
  prefixes: readonly string[],
  opts: RangeQuery & { step(rest: string, reverse: boolean): string | undefined },
): RangePage<T> {
  const { at, after } = continuing(opts, prefixes);
  const { list: _list, limit, cursor: _cursor, ...read } = opts;
  const { rows, more } = mergeRanges<T>(kv, table, prefixes, { ...read, ...(after === undefined ? {} : { after }) }, limit);
  const page = at?.p ?? 0;
  return { rows, page, cursor: more && rows.length > 0 ? rangeCursor(opts.list, rows.at(-1)!.key, page + 1) : null };
}

/** What a range page is asked (rangePage, mergedRangePage): its list's name, size and order, the cursor, the bounds. */
interface RangeQuery {
  list: string;
  limit: number;
  reverse: boolean;
  cursor: string | null;
  low?: string;
  high?: string;
}

/** The query's cursor read against its list and ranges, and its key without its range's prefix: where every range continues. */
function continuing(q: RangeQuery, ranges: readonly string[]): { at?: RangeCursor; after?: string } {
  if (q.cursor === null || q.cursor === '') return {};
  const at = readCursor(q.cursor, q.list, ranges);
  return { at, after: at.k.slice(ranges.find((p) => at.k.startsWith(p))!.length) };
}

/** The cursor of a range page that continues after `key`. */
function rangeCursor(list: string, key: string, page: number): string {
  const next: RangeCursor = { l: list, k: key, p: page };
  return Buffer.from(JSON.stringify(next), 'utf8').toString('base64url');
}

/** A range page in the SDK's envelope, with `total` kept elsewhere (a counter) rather than counted. */
export function counted<T, R>(p: RangePage<T>, total: number, limit: number, map: (value: T, key: string) => R): Page<R> {
  const out: Page<R> = { result: p.rows.map((e) => map(e.value, e.key)), total, page: p.page, page_size: limit };
  if (p.cursor !== null) out.cursor = p.cursor;
  return out;
}

/** The key a range page's cursor goes on after, if it is one (readCursor checks it against its query). */
export function cursorKey(raw: string | null): string | undefined {
  const c = raw === null || raw === '' ? null : parseCursor(raw);
  return typeof c?.k === 'string' ? c.k : undefined;
}

function parseCursor(raw: string): Partial<RangeCursor> | null {
  try {
    const c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
    return c !== null && typeof c === 'object' ? (c as Partial<RangeCursor>) : null;
  } catch {
    return null;
  }
}

function readCursor(raw: string, list: string, prefixes: readonly string[]): RangeCursor {
  const c = parseCursor(raw);
  if (c === null || typeof c.l !== 'string' || typeof c.k !== 'string' || !Number.isSafeInteger(c.p) || c.p! < 1) {
    throw badRequest('cursor', 'not a cursor of this API (pass the cursor of the previous answer as it is)');
  }
  if (c.l !== list || !prefixes.some((p) => c.k!.startsWith(p)))
    throw badRequest('cursor', 'made for another query (its list, token or order differs)');
  return c as RangeCursor;
}
