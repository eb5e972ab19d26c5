import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type NatsServer } from '../kit/nats-server.js';
import { advance, startBinary, stopAndClean, tempDir, until, type RunningBinary } from '../helpers.js';
import { startReceiver } from '../receiver.js';
import { adoptedAll, partitionsOf, queuedOn, queuedWhere } from './cluster-kit.js';
import { RequestError } from '@nats-io/transport-node';
import { connectBus } from '../../bus/connect.js';
import { requestSubject } from '../../bus/requests.js';

/**
 * A replay asked on any node is carried out by the partition's owner: two nodes (the built binary) on one
 * nats-server, streams to receiver URLs spread over the partitions. Node A starts alone and owns every partition; B
 * joins and takes its share. Each stream's webhook fails and waits for its retry a minute later (the test clock), on
 * its partition's owner. A third node with api and deliver but not match owns no partition: it sends none of those
 * retries when its clock passes them. Each replay, asked on a node not owning its partition, is posted once (by the
 * owner, which marks the record and drops the retry in its store and publishes it): the record reads delivered on
 * both nodes and the retry does not fire at its time; so is a stream's every record replayed at once. With the bus down, and with the owner killed (the partition between owners), the replay
 * is refused with 503 and Retry-After, until the other node owns the partition.
 */

/** Long enough that a killed owner's lease outlives the asker's wait for an owner (1 s): the partition stays between owners. */
const TTL_MS = 3_000;
const STREAMS = 3;

let nats: NatsServer;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let a: RunningBinary;
let b: RunningBinary;
/** A node with api and deliver, without match: it owns no partition. */
let c: RunningBinary | undefined;

const env = (): Record<string, string> => ({
  CHAINPOST_NATS: nats.url,
  CHAINPOST_LEASE_TTL_MS: String(TTL_MS),
  CHAINPOST_RATE_LIMIT: '0',
  CHAINPOST_TEST_CLOCK: '1',
});

/** The webhooks of a node's partitions waiting to be delivered (counted at most once a second). */
/** A stream's history records as a node reads them. */
const historyOf = async (
  n: RunningBinary,
  streamId: string,
): Promise<Array<{ id: string; delivered: boolean; deliveredAt: string | null }>> =>
  (
    (await n.call('/history?limit=100&excludePayload=true')).body.result as Array<{
      id: string;
      streamId: string;
      delivered: boolean;
      deliveredAt: string | null;
    }>
  ).filter((h) => h.streamId === streamId);
/** A block's webhook as the test hook takes it. */
const block = (n: number) => ({ chainId: '0x1', block: { number: String(n), hash: '0x', timestamp: '0' }, logs: [], txs: [] });
const sentTo = (streamId: string) => rx.webhooks().filter((w) => w.body.streamId === streamId);

/** Whether nats-server answers a request to the partition's owner with "no responders" within 10 s (asked again and again). */
async function noResponders(partition: number): Promise<boolean> {
  const bus = await connectBus({ servers: nats.url });
  try {
    return await until(
      () =>
        bus.nc.request(requestSubject(partition), new Uint8Array(0), { timeout: 200 }).then(
          () => false,
          (err: unknown) => err instanceof RequestError && err.isNoResponders(),
        ),
      10_000,
      20,
    );
  } finally {
    await bus.close();
  }
}

/** Per stream: its id, its record, the node owning its partition and the other one. */
const cases: Array<{ id: string; record: string; owner: RunningBinary; asker: RunningBinary }> = [];

beforeAll(async () => {
  [nats, rx] = await Promise.all([startNatsServer(), startReceiver()]);
  a = await startBinary(env(), tempDir());
}, 60_000);

afterAll(async () => {
  await stopAndClean(a);
  await stopAndClean(b);
  await stopAndClean(c);
  await rx?.close();
  await nats?.close();
});

describe('a replay asked on any node is carried out by the partition’s owner (two nodes, the built binary)', () => {
  it('posts the replay once, from the owner: the record reads delivered on both nodes and its retry does not fire', async () => {
    expect(await until(async () => await adoptedAll(a), 15_000, 50)).toBe(true);
    const ids: string[] = [];
    for (let i = 0; i < STREAMS; i++) {
      const made = await a.call('/streams/evm', {
        method: 'PUT',
        json: { webhookUrl: `${rx.url}/r${i}`, chainIds: ['0x1'], includeNativeTxs: true },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      ids.push(made.body.id as string);
    }
    b = await startBinary(env(), tempDir());
    // B takes its share; both have adopted theirs from the log.
    expect(
      await until(
        async () => {
          const [pa, pb] = [await partitionsOf(a), await partitionsOf(b)];
          return pb.length > 0 && pa.length + pb.length === 64 && [...pa, ...pb].every((p) => p.queued !== null);
        },
        30_000,
        100,
      ),
    ).toBe(true);

    rx.state.answer = () => 500;
    for (const id of ids) {
      // Staged by the stream's partition's owner, whichever node is asked; it fails and waits for its retry there.
      const owner = await queuedWhere(a, b, async () => {
        const staged = await a.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks: [block(1)] } });
        expect(staged.status, JSON.stringify(staged.body)).toBe(200);
        expect(staged.body.results).toEqual(['queued']);
        expect(await until(() => sentTo(id).length === 1, 10_000, 20)).toBe(true);
      });
      const asker = owner === a ? b : a;
      // The failure's record, applied from the partition's log on the other node too.
      expect(
        await until(async () => (await historyOf(asker, id)).length === 1 && (await historyOf(owner!, id)).length === 1, 10_000, 50),
      ).toBe(true);
      cases.push({ id, record: (await historyOf(asker, id))[0]!.id, owner: owner!, asker });
    }

    // A node delivering no partition (api and deliver, without match) sends none of the retries waiting in the
    // others' partitions, which its store holds as applied from their logs (here at its restart), when its clock
    // passes them.
    const dir = tempDir();
    const roles = ['--roles', 'api,deliver'];
    const first = await startBinary(env(), dir, undefined, undefined, roles);
    c = first;
    expect(
      await until(async () => (await Promise.all(ids.map((id) => historyOf(first, id)))).every((h) => h.length === 1), 10_000, 50),
    ).toBe(true);
    await first.stop('SIGTERM');
    const none = await startBinary(env(), dir, undefined, undefined, roles);
    c = none;
    rx.state.answer = () => 200;
    await advance(none, 65);
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const id of ids) expect(sentTo(id)).toHaveLength(1);

    // Each replay asked on a node that does not own its partition (the first on the node owning none).
    // The last one as its stream's every record (POST /history/replay/:streamId), each replay carried out by the owner all the same.
    for (const [i, { id, record, owner }] of cases.entries()) {
      const asker = i === 0 ? none : cases[i]!.asker;
      const all = i === cases.length - 1;
      const answer = await asker.call(all ? `/history/replay/${id}` : `/history/replay/${id}/${record}`, { method: 'POST' });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      if (all) expect(answer.body).toMatchObject({ streamId: id, replayed: 1, remaining: 0 });
      const replayed = all ? { body: answer.body.results[0] } : answer;
      expect(replayed.body).toMatchObject({ id: record, streamId: id, delivered: true, status: 200, errorMessage: '' });
      expect(sentTo(id)).toHaveLength(2);
      // Read on the node asked as soon as it answered, and on the owner.
      expect((await historyOf(asker, id))[0]).toMatchObject({ delivered: true, deliveredAt: replayed.body.deliveredAt });
      expect((await historyOf(owner, id))[0]).toMatchObject({ delivered: true, deliveredAt: replayed.body.deliveredAt });
    }
    expect(await until(async () => (await queuedOn(a)) + (await queuedOn(b)) === 0, 5_000, 100)).toBe(true);

    // Past every retry's time on the owners' clocks: none fires.
    await Promise.all([advance(a, 65), advance(b, 65)]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const { id } of cases) expect(sentTo(id)).toHaveLength(2);
    await stopAndClean(none);
    c = undefined;
  }, 120_000);

  it('refuses a replay with 503 and Retry-After while the bus is down and while its partition is between owners, then the next owner carries it out', async () => {
    const { id, record } = cases[0]!;
    // A second failure of the stream, staged on its owner whichever node is asked, to replay.
    rx.state.answer = () => 500;
    const staged = await a.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks: [block(2)] } });
    expect(staged.status, JSON.stringify(staged.body)).toBe(200);
    expect(await until(() => sentTo(id).length === 3, 10_000, 20)).toBe(true);
    let next: string | undefined;
    expect(
      await until(
        async () => {
          next = (await historyOf(a, id)).find((h) => h.id !== record && !h.delivered)?.id;
          return next !== undefined && (await historyOf(b, id)).some((h) => h.id === next);
        },
        10_000,
        50,
      ),
    ).toBe(true);
    rx.state.answer = () => 200;

    // The bus down: the owner cannot be asked.
    await nats.stop('kill');
    const { asker: before } = cases[0]!;
    expect(await until(async () => (await before.call('/health')).body.cluster?.bus?.up === false, 10_000, 50)).toBe(true);
    const down = await before.call(`/history/replay/${next!}`, { method: 'POST' });
    expect(down.status, JSON.stringify(down.body)).toBe(503);
    expect(Number(down.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(down.body.message).toMatch(/bus is down/);
    expect(sentTo(id)).toHaveLength(3);

    // The bus back: the nodes own their shares again (the stream's partition perhaps elsewhere now).
    await nats.start();
    let owner: RunningBinary | undefined;
    expect(
      await until(
        async () => {
          const up = async (n: RunningBinary) => (await n.call('/health')).body.cluster?.bus?.up === true;
          if (!(await up(a)) || !(await up(b))) return false;
          const [pa, pb] = [await partitionsOf(a), await partitionsOf(b)];
          if (pa.length + pb.length !== 64 || ![...pa, ...pb].every((p) => p.queued !== null)) return false;
          const [qa, qb] = [await queuedOn(a), await queuedOn(b)];
          owner = qa === 1 && qb === 0 ? a : qa === 0 && qb === 1 ? b : undefined;
          return owner !== undefined;
        },
        30_000,
        100,
      ),
    ).toBe(true);
    const asker = owner === a ? b : a;
    const partition = (await partitionsOf(owner!)).find((p) => p.queued === 1)!.partition;

    // The owner killed: until its lease expires, no node owns the partition. Asked once nats-server dropped the
    // killed connection's subscriptions (no responders): before, a request goes to it and goes unanswered (20 s).
    await owner!.stop('SIGKILL');
    expect(await noResponders(partition)).toBe(true);
    const between = await asker.call(`/history/replay/${next!}`, { method: 'POST' });
    expect(between.status, JSON.stringify(between.body)).toBe(503);
    expect(Number(between.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(between.body.message).toMatch(/between owners/);
    expect(sentTo(id)).toHaveLength(3);

    // The other node owns every partition within 2 lease TTLs: the replay is carried out there.
    expect(await until(async () => await adoptedAll(asker), 4 * TTL_MS, 50)).toBe(true);
    const done = await asker.call(`/history/replay/${next!}`, { method: 'POST' });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ id: next, delivered: true });
    expect(sentTo(id)).toHaveLength(4);
  }, 120_000);
});
