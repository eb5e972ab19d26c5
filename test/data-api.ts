import { expect } from 'vitest';
import type { Running } from './helpers.js';

type Json = Record<string, any>;

/** A Data API path on the devnet chain (0x539), with more of the query. */
export const devnetApi = (path: string, query = ''): string => `/api/v2.2${path}?chain=0x539${query === '' ? '' : `&${query}`}`;

/**
 * Every page of a list from `query` on, following the cursors to the end: each answer 200 and its `page` one
 * more than the last. `cursor` and `first` go on from a page already read.
 */
export async function allPages(
  s: Running,
  path: string,
  query: string,
  init: RequestInit & { json?: unknown } = {},
  cursor: string | null = null,
  first = 0,
): Promise<Json[]> {
  const out: Json[] = [];
  let page = first;
  do {
    const r = await s.call(devnetApi(path, cursor === null ? query : `${query}&cursor=${cursor}`), init);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.page).toBe(page++);
    out.push(...r.body.result);
    cursor = r.body.cursor;
  } while (cursor !== null);
  return out;
}
