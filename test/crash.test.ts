import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The built binary: kill -9 and SIGTERM of the server's process are what these tests check.
import { advance, startBinary, startChainpost, stopAndClean, tempDir, until, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * Nothing acknowledged is lost on kill -9, nor delivered twice after a clean stop: a stream with a queue of 300
 * webhooks (three enqueue transactions) is killed with a webhook on the wire and restarted on the same data
 * directory; every webhook arrives at least once, in order within each run.
 */
describe('crash safety', () => {
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let s: Running | undefined;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => {
    await stopAndClean(s);
    await rx.close();
  });

  it('delivers every acknowledged webhook after a kill -9 in the middle of the queue', async () => {
    const dir = tempDir();
    const env = { CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0', CHAINPOST_ACCESS_LOG: '0' };
    const binary = await startBinary(env, dir);
    s = binary;
    const created = await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, chainIds: ['0x1'], tag: 'crash' } });
    const id: string = created.body.id;
    // Three enqueue transactions; one stream delivers one at a time, in order. The kill comes on the arrival of the
    // KILL_AT-th webhook, which is never answered (in flight), with the two later transactions' webhooks still queued.
    const N = 300;
    const KILL_AT = 80;
    let enqueued = false;
    let killed: (() => void) | undefined;
    const atKill = new Promise<void>((resolve) => (killed = resolve));
    rx.state.answer = () => {
      if (!enqueued || killed === undefined || rx.webhooks().length < KILL_AT) return 200;
      binary.child.kill('SIGKILL');
      killed();
      killed = undefined;
      return 'hang';
    };
    try {
      for (let from = 0; from < N; from += 100) {
        const webhooks = Array.from({ length: 100 }, (_, i) => ({
          chainId: '0x1',
          block: { number: String(from + i), hash: '0x', timestamp: '0' },
          logs: [],
          txs: [],
        }));
        const r = await s.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks } });
        expect(r.status).toBe(200);
      }
      enqueued = true;
      await atKill;
      expect(await s.exited).toBeNull();
    } finally {
      rx.state.answer = () => 200;
    }
    const beforeRestart = rx.webhooks().length;
    expect(beforeRestart).toBeGreaterThanOrEqual(KILL_AT);
    expect(beforeRestart).toBeLessThan(N);

    // The restart reads what the killed process left (no signal left to send: in this process).
    s = await startChainpost(env, dir);
    const seen = () => new Set(rx.webhooks().map((w) => w.body.block.number));
    await until(() => seen().size >= N, 60_000);
    expect(seen().size).toBe(N);
    // At least once: anything in flight at the crash may come twice, nothing else.
    expect(rx.webhooks().length - N).toBeLessThanOrEqual(1);
    const numbers = rx.webhooks().map((w) => Number(w.body.block.number));
    for (let i = 1; i < numbers.length; i++) expect(numbers[i]! >= numbers[i - 1]! - 1, `order at ${i}`).toBe(true);
    const st = (await s.call(`/streams/evm/${id}`)).body;
    expect(st.status).toBe('active');
    // Each queued webhook leaves the queue exactly once, so the committed successes are exactly N (the last one's
    // outcome is committed just after its answer).
    const delivered = async (): Promise<number> => (await s!.call(`/stats/${id}`)).body.totalWebhooksDelivered;
    await until(async () => (await delivered()) >= N, 10_000);
    expect(await delivered()).toBe(N);
  }, 120_000);

  it('on SIGTERM waits for the webhook in flight and records its outcome before exiting 0', async () => {
    await stopAndClean(s);
    const dir = tempDir();
    const env = { CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0', CHAINPOST_ACCESS_LOG: '0' };
    s = await startBinary(env, dir);
    const id: string = (
      await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: `${rx.url}?stop`, chainIds: ['0x1'], tag: 'stop' } })
    ).body.id;
    const mine = () => rx.webhooks().filter((w) => w.body.streamId === id);
    // The receiver holds its answer until 400 ms after the SIGTERM: the stop comes while the POST is in flight.
    let signalled: (() => void) | undefined;
    const signal = new Promise<void>((resolve) => (signalled = resolve));
    let answeredAt = Number.POSITIVE_INFINITY;
    rx.state.delay = (r) => (r.test ? 0 : signal.then(() => new Promise((resolve) => setTimeout(resolve, 400))));
    rx.state.answered = (r) => {
      if (!r.test) answeredAt = performance.now();
    };
    try {
      await s.call(`/admin/streams/${id}/webhooks`, {
        method: 'POST',
        json: { webhooks: [{ chainId: '0x1', block: { number: '1', hash: '0x', timestamp: '0' }, logs: [], txs: [] }] },
      });
      while (mine().length === 0) await new Promise((r) => setTimeout(r, 5));
      const t = performance.now();
      const stopped = s.stop('SIGTERM');
      signalled!();
      expect(await stopped).toBe(0);
      // It exited after the answer was handed to it, not before.
      expect(performance.now()).toBeGreaterThan(answeredAt);
      expect(performance.now() - t).toBeGreaterThan(350);
      expect(s.output()).toMatch(/"msg":"stopped"/);
      expect(s.output()).not.toMatch(/still in flight/);
    } finally {
      rx.state.delay = () => 0;
      rx.state.answered = () => {};
    }
    // Its success was committed: not sent again after a restart (no signal left to send: in this process), and counted.
    s = await startChainpost(env, dir);
    await s.call('/admin/clock/advance', { method: 'POST', json: { seconds: 60 } });
    await new Promise((r) => setTimeout(r, 300));
    expect(mine()).toHaveLength(1);
    expect((await s.call(`/stats/${id}`)).body.totalWebhooksDelivered).toBe(1);
    expect(
      (await s.call('/history/logs')).body.result
        .filter((l: { streamId: string }) => l.streamId === id)
        .map((l: { deliveryStatus: string }) => l.deliveryStatus),
    ).toEqual(['success']);
  }, 60_000);

  it('after a kill -9, keeps what a committed replay did (no retry, nothing queued) and the retry of a replay cut short', async () => {
    await stopAndClean(s);
    const dir = tempDir();
    const env = { CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0' };
    s = await startBinary(env, dir);
    const make = async (query: string): Promise<string> =>
      (await s!.call('/streams/evm', { method: 'PUT', json: { webhookUrl: `${rx.url}?${query}`, chainIds: ['0x1'], tag: 'replay' } })).body
        .id;
    const [done, cut] = [await make('replayed'), await make('replay-cut')];
    const mine = (id: string) => rx.webhooks().filter((w) => w.body.streamId === id);
    const webhook = (n: number) => ({ chainId: '0x1', block: { number: String(n), hash: '0x', timestamp: '0' }, logs: [], txs: [] });
    rx.state.answer = (r) => (r.body.streamId === done || r.body.streamId === cut ? 500 : 200);
    try {
      for (const id of [done, cut]) await s.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks: [webhook(1)] } });
      await advance(s, 0);
      const history = (await s.call('/history?limit=100')).body.result as Array<{ id: string; streamId: string }>;
      const record = (id: string) => history.find((h) => h.streamId === id)!.id;
      rx.state.answer = () => 200;
      expect((await s.call(`/history/replay/${record(done)}`, { method: 'POST' })).body).toMatchObject({ delivered: true });
      // The other replay is killed on the wire, before its outcome's transaction.
      rx.state.delay = (r) => (r.body.streamId === cut ? 5_000 : 0);
      const cutShort = s.call(`/history/replay/${record(cut)}`, { method: 'POST' }).catch(() => 'killed');
      while (mine(cut).length < 2) await new Promise((r) => setTimeout(r, 5));
      await s.stop('SIGKILL');
      expect(await cutShort).toBe('killed');
    } finally {
      rx.state.answer = () => 200;
      rx.state.delay = () => 0;
    }
    // The restart reads what the killed process left (no signal left to send: in this process).
    s = await startChainpost(env, dir);
    await advance(s, 61);
    await advance(s, 11 * 60);
    // The failed try and the replay; the failed try, the replay cut short, and the retry it left.
    expect(mine(done).map((w) => w.body.retries)).toEqual([0, 0]);
    expect(mine(cut).map((w) => w.body.retries)).toEqual([0, 0, 1]);
    const records = (await s.call('/history?limit=100')).body.result as Array<{ streamId: string; delivered: boolean }>;
    for (const id of [done, cut]) {
      expect(records.find((h) => h.streamId === id)).toMatchObject({ delivered: true });
      await s.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks: [webhook(2)] } });
    }
    await advance(s, 0);
    // Nothing waits besides the webhook the header is on.
    for (const id of [done, cut])
      expect(
        mine(id)
          .filter((w) => w.body.block.number === '2')
          .map((w) => w.headers['x-queue-size']),
      ).toEqual(['1']);
  }, 60_000);

  it('after a restart, a URL whose success rate falls below 70 % puts every stream it had in error, one updated to it before the restart too', async () => {
    await stopAndClean(s);
    const dir = tempDir();
    const env = { CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0', CHAINPOST_ACCESS_LOG: '0' };
    // A clean stop and a start on the same store, no signal: the server runs in this process.
    s = await startChainpost(env, dir);
    const url = `${rx.url}?restart-rate`;
    const make = async (webhookUrl: string): Promise<string> =>
      (await s!.call('/streams/evm', { method: 'PUT', json: { webhookUrl, chainIds: ['0x1'], tag: 'rate' } })).body.id;
    const [sending, other] = [await make(url), await make(`${rx.url}?elsewhere`)];
    expect((await s.call(`/streams/evm/${other}`, { method: 'POST', json: { webhookUrl: url } })).status).toBe(200);
    expect(await s.stop('SIGTERM')).toBe(0);
    // The new run knows the URL's streams from the store alone.
    s = await startChainpost(env, dir);
    rx.state.answer = (r) => (r.body.streamId === sending ? 500 : 200);
    try {
      const webhooks = Array.from({ length: 31 }, (_, i) => ({
        chainId: '0x1',
        block: { number: String(i), hash: '0x', timestamp: '0' },
        logs: [],
        txs: [],
      }));
      expect((await s.call(`/admin/streams/${sending}/webhooks`, { method: 'POST', json: { webhooks } })).status).toBe(200);
      await advance(s, 0);
      for (const id of [sending, other]) expect((await s.call(`/streams/evm/${id}`)).body.statusMessage).toMatch(/fell to 69%, below 70%/);
    } finally {
      rx.state.answer = () => 200;
    }
  }, 60_000);
});
