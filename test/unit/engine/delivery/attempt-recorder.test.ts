import { afterEach, describe, expect, it } from 'vitest';
import { FLUSH_MAX, type Outcome } from '../../../../engine/delivery/attempt-recorder.js';
import { statsOf } from '../../../../engine/delivery/attempt-records.js';
import { payloadOf } from '../../../../engine/delivery/body.js';
import { countOf, historyRange, logRange, type StoredHistory } from '../../../../engine/delivery/records.js';
import type { Kv } from '../../../../engine/ports.js';
import { T0, deliveryParts, stream } from './parts.js';

/**
 * Recording attempts without a server: an outcome settles its webhook in the queue and writes its delivery log, a
 * failure's history record and the stats; outcomes that come together are committed together, FLUSH_MAX at most
 * to a transaction. Over a temp LMDB store, the service clock moved by hand.
 */
const MIN = 60_000;
const U = 'https://receiver.example/hook';
let parts: ReturnType<typeof deliveryParts>;
afterEach(() => parts.close());

/** The outcome of an attempt at the stream's next webhook due now. */
function attempt(id: string, res: Outcome['res']): Outcome {
  const s = parts.streams.get('A', id)!;
  const taken = parts.queue.next(id, parts.clock.now()).taken!;
  return { s, taken, url: s.webhookUrl, res, now: parts.clock.now() };
}

const history = (): StoredHistory[] => parts.kv.range<StoredHistory>('history').map((e) => e.value);
const stats = (of: string) => statsOf(parts.kv, of, '');

describe('AttemptRecorder', () => {
  it('lets a delivered webhook leave, with a success log and the stats', async () => {
    parts = deliveryParts();
    parts.add(stream('A', 'a1', U));
    parts.enqueue('a1', [1, 2]);
    await parts.recorder.record(attempt('a1', { delivered: true, status: 200 }));
    expect(parts.queue.size('a1')).toBe(1);
    expect(Number(parts.queue.next('a1', T0).taken?.item.summary.block.number)).toBe(2);
    expect([countOf(parts.kv, logRange('A', 0, 'success')), countOf(parts.kv, logRange('A', 0, 'failed')), history().length]).toEqual([
      1, 0, 0,
    ]);
    expect(stats('A/a1')).toMatchObject({ totalWebhooksDelivered: 1, totalWebhooksFailed: 0 });
    expect(stats('A')).toMatchObject({ totalWebhooksDelivered: 1 });
  });

  it('keeps a failed webhook for its retry with a history record of the bytes sent, which its retries rewrite in place until one delivers it', async () => {
    parts = deliveryParts();
    parts.add(stream('A', 'a1', U));
    parts.enqueue('a1', [1]);
    await parts.recorder.record(attempt('a1', { delivered: false, status: 500, error: 'the receiver answered HTTP 500' }));
    const [first] = history();
    expect(first).toMatchObject({
      streamId: 'a1',
      webhookUrl: U,
      errorMessage: 'the receiver answered HTTP 500',
      tinyPayload: { retries: 0 },
      seq: 0,
    });
    expect(payloadOf(first!.body)).toMatchObject({ retries: 0, block: { number: '1' } });
    expect(parts.queue.size('a1')).toBe(1);
    expect(parts.queue.next('a1', T0 + MIN - 1)).toEqual({ retryAt: T0 + MIN });

    await parts.clock.advance(MIN);
    const retry = attempt('a1', { delivered: false, error: 'no answer within 10 s' });
    expect([retry.taken.item.failures, retry.taken.item.historyId]).toEqual([1, first!.id]);
    await parts.recorder.record(retry);
    const [again] = history();
    expect([history().length, again!.id, again!.tinyPayload.retries, payloadOf(again!.body)['retries']]).toEqual([1, first!.id, 1, 1]);

    await parts.clock.advance(10 * MIN);
    await parts.recorder.record(attempt('a1', { delivered: true, status: 200 }));
    expect([parts.queue.size('a1'), history()[0]!.deliveredAt]).toEqual([0, new Date(T0 + 11 * MIN).toISOString()]);
    expect(stats('A/a1')).toMatchObject({ totalWebhooksDelivered: 1, totalWebhooksFailed: 2 });
  });

  it('records nothing of an attempt whose webhook left meanwhile (its stream was deleted)', async () => {
    parts = deliveryParts();
    parts.add(stream('A', 'a1', U));
    parts.enqueue('a1', [1]);
    const o = attempt('a1', { delivered: false, error: 'no answer' });
    parts.kv.transact(() => parts.queue.drop('a1'))();
    await parts.recorder.record(o);
    expect([
      history().length,
      countOf(parts.kv, logRange('A', 0, 'failed')),
      countOf(parts.kv, historyRange('A', 0)),
      parts.kv.range('retries').length,
    ]).toEqual([0, 0, 0, 0]);
  });

  it(`commits outcomes that come together in one transaction, ${FLUSH_MAX} at most`, async () => {
    const committed: number[] = [];
    parts = deliveryParts({
      wrap: (store) => {
        const kv: Kv = Object.create(store);
        kv.transactAsync = (fn) =>
          store.transactAsync(() => {
            const before = countOf(store, logRange('A', 0, 'success'));
            const out = fn();
            committed.push(countOf(store, logRange('A', 0, 'success')) - before);
            return out;
          });
        return kv;
      },
    });
    const ids = Array.from({ length: 2 * FLUSH_MAX + 1 }, (_, i) => `s${i}`);
    for (const id of ids) {
      parts.add(stream('A', id, U));
      parts.enqueue(id, [1]);
    }
    await Promise.all(ids.map((id) => parts.recorder.record(attempt(id, { delivered: true, status: 200 }))));
    expect(committed).toEqual([FLUSH_MAX, FLUSH_MAX, 1]);
    expect(ids.every((id) => parts.queue.size(id) === 0)).toBe(true);
  });
});
