import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../../http/clients/anvil.js';
import { startNatsServer, type NatsServer } from '../kit/nats-server.js';
import { advance, startBinary, stopAndClean, tempDir, until, type RunningBinary } from '../helpers.js';
import { startReceiver } from '../receiver.js';
import { adoptedAll, partitionsOf, queuedOn, evmNodeEnv, payOn } from './cluster-kit.js';

/**
 * Delivery on partitions, end to end: two nodes (the built binary) on one nats-server and anvil, streams to receiver
 * URLs spread over the partitions. Node A starts alone and owns every partition; its webhooks fail (the receiver
 * answers 500), so each waits for its retry a minute later, published on its partition's log. Node B joins: A hands
 * it over its share, B adopts those partitions from the log. A is killed (-9): B takes the rest within 2 lease TTLs
 * and the chain. Each retry fires on B at its instant (service time, the test clock), every webhook arrives, and
 * the failed deliveries' history is read on both nodes. A block mined after the kill is matched on B for every
 * partition it adopted, so each stream's webhook for it arrives.
 */

const CHAIN = '0x539';
const TTL_MS = 1_500;
const KEY = 'cpk_cluster_partitions_0123456789abcdefX';
const WALLET = '0x00000000000000000000000000000000000c1a58';
/** Streams, each to a URL of its own (so in partitions of their own, mostly). */
const STREAMS = 8;
const BLOCK_MS = 20_000;

let nats: NatsServer;
let anvil: Anvil;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let a: RunningBinary;
let b: RunningBinary;
const dirs: string[] = [];

const env = (): Record<string, string> => evmNodeEnv({ nats, anvilUrl: anvil.url, chain: CHAIN, key: KEY, ttlMs: TTL_MS });

/** Pays WALLET in a block of its own; answers the transaction's hash. */
const pay = (): Promise<string> => payOn(anvil.url, WALLET);

const streamIds: string[] = [];
/** The webhooks received per stream carrying transaction `hash`, answered 200. */
const delivered = (hash: string) =>
  rx.webhooks().filter((w) => !w.test && (w.body.txs as Array<{ hash: string }> | undefined)?.some((t) => t.hash === hash));

beforeAll(async () => {
  [nats, anvil, rx] = await Promise.all([startNatsServer(), startAnvil({ chainId: 1337 }), startReceiver()]);
  dirs.push(tempDir(), tempDir());
  a = await startBinary(env(), dirs[0]);
}, 60_000);

afterAll(async () => {
  await stopAndClean(a);
  await stopAndClean(b);
  await rx?.close();
  await anvil?.stop();
  await nats?.close();
});

describe('delivery on partitions: two nodes (the built binary) on one nats-server', () => {
  it('resumes a killed owner’s partitions on the other node: its queued webhooks arrive and each retry fires at its time', async () => {
    // A alone is every partition's preferred node: it owns and adopts them all.
    expect(await until(async () => await adoptedAll(a), 10_000, 50)).toBe(true);
    for (let i = 0; i < STREAMS; i++) {
      const made = await a.call('/streams/evm', {
        method: 'PUT',
        json: { webhookUrl: `${rx.url}/s${i}`, chainIds: [CHAIN], includeNativeTxs: true },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      streamIds.push(made.body.id as string);
      const added = await a.call(`/streams/evm/${made.body.id as string}/address`, { method: 'POST', json: { address: [WALLET] } });
      expect(added.status).toBe(200);
    }
    // Every attempt fails: each webhook waits for its retry, a minute of service time later.
    rx.state.answer = () => 500;
    const hash = await pay();
    const attempted = () =>
      new Set(
        rx
          .webhooks()
          .filter((w) => !w.test && w.body.confirmed === false)
          .map((w) => w.body.streamId),
      );
    expect(await until(() => attempted().size === STREAMS, BLOCK_MS, 50)).toBe(true);
    // Their failures recorded and published: A's partitions hold them queued.
    expect(await until(async () => (await queuedOn(a)) >= STREAMS, 10_000, 50)).toBe(true);
    const failedOn = async (n: RunningBinary): Promise<number> =>
      ((await n.call('/history?limit=100')).body.result as Array<{ streamId: string }>).filter((h) => streamIds.includes(h.streamId))
        .length;
    expect(await until(async () => (await failedOn(a)) === STREAMS, 5_000, 50)).toBe(true);
    rx.state.answer = () => 200;

    // B joins: A hands it its share; B adopts them from the log (their retries on B's timers).
    b = await startBinary(env(), dirs[1]);
    expect(
      await until(
        async () => {
          const [pa, pb] = [await partitionsOf(a), await partitionsOf(b)];
          return pb.length > 0 && pb.every((p) => p.queued !== null) && pa.length + pb.length === 64;
        },
        15_000,
        100,
      ),
    ).toBe(true);
    // The failed webhooks' history, applied from the partitions' logs, is read on B as on A.
    expect(await until(async () => (await failedOn(b)) === (await failedOn(a)), 5_000, 50)).toBe(true);

    // A is killed with every webhook still waiting for its retry: B owns all 64 within 2 lease TTLs.
    const killedAt = performance.now();
    await a.stop('SIGKILL');
    expect(await until(async () => (await partitionsOf(b)).length === 64, 4 * TTL_MS, 20)).toBe(true);
    const heldAt = performance.now() - killedAt;
    expect(await until(async () => (await partitionsOf(b)).every((p) => p.queued !== null), 4 * TTL_MS, 20)).toBe(true);
    const adoptedAt = performance.now() - killedAt;
    expect(adoptedAt, `held after ${heldAt} ms`).toBeLessThan(2 * TTL_MS);
    // Counted at most once a second (/health's figures).
    expect(await until(async () => (await queuedOn(b)) === STREAMS, 3_000, 100)).toBe(true);

    // Not before its time: half a minute on, nothing was sent again.
    const before = delivered(hash).length;
    await advance(b, 30);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(delivered(hash).length).toBe(before);
    // At its time, every stream's webhook arrives again (its first retry, sent by B): nothing lost.
    await advance(b, 35);
    const retried = () =>
      new Set(
        delivered(hash)
          .filter((w) => w.body.retries === 1 && w.body.confirmed === false)
          .map((w) => w.body.streamId),
      );
    expect(await until(() => retried().size === STREAMS, 10_000, 50)).toBe(true);
    expect(await until(async () => (await queuedOn(b)) === 0, 5_000, 50)).toBe(true);

    // A block after the kill: B follows the chain and matches it for the partitions it adopted, every stream's.
    const next = await pay();
    const fresh = () =>
      new Set(
        delivered(next)
          .filter((w) => w.body.confirmed === false)
          .map((w) => w.body.streamId),
      );
    expect(await until(() => fresh().size === STREAMS, BLOCK_MS, 50)).toBe(true);
  }, 90_000);
});
