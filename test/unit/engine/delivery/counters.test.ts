import { describe, expect, it } from 'vitest';
import { DeliveryCounters } from '../../../../engine/delivery/counters.js';
import { uuidV7 } from '../../../../engine/delivery/ids.js';
import { Metrics } from '../../../../engine/metrics.js';

const T0 = Date.parse('2026-12-07T00:00:00Z');
const summary = (chainId: string) => ({ chainId, confirmed: false, block: { number: '1', hash: '0x1', timestamp: '0' }, records: 0 });

/** One attempt's outcome of a webhook of chain 0x1 staged at T0 without an id (`retry`: it had failed before). */
const outcome = (c: DeliveryCounters, id: string, delivered: boolean, retry: boolean): void =>
  c.outcome(id, delivered, { failures: retry ? 1 : 0, summary: summary('0x1') }, T0);

/** The delivery series of /metrics: per stream up to a cap, the rest as stream="other", and totals. */
function scrape(counters: DeliveryCounters, queue: Record<string, number> = {}, perStream = true): (line: string) => number | undefined {
  const metrics = new Metrics();
  counters.export(metrics, (id) => queue[id] ?? 0, perStream);
  const samples = new Map(
    metrics
      .render()
      .split('\n')
      .filter((l) => l.startsWith('chainpost_') && !l.startsWith('chainpost_http_'))
      .map((l) => [l.slice(0, l.lastIndexOf(' ')), Number(l.slice(l.lastIndexOf(' ') + 1))] as const),
  );
  return (series) => samples.get(series);
}

describe('DeliveryCounters', () => {
  it('counts outcomes per stream and in all; a stream has its series from when it is tracked', () => {
    const c = new DeliveryCounters(10);
    c.track('a');
    c.track('b');
    outcome(c, 'a', false, false);
    outcome(c, 'a', false, true);
    outcome(c, 'a', true, true);
    outcome(c, 'b', true, false);
    const m = scrape(c, { a: 0, b: 2 });
    expect(['delivered', 'failed', 'retried'].map((k) => m(`chainpost_stream_webhooks_${k}_total{stream="a"}`))).toEqual([1, 2, 2]);
    expect(['delivered', 'failed', 'retried'].map((k) => m(`chainpost_stream_webhooks_${k}_total{stream="b"}`))).toEqual([1, 0, 0]);
    expect(['delivered', 'failed', 'retried'].map((k) => m(`chainpost_webhooks_${k}_total`))).toEqual([2, 2, 2]);
    expect(m('chainpost_stream_webhooks_queued{stream="b"}')).toBe(2);
    expect(m('chainpost_webhooks_queued')).toBe(2);
    expect(m('chainpost_stream_webhooks_delivered_total{stream="other"}')).toBeUndefined();
  });

  it('shows no stream id unless asked to (CHAINPOST_METRICS_STREAMS): the totals only', () => {
    const c = new DeliveryCounters(10);
    c.track('stream-of-a-tenant');
    outcome(c, 'stream-of-a-tenant', false, false);
    const metrics = new Metrics();
    c.export(metrics, () => 3, false);
    const text = metrics.render();
    expect(text).not.toContain('stream-of-a-tenant');
    expect(text).not.toMatch(/^chainpost_stream_/m);
    const m = scrape(c, { 'stream-of-a-tenant': 3 }, false);
    expect([m('chainpost_webhooks_failed_total'), m('chainpost_webhooks_queued')]).toEqual([1, 3]);
  });

  it('keeps at most the cap of per-stream series: later streams share stream="other", a deleted one frees its place', () => {
    const c = new DeliveryCounters(2);
    for (const id of ['a', 'b', 'c', 'd']) c.track(id);
    for (const id of ['a', 'b', 'c', 'd']) outcome(c, id, true, false);
    let m = scrape(c, { a: 1, c: 3, d: 4 });
    expect(m('chainpost_stream_webhooks_delivered_total{stream="a"}')).toBe(1);
    expect(m('chainpost_stream_webhooks_delivered_total{stream="c"}')).toBeUndefined();
    expect(m('chainpost_stream_webhooks_delivered_total{stream="other"}')).toBe(2);
    expect(m('chainpost_stream_webhooks_queued{stream="other"}')).toBe(7);
    expect(m('chainpost_webhooks_queued')).toBe(8);
    // A deleted stream's series goes, the totals keep its count, and the next new stream takes its place.
    c.forget('a');
    c.forget('c');
    c.track('e');
    outcome(c, 'e', false, false);
    m = scrape(c);
    expect(m('chainpost_stream_webhooks_delivered_total{stream="a"}')).toBeUndefined();
    expect(m('chainpost_stream_webhooks_failed_total{stream="e"}')).toBe(1);
    // stream="other" never goes down: what c counted stays in it.
    expect(m('chainpost_stream_webhooks_delivered_total{stream="other"}')).toBe(2);
    expect(m('chainpost_webhooks_delivered_total')).toBe(4);
    const series = new Metrics();
    c.export(series, () => 0, true);
    expect(series.render().match(/^chainpost_stream_webhooks_delivered_total\{/gm)).toHaveLength(3); // b, e, other
  });

  it("times each delivered webhook from its staging (its id's instant) to the 200, per chain family; a failure is not timed", () => {
    const c = new DeliveryCounters(10);
    const metrics = new Metrics();
    c.export(metrics, () => 0, false);
    c.outcome('a', true, { failures: 0, summary: summary('0x1'), webhookId: uuidV7(T0) }, T0 + 1_500);
    c.outcome('a', true, { failures: 2, summary: summary('0x1'), webhookId: uuidV7(T0) }, T0 + 11 * 60_000);
    c.outcome('b', true, { failures: 0, summary: summary('btc-mainnet'), webhookId: uuidV7(T0) }, T0 + 40);
    c.outcome('b', false, { failures: 0, summary: summary('btc-mainnet'), webhookId: uuidV7(T0) }, T0 + 99_000);
    const text = metrics.render();
    const sample = (series: string) => Number(new RegExp(`^${series.replace(/[{}.+]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(sample('chainpost_webhook_delivery_seconds_bucket{family="evm",le="1"}')).toBe(0);
    expect(sample('chainpost_webhook_delivery_seconds_bucket{family="evm",le="2.5"}')).toBe(1);
    expect(sample('chainpost_webhook_delivery_seconds_bucket{family="evm",le="900"}')).toBe(2);
    expect(sample('chainpost_webhook_delivery_seconds_count{family="evm"}')).toBe(2);
    expect(sample('chainpost_webhook_delivery_seconds_sum{family="evm"}')).toBe(661.5);
    expect(sample('chainpost_webhook_delivery_seconds_bucket{family="bitcoin",le="0.05"}')).toBe(1);
    expect(sample('chainpost_webhook_delivery_seconds_count{family="bitcoin"}')).toBe(1);
  });
});
