import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { Kv } from '../../../engine/ports.js';
import { mergedRangePage, page, rangePage, type Page, type RangePage } from '../../../engine/page.js';
import { n12 } from '../../../engine/data-api/common/block-times.js';
import { historyPrefixes, nextPosition, txPosition } from '../../../engine/data-api/transactions/index/writer.js';
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

describe('mergedRangePage (the wallet history: an address tx/ and hist/ lists as one)', () => {
  const A = `0x${'ab'.repeat(20)}`;
  const [tx, hist] = historyPrefixes('0x1', A);
  // Positions interleaved between the two lists, runs of either, block ends (index 0 and the largest) included.
  const places: Array<[list: string, block: number, index: number]> = [
    [tx, 1, 0],
    [hist, 1, 3],
    [hist, 1, 0xff_ffff],
    [tx, 2, 0],
    [tx, 2, 1],
    [tx, 2, 5],
    [hist, 3, 2],
    [tx, 4, 0],
    [hist, 4, 1],
    [hist, 9, 0],
    [hist, 9, 7],
    [tx, 10, 4],
  ];
  store.transact(() => {
    for (const [list, block, index] of places) store.put('addressTxs', list + txPosition(block, index), 1);
  });
  const inOrder = places
    .map(([list, block, index]) => list + txPosition(block, index))
    .sort((a, b) => {
      const [x, y] = [a.slice(a.length - 19), b.slice(b.length - 19)];
      return x < y ? -1 : x > y ? 1 : 0;
    });

  it('walks both lists once in either order, each page reading at most limit + 1 entries, within block bounds', () => {
    for (const reverse of [false, true])
      for (const limit of [1, 2, 3, 5, 20])
        for (const bounds of [{}, { low: `${n12(2)}/`, high: `${n12(9)}/` }]) {
          const keys: string[] = [];
          let cursor: string | null = null;
          let pages = 0;
          do {
            const { kv, read } = counted();
            const p: RangePage<number> = mergedRangePage<number>(kv, 'addressTxs', [tx, hist], {
              list: 'history',
              limit,
              reverse,
              cursor,
              ...bounds,
              step: nextPosition,
            });
            expect(read(), `limit ${limit}`).toBeLessThanOrEqual(limit + 1);
            expect(p.rows.length).toBeLessThanOrEqual(limit);
            keys.push(...p.rows.map((r) => r.key));
            cursor = p.cursor;
            pages++;
          } while (cursor !== null && pages < 50);
          const rest = (k: string) => k.slice(k.length - 19);
          const want = inOrder.filter((k) => !('low' in bounds) || (rest(k) >= `${n12(2)}/` && rest(k) < `${n12(9)}/`));
          expect(keys, `reverse ${reverse}, limit ${limit}, ${JSON.stringify(bounds)}`).toEqual(reverse ? [...want].reverse() : want);
        }
  });

  it('steps past a position to the next one, and to none past block 0', () => {
    expect(nextPosition(txPosition(5, 0), true)).toBe(txPosition(4, 0xff_ffff));
    expect(nextPosition(txPosition(5, 0xff_ffff), false)).toBe(txPosition(6, 0));
    expect(nextPosition(txPosition(0, 0), true)).toBeUndefined();
  });
});
