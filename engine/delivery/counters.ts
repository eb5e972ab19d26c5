import { findChain } from '../chains/registry.js';
import type { Histogram, Metrics } from '../metrics.js';
import { uuidV7Ms } from './ids.js';
import type { QueueItem } from './queue.js';

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

/** Seconds from staging to the 2xx: a first attempt's network time up to the retries' hours and the 24-hour mark. */
const LATENCY_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3_600, 21_600, 86_400];

/** Each chain's family (`evm`, `bitcoin`, `solana`) as the chain registry names it, looked up once a chain. */
const families = new Map<string, string>();
function familyOf(chainId: string): string {
  let family = families.get(chainId);
  if (family === undefined) families.set(chainId, (family = findChain(chainId)?.family ?? (chainId.startsWith('0x') ? 'evm' : 'other')));
  return family;
}

export class DeliveryCounters {
  private readonly streams = new Map<string, Counts>();
  /** What the streams beyond the cap counted, together (one object they all point to). */
  private readonly other = zero();
  private readonly total = zero();
  private labelled = 0;
  /** Some stream went to `other`: from then on that series is rendered (a counter does not vanish). */
  private shared = false;
  /** Staged → delivered, per family (once exported). */
  private latency: Histogram | undefined;

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

  /** One attempt's outcome for `item` (a retry when it had failed before), at service time `now`. */
  outcome(streamId: string, delivered: boolean, item: Pick<QueueItem, 'failures' | 'webhookId' | 'summary'>, now: number): void {
    const c = this.streams.get(streamId) ?? this.track(streamId);
    const retry = item.failures > 0;
    if (delivered) {
      c.delivered++;
      this.total.delivered++;
      // Its id was minted at staging (a UUID v7 holds the instant).
      if (item.webhookId !== undefined)
        this.latency?.observe(familyOf(item.summary.chainId), Math.max(0, now - uuidV7Ms(item.webhookId)) / 1000);
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
    this.latency = metrics.histogram(
      'chainpost_webhook_delivery_seconds',
      'Time from a webhook staged to the 200 that delivered it (retries included), by chain family.',
      'family',
      LATENCY_BUCKETS,
    );
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
