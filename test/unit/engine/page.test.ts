import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { Kv } from '../../../engine/ports.js';
import { page, rangePage, type Page, type RangePage } from '../../../engine/page.js';
import { openStore } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

/** rangePage with a filter over a long range: `maxScan` bounds what one page reads, and the cursors still walk every kept entry once, in order. */

const dir = tempDir();
const store = openStore(dir);
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});
store.transact(() => {
  for (let i = 0; i < 100; i++) store.put('meta', `t/${String(i).padStart(3, '0')}`, i);
});

/** The store, counting the entries its range reads return. */
function counted(): { kv: Kv; read: () => number } {
  let n = 0;
  const kv = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'range')
        return (table: never, opts: never) => {
          const rows = target.range(table, opts);
          n += rows.length;
          return rows;
        };
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as Kv;
  return { kv, read: () => n };
}

function walk(reverse: boolean, maxScan: number | undefined): { values: number[]; pages: number; mostRead: number } {
  const values: number[] = [];
  let cursor: string | null = null;
  let pages = 0;
  let mostRead = 0;
  do {
    const { kv, read } = counted();
    const page: RangePage<number> = rangePage<number>(kv, 'meta', 't/', {
      list: 'test',
      limit: 2,
      reverse,
      cursor,
      keep: (v) => v % 30 === 0,
      ...(maxScan === undefined ? {} : { maxScan }),
    });
    values.push(...page.rows.map((r) => r.value));
    mostRead = Math.max(mostRead, read());
    cursor = page.cursor;
    pages++;
  } while (cursor !== null && pages < 100);
  return { values, pages, mostRead };
}

describe('rangePage with keep', () => {
  it('reads on until a page is kept when nothing bounds it', () => {
    const w = walk(false, undefined);
    expect(w.values).toEqual([0, 30, 60, 90]);
    expect(w.mostRead).toBeGreaterThan(60);
  });

  it('stops after maxScan entries with a short page whose cursor goes on, in either order', () => {
    const up = walk(false, 12);
    expect(up.values).toEqual([0, 30, 60, 90]);
    expect(up.mostRead).toBeLessThanOrEqual(12 + 4);
    expect(up.pages).toBeGreaterThan(4);
    const down = walk(true, 12);
    expect(down.values).toEqual([90, 60, 30, 0]);
    expect(down.mostRead).toBeLessThanOrEqual(12 + 4);
  });
});

describe("page with keep (a tenant's streams of one family)", () => {
  // 100 entries under t/, every third kept.
  const kept = (v: number): boolean => v % 3 === 0;
  const all = Array.from({ length: 100 }, (_, i) => i).filter(kept);
  const walk = (kv: Kv, newestFirst: boolean, limit: number): { seen: number[]; totals: number[] } => {
    const out = { seen: [] as number[], totals: [] as number[] };
    let cursor: string | null = null;
    for (;;) {
      const p: Page<number> = page<number>(kv, 'meta', 't/', { limit, cursor, newestFirst, keep: kept });
      out.seen.push(...p.result);
      out.totals.push(p.total);
      if (p.cursor === undefined) return out;
      cursor = p.cursor;
    }
  };

  it('walks every kept entry once, in order both ways, each page with the whole total', () => {
    for (const newestFirst of [false, true]) {
      for (const limit of [1, 7, 34, 100]) {
        const { seen, totals } = walk(store, newestFirst, limit);
        expect(seen).toEqual(newestFirst ? [...all].reverse() : all);
        expect(new Set(totals)).toEqual(new Set([all.length]));
      }
    }
  });

  it('reads the range once a page', () => {
    const c = counted();
    page<number>(c.kv, 'meta', 't/', { limit: 10, cursor: null, keep: kept });
    expect(c.read()).toBe(100);
  });
});
