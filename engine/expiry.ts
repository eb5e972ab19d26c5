import type { Kv, Table } from './ports.js';

/**
 * One index of things that expire (challenges, bind messages): `expiries` keys
 * sort by due time, so purging is a range scan from the start up to now. Each
 * entry names the table and key to remove. (History and delivery logs need no
 * such entry: their own keys sort by time, engine/delivery/retention.ts.)
 */
/** A service time (ms) as a key part that sorts in time order. */
export const timeKey = (ms: number): string => String(Math.floor(ms)).padStart(15, '0');

const keyOf = (at: number, table: Table, key: string): string => `${timeKey(at)}/${table}/${key}`;

export class Expiries {
  constructor(private readonly kv: Kv) {}

  /** Call inside the transaction that writes `table/key`. */
  add(at: number, table: Table, key: string): void {
    this.kv.put('expiries', keyOf(at, table, key), 0);
  }

  /** Call inside the transaction that removes `table/key` before its time. */
  remove(at: number, table: Table, key: string): void {
    this.kv.remove('expiries', keyOf(at, table, key));
  }

  /** Removes everything due by `now`; returns how many. */
  purge(now: number): number {
    // Every key of a due time up to now sorts before the bare time key of now + 1.
    const due = this.kv.range<number>('expiries', { end: timeKey(now + 1) });
    if (due.length === 0) return 0;
    this.kv.transact(() => {
      for (const { key } of due) {
        const [, table, ...rest] = key.split('/');
        this.kv.remove(table as Table, rest.join('/'));
        this.kv.remove('expiries', key);
      }
    });
    return due.length;
  }
}
