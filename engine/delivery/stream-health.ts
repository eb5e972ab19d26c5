import type { Clock, Timer } from '../clock.js';
import type { Alerts } from './alerts.js';
import { bodyAt } from './body.js';
import { ERROR_TO_TERMINATED_MS } from './limits.js';
import { rateKey } from './rate-store.js';
import { webhookIdOf } from './queue.js';
import type { DeliveryStream } from './stream-port.js';
import { START_RATE, afterFailure, afterSuccess, inError } from './success-rate.js';
import type { Batch, Units } from './unit.js';

/**
 * A stream's health, by the interface's rules: the success rate per tenant and webhook URL (below 70 % every
 * active stream of the tenant using that URL goes to error), the queue cap (a stream whose undelivered webhooks
 * reach it goes to error), 24 hours in error → terminated (what was queued moves to history), and an alert when a
 * stream enters error or ends.
 */
export class StreamHealth {
  /**
   * Per success rate's key, the streams written with that URL since the start: those the rate may put in error,
   * each checked against its record. Entries are added inside the transactions that write a URL, and leave only
   * with the stream: a stream is never missing from its URL's, whatever commits when.
   */
  private readonly byUrl = new Map<string, Set<string>>();
  private readonly terminations = new Map<string, Timer>();

  constructor(
    private readonly units: Units,
    private readonly clock: Clock,
    /** The alerts of the streams' changes (a process's start and a partition's adoption e-mail what waits). */
    readonly alerts: Alerts,
    /** At this many undelivered webhooks a stream goes to error (the queue's cap). */
    private readonly cap: number,
  ) {}

  /** The stream is written with its webhookUrl: inside the transaction that writes it. */
  usesUrl(s: Pick<DeliveryStream, 'id' | 'tenantId' | 'webhookUrl'>): void {
    const key = rateKey(s.tenantId, s.webhookUrl);
    let ids = this.byUrl.get(key);
    if (ids === undefined) this.byUrl.set(key, (ids = new Set()));
    ids.add(s.id);
  }

  /** A stream found at start. */
  started(s: DeliveryStream): void {
    this.usesUrl(s);
    if (s.status === 'error') this.scheduleTermination(s);
  }

  /** A deleted stream. */
  forget(id: string): void {
    this.cancelTermination(id);
    // Deletes are rare: every URL's set is looked at rather than keeping each stream's URLs beside them.
    for (const [key, ids] of this.byUrl) if (ids.delete(id) && ids.size === 0) this.byUrl.delete(key);
  }

  /**
   * An attempt's outcome, charged to the URL it was sent to (the stream may have moved to another since); answers the
   * streams it put in error. Inside the unit's transaction.
   */
  attempted(batch: Batch, tenant: string, url: string, delivered: boolean, now: number): DeliveryStream[] {
    const key = rateKey(tenant, url);
    const rate = batch.rates.rate(key);
    if (delivered) {
      batch.rates.set(key, afterSuccess(rate));
      return [];
    }
    const next = afterFailure(rate);
    batch.rates.set(key, next);
    return inError(next) ? this.urlToError(batch, tenant, url, `the success rate of ${url} fell to ${next}%, below 70%`, now) : [];
  }

  /** A webhook was queued for `s`, which now holds `queued`: at the cap it goes to error (answers whether). Inside the unit's transaction. */
  queued(batch: Batch, s: DeliveryStream, queued: number, now: number): boolean {
    if (queued < this.cap) return false;
    this.toError(batch, s, `the queue of undelivered webhooks reached ${this.cap}`, now);
    this.write(s);
    return true;
  }

  /** A stream set active from error: its URL's rate restarts at 100. In a unit inside the transaction that sets it active. */
  restartRate(batch: Batch, s: Pick<DeliveryStream, 'tenantId' | 'webhookUrl'>): void {
    batch.rates.set(rateKey(s.tenantId, s.webhookUrl), START_RATE);
  }

  /** The owner set the stream active again from `from` (committed). */
  resumed(id: string, from: DeliveryStream['status']): void {
    if (from === 'error') this.cancelTermination(id);
  }

  /** Streams whose entry into error has committed: terminated in 24 hours unless set active, and their alerts sent. */
  afterError(streams: readonly DeliveryStream[]): void {
    for (const s of streams) {
      // Read again: a send or prepare between the transaction's callback and its commit (LMDB's write thread)
      // may have cached the record as it still was, active, and would go on sending while it is in error.
      this.units.reads.changed(s.id);
      this.scheduleTermination(s);
      this.units.reads.port.stateCommitted?.(s);
    }
    if (streams.length > 0) void this.alerts.flush();
  }

  /** The log applied a state these rules set on some node (this one's too): its termination follows it. */
  stateApplied(s: DeliveryStream): void {
    if (s.status === 'error') this.scheduleTermination(s);
    else this.cancelTermination(s.id);
  }

  stop(): void {
    for (const t of this.terminations.values()) t.cancel();
  }

  /**
   * Every active stream of the tenant that uses `url` goes to error. Only the streams written with that URL are read:
   * a tenant's every stream, read for each URL entering error, held the event loop for hundreds of ms when a batch of
   * receivers failed together (docs/reliability.md, Soak).
   */
  private urlToError(batch: Batch, tenant: string, url: string, why: string, now: number): DeliveryStream[] {
    const out: DeliveryStream[] = [];
    for (const id of [...(this.byUrl.get(rateKey(tenant, url)) ?? [])].sort()) {
      const s = this.units.reads.port.get(tenant, id);
      if (s === undefined || s.webhookUrl !== url || s.status !== 'active') continue;
      this.toError(batch, s, why, now);
      this.write(s);
      out.push(s);
    }
    return out;
  }

  /** `s` goes to error, and its alert waits to be e-mailed: in the unit's transaction. */
  private toError(batch: Batch, s: DeliveryStream, why: string, now: number): void {
    s.status = 'error';
    s.statusMessage = `Stream in error: ${why}. Webhooks are kept in history; set the stream active to resume, or it is terminated 24 hours after ${new Date(now).toISOString()}.`;
    s.errorSince = now;
    s.updatedAt = now;
    this.alerts.decided(batch.partition(s), s, `chainpost: stream ${s.id} is in error`, s.statusMessage, now);
  }

  private write(s: DeliveryStream): void {
    this.units.reads.port.putState(s);
    this.units.reads.changed(s.id);
  }

  /** The stream's 24-hour rule no longer runs here (its partition went to another node, or it left error). */
  cancelTermination(id: string): void {
    this.terminations.get(id)?.cancel();
    this.terminations.delete(id);
  }

  private scheduleTermination(s: DeliveryStream): void {
    this.terminations.get(s.id)?.cancel();
    const since = s.errorSince ?? this.clock.now();
    this.terminations.set(
      s.id,
      this.clock.at(since + ERROR_TO_TERMINATED_MS, () => this.terminate(s.tenantId, s.id, since)),
    );
  }

  /** 24 h in error: nothing more is sent; what was queued moves to history for manual replay. */
  private async terminate(tenant: string, id: string, since: number): Promise<void> {
    this.terminations.delete(id);
    const now = this.clock.now();
    const batch = this.units.begin();
    const ended = await this.units.kv
      .transactAsync(() => {
        const s = batch.stream(tenant, id);
        if (s === undefined || s.status !== 'error' || s.errorSince !== since) return undefined;
        // Where its queue was staged: history goes there with it.
        const partition = batch.partition(s);
        for (const item of batch.queue.drain(id)) {
          batch.records.history(
            tenant,
            partition,
            s,
            bodyAt(item, item.failures),
            item.summary,
            item.failures,
            'not sent: the stream was terminated',
            now,
            item.historyId,
            undefined,
            webhookIdOf(id, item),
          );
        }
        s.status = 'terminated';
        s.statusMessage = `Stream terminated: it stayed in error for 24 hours (since ${new Date(since).toISOString()}). Nothing is sent and new blocks are dropped; its history stays for manual replay.`;
        s.updatedAt = now;
        this.alerts.decided(partition, s, `chainpost: stream ${id} was terminated`, s.statusMessage, now);
        batch.close(now);
        this.units.reads.port.putState(s);
        return s;
      })
      .catch((err: unknown) => {
        batch.failed();
        throw err;
      });
    if (ended !== undefined) batch.committed();
    this.units.reads.changed(id);
    if (ended !== undefined) this.units.reads.port.stateCommitted?.(ended);
    if (ended !== undefined) void this.alerts.flush();
  }
}
