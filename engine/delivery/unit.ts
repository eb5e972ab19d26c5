import type { Kv } from '../ports.js';
import type { RecordRows, RecordWrite } from './attempt-records.js';
import type { DeliveryQueue, QueueWrite } from './queue.js';
import { RateWrite, type RateStore } from './rate-store.js';
import { streamKey, type DeliveryStream, type StreamReads } from './stream-port.js';

/**
 * The delivery partition of a stream of `tenantId` delivering to `webhookUrl` (engine/cluster/partitions.ts
 * partitionOf, with the hash app/ makes).
 */
export type StreamPartition = (tenantId: string, webhookUrl: string) => number;

/** Every stream in partition 0: delivery built without partitions (engine tests that need none). */
const PARTITION_0: StreamPartition = () => 0;

/**
 * Where units' writes are captured (engine/cluster/delivery-capture.ts, given by app/ on a cluster): the store every
 * write of delivery goes through, which each unit seals at its close, inside its transaction (answering its number),
 * and the unit's outcome once its transaction ended.
 */
export interface UnitCapture {
  readonly kv: Kv;
  seal(): number;
  /** Answers, on a cluster node, when the unit is durable in the partition log (rejects once it was taken back). */
  committed(sealed: number): Promise<void> | undefined;
  failed(sealed: number): void;
}

/**
 * One unit of work of delivery (an enqueue chunk, a flush of outcomes, a replay, a termination, a purge's batch):
 * what it changes in the queue, the success rates and the records, made inside one write transaction, closed at
 * its end, and told once it committed (or that it failed).
 */
export class Batch {
  private readonly streams = new Map<string, DeliveryStream | undefined>();
  /** Its number in the capture, once closed. */
  private sealed: number | undefined;

  constructor(
    readonly queue: QueueWrite,
    readonly records: RecordWrite,
    readonly rates: RateWrite,
    private readonly reads: StreamReads,
    private readonly partitionOf: StreamPartition,
    private readonly capture: UnitCapture | undefined,
  ) {}

  /**
   * The stream's delivery partition in this unit: the one its waiting webhooks were staged in, else its tenant's
   * and URL's (a stream moves with its URL once its queue drained, so its order holds across the move).
   */
  partition(s: Pick<DeliveryStream, 'id' | 'tenantId' | 'webhookUrl'>): number {
    return this.queue.stagedIn(s.id) ?? this.partitionOf(s.tenantId, s.webhookUrl);
  }

  /** The stream as this unit sees it: a copy of its own (read as last committed), which the unit may change and write. */
  stream(tenant: string, id: string): DeliveryStream | undefined {
    const key = streamKey(tenant, id);
    if (!this.streams.has(key)) {
      const s = this.reads.read(id);
      this.streams.set(key, s?.tenantId === tenant ? { ...s } : undefined);
    }
    return this.streams.get(key);
  }

  /** At the end of the unit, inside its transaction. */
  close(now: number): void {
    this.queue.close();
    this.rates.close();
    this.records.close(now);
    if (this.capture !== undefined) this.sealed = this.capture.seal();
  }

  /** Once its transaction committed; answers when it is durable in the partition log, on a cluster node. */
  committed(): Promise<void> | undefined {
    this.queue.committed();
    this.records.committed();
    return this.sealed === undefined ? undefined : this.capture!.committed(this.sealed);
  }

  /** Its transaction failed after it closed: nothing of it is told. */
  failed(): void {
    if (this.sealed !== undefined) this.capture!.failed(this.sealed);
  }
}

/** Where units of work come from, and the store their transactions run on. */
export class Units {
  constructor(
    /** The capture's store when there is one: every write of a unit goes through it. */
    readonly kv: Kv,
    private readonly queue: DeliveryQueue,
    readonly records: RecordRows,
    private readonly rates: RateStore,
    readonly reads: StreamReads,
    private readonly partitionOf: StreamPartition = PARTITION_0,
    private readonly capture?: UnitCapture,
  ) {}

  begin(): Batch {
    return new Batch(this.queue.begin(), this.records.begin(), new RateWrite(this.rates), this.reads, this.partitionOf, this.capture);
  }

  /**
   * `fn`'s writes as a unit of their own, in a write transaction of their own (`transact`: the store's synchronous
   * one, a replay's mark, or its asynchronous one, a retention purge's batch); told committed once it is, or failed.
   * `durable`: given what `committed()` answered (a cluster node: its publish on the partition's log).
   */
  alone<T, R extends T | Promise<T>>(
    transact: (body: () => T) => R,
    fn: (unit: Batch) => T,
    now: number,
    durable: (d: Promise<void> | undefined) => void = () => {},
  ): R {
    const unit = this.begin();
    let out: R;
    try {
      out = transact(() => {
        const r = fn(unit);
        unit.close(now);
        return r;
      });
    } catch (err) {
      unit.failed();
      throw err;
    }
    if (typeof (out as { then?: unknown } | null | undefined)?.then !== 'function') {
      durable(unit.committed());
      return out;
    }
    return (out as Promise<T>).then(
      (r) => {
        durable(unit.committed());
        return r;
      },
      (err: unknown) => {
        unit.failed();
        throw err;
      },
    ) as R;
  }
}
