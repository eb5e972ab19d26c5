import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { withoutPassword } from '../redact.js';
import { bodyAt } from './body.js';
import { webhookIdOf, type QueueItem, type Taken } from './queue.js';
import { markDelivered } from './records.js';
import { nextRetryAt } from './retry-schedule.js';
import type { StreamHealth } from './stream-health.js';
import type { DeliveryStream } from './stream-port.js';
import type { Batch, Units } from './unit.js';

/** Delivery outcomes committed per transaction at most (a flush): about 5 ms of writes in its callback. */
export const FLUSH_MAX = 250;

/** One attempt, as the dispatcher hands it over once the receiver answered (or did not). */
export interface Outcome {
  s: DeliveryStream;
  taken: Taken;
  /** The URL it was sent to (the stream's may have changed since). */
  url: string;
  res: { delivered: boolean; status?: number; error?: string };
  now: number;
}

/** A failed attempt as its `warn` line tells it, once its outcome is committed. */
interface FailedAttempt {
  streamId: string;
  webhookUrl: string;
  status?: number;
  error: string;
  /** 1 for the first try. */
  attempt: number;
  /** When it is sent again (ISO), or null when it is not. */
  nextRetryAt: string | null;
  historyId?: string;
  note?: string;
}

/** Built for failures only: a delivered webhook allocates nothing for the log. */
function failedAttempt(
  { s, taken, url, res }: Outcome,
  nextAt: number | undefined,
  historyId: string | undefined,
  note: string | undefined,
): FailedAttempt {
  // Logged: a receiver's basic-auth password stays out of the line.
  const f: FailedAttempt = {
    streamId: s.id,
    webhookUrl: withoutPassword(url),
    error: res.error ?? 'no answer',
    attempt: taken.item.failures + 1,
    nextRetryAt: nextAt === undefined ? null : new Date(nextAt).toISOString(),
  };
  if (res.status !== undefined) f.status = res.status;
  if (historyId !== undefined) f.historyId = historyId;
  if (note !== undefined) f.note = note;
  return f;
}

/**
 * Records attempts: each outcome settles its webhook in the queue (it leaves, or waits for its retry), adds a
 * delivery log, a failure's history record and the stats, and moves its URL's success rate. Outcomes are committed
 * together (group commit): one fsync for many deliveries. A crash before the commit re-sends those webhooks (at least
 * once). One flush is queued at a time, and its transaction takes, when it runs, at most FLUSH_MAX of the outcomes
 * waiting: lmdb-js runs the callbacks of every transaction queued meanwhile in one stretch of the event loop, so
 * flushes queued turn after turn while a commit waits for its fsync would all run there together (the soak,
 * docs/reliability.md: up to about 20 ms).
 */
export class AttemptRecorder {
  /** Outcomes waiting for a flush, each with what settles its delivery once committed. */
  private outcomes: Array<{ o: Outcome; committed: () => void }> = [];
  /** A flush is queued whose transaction has not taken its outcomes yet. */
  private flushQueued = false;

  constructor(
    private readonly units: Units,
    private readonly health: StreamHealth,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Resolves once the outcome is committed (or its transaction failed: the webhook is sent again). */
  record(o: Outcome): Promise<void> {
    return new Promise((committed) => {
      this.outcomes.push({ o, committed });
      this.queueFlush();
    });
  }

  private queueFlush(): void {
    if (this.flushQueued || this.outcomes.length === 0) return;
    this.flushQueued = true;
    setImmediate(() => {
      let batch: Array<{ o: Outcome; committed: () => void }> = [];
      const errored: DeliveryStream[] = [];
      const failed: FailedAttempt[] = [];
      const unit = this.units.begin();
      // The commit and its fsync happen off the event loop; the deliveries settle once it is on disk.
      this.units.kv
        .transactAsync(() => {
          batch = this.outcomes.splice(0, FLUSH_MAX);
          this.flushQueued = false;
          // What is left, or comes from now on, goes in the next transaction (queued in a later turn).
          this.queueFlush();
          for (const { o } of batch) errored.push(...this.apply(o, unit, failed));
          unit.close(this.clock.now());
        })
        .then(
          () => {
            unit.committed();
            for (const f of failed) this.log.warn('webhook delivery failed', { ...f });
            this.health.afterError(errored);
          },
          (err: unknown) => {
            unit.failed();
            this.log.error('delivery outcomes not committed; they will be sent again', { err, count: batch.length });
            // A transaction that failed before its callback took anything: the next flush takes them.
            if (batch.length === 0) {
              this.flushQueued = false;
              this.queueFlush();
            }
          },
        )
        .finally(() => {
          for (const { committed } of batch) committed();
        });
    });
  }

  /** One outcome, inside the unit's transaction; answers the streams that entered error, and adds a failed attempt to `failed` (logged once committed). */
  private apply(o: Outcome, unit: Batch, failed: FailedAttempt[]): DeliveryStream[] {
    const { s, taken, url, res, now } = o;
    const { item } = taken;
    const tenant = s.tenantId;
    const cur = unit.queue.holds(taken) ? unit.stream(tenant, s.id) : undefined;
    if (cur === undefined) {
      // The stream was deleted or ended meanwhile.
      if (!res.delivered)
        failed.push(failedAttempt(o, undefined, undefined, 'not retried: the stream was deleted or terminated meanwhile'));
      return [];
    }
    // Charged to the URL it was sent to, even if the stream has moved to another since.
    const sentTo = { ...cur, webhookUrl: url };
    // Its records go to the partition it was staged in (its queue's, which this outcome may empty).
    const partition = unit.partition(cur);
    unit.records.log(tenant, partition, sentTo, item, res.delivered ? 'success' : 'failed', res.error ?? '', now);
    if (res.delivered) {
      unit.queue.settle(taken, { leaves: true });
      this.health.attempted(unit, tenant, url, true, now);
      unit.records.bump(tenant, s.id, partition, { totalWebhooksDelivered: 1 });
      if (item.historyId !== undefined) markDelivered(this.units.kv, tenant, partition, item.historyId, now);
      return [];
    }
    const firstFailedAt = item.firstFailedAt ?? now;
    const record = unit.records.history(
      tenant,
      partition,
      sentTo,
      bodyAt(item, item.failures),
      item.summary,
      item.failures,
      res.error ?? 'no answer',
      now,
      item.historyId,
      item.seq,
      webhookIdOf(s.id, item),
    );
    const historyId = record.id;
    unit.records.bump(tenant, s.id, partition, { totalWebhooksFailed: 1 });
    unit.records.failed(tenant, s.id, partition, {
      message: record.errorMessage,
      at: record.date,
      webhookUrl: record.webhookUrl,
      historyId,
    });
    // A replay delivered it while this attempt was in flight: it is not sent again.
    const replayed = record.deliveredAt !== undefined;
    const nextAt = replayed ? undefined : nextRetryAt(item.failures, firstFailedAt, now);
    // Out of retries, 24 h without delivery, or delivered by a replay: the webhook stays in history for manual replay.
    unit.queue.settle(
      taken,
      nextAt === undefined
        ? { leaves: true }
        : { retryAt: nextAt, item: { ...item, failures: item.failures + 1, firstFailedAt, nextAt, historyId } satisfies QueueItem },
    );
    const entered = this.health.attempted(unit, tenant, url, false, now);
    const note = replayed
      ? 'not retried: a replay delivered it'
      : nextAt === undefined
        ? 'no retry left: the webhook stays in history for manual replay'
        : entered.some((e) => e.id === s.id) || cur.status !== 'active'
          ? 'the stream is not active: the retry waits until it is set active again'
          : undefined;
    failed.push(failedAttempt(o, nextAt, historyId, note));
    return entered;
  }
}
