import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLUSH_MAX } from '../../../../engine/delivery/attempt-recorder.js';
import type { Dispatcher, DispatcherOptions } from '../../../../engine/delivery/dispatcher.js';
import type { QueueMeta } from '../../../../engine/delivery/kv-queue.js';
import { stageInChunks } from '../../../../engine/delivery/stage-chunks.js';
import type { Kv } from '../../../../engine/ports.js';
import { evm } from '../../../../engine/evm/index.js';
import type { Store } from '../../../../storage/env.js';
import { startReceiver } from '../../../receiver.js';
import { evmDefinition as definition } from '../../../kit/evm-stream.js';
import { deliveryRig } from './rig.js';

/**
 * A block's webhooks are staged a chunk to a write transaction (CHAINPOST_STAGE_CHUNK: one transaction's callback holds the
 * event loop). Over a real store, a real dispatcher and a real receiver: each chunk is its own transaction, a
 * chunk's webhooks leave once it committed, one stream's keep their order across chunks, and a chunk that fails
 * leaves the ones before it queued and the ones after it unstaged. The outcomes coming back are committed at most
 * FLUSH_MAX to a transaction, for the same reason.
 */
const T0 = Date.parse('2026-11-25T00:00:00Z');
const payload = (n: number) => ({
  confirmed: false,
  chainId: '0x1',
  abi: [],
  retries: 0,
  block: { number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: '1795000000' },
  logs: [],
  txs: [],
});

/** A real store, dispatcher and receiver for the enclosing describe; `wrap` gives the store the dispatcher writes through. */
function rig(opts: Partial<DispatcherOptions>, wrap?: (store: Store) => Kv) {
  const base = deliveryRig(T0, opts, wrap);
  const r = {
    ...base,
    streams: evm.resources({ kv: base.kv, clock: base.clock, dispatcher: base.dispatcher }),
    rx: undefined as unknown as Awaited<ReturnType<typeof startReceiver>>,
  };
  beforeAll(async () => {
    r.rx = await startReceiver();
  });
  afterAll(async () => {
    await base.close();
    await r.rx.close();
  });
  return r;
}

describe('staging in chunks', () => {
  // Write transactions in which webhooks were staged, by the number staged in each.
  let staged: number[] = [];
  const stages: number[] = [];
  const r = rig({ stageChunk: 2 }, (store) => {
    const kv: Kv = Object.create(store);
    kv.transactAsync = (fn) =>
      store.transactAsync(() => {
        const before = stages.length;
        const out = fn();
        if (stages.length > before) staged.push(stages.splice(before).reduce((a, b) => a + b, 0));
        return out;
      });
    return kv;
  });
  const { store, kv, dispatcher, streams } = r;
  const stage = dispatcher.stage.bind(dispatcher);
  dispatcher.stage = (items) => (stages.push(items.length), stage(items));
  const make = async (tag: string): Promise<string> =>
    String((await streams.create('t_chunks', definition(`${r.rx.url}?${tag}`, tag), undefined)).id);
  const arrived = (id: string): number[] =>
    r.rx.received.filter((w) => !w.test && w.body.streamId === id).map((w) => Number(w.body.block.number));
  const queued = (id: string): number => store.get<QueueMeta>('queueMeta', id)?.queued ?? 0;

  it('commits enqueueBatch in transactions of stageChunk webhooks, each stream in order', async () => {
    const [a, b] = [await make('a'), await make('b')];
    staged = [];
    const items = [1, 2, 3, 4, 5].flatMap((n) => [
      { streamId: a, payload: payload(n) },
      { streamId: b, payload: payload(n) },
    ]);
    const results = await dispatcher.enqueueBatch(items);
    expect(staged).toEqual([2, 2, 2, 2, 2]);
    expect(results).toEqual(Array(10).fill('queued'));
    await dispatcher.settled();
    expect([arrived(a), arrived(b)]).toEqual([
      [1, 2, 3, 4, 5],
      [1, 2, 3, 4, 5],
    ]);
  });

  it('stages nothing for no webhooks', async () => {
    staged = [];
    expect(await stageInChunks(kv, dispatcher, [], 2)).toEqual([]);
    expect(staged).toEqual([]);
  });

  it('keeps the chunks committed before one that failed, and stages nothing after it', async () => {
    const c = await make('c');
    staged = [];
    const items = await dispatcher.prepare([10, 11, 12, 13, 14].map((n) => ({ streamId: c, payload: payload(n) })));
    let chunks = 0;
    // The second chunk's transaction fails (a full disk, say) while it stages.
    const failingDisk: Pick<Dispatcher, 'stage'> = {
      stage: (chunk) => {
        if (++chunks === 2) throw new Error('the disk is full');
        return dispatcher.stage(chunk);
      },
    };
    await expect(stageInChunks(kv, failingDisk, items, 2)).rejects.toThrow('the disk is full');
    expect(chunks).toBe(2);
    await dispatcher.settled();
    expect(arrived(c)).toEqual([10, 11]);
    expect(queued(c)).toBe(0);
    // The rest, staged again, follows in order.
    expect(await stageInChunks(kv, dispatcher, items.slice(2), 2)).toEqual(['queued', 'queued', 'queued']);
    await dispatcher.settled();
    expect(arrived(c)).toEqual([10, 11, 12, 13, 14]);
    expect(staged).toEqual([2, 2, 1]);
  });
});

describe("deliveries past a turn's room and the receiver's slots", () => {
  // 40 streams to one receiver with 2 connections and a slow answer: most wait in line for a slot, and each
  // chunk's 20 committed streams are more than a turn's 32 starts once their second webhooks come.
  const r = rig({ stageChunk: 20, maxInFlightPerOrigin: 2 });
  const { dispatcher, streams } = r;

  it('delivers every webhook once, each stream in order, and settles only once all are answered', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(String((await streams.create('t_turns', definition(r.rx.url, `s${i}`), undefined)).id));
    r.rx.state.delay = (w) => (w.test ? 0 : 2);
    try {
      await dispatcher.enqueueBatch([1, 2, 3].flatMap((n) => ids.map((streamId) => ({ streamId, payload: payload(n) }))));
      await dispatcher.settled();
      const sent = r.rx.received.filter((w) => !w.test);
      expect(sent).toHaveLength(120);
      for (const id of ids) expect(sent.filter((w) => w.body.streamId === id).map((w) => Number(w.body.block.number))).toEqual([1, 2, 3]);
    } finally {
      r.rx.state.delay = () => 0;
    }
  }, 30_000);
});

describe('delivery outcomes coming back together', () => {
  // Per write transaction, the delivery-log rows it wrote: one per delivered webhook's outcome.
  const logsPerTxn: number[] = [];
  let inTxn: number | undefined;
  const count = 2 * FLUSH_MAX + 50;
  // Every one in flight at once: one tenant's, to one receiver that has not answered before.
  const r = rig(
    { stageChunk: count, maxInFlightPerOrigin: count, maxInFlight: count, maxInFlightPerTenant: count, maxInFlightUnanswered: count },
    (store) => {
      const kv: Kv = Object.create(store);
      kv.transactAsync = (fn) =>
        store.transactAsync(() => {
          inTxn = 0;
          try {
            return fn();
          } finally {
            if (inTxn > 0) logsPerTxn.push(inTxn);
            inTxn = undefined;
          }
        });
      kv.put = (table, key, value) => {
        if (table === 'deliveryLogs' && inTxn !== undefined) inTxn++;
        store.put(table, key, value);
      };
      return kv;
    },
  );
  const { dispatcher, streams } = r;

  it(`are committed at most ${FLUSH_MAX} to a transaction, all of them, still grouped`, async () => {
    // Created side by side: each create waits for its test webhook, one after another that took seconds.
    const made = await Promise.all(
      Array.from({ length: count }, (_, i) => streams.create('t_flush', definition(r.rx.url, `o${i}`), undefined)),
    );
    const ids = made.map((s) => String(s.id));
    // All answered at one instant, once every one of them arrived: the outcomes wait for their flush side by side.
    let release = (): void => {};
    const together = new Promise<void>((resolve) => (release = resolve));
    r.rx.state.delay = (w) => {
      if (w.test) return 0;
      if (r.rx.webhooks().length === count) release();
      return together;
    };
    try {
      await dispatcher.enqueueBatch(ids.map((streamId) => ({ streamId, payload: payload(1) })));
      await dispatcher.settled();
    } finally {
      r.rx.state.delay = () => 0;
    }
    expect(r.rx.received.filter((w) => !w.test)).toHaveLength(count);
    expect(logsPerTxn.reduce((a, b) => a + b, 0)).toBe(count);
    expect(Math.max(...logsPerTxn)).toBe(FLUSH_MAX);
  }, 30_000);
});
