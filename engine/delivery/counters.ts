import type { Metrics } from '../metrics.js';

/**
 * Delivery outcomes since the start, per stream and in all, for /metrics.
 * Counting is on the dispatcher's hot path: one Map lookup and a few increments
 * per outcome, nothing allocated; labels are built only when /metrics is read.
 *
 * Label cardinality stays bounded: a stream gets its own series while fewer
 * than `maxStreams` streams have one, and keeps it until it is deleted; the
 * streams beyond share the series `stream="other"`. A deleted stream's series
 * disappears (the totals keep what it counted).
 */
const METRICS_STREAMS_MAX = 1_000;

interface Counts {
  delivered: number;
  failed: number;
  retried: number;
}

const zero = (): Counts => ({ delivered: 0, failed: 0, retried: 0 });

export class DeliveryCounters {
  private readonly streams = new Map<string, Counts>();
  /** What the streams beyond the cap counted, together (one object they all point to). */
  private readonly other = zero();
  private readonly total = zero();
  private labelled = 0;
  /** Some stream went to `other`: from then on that series is rendered (a counter does not vanish). */
  private shared = false;

  constructor(private readonly maxStreams = METRICS_STREAMS_MAX) {}

  /** A stream exists (created, or found at start): it gets its series now, so its queue size shows before any outcome. */
  track(streamId: string): Counts {
    let c = this.streams.get(streamId);
    if (c === undefined) {
      if (this.labelled < this.maxStreams) {
        this.labelled++;
        c = zero();
      } else {
        this.shared = true;
        c = this.other;
      }
      this.streams.set(streamId, c);
    }
    return c;
  }

  /** A stream was deleted: its own series goes, and its slot is free for a stream made later. */
  forget(streamId: string): void {
    const c = this.streams.get(streamId);
    if (c !== undefined && c !== this.other) this.labelled--;
    this.streams.delete(streamId);
  }

  /** One attempt's outcome; `retry`: the webhook had failed before. */
  outcome(streamId: string, delivered: boolean, retry: boolean): void {
    const c = this.streams.get(streamId) ?? this.track(streamId);
    if (delivered) {
      c.delivered++;
      this.total.delivered++;
    } else {
      c.failed++;
      this.total.failed++;
    }
    if (retry) {
      c.retried++;
      this.total.retried++;
    }
  }

  /**
   * Registers the series with /metrics; `queueSize` is read per stream when it is scraped. The per-stream series
   * only with `perStream` (CHAINPOST_METRICS_STREAMS): their labels are stream ids of every tenant.
   */
  export(metrics: Metrics, queueSize: (streamId: string) => number, perStream: boolean): void {
    const kinds: Array<[keyof Counts, string]> = [
      ['delivered', 'Webhook attempts the receiver answered 200'],
      ['failed', 'Webhook attempts that failed (an answer other than 200, an error, or no answer within 10 s)'],
      ['retried', 'Webhook attempts that were retries of a failed one, whatever their outcome'],
    ];
    const other = `stream="other": the streams beyond the first ${this.maxStreams}`;
    for (const [kind, help] of kinds) {
      metrics.gauge(
        `chainpost_webhooks_${kind}_total`,
        `${help}, since the start.`,
        () => [{ labels: {}, value: this.total[kind] }],
        'counter',
      );
      if (perStream)
        metrics.gauge(
          `chainpost_stream_webhooks_${kind}_total`,
          `${help}, since the start, per stream (${other}).`,
          () =>
            this.samples(
              (_id, c) => c[kind],
              () => this.other[kind],
            ),
          'counter',
        );
    }
    const queued = (shared: boolean): number => {
      let n = 0;
      for (const [id, c] of this.streams) if (!shared || c === this.other) n += queueSize(id);
      return n;
    };
    metrics.gauge('chainpost_webhooks_queued', 'Webhooks waiting undelivered (fresh, or waiting for a retry), all streams.', () => [
      { labels: {}, value: queued(false) },
    ]);
    if (perStream)
      metrics.gauge('chainpost_stream_webhooks_queued', `Webhooks waiting undelivered per stream: its x-queue-size (${other}).`, () =>
        this.samples(
          (id) => queueSize(id),
          () => queued(true),
        ),
      );
  }

  /** One sample per stream with its own series, and one for stream="other" once a stream has shared it. */
  private samples(
    own: (streamId: string, c: Counts) => number,
    other: () => number,
  ): Array<{ labels: Record<string, string>; value: number }> {
    const out: Array<{ labels: Record<string, string>; value: number }> = [];
    for (const [id, c] of this.streams) if (c !== this.other) out.push({ labels: { stream: id }, value: own(id, c) });
    if (this.shared) out.push({ labels: { stream: 'other' }, value: other() });
    return out;
  }
}
