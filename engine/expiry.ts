import type { Kv, Table } from './ports.js';

/**
 * One index of things that expire (challenges, bind messages): `expiries` keys
 * sort by due time, so purging is a range scan from the start up to now. Each
 * entry names the table and key to remove. (History and delivery logs need no
 * such entry: their own keys sort by time, engine/delivery/retention.ts.)
 * `expiryCounts` holds how many entries each owner (a key's first segment: the
 * tenant) has in each table, changed with every entry: a tenant's count is one read.
 */
/** A service time (ms) as a key part that sorts in time order. */
export const timeKey = (ms: number): string => String(Math.floor(ms)).padStart(15, '0');

const keyOf = (at: number, table: Table, key: string): string => `${timeKey(at)}/${table}/${key}`;

export class Expiries {
  constructor(private readonly kv: Kv) {}

  /** Call inside the transaction that writes `table/key`. */
  add(at: number, table: Table, key: string): void {
    this.kv.put('expiries', keyOf(at, table, key), 0);
    this.counted(table, key, 1);
  }

  /** Call inside the transaction that removes `table/key` before its time. */
  remove(at: number, table: Table, key: string): void {
    this.kv.remove('expiries', keyOf(at, table, key));
    this.counted(table, key, -1);
  }

  /** How many entries of `table` whose key starts with `owner/` are not purged yet (some may be due). */
  count(table: Table, owner: string): number {
    return this.kv.get<number>('expiryCounts', `${table}/${owner}`) ?? 0;
  }

  /** When the next entry of any table and owner is due (service time, ms); undefined: none waits. */
  nextDue(): number | undefined {
    const [first] = this.kv.keys('expiries', { limit: 1 });
    return first === undefined ? undefined : Number(first.slice(0, first.indexOf('/')));
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
        this.counted(table as Table, rest.join('/'), -1);
      }
    });
    return due.length;
  }

  /** Entries of a store written before the counts were kept were never counted: a count stops at 0. */
  private counted(table: Table, key: string, n: number): void {
    const slash = key.indexOf('/');
    const at = `${table}/${slash < 0 ? key : key.slice(0, slash)}`;
    const total = (this.kv.get<number>('expiryCounts', at) ?? 0) + n;
    if (total > 0) this.kv.put('expiryCounts', at, total);
    else this.kv.remove('expiryCounts', at);
  }
}
