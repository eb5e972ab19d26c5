import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../storage/env.js';
import { advance, cli, startChainpost, stopAndClean, until, type Running } from './helpers.js';
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
      const key = (await cli(['keys', 'create', '--name', 'owner', '--email', 'owner@example.org'], s.dir)).stdout
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

  it('keeps the alert in the outbox and logs it when no SMTP server is configured', async () => {
    const s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0', CHAINPOST_ALERT_EMAIL: 'ops@example.org' });
    try {
      await failUrl(s, s.key, `${rx.url}?nosmtp`);
      await new Promise((r) => setTimeout(r, 200));
      expect(s.output()).toMatch(/"msg":"stream alert not e-mailed".*"reason":"no SMTP server: CHAINPOST_SMTP_URL is unset"/);
      const store = openStore(s.dir);
      const outbox = store.range<{ to: string; subject: string }>('outbox');
      await store.close();
      expect(outbox).toHaveLength(31);
      expect(outbox[0]!.value).toMatchObject({ to: 'ops@example.org', subject: expect.stringMatching(/is in error$/) });
    } finally {
      await stopAndClean(s);
    }
  });

  it('counts a receiver that does not answer within 10 s as a failure', async () => {
    const s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0' });
    try {
      const id = (await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: `${rx.url}?hang`, chainIds: ['0x1'] } })).body.id;
      rx.state.answer = (r) => (r.body.streamId === id ? 'hang' : 200);
      const started = Date.now();
      await s.call(`/admin/streams/${id}/webhooks`, {
        method: 'POST',
        json: { webhooks: [{ chainId: '0x1', block: { number: '9', hash: '0x', timestamp: '0' } }] },
      });
      await advance(s, 0);
      expect(Date.now() - started).toBeGreaterThanOrEqual(9_900);
      const h = (await s.call('/history?limit=10')).body.result.find((x: { streamId: string }) => x.streamId === id);
      expect(h.errorMessage).toBe('no answer within 10 s');
    } finally {
      await stopAndClean(s);
    }
  }, 30_000);
});
