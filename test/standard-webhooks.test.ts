import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { advance, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { startReceiver, type Received } from './receiver.js';

/**
 * Standard Webhooks (docs/api.md, "Webhook signatures"): every POST carries `webhook-id`, `webhook-timestamp` and
 * `webhook-signature` beside `x-signature`, checked here with the `standardwebhooks` package as a receiver would.
 * The server runs on the real clock (its test clock moved once, a minute, for a retry).
 */
describe('Standard Webhooks headers', () => {
  let s: Running;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
    s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0' });
  });
  afterAll(async () => {
    await stopAndClean(s);
    await rx.close();
  });

  const headersOf = (r: Received): Record<string, string> => ({
    'webhook-id': r.headers['webhook-id'] as string,
    'webhook-timestamp': r.headers['webhook-timestamp'] as string,
    'webhook-signature': r.headers['webhook-signature'] as string,
  });

  it('signs every webhook so the standardwebhooks package verifies it: the test webhook, a retry with its first id, a replay with it too', async () => {
    const before = rx.received.length;
    const made = await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: `${rx.url}?std`, chainIds: ['0x1'], tag: 'std' } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const id = made.body.id as string;
    // Block 1 fails once (then its retry is delivered); block 2 is delivered at once.
    let failed = false;
    rx.state.answer = (r) => (r.body.streamId === id && r.body.block?.number === '1' && !failed ? ((failed = true), 500) : 200);
    const block = (n: number) => ({ chainId: '0x1', block: { number: String(n), hash: `0x${n}`, timestamp: '0' } });
    expect((await s.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks: [block(1), block(2)] } })).status).toBe(200);
    await advance(s, 0);
    await advance(s, 60);
    const mine = () => rx.received.slice(before);
    expect(await until(() => mine().length === 4, 5_000)).toBe(true);
    const [test, first, second, retry] = mine();
    expect([first!.body.block.number, second!.body.block.number, retry!.body.block.number, retry!.body.retries]).toEqual([
      '1',
      '2',
      '1',
      1,
    ]);

    const { secretKey, standardWebhooksSecret } = (await s.call('/settings')).body;
    expect(standardWebhooksSecret).toBe(`whsec_${Buffer.from(secretKey, 'utf8').toString('base64')}`);
    const wh = new Webhook(standardWebhooksSecret);
    for (const r of mine()) expect(wh.verify(r.raw, headersOf(r))).toEqual(r.body);
    // One id a webhook, the same on its retry; the test webhook has its own.
    expect(test!.test).toBe(true);
    expect(retry!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(new Set([test, first, second].map((r) => r!.headers['webhook-id'])).size).toBe(3);
    // The timestamp is the service clock at the attempt, in seconds: the retry's a minute after.
    expect(Number(retry!.headers['webhook-timestamp']) - Number(first!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(60);

    // A replay of the failed record carries the webhook's id again, freshly timestamped and signed.
    const record = (await s.call('/history?limit=10')).body.result.find((h: { streamId: string }) => h.streamId === id);
    expect((await s.call(`/history/replay/${record.id}`, { method: 'POST' })).body).toMatchObject({ delivered: true });
    const replayed = mine().at(-1)!;
    expect(replayed.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(wh.verify(replayed.raw, headersOf(replayed))).toEqual(replayed.body);
    // Another tenant's secret does not verify it.
    expect(() =>
      new Webhook(`whsec_${Buffer.from('another secret').toString('base64')}`).verify(replayed.raw, headersOf(replayed)),
    ).toThrow(/No matching signature/);
  });

  it("stamps an attempt with the service clock's second, so a captured webhook sent again ten minutes later is refused", async () => {
    const r = rx.received.at(-1)!;
    // The last POST was the replay, just now on the service clock (moved a minute past the real one above).
    const clock = Date.parse((await s.call('/admin/clock')).body.now) / 1000;
    expect(Math.abs(Number(r.headers['webhook-timestamp']) - clock)).toBeLessThanOrEqual(2);
    const wh = new Webhook((await s.call('/settings')).body.standardWebhooksSecret);
    expect(wh.verify(r.raw, headersOf(r))).toEqual(r.body);
    vi.useFakeTimers({ now: Date.now() + 10 * 60_000, toFake: ['Date'] });
    try {
      expect(() => wh.verify(r.raw, headersOf(r))).toThrow(/Message timestamp too old/);
    } finally {
      vi.useRealTimers();
    }
  });
});
