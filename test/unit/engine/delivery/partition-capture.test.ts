import { rmSync } from 'node:fs';
import xxhash from 'xxhash-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PendingUnit, type RowWrite, applyPartitionChange, partitionOf, takeBack } from '../../../../engine/cluster/partitions.js';
import { DELIVERY_TABLES, DeliveryCapture } from '../../../../engine/cluster/delivery-capture.js';
import { PartitionLost, UnitsTakenBack } from '../../../../engine/cluster/partition-log.js';
import type { QueueMeta } from '../../../../engine/delivery/kv-queue.js';
import type { StoredLog } from '../../../../engine/delivery/records.js';
import { evm } from '../../../../engine/evm/index.js';
import { StreamsService } from '../../../../engine/streams/service.js';
import { unpack } from '../../../../storage/codec.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';
import { evmDefinition } from '../../../kit/evm-stream.js';
import { startReceiver } from '../../../receiver.js';
import { blockPayload } from './parts.js';
import { deliveryRig } from './rig.js';

/**
 * Delivery's rows per partition (engine/delivery/capture.ts): every unit of work's writes to the delivery tables,
 * captured as one change per partition with the rows' before-images, are enough to build another store's delivery
 * tables, each change's rows are its partition's, and the last units taken back leave the rows they replaced.
 */

const T0 = Date.parse('2026-11-23T00:00:00Z');
const MIN = 60_000;
const DAY = 86_400_000;
const T1 = 't_1111111111111111';
const T2 = 't_2222222222222222';

const payload = blockPayload;

/** A store's delivery tables, every row's bytes as hex. */
function deliveryRows(store: Store): Record<string, Array<[string, string]>> {
  const out: Record<string, Array<[string, string]>> = {};
  for (const table of DELIVERY_TABLES)
    out[table] = store.keys(table, {}).map((key) => [key, Buffer.from(store.getRaw(table, key)!).toString('hex')]);
  return out;
}

describe('delivery units captured per partition', () => {
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());

  it('rebuild the delivery tables byte for byte on another store, each change within its partition, and take back to the rows they replaced', async () => {
    const { h32 } = await xxhash();
    const units: PendingUnit[] = [];
    const part = (tenant: string, url: string) => partitionOf(h32, tenant, url);
    const rig = deliveryRig(T0, { partitionOf: part, capture: (kv) => new DeliveryCapture(kv, part, (u) => void units.push(...u)) });
    const { store, clock, dispatcher } = rig;
    const second = openStore(tempDir());
    try {
      const service = new StreamsService({ kv: store, clock, dispatcher });
      const family = evm.resources({ kv: store, clock, dispatcher });
      const make = async (tenant: string, tag: string, url: string) =>
        String((await family.create(tenant, evmDefinition(url, tag), undefined)).id);
      const send = async (id: string, ns: number[]) => {
        await dispatcher.enqueueBatch(ns.map((n) => ({ streamId: id, payload: payload(n) })));
        await dispatcher.settled();
      };
      const statusOf = (tenant: string, id: string) => family.get(tenant, id).status;
      const failing = new Set<string>();
      rx.state.answer = (r) => (failing.has(r.body.streamId) ? 500 : 200);

      // A URL change that moves a stream to another partition.
      const from = `${rx.url}?moved`;
      const to = ['a', 'b', 'c', 'd', 'e', 'f']
        .map((q) => `${rx.url}?${q}`)
        .find((u) => partitionOf(h32, T1, u) !== partitionOf(h32, T1, from))!;
      const ok = await make(T1, 'ok', `${rx.url}?ok`);
      // In another partition than `moved`'s first: its history and moved's are in two ranges, whatever the port (a
      // fixed URL shared moved's partition for about one receiver port in 64).
      const downUrl = ['down', 'down-b', 'down-c', 'down-d']
        .map((q) => `${rx.url}?${q}`)
        .find((u) => partitionOf(h32, T1, u) !== partitionOf(h32, T1, from))!;
      const down = await make(T1, 'down', downUrl);
      const replayed = await make(T2, 'replayed', `${rx.url}?replayed`);
      const deleted = await make(T2, 'deleted', `${rx.url}?deleted`);
      const moved = await make(T1, 'moved', from);
      for (const id of [down, replayed, deleted, moved]) failing.add(id);

      await send(ok, [1, 2, 3]);
      await send(
        down,
        Array.from({ length: 31 }, (_, i) => i),
      );
      await send(replayed, [1]);
      await send(deleted, [1, 2]);
      await send(moved, [1, 2]);
      // The 31st failure in a row put it in error (70 %); set active, its URL starts again at 100 and 31 retries fail.
      expect(statusOf(T1, down)).toBe('error');
      await family.setStatus(T1, down, 'active');
      await clock.advance(MIN);
      await dispatcher.settled();
      expect(statusOf(T1, down)).toBe('error');

      // A replay delivers: its record says so and its retry leaves.
      failing.delete(replayed);
      const record = service.history(T2, 10, null, true).result.find((h) => h.streamId === replayed)!;
      expect((await service.replay(T2, record.id!)).delivered).toBe(true);
      expect(dispatcher.queueSize(replayed)).toBe(0);

      await family.remove(T2, deleted);

      // Its waiting retries stay in the partition they were staged in, sent to the new URL; then it moves.
      await family.update(T1, moved, { webhookUrl: to });
      failing.delete(moved);
      await clock.advance(10 * MIN);
      await dispatcher.settled();
      expect(dispatcher.queueSize(moved)).toBe(0);
      await send(moved, [3]);
      // Its retries were logged in its first partition (sent to the new URL), its next webhook in the new one.
      const delivered = (url: string) => {
        const prefix = `${T1}/#${String(partitionOf(h32, T1, url)).padStart(2, '0')}/s/`;
        return store
          .range<StoredLog>('deliveryLogs', { start: prefix, end: `${prefix}\uffff` })
          .filter((e) => e.value[0] === moved)
          .map((e) => e.value[2]);
      };
      expect([delivered(from), delivered(to)]).toEqual([[to, to], [to]]);

      // 24 hours in error: terminated, its queue to history; a day on, the success logs expire.
      await clock.advance(DAY);
      await dispatcher.settled();
      expect(statusOf(T1, down)).toBe('terminated');
      await clock.advance(DAY);
      expect(await dispatcher.purge()).toBeGreaterThan(0);

      const partitions = new Set(units.map((u) => u.change.partition));
      expect(partitions.size).toBeGreaterThanOrEqual(3);

      // Applied in order, each row checked against its partition: by its key, its tenant and URL, or its stream's queue.
      const queueIn = new Map<string, number>();
      const owner = ([table, key]: RowWrite): number => {
        if (table === 'rates') return partitionOf(h32, key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1));
        if (table === 'queue' || table === 'retries' || table === 'queueMeta') return queueIn.get(key.split('/')[0]!)!;
        return Number(/(?:^|\/)#(\d\d)(\/|$)/.exec(key)![1]);
      };
      const TAKEN_BACK = 6;
      let before: ReturnType<typeof deliveryRows> | undefined;
      for (const [i, u] of units.entries()) {
        if (i === units.length - TAKEN_BACK) before = deliveryRows(second);
        for (const [table, key, bytes] of [...u.before, ...u.change.rows])
          if (table === 'queueMeta' && bytes !== null) queueIn.set(key, unpack<QueueMeta>(bytes).partition ?? 0);
        for (const row of u.change.rows) expect(owner(row), `${row[0]} ${row[1]}`).toBe(u.change.partition);
        second.transact(() => applyPartitionChange(second, u.change));
      }
      expect(deliveryRows(second)).toEqual(deliveryRows(store));

      const metaPartitions = units.flatMap((u) =>
        u.change.rows
          .filter(([t, k, b]) => t === 'queueMeta' && k === moved && b !== null)
          .map(([, , b]) => unpack<QueueMeta>(b!).partition),
      );
      expect(metaPartitions[0]).toBe(partitionOf(h32, T1, from));
      expect(metaPartitions.at(-1)).toBe(partitionOf(h32, T1, to));

      second.transact(() => {
        for (const u of units.slice(-TAKEN_BACK).reverse()) takeBack(second, u);
      });
      expect(deliveryRows(second)).toEqual(before);

      // A tenant's answers sum its partitions.
      const stats = (id?: string) => service.stats(T1, id).totalWebhooksDelivered;
      expect(stats()).toBe(stats(ok) + stats(down) + stats(moved));
      expect(stats(moved)).toBe(3);
      // Its history merged from its partitions' ranges, newest first, page by page.
      const records = store.range<{ id: string }>('history', { start: `${T1}/`, end: `${T1}/\uffff` });
      expect(new Set(records.map((e) => e.key.split('/')[1])).size).toBeGreaterThan(1);
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { result: Array<{ id?: string }>; total: number; cursor?: string } = service.history(T1, 7, cursor, true);
        expect(page.total).toBe(records.length);
        ids.push(...page.result.map((h) => h.id!));
        cursor = page.cursor ?? null;
      } while (cursor !== null);
      expect(ids).toEqual(
        records
          .map((e) => e.value.id)
          .sort()
          .reverse(),
      );
    } finally {
      await rig.close();
      await second.close();
      rmSync(second.path, { recursive: true, force: true });
      rx.state.answer = () => 200;
    }
  });

  it('tells units in the order they were sealed, once each committed, leaving out a failed one', async () => {
    const store = openStore(tempDir());
    try {
      const told: string[] = [];
      // A rate per URL: the unit that wrote it is told by its key.
      const capture = new DeliveryCapture(
        store,
        () => 0,
        (u) => void told.push(...u.flatMap((c) => c.change.rows.map(([, key]) => key))),
      );
      const unit = (url: string): number =>
        store.transact(() => {
          capture.kv.put('rates', `t/${url}`, 99);
          return capture.seal();
        });
      const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(unit) as [number, number, number, number];
      capture.committed(c);
      capture.committed(b);
      expect(told).toEqual([]);
      capture.failed(a);
      expect(told).toEqual(['t/b', 't/c']);
      capture.committed(d);
      expect(told).toEqual(['t/b', 't/c', 't/d']);
    } finally {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });

  it('answers a transaction durable once every partition’s unit settled, naming those taken back', async () => {
    const store = openStore(tempDir());
    try {
      // A rate per URL, URL x in partition 1 and y in 2; the log takes 1's unit back at once and publishes 2's later.
      let publish2 = (): void => {};
      const capture = new DeliveryCapture(
        store,
        (_tenant, url) => (url === 'x' ? 1 : 2),
        (units) =>
          units.map((u) =>
            u.change.partition === 1
              ? Promise.reject(new PartitionLost(1, 'superseded'))
              : new Promise<void>((resolve) => (publish2 = resolve)),
          ),
      );
      const n = store.transact(() => {
        capture.kv.put('rates', 't/x', 99);
        capture.kv.put('rates', 't/y', 99);
        return capture.seal();
      });
      let answer: unknown;
      const durable = capture.committed(n).then(
        () => (answer = 'durable'),
        (err: unknown) => (answer = err),
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(answer).toBeUndefined();
      publish2();
      await durable;
      expect(answer).toBeInstanceOf(UnitsTakenBack);
      expect([...(answer as UnitsTakenBack).partitions]).toEqual([1]);
      expect((answer as UnitsTakenBack).message).toContain('partition 1 is not this node');
    } finally {
      await store.close();
      rmSync(store.path, { recursive: true, force: true });
    }
  });
});
