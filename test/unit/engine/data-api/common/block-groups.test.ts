import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { groupedReads, regroup, type GroupRow } from '../../../../../engine/data-api/common/block-groups.js';
import { contractListEnd } from '../../../../../engine/data-api/chain/index/logs.js';
import { nextPosition, txListEnd } from '../../../../../engine/data-api/transactions/index/writer.js';
import { pos } from '../../../../../engine/evm/store.js';
import { n12 } from '../../../../../engine/data-api/common/block-times.js';
import type { Entry, Kv, Table } from '../../../../../engine/ports.js';
import { openStore } from '../../../../../storage/env.js';
import { tempDir } from '../../../../helpers.js';

/**
 * Lists kept a row per block (schema 13): every range a reader may ask of a list answers, through groupedReads, the
 * entries the per-entry rows of schema 12 answered, with their keys; the migration's regroup turns those rows into
 * group rows, a batch at a time, leaving the rows of blocks with undo rows as they are.
 */

const dir = tempDir();
const store = openStore(dir);
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A fixed pseudo-random sequence: the same lists each run. */
let seed = 7;
const rand = (n: number): number => {
  seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
  return (seed >>> 8) % n;
};

interface List {
  table: Table;
  prefix: string;
  prefixEnd: (key: string) => number;
  value: (block: number, index: number) => unknown;
}
const LISTS: List[] = [
  { table: 'addressTxs', prefix: `tx/0x1/0x${'a1'.repeat(20)}/`, prefixEnd: txListEnd, value: () => 1 },
  { table: 'addressTxs', prefix: `tx/0x1/0x${'b2'.repeat(20)}/`, prefixEnd: txListEnd, value: () => 1 },
  {
    table: 'contractLogs',
    prefix: `0x1/a/0x${'c3'.repeat(20)}/`,
    prefixEnd: contractListEnd,
    // A topic0, or (a log without topics) the log itself.
    value: (b, i) => (i % 5 === 0 ? [`0x${'d4'.repeat(32)}`, i, [], '0x'] : `0x${n12(b).repeat(5)}${i.toString(16).padStart(4, '0')}`),
  },
];
const BLOCKS = 40;
/** Blocks whose rows the migration keeps per entry (they have undo rows). */
const KEPT = new Set([0, 17, 39]);

/** Each list's entries, per entry as schema 12 wrote them. */
const entries = new Map<List, Array<Entry<unknown>>>();
store.transact(() => {
  for (const list of LISTS) {
    const all: Array<Entry<unknown>> = [];
    for (let b = 0; b < BLOCKS; b++) {
      // Some blocks hold nothing of the list, some one entry, some many (a busy contract's logs).
      const n = rand(4) === 0 ? 0 : 1 + rand(rand(2) === 0 ? 3 : 40);
      const indexes = [...new Set(Array.from({ length: n }, () => rand(300)))].sort((x, y) => x - y);
      for (const i of indexes) all.push({ key: list.prefix + pos(b, i), value: list.value(b, i) });
    }
    for (const e of all) store.put(list.table, e.key, e.value);
    entries.set(list, all);
  }
});

/** The ranges readers ask of a list: rangePage's and mergeRanges' bounds, cursors' keys, limits, both orders. */
function queries(list: List): Array<{ start?: string; end?: string; limit?: number; reverse?: boolean }> {
  const p = list.prefix;
  const keys = entries.get(list)!.map((e) => e.key);
  const bounds = [
    p,
    `${p}\uffff`,
    `${p}${n12(0)}/`,
    `${p}${n12(5)}/`,
    `${p}${n12(17)}/`,
    `${p}${n12(18)}/`,
    `${p}${n12(BLOCKS + 3)}/`,
    ...Array.from({ length: 12 }, () => keys[rand(keys.length)]!),
    ...Array.from({ length: 6 }, () => `${p}${pos(rand(BLOCKS), rand(300))}`),
  ];
  const out: Array<{ start?: string; end?: string; limit?: number; reverse?: boolean }> = [];
  for (const reverse of [false, true])
    for (const limit of [undefined, 1, 2, 7, 30])
      for (let q = 0; q < 40; q++) {
        let [a, b] = [bounds[rand(bounds.length)]!, bounds[rand(bounds.length)]!];
        if (a > b) [a, b] = [b, a];
        out.push(
          reverse
            ? { start: b, end: a, reverse, ...(limit === undefined ? {} : { limit }) }
            : { start: a, end: b, ...(limit === undefined ? {} : { limit }) },
        );
      }
  return out;
}

describe('lists kept a row per block', () => {
  const asked = LISTS.map((list) => ({ list, qs: queries(list) }));
  // What schema 12's rows answered, read before the migration.
  const before = asked.map(({ list, qs }) => qs.map((q) => store.range(list.table, q)));

  it('are migrated into a row per block, the blocks with undo rows left per entry; a second walk finds nothing to do', () => {
    const kept = (_key: string, n: number): boolean => KEPT.has(n);
    let replaced = 0;
    // Batches of 13 keys: groups cut by a batch's end are completed by the next.
    for (const table of ['addressTxs', 'contractLogs'] as const)
      replaced += regroup(
        store,
        table,
        table === 'addressTxs' ? 'tx/' : '',
        table === 'addressTxs' ? txListEnd : contractListEnd,
        kept,
        13,
      );
    const keptEntries = LISTS.flatMap((l) =>
      entries.get(l)!.filter((e) => KEPT.has(parseInt(e.key.slice(l.prefix.length, l.prefix.length + 12), 16))),
    );
    expect(replaced).toBe(LISTS.reduce((n, l) => n + entries.get(l)!.length, 0) - keptEntries.length);
    for (const list of LISTS) {
      const rows = store.range<unknown>(list.table, { start: list.prefix, end: `${list.prefix}\uffff` });
      const blocks = new Set(entries.get(list)!.map((e) => e.key.slice(list.prefix.length, list.prefix.length + 12)));
      const keptBlocks = [...blocks].filter((b) => KEPT.has(parseInt(b, 16)));
      // A row per block, but for the kept blocks' entries.
      expect(rows.length).toBe(blocks.size - keptBlocks.length + keptEntries.filter((e) => e.key.startsWith(list.prefix)).length);
      for (const r of rows) {
        const rest = r.key.slice(list.prefix.length);
        if (KEPT.has(parseInt(rest.slice(0, 12), 16))) expect(rest).toHaveLength(19);
        else expect(rest).toHaveLength(12);
      }
    }
    expect(regroup(store, 'addressTxs', 'tx/', txListEnd, kept, 1)).toBe(0);
    expect(regroup(store, 'contractLogs', '', contractListEnd, kept, 1)).toBe(0);
  });

  it('answer every range, through groupedReads, with the entries and keys the per-entry rows answered', () => {
    let nonEmpty = 0;
    asked.forEach(({ list, qs }, li) => {
      const kv: Kv = groupedReads(store, list.table, list.prefixEnd);
      qs.forEach((q, qi) => {
        const got = kv.range(list.table, q);
        expect(got, JSON.stringify(q)).toEqual(before[li]![qi]);
        if (got.length > 0) nonEmpty++;
      });
    });
    expect(nonEmpty).toBeGreaterThan(200);
  });

  it('hold the indexes of a block alone where every value is 1, [index, value] pairs otherwise', () => {
    const [tx, , logs] = LISTS as [List, List, List];
    const block = [...new Set(entries.get(tx)!.map((e) => e.key.slice(tx.prefix.length, tx.prefix.length + 12)))].find(
      (b) => !KEPT.has(parseInt(b, 16)),
    )!;
    expect(store.get<GroupRow>('addressTxs', tx.prefix + block)!.every((e) => typeof e === 'number')).toBe(true);
    const logBlock = entries.get(logs)!.find((e) => !KEPT.has(parseInt(e.key.slice(logs.prefix.length, logs.prefix.length + 12), 16)))!;
    const row = store.get<GroupRow>('contractLogs', logBlock.key.slice(0, logs.prefix.length + 12))!;
    expect(row.every((e) => Array.isArray(e) && typeof e[0] === 'number')).toBe(true);
  });

  it('read an entry at a time (a merge of lists), read about a row an entry, as the per-entry rows were', () => {
    const list = LISTS[2]!;
    let read = 0;
    const counting = Object.create(store) as Kv;
    counting.range = <T>(t: Table, o?: Parameters<Kv['range']>[1]): Array<Entry<T>> => {
      const rows = store.range<T>(t, o);
      read += rows.length;
      return rows;
    };
    const kv = groupedReads(counting, list.table, list.prefixEnd);
    const got: string[] = [];
    for (let from: string | undefined = list.prefix; from !== undefined; ) {
      const [e] = kv.range(list.table, { start: from, end: `${list.prefix}\uffff`, limit: 1 });
      if (e === undefined) break;
      got.push(e.key);
      from = nextPosition(e.key.slice(list.prefix.length), false);
      from = from === undefined ? undefined : list.prefix + from;
    }
    expect(got).toEqual(entries.get(list)!.map((e) => e.key));
    // A row for each entry, and one more where the position asked lies past a block's last entry in its row.
    expect(read).toBeLessThanOrEqual(got.length + new Set(got.map((k) => k.slice(0, list.prefix.length + 12))).size + 1);
  });
});
