import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryCapture } from '../../../../engine/cluster/delivery-capture.js';
import { PartitionLost } from '../../../../engine/cluster/partition-log.js';
import { NotHere, type PartitionRequest, type PartitionRequests } from '../../../../engine/streams/partition-requests.js';
import { ApiError } from '../../../../engine/errors.js';
import { evm } from '../../../../engine/evm/index.js';
import { StreamsService } from '../../../../engine/streams/service.js';
import { evmDefinition } from '../../../kit/evm-stream.js';
import { startReceiver } from '../../../receiver.js';
import { blockPayload, T0 } from '../delivery/parts.js';
import { deliveryRig } from '../delivery/rig.js';

/**
 * A partition's work asked on a node that does not carry the partition out goes to its owner
 * (engine/streams/partition-requests.ts): a history replay, and webhooks staged on demand. The bus between the two is
 * a stand-in here (the owner's service called with the request as JSON carries it); both services run over one store
 * and dispatcher, so what the owner wrote is what the asker reads.
 */

const TENANT = 't_service';
const MIN = 60_000;

/** A stream's partition named by its URL's `p` (0 without one). */
const partitionByQuery = (_tenant: string, url: string): number => Number(new URL(url).searchParams.get('p') ?? 0);

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

function engine(rx: Receiver, lose?: () => boolean) {
  const rig = deliveryRig(T0, {
    partitionOf: partitionByQuery,
    // A cluster node's capture: a unit is durable once its listener says so (`lose`: taken back instead).
    ...(lose === undefined
      ? {}
      : {
          capture: (kv) =>
            new DeliveryCapture(kv, partitionByQuery, (units) =>
              units.map((u) => (lose() ? Promise.reject(new PartitionLost(u.change.partition, 'refused')) : Promise.resolve())),
            ),
        }),
  });
  const { store, clock, dispatcher } = rig;
  // The owner carries out every partition; the asker partition 0 alone, and asks the owner for the others.
  const owner = new StreamsService({ kv: store, clock, dispatcher });
  const asked: Array<[number, PartitionRequest]> = [];
  const requests: PartitionRequests = {
    here: (p) => p === 0,
    ask: async (p, request) => {
      asked.push([p, JSON.parse(JSON.stringify(request)) as PartitionRequest]);
      return JSON.parse(JSON.stringify(await owner.carryOut(p, JSON.parse(JSON.stringify(request)) as PartitionRequest)));
    },
  };
  const asker = new StreamsService({ kv: store, clock, dispatcher, requests });
  const family = evm.resources({ kv: store, clock, dispatcher });
  const make = async (tag: string, p: number): Promise<string> =>
    String((await family.create(TENANT, evmDefinition(`${rx.url}?p=${p}&tag=${tag}`, tag), undefined)).id);
  const sentTo = (id: string) => rx.webhooks().filter((w) => w.body.streamId === id);
  /** A failed webhook of the stream, waiting for its retry; answers its history record's id. */
  const failed = async (id: string, n = 1): Promise<string> => {
    rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
    await dispatcher.enqueueBatch([{ streamId: id, payload: blockPayload(n) }]);
    await dispatcher.settled();
    rx.state.answer = () => 200;
    return owner.history(TENANT, 100, null, true).result.find((h) => h.streamId === id && h.delivered === false)!.id!;
  };
  return { ...rig, owner, asker, asked, make, sentTo, failed };
}

describe('a partition’s work asked on a node that does not carry it out', () => {
  let rx: Receiver;
  let e: ReturnType<typeof engine> | undefined;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());
  afterEach(async () => {
    await e?.close();
    e = undefined;
    rx.state.answer = () => 200;
  });

  it('asks the record’s partition’s owner for a replay, which posts it once, marks the record and drops its retry; the answer comes back as the owner gave it', async () => {
    e = engine(rx);
    const id = await e.make('elsewhere', 5);
    const record = await e.failed(id);
    expect(e.dispatcher.queueSize(id)).toBe(1);
    const replayed = await e.asker.replay(TENANT, record, id);
    expect(e.asked).toEqual([[5, { kind: 'replay', tenant: TENANT, historyId: record, streamId: id }]]);
    expect(replayed).toMatchObject({ id: record, streamId: id, delivered: true, status: 200, errorMessage: '' });
    expect(e.sentTo(id)).toHaveLength(2);
    expect(e.dispatcher.queueSize(id)).toBe(0);
    expect(e.asker.history(TENANT, 10, null, true).result.find((h) => h.id === record)).toMatchObject({
      delivered: true,
      deliveredAt: replayed.deliveredAt,
    });
    await e.clock.advance(10 * MIN);
    await e.dispatcher.settled();
    expect(e.sentTo(id)).toHaveLength(2);

    // A record of a partition carried out here is replayed here; one the tenant lacks is refused here, asking nobody.
    const local = await e.make('here', 0);
    expect((await e.asker.replay(TENANT, await e.failed(local))).delivered).toBe(true);
    await expect(e.asker.replay(TENANT, '0190f8a0-0000-7000-8000-000000000000')).rejects.toMatchObject({ status: 404 });
    await expect(e.asker.replay(TENANT, record, local)).rejects.toMatchObject({ status: 404 });
    expect(e.asked).toHaveLength(1);
  });

  it('stages webhooks on demand by each stream’s partition’s owner, answering the results in the items’ order', async () => {
    e = engine(rx);
    const [s0, s5, s7] = [await e.make('s0', 0), await e.make('s5', 5), await e.make('s7', 7)];
    const item = (streamId: string, n: number) => ({ streamId, payload: blockPayload(n) });
    const results = await e.asker.enqueue([
      item(s5, 1),
      item(s0, 2),
      item(s7, 3),
      item(s5, 4),
      item('0190f8a0-0000-7000-8000-00000000dead', 5),
    ]);
    expect(results).toEqual(['queued', 'queued', 'queued', 'queued', 'dropped']);
    expect(e.asked.map(([p, r]) => [p, r.kind === 'enqueue' ? r.items.map((i) => [i.streamId, i.payload['block']]) : r])).toEqual([
      [
        5,
        [
          [s5, blockPayload(1).block],
          [s5, blockPayload(4).block],
        ],
      ],
      [7, [[s7, blockPayload(3).block]]],
    ]);
    await e.dispatcher.settled();
    expect(e.sentTo(s5).map((w) => w.body.block.number)).toEqual(['1', '4']);
    expect([e.sentTo(s0).length, e.sentTo(s7).length]).toEqual([1, 1]);
  });

  it('refuses on the owner a request for a partition it does not carry out, or whose streams are another partition’s', async () => {
    e = engine(rx);
    const [s0, s5] = [await e.make('r0', 0), await e.make('r5', 5)];
    const record = await e.failed(s5);
    await expect(e.asker.carryOut(5, { kind: 'replay', tenant: TENANT, historyId: record })).rejects.toBeInstanceOf(NotHere);
    await expect(e.owner.carryOut(6, { kind: 'replay', tenant: TENANT, historyId: record })).rejects.toBeInstanceOf(NotHere);
    await expect(e.owner.carryOut(5, { kind: 'enqueue', items: [{ streamId: s0, payload: blockPayload(1) }] })).rejects.toBeInstanceOf(
      NotHere,
    );
    expect(e.sentTo(s0)).toHaveLength(0);
  });

  it('answers 503 with Retry-After when the partition changed owner before the replay’s mark was published (the mark taken back)', async () => {
    let losing = false;
    e = engine(rx, () => losing);
    const id = await e.make('lost', 5);
    const record = await e.failed(id);
    losing = true;
    const refused = await e.asker.replay(TENANT, record).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ status: 503, headers: { 'retry-after': '5' } });
    expect((refused as ApiError).message).toMatch(/the webhook was delivered, but partition 5 changed owner/);
  });
});
