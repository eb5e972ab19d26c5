import type { Clock } from '../clock.js';
import { timeKey } from '../expiry.js';
import type { Logger } from '../log.js';
import type { Kv, Mailer } from '../ports.js';
import { uuidV7 } from './ids.js';

/** E-mail when a stream enters error or ends: to the stream owner's key e-mail or CHAINPOST_ALERT_EMAIL; kept in the outbox when it cannot be sent. */
export class Alerts {
  constructor(
    private readonly kv: Kv,
    private readonly clock: Clock,
    private readonly mailer: Mailer | undefined,
    private readonly log: Logger,
    private readonly alertEmail: string | undefined,
  ) {}

  /** Never rejects. */
  async send(s: { id: string; ownerEmail?: string }, subject: string, text: string): Promise<void> {
    const to = s.ownerEmail ?? this.alertEmail;
    const now = this.clock.now();
    // Committed off the event loop (a hundred streams entering error at once would be a hundred fsyncs on it).
    const keep = (reason: string): Promise<void> =>
      this.kv
        .transactAsync(() =>
          this.kv.put('outbox', `${timeKey(now)}/${uuidV7(now)}`, {
            to: to ?? null,
            subject,
            text,
            reason,
            at: new Date(now).toISOString(),
          }),
        )
        .then(
          () => this.log.warn('stream alert not e-mailed', { streamId: s.id, subject, reason }),
          (err: unknown) => this.log.error('stream alert not e-mailed nor kept in the outbox', { streamId: s.id, subject, reason, err }),
        );
    if (to === undefined) return keep('no recipient: the key has no e-mail and CHAINPOST_ALERT_EMAIL is unset');
    if (this.mailer === undefined) return keep('no SMTP server: CHAINPOST_SMTP_URL is unset');
    try {
      await this.mailer.send({ to, subject, text });
      this.log.info('stream alert e-mailed', { streamId: s.id, to, subject });
    } catch (err) {
      await keep(`sending failed: ${(err as Error).message}`);
    }
  }
}
