import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECEIVER_TEXT_MAX } from '../engine/delivery/webhook.js';
import { REPLAY_ALL_MAX } from '../engine/streams/service.js';
import { apiCaller, cliInProcess, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * A stream's delivery as a tenant reads it, and its failures replayed at once: GET /stats/:streamId answers the
 * stream's queue size, its URL's success rate and its last failed attempt; POST /history/replay/:streamId replays
 * every record of the stream not delivered yet (oldest first, REPLAY_ALL_MAX a call), while the same path with a
 * history record's id replays that record alone. A real server on its test clock, a real receiver.
 */
describe("POST /history/replay/:streamId and a stream's delivery state in GET /stats/:streamId", () => {
  let s: Running;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  const block = (n: number) => ({
    chainId: '0x1',
    confirmed: true,
    block: { number: String(n), hash: '0x', timestamp: '0' },
    logs: [],
    txs: [],
  });
  const stream = async (path: string) => {
    const r = await s.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: `${rx.url}/${path}`, chainIds: ['0x1'], includeNativeTxs: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.id as string;
  };
  const stage = async (id: string, blocks: number[]) => {
    const r = await s.call(`/admin/streams/${id}/webhooks`, { method: 'POST', json: { webhooks: blocks.map(block) } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };
  type Record = {
    id: string;
    streamId: string;
    delivered: boolean;
    date: string;
    errorMessage: string;
    webhookUrl: string;
    tinyPayload: { block: { number: string } };
  };
  const history = async (id: string): Promise<Record[]> =>
    ((await s.call('/history?limit=100&excludePayload=true')).body.result as Record[]).filter((h) => h.streamId === id);
  const sentTo = (id: string) => rx.webhooks().filter((w) => w.body.streamId === id);

  beforeAll(async () => {
    rx = await startReceiver();
    s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0' });
  }, 60_000);
  afterAll(async () => {
    await stopAndClean(s);
    await rx?.close();
  });

  it("keeps the start of the receiver's refusal as text in the record, the logs and the stream's last error: control characters as spaces, at most RECEIVER_TEXT_MAX characters", async () => {
    const id = await stream('refusal');
    const hostile = '<img src=x onerror=alert(1)>\r\n<script>alert(2)</script>\tdown';
    rx.state.answer = () => 500;
    rx.state.answerText = (r, status) => (status === 200 ? 'ok' : r.body.block.number === '1' ? hostile : 'x'.repeat(5000));
    try {
      await stage(id, [1]);
      expect(await until(async () => (await history(id)).length === 1, 10_000)).toBe(true);
      const said = 'the receiver answered HTTP 500: <img src=x onerror=alert(1)> <script>alert(2)</script> down';
      expect((await history(id))[0]!.errorMessage).toBe(said);
      expect((await s.call(`/stats/${id}`)).body.lastError.message).toBe(said);
      const logs = (await s.call('/history/logs?limit=100')).body.result as Array<{ streamId: string; errorMessage: string }>;
      expect(logs.find((l) => l.streamId === id)?.errorMessage).toBe(said);

      await stage(id, [2]);
      expect(await until(async () => (await history(id)).length === 2, 10_000)).toBe(true);
      const long = (await history(id)).find((h) => h.tinyPayload.block.number === '2')!;
      expect(long.errorMessage).toBe(`the receiver answered HTTP 500: ${'x'.repeat(RECEIVER_TEXT_MAX)}…`);
    } finally {
      rx.state.answer = () => 200;
      rx.state.answerText = (_r, status) => (status === 200 ? 'ok' : '');
    }
  });

  it("answers a stream's queue size, its URL's success rate and its last failed attempt; a stream with none: 0, 100 and null", async () => {
    const id = await stream('state');
    const fresh = await s.call(`/stats/${id}`);
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({ streamId: id, webhookUrl: `${rx.url}/state`, successRate: 100, queueSize: 0, lastError: null });

    rx.state.answer = (r) => (r.body.block.number === '3' ? 200 : 503);
    await stage(id, [1, 2, 3]);
    // Two fail and wait for their retries; the third (fresh queue, sent meanwhile) is delivered.
    // The receiver's answer reaches the server after the receiver counted the request: wait for the stats to have it.
    const delivered = async () => (await s.call(`/stats/${id}`)).body.totalWebhooksDelivered === 1;
    expect(await until(async () => (await history(id)).length === 2 && sentTo(id).length === 3 && (await delivered()), 10_000)).toBe(true);
    const records = await history(id);
    const st = await s.call(`/stats/${id}`);
    const newest = records.reduce((a, b) => (a.date > b.date ? a : b));
    expect(st.body).toMatchObject({
      streamId: id,
      totalWebhooksDelivered: 1,
      totalWebhooksFailed: 2,
      webhookUrl: `${rx.url}/state`,
      // The interface's rule: -1 a failure, +1 a success, at most 100.
      successRate: 99,
      queueSize: 2,
      lastError: { message: 'the receiver answered HTTP 503', at: newest.date, webhookUrl: `${rx.url}/state`, historyId: newest.id },
    });
    // The tenant's totals carry no stream's state.
    expect(Object.keys((await s.call('/stats')).body)).not.toContain('lastError');
  });

  it("replays every record of the stream not delivered yet, oldest first, from a path naming the stream; the same path with a record's id replays it alone", async () => {
    const id = await stream('all');
    const other = await stream('other');
    rx.state.answer = () => 500;
    await stage(id, [10, 11, 12]);
    await stage(other, [20]);
    expect(await until(async () => (await history(id)).length === 3 && (await history(other)).length === 1, 10_000)).toBe(true);
    expect((await s.call(`/stats/${id}`)).body.queueSize).toBe(3);

    rx.state.answer = () => 200;
    // Oldest first (UUID v7 ids).
    const records = (await history(id)).sort((x, y) => (x.id < y.id ? -1 : 1));
    const blockOf = new Map(records.map((h) => [h.id, h.tinyPayload.block.number]));
    const first = records[0]!.id;
    // One record by its id: the answer is that record's replay.
    const one = await s.call(`/history/replay/${first}`, { method: 'POST' });
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body).toMatchObject({ id: first, streamId: id, delivered: true, status: 200 });

    const sentBefore = sentTo(id).length;
    const all = await s.call(`/history/replay/${id}`, { method: 'POST' });
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body).toMatchObject({ streamId: id, replayed: 2, remaining: 0 });
    // The two left, oldest first, each delivered; the one delivered already is not sent again.
    expect(all.body.results.map((r: { id: string }) => r.id)).toEqual([records[1]!.id, records[2]!.id]);
    for (const r of all.body.results) expect(r).toMatchObject({ streamId: id, delivered: true, status: 200, errorMessage: '' });
    expect(
      sentTo(id)
        .slice(sentBefore)
        .map((w) => w.body.block.number),
    ).toEqual([blockOf.get(records[1]!.id), blockOf.get(records[2]!.id)]);
    expect((await history(id)).every((h) => h.delivered)).toBe(true);
    // Their retries are dropped: nothing waits.
    expect((await s.call(`/stats/${id}`)).body.queueSize).toBe(0);
    // The other stream's record is left as it was.
    expect((await history(other))[0]!.delivered).toBe(false);
    expect(sentTo(other)).toHaveLength(1);

    // Asked again: nothing left to replay.
    const again = await s.call(`/history/replay/${id}`, { method: 'POST' });
    expect(again.body).toEqual({ streamId: id, replayed: 0, remaining: 0, results: [] });
  });

  it("answers what the receiver said when a replay fails again, and 404 for an id naming neither a record nor a stream of the tenant's", async () => {
    const id = await stream('down');
    rx.state.answer = () => 500;
    await stage(id, [30]);
    expect(await until(async () => (await history(id)).length === 1, 10_000)).toBe(true);
    const r = await s.call(`/history/replay/${id}`, { method: 'POST' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ streamId: id, replayed: 1, remaining: 0 });
    expect(r.body.results[0]).toMatchObject({ delivered: false, status: 500, errorMessage: 'the receiver answered HTTP 500' });

    const none = await s.call('/history/replay/00000000-0000-4000-8000-000000000000', { method: 'POST' });
    expect(none.status).toBe(404);
    expect(none.body.message).toBe('no history record or stream 00000000-0000-4000-8000-000000000000');
    // Another tenant's stream: 404, nothing sent.
    const b = (await cliInProcess(['keys', 'create', '--name', 'tenant-b'], s.dir)).stdout.trim().split('\n').at(-1)!;
    const sent = sentTo(id).length;
    expect((await apiCaller(s.url, b)(`/history/replay/${id}`, { method: 'POST' })).status).toBe(404);
    expect(sentTo(id)).toHaveLength(sent);
  });

  it(`replays at most ${REPLAY_ALL_MAX} records a call, the oldest; the answer says how many are left`, async () => {
    const id = await stream('many');
    // Every other one fails: the URL's success rate stays near 100, so the stream stays active (below 70 it would not be sent to).
    rx.state.answer = (r) => (Number(r.body.block.number) % 2 === 0 ? 500 : 200);
    await stage(
      id,
      Array.from({ length: 2 * (REPLAY_ALL_MAX + 2) }, (_, i) => 1000 + i),
    );
    const failed = async () => (await s.call(`/stats/${id}`)).body.totalWebhooksFailed === REPLAY_ALL_MAX + 2;
    expect(await until(failed, 30_000)).toBe(true);
    rx.state.answer = () => 200;
    const first = await s.call(`/history/replay/${id}`, { method: 'POST' });
    expect(first.body).toMatchObject({ replayed: REPLAY_ALL_MAX, remaining: 2 });
    const second = await s.call(`/history/replay/${id}`, { method: 'POST' });
    expect(second.body).toMatchObject({ replayed: 2, remaining: 0 });
    const ids = [...first.body.results, ...second.body.results].map((r: { id: string }) => r.id);
    expect(new Set(ids).size).toBe(REPLAY_ALL_MAX + 2);
    expect([...ids].sort()).toEqual(ids);
  }, 60_000);
});
