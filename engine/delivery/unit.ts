import type { Kv } from '../ports.js';
import type { RecordRows, RecordWrite } from './attempt-records.js';
import type { DeliveryQueue, QueueWrite } from './queue.js';
import { RateWrite, type RateStore } from './rate-store.js';
import { streamKey, type DeliveryStream, type StreamReads } from './stream-port.js';

/**
 * One unit of work of delivery (an enqueue chunk, a flush of outcomes, a replay, a termination): what it changes in
 * the queue, the success rates and the records, made inside one write transaction, closed at its end, and told once
 * it committed.
 */
export class Batch {
  private readonly streams = new Map<string, DeliveryStream | undefined>();

  constructor(
    readonly queue: QueueWrite,
    readonly records: RecordWrite,
    readonly rates: RateWrite,
    private readonly reads: StreamReads,
  ) {}

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
  }

  /** Once its transaction committed. */
  committed(): void {
    this.queue.committed();
    this.records.committed();
  }
}

/** Where units of work come from, and the store their transactions run on. */
export class Units {
  constructor(
    readonly kv: Kv,
    private readonly queue: DeliveryQueue,
    private readonly records: RecordRows,
    private readonly rates: RateStore,
    readonly reads: StreamReads,
  ) {}

  begin(): Batch {
    return new Batch(this.queue.begin(), this.records.begin(), new RateWrite(this.rates), this.reads);
  }
}
