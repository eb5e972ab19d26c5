import xxhash from 'xxhash-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../../../../engine/cluster/partitions.js';
import type { DeliveryGate } from '../../../../engine/delivery/dispatcher.js';
import { evm } from '../../../../engine/evm/index.js';
import { evmDefinition } from '../../../kit/evm-stream.js';
import { startReceiver } from '../../../receiver.js';
import { blockPayload } from './parts.js';
import { deliveryRig } from './rig.js';

/**
 * A cluster node's dispatcher delivers the partitions it owns only (DeliveryGate): adopting one reads its streams
 * from the store and resumes them as a restart does, dropping one stops its timers, a hand-over waits for the
 * attempts under way.
 */

const T0 = Date.parse('2026-12-01T00:00:00Z');
const T1 = 't_1111111111111111';
const SEC = 1_000;

const payload = blockPayload;

/** A gate the test moves: the partitions owned, and those of them writable. */
const gate = () => {
  const owned = new Set<number>();
  const unwritable = new Set<number>();
  const g: DeliveryGate = { owns: (p) => owned.has(p), writable: (p) => owned.has(p) && !unwritable.has(p) };
  return { g, owned, unwritable };
};

describe('delivery on the partitions a node owns', () => {
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());

  it('sends a partition’s webhooks only once it is adopted, and holds them while its log is not writable', async () => {
    const { h32 } = await xxhash();
    const part = (tenant: string, url: string) => partitionOf(h32, tenant, url);
    const urlA = `${rx.url}?gate-a`;
    const urlB = ['b', 'c', 'd', 'e', 'f'].map((q) => `${rx.url}?gate-${q}`).find((u) => part(T1, u) !== part(T1, urlA))!;
    const [pa, pb] = [part(T1, urlA), part(T1, urlB)];
    const { g, owned, unwritable } = gate();
    const rig = deliveryRig(T0, { partitionOf: part }, undefined, g);
    try {
      const family = evm.resources({ kv: rig.store, clock: rig.clock, dispatcher: rig.dispatcher });
      const a = String((await family.create(T1, evmDefinition(urlA, 'a'), undefined)).id);
      const b = String((await family.create(T1, evmDefinition(urlB, 'b'), undefined)).id);
      const got = (id: string) => rx.webhooks().filter((w) => w.body.streamId === id).length;
      owned.add(pa);
      rig.dispatcher.start();
      await rig.dispatcher.enqueueBatch([a, b].map((streamId) => ({ streamId, payload: payload(1) })));
      await rig.dispatcher.settled();
      expect([got(a), got(b)]).toEqual([1, 0]);

      // Owned, its log not writable (the bus down): nothing starts until it is again.
      owned.add(pb);
      unwritable.add(pb);
      rig.dispatcher.adopt(pb);
      await rig.dispatcher.settled();
      expect(got(b)).toBe(0);
      unwritable.delete(pb);
      rig.dispatcher.resume(pb);
      await rig.dispatcher.settled();
      expect([got(a), got(b)]).toEqual([1, 1]);
      expect(rig.dispatcher.queuedIn(new Set([pa, pb]))).toEqual(new Map());
    } finally {
      await rig.close();
    }
  });

  it('rebuilds a dropped partition’s retries at their instants when it is adopted again, and hands over once the attempts under way ended', async () => {
    const { h32 } = await xxhash();
    const part = (tenant: string, url: string) => partitionOf(h32, tenant, url);
    const url = `${rx.url}?gate-retry`;
    const p = part(T1, url);
    const { g, owned } = gate();
    owned.add(p);
    const rig = deliveryRig(T0, { partitionOf: part }, undefined, g);
    try {
      const family = evm.resources({ kv: rig.store, clock: rig.clock, dispatcher: rig.dispatcher });
      const id = String((await family.create(T1, evmDefinition(url, 'r'), undefined)).id);
      const got = () => rx.webhooks().filter((w) => w.body.streamId === id);
      rig.dispatcher.start();
      rx.state.answer = (r) => (r.body.streamId === id && r.body.retries === 0 ? 500 : 200);
      await rig.dispatcher.enqueueBatch([{ streamId: id, payload: payload(7) }]);
      await rig.dispatcher.settled();
      expect(got().map((w) => w.body.retries)).toEqual([0]);
      expect(rig.dispatcher.queuedIn(new Set([p]))).toEqual(new Map([[p, 1]]));

      // Dropped: its retry's timer goes with it; past its instant nothing is sent.
      owned.delete(p);
      rig.dispatcher.drop(p);
      await rig.clock.advance(90 * SEC);
      await rig.dispatcher.settled();
      expect(got()).toHaveLength(1);

      // Adopted again: the retry, due a minute after the failure, is sent at once (its instant has passed).
      owned.add(p);
      rig.dispatcher.adopt(p);
      await rig.dispatcher.settled();
      expect(got().map((w) => w.body.retries)).toEqual([0, 1]);

      // A hand-over: the attempt under way ends (its outcome committed) before it resolves, and none starts after.
      rx.state.answer = () => 200;
      let answer!: () => void;
      rx.state.delay = (r) => (r.body.streamId === id ? new Promise<void>((resolve) => (answer = resolve)) : 0);
      await rig.dispatcher.enqueueBatch([
        { streamId: id, payload: payload(8) },
        { streamId: id, payload: payload(9) },
      ]);
      const handed = rig.dispatcher.handOver(p);
      let done = false;
      void handed.then(() => (done = true));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(done).toBe(false);
      rx.state.delay = () => 0;
      answer();
      await handed;
      await rig.dispatcher.settled();
      expect(got().map((w) => w.body.block.number)).toEqual(['7', '7', '8']);
      expect(rig.dispatcher.queuedIn(new Set([p]))).toEqual(new Map([[p, 1]]));
    } finally {
      rx.state.answer = () => 200;
      await rig.close();
    }
  });
});
