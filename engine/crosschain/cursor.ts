import { badRequest } from '../errors.js';

/**
 * The one cursor of /v1: base64url JSON of the list it was made for (`l`: the path's parameters, the filters,
 * the chains; whatever changes the list) and the caller's position in that list (the rest of its keys). A
 * cursor that is not one, or was made for another list, is a 400 naming `cursor`, so a page is never cut from
 * one query at the position of another.
 */

/**
 * The key of a list from what defines it. An object part is a query: its own `cursor` and `limit` are left out
 * (the page size may change from one page to the next).
 */
export function listOf(...parts: unknown[]): string {
  return JSON.stringify(
    parts.map((p) => (p !== null && typeof p === 'object' && !Array.isArray(p) ? { ...p, cursor: undefined, limit: undefined } : p)),
  );
}

/** `at`: the position, any JSON object (its own `l`, if any, is the list's). */
export function writeCursor(list: string, at: object): string {
  return Buffer.from(JSON.stringify({ ...at, l: list }), 'utf8').toString('base64url');
}

/** The position of a cursor of `list`; `valid` checks its shape (the cursor came from a client). */
export function readCursor<P extends object>(raw: string, list: string, valid: (at: Record<string, unknown>) => boolean): P {
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    // not JSON: refused below
  }
  if (c === null || typeof c !== 'object' || Array.isArray(c) || typeof (c as { l?: unknown }).l !== 'string') throw notACursor();
  const { l, ...at } = c as { l: string } & Record<string, unknown>;
  if (l !== list) throw badRequest('cursor', 'made for another list (its path, filters or chains differ): ask again without a cursor');
  if (!valid(at)) throw notACursor();
  return at as P;
}

const notACursor = () => badRequest('cursor', 'not a cursor of this API (pass the cursor of the previous answer as it is)');

// ---- lists computed whole, paged by offset ----

/** Where a page of a list computed whole starts: 0 without a cursor. */
export function readOffset(cursor: string | null, list: string): number {
  return cursor === null ? 0 : readCursor<{ o: number }>(cursor, list, (at) => Number.isSafeInteger(at.o) && (at.o as number) >= 0).o;
}

/** The cursor of the page after the one at `start` (null: it was the last). */
export function nextOffset(list: string, start: number, limit: number, total: number): string | null {
  return start + limit < total ? writeCursor(list, { o: start + limit }) : null;
}

/** `limit` items of `all` from the cursor's offset, and the next page's cursor. */
export function offsetPage<T>(
  all: readonly T[],
  q: { list: string; limit: number; cursor: string | null },
): { page: T[]; start: number; cursor: string | null } {
  const start = readOffset(q.cursor, q.list);
  return { page: all.slice(start, start + q.limit), start, cursor: nextOffset(q.list, start, q.limit, all.length) };
}
