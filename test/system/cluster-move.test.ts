import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../../http/clients/anvil.js';
import { startNatsServer, type NatsServer } from '../kit/nats-server.js';
import { advance, startBinary, stopAndClean, tempDir, until, type RunningBinary } from '../helpers.js';
import { startReceiver } from '../receiver.js';
import { adoptedAll, partitionsOf, queuedOn, queuedWhere, evmNodeEnv, payOn } from './cluster-kit.js';

/**
 * A stream moving partitions on a cluster: two nodes (the built binary) on one nats-server and anvil. A stream's
 * webhook fails and waits for its retry in its URL's partition, owned by one node; its URL then changes to one whose
 * partition the other node owns. That node matches the stream's next blocks (by its new URL) and has the old
 * partition's owner stage them there, behind the retry, while its queue there waits: they are sent at once (fresh
 * webhooks go on while a failed one waits for its retry). Once the retry is delivered and the old queue drained, the
 * stream's webhooks are staged in its new partition, by its owner: a failure waits for its retry there.
 */

const CHAIN = '0x539';
const TTL_MS = 1_500;
const KEY = 'cpk_cluster_move_0123456789abcdefXYZ0';
const WALLET = '0x00000000000000000000000000000000000c1a59';
const BLOCK_MS = 20_000;

let nats: NatsServer;
let anvil: Anvil;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let a: RunningBinary;
let b: RunningBinary;

const env = (): Record<string, string> => evmNodeEnv({ nats, anvilUrl: anvil.url, chain: CHAIN, key: KEY, ttlMs: TTL_MS });

/** Pays WALLET in a block of its own; answers the transaction's hash. */
const pay = (): Promise<string> => payOn(anvil.url, WALLET);
/** A block's webhook as the test hook takes it. */
const hooked = (n: number) => ({ chainId: CHAIN, block: { number: String(n), hash: '0x', timestamp: '0' }, logs: [], txs: [] });

beforeAll(async () => {
  [nats, anvil, rx] = await Promise.all([startNatsServer(), startAnvil({ chainId: 1337 }), startReceiver()]);
  a = await startBinary(env(), tempDir());
}, 60_000);

afterAll(async () => {
  await stopAndClean(a);
  await stopAndClean(b);
  await rx?.close();
  await anvil?.stop();
  await nats?.close();
});

describe('a stream moving partitions on a cluster (two nodes, the built binary)', () => {
  it('sends its webhooks through its old partition’s owner while a retry waits there, then moves to its new partition once that queue drained', async () => {
    expect(await until(async () => await adoptedAll(a), 15_000, 50)).toBe(true);
    b = await startBinary(env(), tempDir());
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

    /** The URL paths answered 500, and each stream's path. */
    const failing = new Set<string>();
    const paths = new Map<string, string>();
    rx.state.answer = (r) => (failing.has(paths.get(r.body.streamId) ?? '') ? 500 : 200);
    const make = async (path: string): Promise<string> => {
      const made = await a.call('/streams/evm', {
        method: 'PUT',
        json: { webhookUrl: `${rx.url}${path}`, chainIds: [CHAIN], includeNativeTxs: true },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      paths.set(made.body.id as string, path);
      return made.body.id as string;
    };
    /** The node owning a stream's partition: a failing webhook of it waits there (its retry a minute on). */
    const ownerOf = (id: string): Promise<RunningBinary> =>
      queuedWhere(a, b, async () => {
        failing.add(paths.get(id)!);
        const staged = await a.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks: [hooked(0)] } });
        expect(staged.body.results).toEqual(['queued']);
      });

    // The stream: a failed webhook waits for its retry (a minute on) in its first URL's partition.
    const id = await make('/move-from');
    const from = await ownerOf(id);
    const to = from === a ? b : a;
    expect((await a.call(`/streams/evm/${id}/address`, { method: 'POST', json: { address: [WALLET] } })).status).toBe(200);
    // A URL whose partition the other node owns (found with a stream of its own, deleted once its owner is known).
    let target: string | undefined;
    for (let k = 0; k < 12 && target === undefined; k++) {
      const path = `/move-to-${k}`;
      const probe = await make(path);
      if ((await ownerOf(probe)) === to) target = path;
      failing.delete(path);
      expect((await a.call(`/streams/evm/${probe}`, { method: 'DELETE' })).status).toBe(200);
      // Its queue dropped on its owner: only the stream's retry waits.
      expect(await until(async () => (await queuedOn(a)) + (await queuedOn(b)) === 1, 10_000, 100)).toBe(true);
    }
    expect(target, 'a URL in a partition of the other node').toBeDefined();
    const queued = { from: await queuedOn(from), to: await queuedOn(to) };
    expect(await until(async () => (await queuedOn(from)) === 1 && (await queuedOn(to)) === 0, 10_000, 100), JSON.stringify(queued)).toBe(
      true,
    );

    // Its URL changes: its queue stays where it waits.
    const moved = await a.call(`/streams/evm/${id}`, { method: 'POST', json: { webhookUrl: `${rx.url}${target!}` } });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    paths.set(id, target!);
    const mine = () => rx.webhooks().filter((w) => w.body.streamId === id && w.body.block?.number !== '0');
    const blocksOf = (list: ReturnType<typeof mine>) => list.map((w) => `${Number(w.body.block.number)}${w.body.confirmed ? 'c' : 's'}`);

    // A block: matched by the new partition's owner, staged by the old one behind the retry, sent at once.
    const one = await pay();
    expect(await until(() => mine().some((w) => w.body.txs?.some((t: { hash: string }) => t.hash === one)), BLOCK_MS, 50)).toBe(true);
    expect(await queuedOn(to)).toBe(0);

    // The retry delivered at its time on the old owner: that queue drained.
    await advance(from, 65);
    expect(
      await until(() => rx.webhooks().filter((w) => w.body.streamId === id && w.body.block?.number === '0').length === 2, 10_000, 50),
    ).toBe(true);
    expect(await until(async () => (await queuedOn(from)) === 0, 10_000, 100)).toBe(true);

    // The next blocks are staged in the new partition: a failure waits for its retry there, on its owner.
    failing.add(target!);
    const two = await pay();
    expect(await until(() => mine().some((w) => w.body.txs?.some((t: { hash: string }) => t.hash === two)), BLOCK_MS, 50)).toBe(true);
    expect(await until(async () => (await queuedOn(to)) >= 1, 10_000, 100)).toBe(true);
    expect(await queuedOn(from)).toBe(0);
    failing.delete(target!);
    await advance(to, 65);
    expect(await until(async () => (await queuedOn(to)) === 0, 10_000, 100)).toBe(true);

    // History and stats read from both partitions, the same on both nodes: every attempt counted once.
    const attempts = rx.webhooks().filter((w) => w.body.streamId === id).length;
    const statsOn = async (n: RunningBinary) => (await n.call(`/stats/${id}`)).body as Record<string, number>;
    expect(
      await until(
        async () => {
          const [sa, sb] = [await statsOn(a), await statsOn(b)];
          return (
            sa['totalWebhooksDelivered']! + sa['totalWebhooksFailed']! === attempts &&
            JSON.stringify({ ...sa, updatedAt: 0 }) === JSON.stringify({ ...sb, updatedAt: 0 })
          );
        },
        10_000,
        100,
      ),
      JSON.stringify([attempts, await statsOn(a), await statsOn(b)]),
    ).toBe(true);
    const failedBlocks = async (n: RunningBinary) =>
      (
        (await n.call('/history?limit=100&excludePayload=true')).body.result as Array<{
          streamId: string;
          tinyPayload: { block: { number: string } };
        }>
      )
        .filter((h) => h.streamId === id)
        .map((h) => Number(h.tinyPayload.block.number));
    for (const n of [a, b]) {
      const blocks = await failedBlocks(n);
      // The first failure, in the old partition, and the failures after the move, in the new one.
      expect(blocks).toContain(0);
      expect(blocks.some((x) => x > 0)).toBe(true);
    }

    // Each block's webhooks arrived, first arrivals in staging order (block after block, seen before confirmed).
    const firsts: string[] = [];
    for (const x of blocksOf(mine())) if (!firsts.includes(x)) firsts.push(x);
    const order = (x: string) => Number.parseInt(x, 10) * 2 + (x.endsWith('c') ? 1 : 0);
    expect(firsts.length).toBeGreaterThanOrEqual(3);
    expect([...firsts].sort((p, q) => order(p) - order(q))).toEqual(firsts);
  }, 120_000);
});
