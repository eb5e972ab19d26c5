import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hold } from '../app/ingest.js';
import { startNatsServer, type NatsServer } from './kit/nats-server.js';
import { apiCaller, cli, startChainpost, tempDir, until, type Running } from './helpers.js';
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
/** While set, the second server applies no change of the log before it resolves: it lags behind the first. */
let lag: Promise<void> | undefined;
const lagging: Hold = async (step) => {
  if (step === 'control change') await lag;
};

const node = (env: Record<string, string>, hold?: Hold): Promise<Running> =>
  startChainpost({ CHAINPOST_NATS: nats.url, CHAINPOST_CHAINS: 'none', ...env }, tempDir(), hold === undefined ? {} : { hold });

const streamIds = async (s: Running): Promise<string[]> =>
  ((await s.call('/streams/evm')).body.result as Array<{ id: string }>).map((x) => x.id);

const addresses = async (s: Running, id: string): Promise<string[]> => {
  const res = await s.call(`/streams/evm/${id}/address`);
  return res.status === 200 ? (res.body.result as Array<{ address: string }>).map((x) => x.address) : [];
};

beforeAll(async () => {
  nats = await startNatsServer();
  rx = await startReceiver();
  // The first takes webhooks from the test (CHAINPOST_TEST_CLOCK's hooks): it delivers them.
  one = await node({ CHAINPOST_API_KEY: KEY_ONE, CHAINPOST_TEST_CLOCK: '1' });
  two = await node({ CHAINPOST_API_KEY: KEY_TWO }, lagging);
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

  it("makes one webhook secret for a tenant whose first reads on both servers race, the first in the log's order", async () => {
    // The first key's tenant has no settings yet: each server makes them at this read, through the log.
    const [onOne, onTwo] = await Promise.all([one.call('/settings'), apiCaller(two.url, KEY_ONE)('/settings')]);
    expect(onOne.status).toBe(200);
    expect(onTwo.status).toBe(200);
    expect(onOne.body.secretKey).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(onTwo.body.secretKey).toBe(onOne.body.secretKey);
    expect((await one.call('/settings')).body.secretKey).toBe(onOne.body.secretKey);
  });

  it('verifies on the second server, once, a sign-in challenge requested through the first that it has not applied yet', async () => {
    const signer = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');
    const post = (s: Running['call'], path: string, json: unknown) => s(path, { method: 'POST', json });
    const onTwo = apiCaller(two.url, KEY_ONE);
    let release = (): void => {};
    lag = new Promise((resolve) => (release = resolve));
    try {
      const request = { domain: 'defi.finance', uri: 'https://defi.finance/login', timeout: 120, chainId: 1, address: signer.address };
      const issued = await post(one.call, '/challenge/request/evm', request);
      expect(issued.status).toBe(201);
      const signed = { message: issued.body.message, signature: await signer.signMessage({ message: issued.body.message }) };
      const verifying = post(onTwo, '/challenge/verify/evm', signed);
      // The second server applies the request only now, while its verify waits (up to 1 s) for it.
      await sleep(200);
      release();
      const verified = await verifying;
      expect(verified.status, JSON.stringify(verified.body)).toBe(201);
      expect(verified.body.address).toBe(signer.address);
      // Single use on every server.
      expect((await post(onTwo, '/challenge/verify/evm', signed)).status).toBe(404);
      expect((await post(one.call, '/challenge/verify/evm', signed)).status).toBe(404);
    } finally {
      lag = undefined;
      release();
    }
  });

  it('shows on the second server within 1 s a stream the first put in error by its success rate, as the first shows it', async () => {
    const made = await one.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: `${rx.url}?failing`, chainIds: ['0x1'], includeNativeTxs: true, tag: 'failing' },
    });
    const id = made.body.id as string;
    rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
    const webhooks = Array.from({ length: 31 }, (_, i) => ({ block: { number: String(i) } }));
    expect((await one.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks } })).status).toBe(200);
    // 31 failures in a row: the rate falls to 69 %, below 70 % (the rule of engine/delivery/success-rate.ts).
    const onOne = async () => (await one.call(`/streams/evm/${id}`)).body;
    expect(await until(async () => (await onOne()).status === 'error', 20_000, 50)).toBe(true);
    const onTwo = async () => (await apiCaller(two.url, KEY_ONE)(`/streams/evm/${id}`)).body;
    expect(await until(async () => (await onTwo()).status === 'error', OTHER_NODE_MS)).toBe(true);
    expect(await onTwo()).toEqual(await onOne());
    expect((await onTwo()).statusMessage).toMatch(/success rate of .* fell to 69%, below 70%/);
  });

  it("publishes the CLI's keys create and revoke (the built binary) on the first server's data directory: the second server accepts the key, then refuses it within 1 s", async () => {
    const cluster = { CHAINPOST_NATS: nats.url, CHAINPOST_CHAINS: 'none' };
    const made = await cli(['keys', 'create', '--name', 'from-cli'], one.dir, cluster);
    expect(made.code, made.stderr).toBe(0);
    const key = made.stdout.trim().split('\n').at(-1)!;
    // Answered once the first server applied it to its store.
    expect((await apiCaller(one.url, key)('/streams/evm')).status).toBe(200);
    expect(await until(async () => (await apiCaller(two.url, key)('/streams/evm')).status === 200, OTHER_NODE_MS)).toBe(true);
    const revoked = await cli(['keys', 'revoke', 'from-cli'], one.dir, cluster);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await apiCaller(one.url, key)('/streams/evm')).status).toBe(401);
    expect(await until(async () => (await apiCaller(two.url, key)('/streams/evm')).status === 401, OTHER_NODE_MS)).toBe(true);
  });

  it("applies the cluster's log to a data directory no server runs on for the CLI's keys create: the second server accepts the key", async () => {
    const dir = tempDir();
    try {
      const made = await cli(['keys', 'create', '--name', 'offline', '--create'], dir, {
        CHAINPOST_NATS: nats.url,
        CHAINPOST_CHAINS: 'none',
      });
      expect(made.code, made.stderr).toBe(0);
      const key = made.stdout.trim().split('\n').at(-1)!;
      expect(await until(async () => (await apiCaller(two.url, key)('/streams/evm')).status === 200, OTHER_NODE_MS)).toBe(true);
      // The directory's store holds what the log held before: the servers' keys too.
      const list = await cli(['keys', 'list'], dir);
      expect(list.stdout.split('\n').filter((line) => line.startsWith('env')).length).toBe(2);
      expect(list.stdout).toContain('offline');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
