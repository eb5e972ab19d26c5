import type { Clock } from '../clock.js';
import { timeKey } from '../expiry.js';
import type { Logger } from '../log.js';
import type { Mailer } from '../ports.js';
import { uuidV7 } from './ids.js';
import { partitionTag, taggedPartition } from './records.js';
import type { DeliveryStream } from './stream-port.js';
import type { Units } from './unit.js';

/** An alert decided and not yet e-mailed: a row of `alerts`, keyed `#NN/<uuid v7>` by its stream's partition. */
interface PendingAlert {
  streamId: string;
  /** The stream owner's key e-mail when it had one; else CHAINPOST_ALERT_EMAIL of the node that sends it. */
  ownerEmail: string | null;
  subject: string;
  text: string;
  at: string;
}

/**
 * E-mail when a stream enters error or ends: to the stream owner's key e-mail or CHAINPOST_ALERT_EMAIL. The alert
 * is written in the unit that decided it, in the stream's delivery partition, and removed once e-mailed (moved to
 * the outbox when it cannot be): a process killed before it sent the e-mail sends it at its restart, and on a
 * cluster the node taking the partition sends it (docs/decisions/cluster.md, "Alerts"). Killed between the e-mail and
 * the removal, the alert is sent again: at least once, like a webhook.
 */
export class Alerts {
  /** The flushes called, one after the other. */
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly units: Units,
    private readonly clock: Clock,
    private readonly mailer: Mailer | undefined,
    private readonly log: Logger,
    private readonly alertEmail: string | undefined,
    /** Whether this node sends the alerts of a partition (a cluster node: those it owns); every one by default. */
    private readonly owns: (partition: number) => boolean = () => true,
  ) {}

  /** Inside the transaction of the unit that decided it; e-mailed by `flush` once that committed. */
  decided(partition: number, s: Pick<DeliveryStream, 'id' | 'ownerEmail'>, subject: string, text: string, now: number): void {
    const alert: PendingAlert = { streamId: s.id, ownerEmail: s.ownerEmail ?? null, subject, text, at: new Date(now).toISOString() };
    this.units.kv.put('alerts', `${partitionTag(partition)}/${uuidV7(now)}`, alert);
  }

  /**
   * E-mails every alert waiting in the partitions this node owns, oldest first, after those of the flushes called
   * before (one at a time: an alert is never sent twice here, and a stream's alerts go in the order decided).
   * Never rejects.
   */
  flush(): Promise<void> {
    this.flushing = this.flushing
      .then(async () => {
        const waiting = this.units.kv
          .range<PendingAlert>('alerts')
          .filter((e) => this.owns(taggedPartition(e.key) ?? 0))
          .sort((x, y) => x.key.slice(4).localeCompare(y.key.slice(4)));
        for (const { key, value } of waiting) await this.send(key, value);
      })
      .catch((err: unknown) => this.log.error('stream alerts could not be read', { err }));
    return this.flushing;
  }

  private async send(key: string, a: PendingAlert): Promise<void> {
    const to = a.ownerEmail ?? this.alertEmail;
    if (to === undefined) return this.keep(key, a, null, 'no recipient: the key has no e-mail and CHAINPOST_ALERT_EMAIL is unset');
    if (this.mailer === undefined) return this.keep(key, a, to, 'no SMTP server: CHAINPOST_SMTP_URL is unset');
    try {
      await this.mailer.send({ to, subject: a.subject, text: a.text });
    } catch (err) {
      return this.keep(key, a, to, `sending failed: ${(err as Error).message}`);
    }
    this.log.info('stream alert e-mailed', { streamId: a.streamId, to, subject: a.subject });
    await this.settle(key, a, () => {});
  }

  /** Not e-mailed: kept in this node's outbox for the operator, and no longer waiting. */
  private async keep(key: string, a: PendingAlert, to: string | null, reason: string): Promise<void> {
    const now = this.clock.now();
    const kept = await this.settle(key, a, () =>
      this.units.kv.put('outbox', `${timeKey(now)}/${uuidV7(now)}`, { to, subject: a.subject, text: a.text, reason, at: a.at }),
    );
    if (kept) this.log.warn('stream alert not e-mailed', { streamId: a.streamId, subject: a.subject, reason });
  }

  /**
   * Removes the waiting alert (with `also`'s writes) in a unit of its own, committed off the event loop: a hundred
   * streams entering error at once are not a hundred fsyncs on it. Answers whether it committed.
   */
  private settle(key: string, a: PendingAlert, also: () => void): Promise<boolean> {
    return this.units
      .alone(
        (body: () => void) => this.units.kv.transactAsync(body),
        () => {
          this.units.kv.remove('alerts', key);
          also();
        },
        this.clock.now(),
      )
      .then(
        () => true,
        (err: unknown) => {
          this.log.error('stream alert could not be marked sent nor kept in the outbox', { streamId: a.streamId, subject: a.subject, err });
          return false;
        },
      );
  }
}
