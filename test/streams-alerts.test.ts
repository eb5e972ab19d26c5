import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../storage/env.js';
import { DELIVERY_TIMEOUT_MS } from '../engine/delivery/limits.js';
import { advance, cliInProcess, manualTicker, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { startReceiver, startSmtp } from './receiver.js';

/** Alerts: to the key's own e-mail when it has one; kept in the outbox when there is no SMTP server. And the 10 s no-answer rule. */
describe('stream alerts and timeouts', () => {
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());

  /** 31 streams on one URL, one failed webhook each: the 31st failure puts them all in error. */
  async function failUrl(s: Running, key: string, url: string): Promise<string[]> {
    const ids: string[] = [];
    rx.state.answer = (r) => (ids.includes(r.body.streamId) ? 500 : 200);
    for (let i = 0; i < 31; i++) {
      const r = await s.call('/streams/evm', {
        method: 'PUT',
        json: { webhookUrl: url, chainIds: ['0x1'] },
        headers: { 'x-api-key': key },
      });
      ids.push(r.body.id);
    }
    for (const id of ids)
      await s.call(`/admin/streams/${id}/webhooks`, {
        method: 'POST',
        json: { webhooks: [{ chainId: '0x1', block: { number: '1', hash: '0x', timestamp: '0' } }] },
        headers: { 'x-api-key': key },
      });
    await advance(s, 0);
    return ids;
  }

  it("e-mails the creating key's own address", async () => {
    const smtp = await startSmtp();
    const s = await startChainpost({
      CHAINPOST_TEST_CLOCK: '1',
      CHAINPOST_RATE_LIMIT: '0',
      CHAINPOST_SMTP_URL: smtp.url,
      CHAINPOST_ALERT_EMAIL: 'fallback@example.org',
    });
    try {
      const key = (await cliInProcess(['keys', 'create', '--name', 'owner', '--email', 'owner@example.org'], s.dir)).stdout
        .trim()
        .split('\n')
        .at(-1)!;
      const ids = await failUrl(s, key, `${rx.url}?owner`);
      expect((await s.call(`/streams/evm/${ids[0]}`, { headers: { 'x-api-key': key } })).body.status).toBe('error');
      // The alerts are sent off the request path: wait for them rather than for a fixed time.
      expect(await until(() => smtp.mails.length >= 31, 10_000)).toBe(true);
      expect(smtp.mails.length).toBe(31);
      expect(new Set(smtp.mails.flatMap((m) => m.to))).toEqual(new Set(['owner@example.org']));
    } finally {
      await stopAndClean(s);
      await smtp.close();
    }
  });

  describe('without an SMTP server, on real time the test moves', () => {
    let s: Running;
    const time = manualTicker();
    beforeAll(async () => {
      s = await startChainpost(
        { CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0', CHAINPOST_ALERT_EMAIL: 'ops@example.org' },
        undefined,
        { ticker: time.ticker },
      );
    });
    afterAll(() => stopAndClean(s));

    it('keeps the alert in the outbox and logs it when no SMTP server is configured', async () => {
      await failUrl(s, s.key, `${rx.url}?nosmtp`);
      const logged = /"msg":"stream alert not e-mailed".*"reason":"no SMTP server: CHAINPOST_SMTP_URL is unset"/g;
      // One alert a stream in error, kept one after the other.
      expect(await until(() => (s.output().match(logged) ?? []).length === 31, 5_000)).toBe(true);
      const store = openStore(s.dir);
      const outbox = store.range<{ to: string; subject: string }>('outbox');
      await store.close();
      expect(outbox).toHaveLength(31);
      expect(outbox[0]!.value).toMatchObject({ to: 'ops@example.org', subject: expect.stringMatching(/is in error$/) });
    });

    it('counts a receiver that does not answer within 10 s as a failure, not a millisecond before', async () => {
      const id = (await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: `${rx.url}?hang`, chainIds: ['0x1'] } })).body.id;
      rx.state.answer = (r) => (r.body.streamId === id ? 'hang' : 200);
      await s.call(`/admin/streams/${id}/webhooks`, {
        method: 'POST',
        json: { webhooks: [{ chainId: '0x1', block: { number: '9', hash: '0x', timestamp: '0' } }] },
      });
      // The jump waits for the delivery in flight: it ends once the POST has its outcome.
      let settled = false;
      const jumped = advance(s, 0).then(() => (settled = true));
      expect(await until(() => rx.webhooks().some((w) => w.body.streamId === id), 5_000)).toBe(true);
      const record = async () => (await s.call('/history?limit=10')).body.result.find((x: { streamId: string }) => x.streamId === id);
      await time.pass(DELIVERY_TIMEOUT_MS - 1);
      expect(await record()).toBeUndefined();
      expect(settled).toBe(false);
      await time.pass(1);
      expect(await until(() => settled, 5_000)).toBe(true);
      await jumped;
      expect((await record()).errorMessage).toBe('no answer within 10 s');
    });
  });
});
