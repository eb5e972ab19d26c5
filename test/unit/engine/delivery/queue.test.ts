import { afterEach, describe, expect, it } from 'vitest';
import { KvDeliveryQueue } from '../../../../engine/delivery/kv-queue.js';
import type { Taken } from '../../../../engine/delivery/queue.js';
import { T0, deliveryParts, webhook } from './parts.js';

/**
 * The delivery queue's contract, over the store (a real LMDB store on a temp directory), without a server: per
 * stream, staging order, one webhook out at a time, a failed one aside until its retry while fresh ones go on,
 * counts that move once a unit of work committed, and what a delete, a replay and a termination take out.
 */
const MIN = 60_000;
let parts: ReturnType<typeof deliveryParts>;
afterEach(() => parts.close());

const blockOf = (t: Taken | undefined): number => Number(t?.item.summary.block.number);

/** Settles `taken` in a unit of work of its own. */
function settle(p: typeof parts, taken: Taken, outcome: Parameters<ReturnType<KvDeliveryQueue['begin']>['settle']>[1]): void {
  const w = p.queue.begin();
  p.kv.transact(() => {
    w.settle(taken, outcome);
    w.close();
  });
  w.committed();
}

describe('DeliveryQueue (store implementation)', () => {
  it('hands a stream its webhooks in staging order, each once settled; x-queue-size moves once the unit committed', () => {
    parts = deliveryParts();
    const { queue, kv } = parts;
    expect(queue.size('s1')).toBe(0);
    const w = queue.begin();
    kv.transact(() => {
      expect([1, 2, 3].map((n) => w.enqueue('s1', 0, webhook('s1', n)))).toEqual([1, 2, 3]);
      w.close();
    });
    expect(queue.size('s1')).toBe(0);
    w.committed();
    expect(queue.size('s1')).toBe(3);
    const first = queue.next('s1', T0).taken!;
    expect([blockOf(first), first.item.seq]).toEqual([1, 0]);
    queue.hold(first);
    expect([queue.holding('s1'), queue.held]).toEqual([true, 1]);
    settle(parts, first, { leaves: true });
    queue.release('s1');
    expect([queue.holding('s1'), queue.size('s1')]).toEqual([false, 2]);
    expect(blockOf(queue.next('s1', T0).taken)).toBe(2);
    expect(queue.next('s2', T0)).toEqual({ retryAt: undefined });
  });

  it('keeps a failed webhook aside until its retry is due while fresh ones go on, then hands it first', () => {
    parts = deliveryParts();
    const { queue } = parts;
    parts.enqueue('s1', [1, 2, 3]);
    const first = queue.next('s1', T0).taken!;
    settle(parts, first, { retryAt: T0 + MIN, item: { ...first.item, failures: 1, firstFailedAt: T0, nextAt: T0 + MIN } });
    expect(queue.size('s1')).toBe(3);
    const fresh = queue.next('s1', T0 + 1);
    expect([blockOf(fresh.taken), fresh.retryAt]).toEqual([2, T0 + MIN]);
    settle(parts, fresh.taken!, { leaves: true });
    const due = queue.next('s1', T0 + MIN);
    expect([blockOf(due.taken), due.taken?.item.failures, due.retryAt]).toEqual([1, 1, undefined]);
    settle(parts, due.taken!, { leaves: true });
    expect([blockOf(queue.next('s1', T0 + MIN).taken), queue.size('s1')]).toEqual([3, 1]);
  });

  it('answers the count with each webhook against its cap, and keeps counts and webhooks for a queue opened later', () => {
    parts = deliveryParts({ cap: 3 });
    expect(parts.queue.cap).toBe(3);
    parts.enqueue('s1', [1, 2]);
    const w = parts.queue.begin();
    parts.kv.transact(() => {
      expect(w.enqueue('s1', 0, webhook('s1', 3))).toBe(3);
      w.close();
    });
    w.committed();
    const again = new KvDeliveryQueue(parts.kv);
    expect([again.size('s1'), blockOf(again.next('s1', T0).taken)]).toEqual([3, 1]);
  });

  it('lets a replay take a waiting retry out, never one out for an attempt', () => {
    parts = deliveryParts();
    const { queue, kv } = parts;
    parts.enqueue('s1', [1]);
    const first = queue.next('s1', T0).taken!;
    settle(parts, first, { retryAt: T0 + MIN, item: { ...first.item, failures: 1, nextAt: T0 + MIN } });
    const retry = queue.next('s1', T0 + MIN).taken!;
    queue.hold(retry);
    const replay = (): boolean => {
      const w = queue.begin();
      const dropped = kv.transact(() => {
        const d = w.dropRetry('s1', first.item.seq);
        w.close();
        return d;
      });
      w.committed();
      return dropped;
    };
    expect([replay(), queue.size('s1')]).toEqual([false, 1]);
    queue.release('s1');
    expect([replay(), queue.size('s1'), queue.next('s1', T0 + MIN).taken]).toEqual([true, 0, undefined]);
  });

  it("drops a deleted stream in the delete's unit of work, and drains a terminated one, retries first", () => {
    parts = deliveryParts();
    const { queue, kv } = parts;
    parts.enqueue('s1', [1, 2, 3]);
    const first = queue.next('s1', T0).taken!;
    settle(parts, first, { retryAt: T0 + MIN, item: { ...first.item, failures: 1, nextAt: T0 + MIN } });
    const w = queue.begin();
    const drained = kv.transact(() => {
      const items = w.drain('s1');
      w.close();
      return items;
    });
    w.committed();
    expect(drained.map((i) => [Number(i.summary.block.number), i.failures])).toEqual([
      [1, 1],
      [2, 0],
      [3, 0],
    ]);
    expect([queue.size('s1'), queue.next('s1', T0 + MIN).taken]).toEqual([0, undefined]);

    parts.enqueue('s2', [1, 2]);
    const forget = kv.transact(() => queue.drop('s2'));
    forget();
    expect([queue.size('s2'), queue.next('s2', T0).taken, kv.get('queueMeta', 's2')]).toEqual([0, undefined, undefined]);
  });
});
