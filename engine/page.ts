import { badRequest } from './errors.js';
import type { Kv, Table } from './ports.js';

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

export function parseLimit(raw: string | null, fallback = MAX_LIMIT): number {
  if (raw === null || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_LIMIT) throw badRequest('limit', `a whole number from 1 to ${MAX_LIMIT}`);
  return Number(raw);
}

export function page<T, R = T>(kv: Kv, table: Table, prefix: string, opts: { limit: number; cursor: string | null; newestFirst?: boolean; map?: (value: T, key: string) => R }): Page<R> {
  const end = `${prefix}\uffff`;
  let from: string | undefined;
  if (opts.cursor !== null && opts.cursor !== '') {
    from = Buffer.from(opts.cursor, 'base64url').toString('utf8');
    if (!from.startsWith(prefix)) throw badRequest('cursor', 'not a cursor of this list');
  }
  // One more than asked: its key is the next page's cursor.
  const rows =
    opts.newestFirst === true
      ? kv.range<T>(table, { start: from ?? end, end: prefix, reverse: true, limit: opts.limit + 1 })
      : kv.range<T>(table, { start: from ?? prefix, end, limit: opts.limit + 1 });
  const map = opts.map ?? ((v: T) => v as unknown as R);
  const out: Page<R> = { result: rows.slice(0, opts.limit).map((e) => map(e.value, e.key)), total: kv.count(table, { start: prefix, end }), page: 0, page_size: opts.limit };
  const next = rows[opts.limit];
  if (next !== undefined) out.cursor = Buffer.from(next.key, 'utf8').toString('base64url');
  return out;
}
