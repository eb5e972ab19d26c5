import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type NatsServer } from './kit/nats-server.js';
import { apiCaller, startChainpost, until, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * Two servers of one cluster (CHAINPOST_NATS on one real nats-server), each with its own data directory: what is
 * configured through one is served by the other, as two machines would.
 */
/** How long the other node may take to apply a change. */
const OTHER_NODE_MS = 1_000;
const KEY_ONE = 'cpk_cluster_one_0123456789abcdefXYZ';
const KEY_TWO = 'cpk_cluster_two_0123456789abcdefXYZ';
const ADDRESS = '0x00000000000000000000000000000000000000a1';

let nats: NatsServer;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let one: Running;
let two: Running;

const node = (key: string): Promise<Running> =>
  startChainpost({ CHAINPOST_NATS: nats.url, CHAINPOST_CHAINS: 'none', CHAINPOST_API_KEY: key });

const streamIds = async (s: Running): Promise<string[]> =>
  ((await s.call('/streams/evm')).body.result as Array<{ id: string }>).map((x) => x.id);

const addresses = async (s: Running, id: string): Promise<string[]> => {
  const res = await s.call(`/streams/evm/${id}/address`);
  return res.status === 200 ? (res.body.result as Array<{ address: string }>).map((x) => x.address) : [];
};

beforeAll(async () => {
  nats = await startNatsServer();
  rx = await startReceiver();
  one = await node(KEY_ONE);
  two = await node(KEY_TWO);
}, 60_000);

afterAll(async () => {
  for (const s of [one, two]) {
    if (s === undefined) continue;
    await s.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
  await rx?.close();
  await nats?.close();
});

describe('two servers on one nats-server (CHAINPOST_NATS)', () => {
  it('authenticates on the second server the API key the first one created (CHAINPOST_API_KEY)', async () => {
    // Each key was written to the log by its own server at its start.
    expect((await apiCaller(two.url, KEY_ONE)('/streams/evm')).status).toBe(200);
    expect((await apiCaller(one.url, KEY_TWO)('/streams/evm')).status).toBe(200);
    expect((await apiCaller(two.url, 'cpk_not_a_key_0123456789abcdefXYZ')('/streams/evm')).status).toBe(401);
  });

  it('lists on the second server within 1 s a stream created through the first, and on the first an address added through the second', async () => {
    const made = await one.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, chainIds: ['0x1'], includeNativeTxs: true } });
    expect(made.status).toBe(200);
    const id = made.body.id as string;
    // Read-your-writes on the node that answered.
    expect(await streamIds(one)).toEqual([id]);
    const asKeyOne = apiCaller(two.url, KEY_ONE);
    expect(await until(async () => ((await asKeyOne('/streams/evm')).body.result as unknown[]).length === 1, OTHER_NODE_MS)).toBe(true);
    expect(((await asKeyOne('/streams/evm')).body.result as Array<{ id: string }>).map((x) => x.id)).toEqual([id]);

    expect((await asKeyOne(`/streams/evm/${id}/address`, { method: 'POST', json: { address: [ADDRESS] } })).status).toBe(200);
    expect(await until(async () => (await addresses(one, id)).includes(ADDRESS), OTHER_NODE_MS)).toBe(true);
    expect((await one.call(`/streams/evm/${id}`)).body.amountOfAddresses).toBe(1);
  });

  it('serves on the first server the settings written through the second within 1 s, the webhook secret the same', async () => {
    expect((await two.call('/settings', { method: 'POST', json: { region: 'eu-central-1' } })).body).toEqual({ region: 'eu-central-1' });
    const asKeyTwo = apiCaller(one.url, KEY_TWO);
    expect(await until(async () => (await asKeyTwo('/settings')).body.region === 'eu-central-1', OTHER_NODE_MS)).toBe(true);
    // Made at the tenant's first use on the second server, and signing its webhooks on both.
    expect((await asKeyTwo('/settings')).body.secretKey).toBe((await two.call('/settings')).body.secretKey);
  });

  it('refuses to start with more replicas (CHAINPOST_NATS_REPLICAS) than a single nats-server keeps, naming the variable', async () => {
    // A server of its own, whose control log the node would create.
    const alone = await startNatsServer();
    try {
      await expect(
        startChainpost({ CHAINPOST_NATS: alone.url, CHAINPOST_CHAINS: 'none', CHAINPOST_API_KEY: KEY_ONE, CHAINPOST_NATS_REPLICAS: '3' }),
      ).rejects.toThrow(
        /\nchainpost: CHAINPOST_NATS_REPLICAS: 3 refused by the NATS servers: replicas > 1 not supported in non-clustered mode\n/,
      );
    } finally {
      await alone.close();
    }
  });

  it('answers writes 503 with Retry-After while nats-server is stopped, and goes on answering reads', async () => {
    const before = await streamIds(one);
    await nats.stop();
    try {
      // The client notices the lost connection a moment after the server is gone.
      const refused = async () =>
        (await one.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, chainIds: ['0x1'] } })).status === 503;
      expect(await until(refused, 10_000, 100)).toBe(true);
      const res = await one.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, chainIds: ['0x1'] } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.body.message).toMatch(/NATS/);
      expect(await streamIds(one)).toEqual(before);
      expect((await one.call('/settings')).status).toBe(200);
    } finally {
      await nats.start();
    }
  });
});
