import { afterEach, describe, expect, it } from 'vitest';
import { Alerts } from '../../../../engine/delivery/alerts.js';
import { countOf, historyRange } from '../../../../engine/delivery/records.js';
import type { DeliveryStream } from '../../../../engine/delivery/stream-port.js';
import type { Batch } from '../../../../engine/delivery/unit.js';
import { T0, deliveryParts, stream } from './parts.js';

/**
 * A stream's health without a server: the success rate per tenant and webhook URL, the queue cap, 24 hours in
 * error → terminated, and the alerts; over a temp LMDB store, streams and rates in memory, the service clock moved
 * by hand.
 */
const HOUR = 3_600_000;
const U = 'https://receiver.example/hook';
let parts: ReturnType<typeof deliveryParts>;
afterEach(() => parts.close());

/** One attempt's outcome for `tenant`'s `url`, in a unit of work of its own; answers the streams it put in error. */
function attempt(tenant: string, url: string, delivered: boolean): DeliveryStream[] {
  const { units, kv, health, clock } = parts;
  const unit = units.begin();
  const entered = kv.transact(() => {
    const e = health.attempted(unit, tenant, url, delivered, clock.now());
    unit.close(clock.now());
    return e;
  });
  unit.committed();
  return entered;
}

/** `fn` inside a unit of work of its own, committed. */
function inUnit<T>(fn: (unit: Batch) => T): T {
  const { units, kv, clock } = parts;
  const unit = units.begin();
  const out = kv.transact(() => {
    const r = fn(unit);
    unit.close(clock.now());
    return r;
  });
  unit.committed();
  return out;
}

const statusOf = (tenant: string, id: string) => parts.streams.get(tenant, id)?.status;

describe('StreamHealth', () => {
  it('puts every active stream of the tenant using a URL in error at the 31st failure in a row, and no other', () => {
    parts = deliveryParts();
    parts.add(stream('A', 'a1', U));
    parts.add(stream('A', 'a2', U, { status: 'paused' }));
    parts.add(stream('A', 'a3', `${U}/other`));
    parts.add(stream('B', 'b1', U));
    for (let i = 0; i < 30; i++) expect(attempt('A', U, false)).toEqual([]);
    expect(parts.rateRows.get(`A/${U}`)).toBe(70);
    const entered = attempt('A', U, false);
    expect(entered.map((s) => s.id)).toEqual(['a1']);
    expect(parts.rateRows.get(`A/${U}`)).toBe(69);
    expect(['a1', 'a2', 'a3'].map((id) => statusOf('A', id))).toEqual(['error', 'paused', 'active']);
    expect(statusOf('B', 'b1')).toBe('active');
    expect(parts.streams.get('A', 'a1')).toMatchObject({
      errorSince: T0,
      statusMessage: expect.stringContaining(`the success rate of ${U} fell to 69%, below 70%`),
    });
  });

  it('adds a point per delivered webhook up to 100, and restarts a URL at 100 when its stream is set active from error', () => {
    parts = deliveryParts();
    parts.add(stream('A', 'a1', U));
    attempt('A', U, false);
    attempt('A', U, false);
    attempt('A', U, true);
    expect(parts.rateRows.get(`A/${U}`)).toBe(99);
    for (let i = 0; i < 3; i++) attempt('A', U, true);
    expect(parts.rateRows.get(`A/${U}`)).toBe(100);
    attempt('A', U, false);
    const unit = parts.units.begin();
    parts.kv.transact(() => {
      parts.health.restartRate(unit, parts.streams.get('A', 'a1')!);
      unit.close(T0);
    });
    unit.committed();
    expect(parts.rateRows.get(`A/${U}`)).toBe(100);
  });

  it("puts a stream in error when its undelivered webhooks reach the queue's cap", () => {
    parts = deliveryParts({ cap: 3 });
    const s = parts.add(stream('A', 'a1', U));
    expect(inUnit((unit) => parts.health.queued(unit, s, 2, T0))).toBe(false);
    expect(inUnit((unit) => parts.health.queued(unit, s, 3, T0))).toBe(true);
    expect(parts.streams.get('A', 'a1')).toMatchObject({
      status: 'error',
      statusMessage: expect.stringContaining('the queue of undelivered webhooks reached 3'),
    });
  });

  it('terminates a stream 24 hours in error, moving what waited to history, and alerts on both; one set active before is not', async () => {
    parts = deliveryParts({ cap: 2, alertEmail: 'ops@example.com' });
    const { health, clock, queue } = parts;
    const ended = parts.add(stream('A', 'a1', U, { ownerEmail: 'owner@example.com' }));
    const kept = parts.add(stream('A', 'a2', U));
    parts.enqueue('a1', [1]);
    parts.enqueue('a2', [1]);
    for (const s of [ended, kept]) expect(inUnit((unit) => health.queued(unit, s, 2, T0))).toBe(true);
    health.afterError([parts.streams.get('A', 'a1')!, parts.streams.get('A', 'a2')!]);
    await clock.advance(HOUR);
    parts.streams.put({ ...parts.streams.get('A', 'a2')!, status: 'active' });
    health.resumed('a2', 'error');
    await clock.advance(23 * HOUR - 1);
    expect(statusOf('A', 'a1')).toBe('error');
    await clock.advance(1);
    await new Promise((resolve) => setImmediate(resolve));
    await parts.health.alerts.flush();
    expect(parts.streams.get('A', 'a1')).toMatchObject({
      status: 'terminated',
      statusMessage: expect.stringContaining('stayed in error for 24 hours'),
    });
    expect(statusOf('A', 'a2')).toBe('active');
    expect([queue.size('a1'), queue.size('a2')]).toEqual([0, 1]);
    expect(countOf(parts.kv, historyRange('A', 0))).toBe(1);
    // (The two entered error at the same instant: in either order.)
    const sent = parts.mails.map((m) => [m.to, m.subject]);
    expect(sent.slice(0, 2).sort()).toEqual([
      ['ops@example.com', 'chainpost: stream a2 is in error'],
      ['owner@example.com', 'chainpost: stream a1 is in error'],
    ]);
    expect(sent.slice(2)).toEqual([['owner@example.com', 'chainpost: stream a1 was terminated']]);
  });

  it('keeps an alert in the outbox when it has no recipient, and no longer waiting', async () => {
    parts = deliveryParts();
    inUnit((unit) =>
      parts.alerts.decided(unit.partition(stream('A', 'a1', U)), { id: 'a1' }, 'chainpost: stream a1 is in error', 'why', T0),
    );
    await parts.alerts.flush();
    expect(parts.mails).toEqual([]);
    expect(parts.kv.range('outbox').map((e) => e.value)).toMatchObject([
      { to: null, subject: 'chainpost: stream a1 is in error', reason: expect.stringContaining('no recipient') },
    ]);
    expect(parts.kv.range('alerts')).toEqual([]);
  });

  it('e-mails at the next start an alert decided before a crash, once, and leaves one of a partition not owned waiting', async () => {
    parts = deliveryParts({ cap: 1, alertEmail: 'ops@example.com' });
    const s = parts.add(stream('A', 'a1', U));
    parts.enqueue('a1', [1]);
    // Decided and committed; the process dies before it e-mails (afterError never runs).
    expect(inUnit((unit) => parts.health.queued(unit, s, 1, T0))).toBe(true);
    expect(parts.kv.range('alerts')).toHaveLength(1);
    expect(parts.mails).toEqual([]);
    // The next process: a node owning partition 1 only sends nothing of partition 0; its owner sends it, once.
    const mails: Array<{ subject: string }> = [];
    const restarted = (owns: (p: number) => boolean) =>
      new Alerts(parts.units, parts.clock, { send: async (m) => void mails.push(m) }, parts.log, 'ops@example.com', owns);
    await restarted((p) => p === 1).flush();
    expect(mails).toEqual([]);
    const owner = restarted((p) => p === 0);
    await Promise.all([owner.flush(), owner.flush()]);
    expect(mails.map((m) => m.subject)).toEqual(['chainpost: stream a1 is in error']);
    expect(parts.kv.range('alerts')).toEqual([]);
    await owner.flush();
    expect(mails).toHaveLength(1);
  });
});
