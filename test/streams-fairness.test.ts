import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERY_TIMEOUT_MS } from '../engine/delivery/limits.js';
import { cliInProcess, manualTicker, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * One tenant's receivers that never answer cannot hold back another tenant's webhooks. Over the real server:
 * tenant A's 540 streams on nine receivers that answer their test webhooks, then a first webhook each, then hold
 * every request open (60 streams to each origin: under the 64 per origin, over the 512 in all). A's POSTs in flight
 * stop at its share (CHAINPOST_DELIVERY_TENANT_SLOTS) and tenant B's webhook arrives while every one of them is still
 * hanging, before their 10-s timeout (real time, which the server takes from the test's ticker, stands still until
 * the test moves it). Once they time out, their origins count as unanswered and hold no more
 * than CHAINPOST_DELIVERY_UNANSWERED_SLOTS (plus what was already on its way to each when its first timed out), so
 * A's own receiver that answers gets its webhook without waiting for the next timeouts.
 */
const ORIGINS = 9;
const HOSTILE = 540;
const TENANT_SLOTS = 100;
const UNANSWERED_SLOTS = 8;

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
const payload = (n: number) => ({
  confirmed: false,
  chainId: '0x1',
  block: { number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: '1795000000' },
  logs: [],
  txs: [],
});

describe('delivery slots shared between tenants', () => {
  let s: Running;
  let hostile: Receiver[] = [];
  let healthy: Receiver;
  let otherKey: string;
  const hostileIds: string[] = [];
  let mine: string;
  let theirs: string;
  const time = manualTicker();
  const open = (): number => hostile.reduce((n, rx) => n + rx.open(), 0);
  const stats = async (headers?: Record<string, string>) =>
    (await s.call('/stats', headers === undefined ? {} : { headers })).body as {
      totalWebhooksDelivered: number;
      totalWebhooksFailed: number;
    };
  const gauge = async (name: string): Promise<number> =>
    Number(new RegExp(`^${name} (\\d+)$`, 'm').exec((await s.call('/metrics')).body as string)?.[1] ?? NaN);
  const arrived = (id: string, block: number) =>
    healthy.webhooks().some((w) => w.body.streamId === id && w.body.block.number === String(block));

  beforeAll(async () => {
    hostile = await Promise.all(Array.from({ length: ORIGINS }, () => startReceiver()));
    healthy = await startReceiver();
    s = await startChainpost(
      {
        CHAINPOST_TEST_CLOCK: '1',
        CHAINPOST_RATE_LIMIT: '0',
        CHAINPOST_ACCESS_LOG: '0',
        CHAINPOST_DELIVERY_TENANT_SLOTS: String(TENANT_SLOTS),
        CHAINPOST_DELIVERY_UNANSWERED_SLOTS: String(UNANSWERED_SLOTS),
      },
      undefined,
      { ticker: time.ticker },
    );
    otherKey = (await cliInProcess(['keys', 'create', '--name', 'other'], s.dir)).stdout.trim().split('\n').at(-1)!;
    const create = async (webhookUrl: string, tag: string, headers: Record<string, string> = {}): Promise<string> => {
      const r = await s.call('/streams/evm', {
        method: 'PUT',
        headers,
        json: { webhookUrl, description: 'fairness', tag, chainIds: ['0x1'] },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.id as string;
    };
    // A few creates at a time: each waits for its test webhook's answer.
    for (let i = 0; i < HOSTILE; i += 10)
      hostileIds.push(
        ...(await Promise.all(Array.from({ length: 10 }, (_, k) => create(`${hostile[(i + k) % ORIGINS]!.url}?s=${i + k}`, `h${i + k}`)))),
      );
    mine = await create(`${healthy.url}?mine`, 'mine');
    theirs = await create(`${healthy.url}?theirs`, 'theirs', { 'x-api-key': otherKey });
  }, 120_000);

  afterAll(async () => {
    // Their connections reset: what is still hanging fails at once.
    await Promise.all(hostile.map((rx) => rx.close()));
    await stopAndClean(s);
    await healthy?.close();
  });

  it("delivers another tenant's webhook while one tenant's receivers hold every request open, before any of them times out", async () => {
    // Every receiver answers A's first webhooks: its origins are proven, so its share is all that holds it back.
    const first = await s.call('/admin/webhooks', {
      method: 'POST',
      json: { webhooks: [...hostileIds, mine].map((streamId) => ({ streamId, payload: payload(1) })) },
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(await until(async () => (await stats()).totalWebhooksDelivered === HOSTILE + 1, 30_000)).toBe(true);

    for (const rx of hostile) rx.state.answer = () => 'hang';
    const more = await s.call('/admin/webhooks', {
      method: 'POST',
      json: { webhooks: [2, 3].flatMap((n) => hostileIds.map((streamId) => ({ streamId, payload: payload(n) }))) },
    });
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    // A holds its share, every other stream of it waits in line: nothing more starts until a slot frees.
    expect(await until(() => open() >= TENANT_SLOTS, 10_000)).toBe(true);
    await until(
      async () =>
        open() > TENANT_SLOTS ||
        ((await gauge('chainpost_webhooks_in_flight')) === TENANT_SLOTS &&
          (await gauge('chainpost_webhook_streams_waiting')) === HOSTILE - TENANT_SLOTS),
      5_000,
    );
    expect(open()).toBe(TENANT_SLOTS);

    const sent = await s.call(`/admin/streams/${theirs}/webhooks`, {
      method: 'POST',
      headers: { 'x-api-key': otherKey },
      json: { webhooks: [payload(1)] },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    // No real time has passed for the server: the hanging POSTs are all still open when it arrives.
    expect(await until(() => arrived(theirs, 1), 8_000)).toBe(true);
    expect(open()).toBe(TENANT_SLOTS);
    expect((await stats()).totalWebhooksFailed).toBe(0);
    // Its outcome is committed once answered.
    expect(await until(async () => (await stats({ 'x-api-key': otherKey })).totalWebhooksDelivered === 1, 5_000)).toBe(true);
  }, 60_000);

  it("holds few of a tenant's slots on receivers that stopped answering, and its answering receiver goes on", async () => {
    // The first POSTs time out (10 s after they were sent): their origins now count as unanswered.
    await time.pass(DELIVERY_TIMEOUT_MS);
    expect(await until(async () => (await stats()).totalWebhooksFailed === TENANT_SLOTS, 20_000)).toBe(true);
    await until(async () => (await gauge('chainpost_webhooks_in_flight')) === open(), 2_000);
    const hanging = open();
    // The unanswered share, plus at most one on its way to each origin before that origin's first timeout.
    expect(hanging).toBeGreaterThan(0);
    expect(hanging).toBeLessThanOrEqual(UNANSWERED_SLOTS + ORIGINS);

    const sent = await s.call(`/admin/streams/${mine}/webhooks`, { method: 'POST', json: { webhooks: [payload(2)] } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await until(() => arrived(mine, 2), 8_000)).toBe(true);
    // Without waiting for the hanging ones (no real time passed since): none of them has timed out.
    expect((await stats()).totalWebhooksFailed).toBe(TENANT_SLOTS);
    expect(open()).toBe(hanging);
  }, 60_000);
});
