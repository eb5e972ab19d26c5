import { type QueueMeta, queuePartition } from '../delivery/kv-queue.js';
import { taggedPartition } from '../delivery/records.js';
import type { StreamPartition, UnitCapture } from '../delivery/unit.js';
import type { Entry, Kv, KvOverlay, OverlayOptions, Table } from '../ports.js';
import { PartitionLost, UnitsTakenBack } from './partition-log.js';
import type { PendingUnit, RowWrite } from './partitions.js';

/**
 * What each unit of work of delivery wrote, per partition (docs/decisions/cluster.md, Part 2): the seam a cluster
 * node publishes each partition's changes through. Every row of the delivery tables belongs to one partition:
 * - `queue`, `retries`, `queueMeta` (keys lead with the stream id): the partition its stream's webhooks were
 *   staged in, which its `queueMeta` row keeps;
 * - `history`, `deliveryLogs`, `counts`, `stats`: the partition their key names (partitionTag);
 * - `rates` (`tenant/webhookUrl`): that tenant's and URL's;
 * - `matchMarks` (`<event key>/#NN`): the partition its key names, staged with the webhooks it marks;
 * - `alerts` (`#NN/<id>`): an alert decided in the partition and not yet e-mailed, which its next owner sends.
 * Stream states (error, terminated) are the control plane's rows: written in the same transaction, and through
 * the control log as `stream.health`. Alerts that could not be e-mailed, kept in
 * `outbox`, are the sending node's own.
 */
export const DELIVERY_TABLES: ReadonlySet<Table> = new Set<Table>([
  'queue',
  'retries',
  'queueMeta',
  'history',
  'deliveryLogs',
  'counts',
  'stats',
  'rates',
  'matchMarks',
  'alerts',
]);

/**
 * Told each committed unit's changes, one per partition it wrote, in commit order; answers, on a cluster node, a
 * promise per change settled once it is durable in the partition log (or taken back).
 */
export type UnitListener = (units: PendingUnit[]) => ReadonlyArray<Promise<void>> | void;

function streamOf(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? key : key.slice(0, slash);
}
const same = (a: Uint8Array | null, b: Uint8Array | null): boolean => (a === null || b === null ? a === b : Buffer.compare(a, b) === 0);

/** A touched row: its before-image, and for `queueMeta` the partition it named before (its bytes are not decoded here). */
interface Touched {
  table: Table;
  key: string;
  before: Uint8Array | null;
  beforePartition?: number;
}

/**
 * The store as delivery writes it, noting each row of the delivery tables a unit touches before its first write
 * (its bytes as they were). A unit of work's writes all run inside its transaction's callback, which ends with
 * the unit's close: `seal()` then takes what was touched since the last seal, as rows per partition. A row a
 * failed transaction touched is back as it was, so it seals as unchanged and is left out.
 */
export class CapturingKv implements Kv {
  private touched = new Map<string, Touched>();

  constructor(
    readonly inner: Kv,
    private readonly partitionOf: StreamPartition,
  ) {}

  /** What was written since the last seal, grouped by partition (in order of each partition's first row), rows in first-write order. */
  seal(): PendingUnit[] {
    const touched = this.touched;
    this.touched = new Map();
    const units = new Map<number, PendingUnit>();
    for (const t of touched.values()) {
      const after = this.raw(t.table, t.key);
      if (same(after, t.before)) continue;
      const p = this.partitionOfRow(t, touched);
      let unit = units.get(p);
      if (unit === undefined) units.set(p, (unit = { change: { partition: p, rows: [] }, before: [] }));
      unit.change.rows.push([t.table, t.key, after] satisfies RowWrite);
      unit.before.push([t.table, t.key, t.before] satisfies RowWrite);
    }
    return [...units.values()];
  }

  private partitionOfRow(t: Touched, touched: Map<string, Touched>): number {
    switch (t.table) {
      case 'rates': {
        const slash = t.key.indexOf('/');
        return this.partitionOf(t.key.slice(0, slash), t.key.slice(slash + 1));
      }
      case 'queue':
      case 'retries':
      case 'queueMeta': {
        const id = streamOf(t.key);
        const meta = this.inner.get<QueueMeta>('queueMeta', id);
        // A deleted stream's row is gone: the partition it named before.
        return meta !== undefined ? queuePartition(meta) : (touched.get(`queueMeta\n${id}`)?.beforePartition ?? 0);
      }
      default:
        return taggedPartition(t.key) ?? 0;
    }
  }

  private raw(table: Table, key: string): Uint8Array | null {
    const b = this.inner.getRaw(table, key);
    return b === undefined ? null : Uint8Array.prototype.slice.call(b);
  }

  private touch(table: Table, key: string): void {
    if (!DELIVERY_TABLES.has(table)) return;
    const id = `${table}\n${key}`;
    if (this.touched.has(id)) return;
    const t: Touched = { table, key, before: this.raw(table, key) };
    if (table === 'queueMeta') t.beforePartition = queuePartition(this.inner.get<QueueMeta>('queueMeta', key));
    this.touched.set(id, t);
  }

  // ---- the Kv port: writes noted, everything else as the store does it ----------------

  put(table: Table, key: string, value: unknown): void {
    this.touch(table, key);
    this.inner.put(table, key, value);
  }

  putRaw(table: Table, key: string | Uint8Array, bytes: Uint8Array): void {
    this.touch(table, typeof key === 'string' ? key : Buffer.from(key).toString('latin1'));
    this.inner.putRaw(table, key, bytes);
  }

  remove(table: Table, key: string): void {
    this.touch(table, key);
    this.inner.remove(table, key);
  }

  removeRange(table: Table, opts: { start: string; end: string; limit: number }): number {
    if (DELIVERY_TABLES.has(table)) for (const key of this.inner.keys(table, opts)) this.touch(table, key);
    return this.inner.removeRange(table, opts);
  }

  get<T>(table: Table, key: string): T | undefined {
    return this.inner.get<T>(table, key);
  }

  getRaw(table: Table, key: string): Uint8Array | undefined {
    return this.inner.getRaw(table, key);
  }

  has(table: Table, key: string): boolean {
    return this.inner.has(table, key);
  }

  range<T>(table: Table, opts?: { start?: string; end?: string; limit?: number; reverse?: boolean }): Array<Entry<T>> {
    return this.inner.range<T>(table, opts);
  }

  keys(table: Table, opts: { start?: string; end?: string; limit?: number }): string[] {
    return this.inner.keys(table, opts);
  }

  count(table: Table, opts: { start: string; end: string; limit?: number }): number {
    return this.inner.count(table, opts);
  }

  transact<T>(fn: () => T): T {
    return this.inner.transact(fn);
  }

  transactAsync<T>(fn: () => T): Promise<T> {
    return this.inner.transactAsync(fn);
  }

  writeBehind(fn: () => void): Promise<void> {
    return this.inner.writeBehind(fn);
  }

  overlay(opts?: OverlayOptions): KvOverlay {
    return this.inner.overlay(opts);
  }
}

/**
 * Delivery's writes captured (DeliveryParts.capture): its units hand their rows per partition to `listener` in
 * commit order. Each is numbered when sealed (inside its transaction: the callbacks run in commit order), told once
 * committed or dropped when its transaction failed, and waits for the units sealed before it.
 */
export class DeliveryCapture implements UnitCapture {
  readonly kv: CapturingKv;
  private sealed = 0;
  private next = 0;
  /** Sealed units' changes, until told. */
  private readonly units = new Map<number, PendingUnit[]>();
  /** Told: committed (true) or failed. */
  private readonly told = new Map<number, boolean>();
  /** Committed units waiting for those before them, with how to tell when they are durable. */
  private readonly durable = new Map<number, { resolve(): void; reject(err: unknown): void }>();

  constructor(
    kv: Kv,
    partitionOf: StreamPartition,
    private readonly listener: UnitListener,
  ) {
    this.kv = new CapturingKv(kv, partitionOf);
  }

  seal(): number {
    this.units.set(this.sealed, this.kv.seal());
    return this.sealed++;
  }

  committed(n: number): Promise<void> {
    const durable = new Promise<void>((resolve, reject) => this.durable.set(n, { resolve, reject }));
    // Most units' durability is not awaited (outcomes, marks): a taken-back one is the log's to report, not a crash.
    durable.catch(() => {});
    this.settle(n, true);
    return durable;
  }

  failed(n: number): void {
    this.settle(n, false);
  }

  private settle(n: number, committed: boolean): void {
    this.told.set(n, committed);
    while (this.told.has(this.next)) {
      const ok = this.told.get(this.next)!;
      const units = this.units.get(this.next)!;
      this.told.delete(this.next);
      this.units.delete(this.next);
      const durable = this.durable.get(this.next);
      this.durable.delete(this.next++);
      const submitted = ok && units.length > 0 ? this.listener(units) : undefined;
      // Answered once every partition's unit settled, naming those taken back: a caller then knows what stays.
      if (durable !== undefined)
        void Promise.allSettled(submitted ?? []).then((results) => {
          const taken = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
          if (taken.length === 0) durable.resolve();
          else if (taken.every((err) => err instanceof PartitionLost))
            durable.reject(new UnitsTakenBack(new Set(taken.map((err) => (err as PartitionLost).partition)), taken[0]));
          else durable.reject(taken[0]);
        });
    }
  }
}
