import { keccak256, toBytes } from 'viem';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { streamKey } from '../../../../engine/delivery/dispatcher.js';
import { logRange, historyRange } from '../../../../engine/delivery/records.js';
import { purgeExpired, type Retention } from '../../../../engine/delivery/retention.js';
import { StreamsService } from '../../../../engine/streams/service.js';
import { evm } from '../../../../engine/evm/index.js';
import { counting } from '../../../kit/counting-kv.js';
import { until } from '../../../helpers.js';
import { startReceiver } from '../../../receiver.js';
import { evmDefinition as definition } from '../../../kit/evm-stream.js';
import { deliveryRig } from './rig.js';

/**
 * History and delivery logs over a real LMDB store and a real receiver on
 * loopback, on the service clock moved by hand: the body's bytes from enqueue
 * to replay, one signature per body sent, retention by range, the success-log
 * cap, and pages that read a page's worth of rows.
 */

// Every webhook signature starts a Keccak hash with keccak_256.create(): counted here.
const hashes = vi.hoisted(() => ({ n: 0 }));
vi.mock('@noble/hashes/sha3.js', async (importOriginal) => {
  const m = await importOriginal<typeof import('@noble/hashes/sha3.js')>();
  const counted = Object.assign((...a: Parameters<typeof m.keccak_256>) => m.keccak_256(...a), m.keccak_256, {
    create: (...a: Parameters<typeof m.keccak_256.create>) => {
      hashes.n++;
      return m.keccak_256.create(...a);
    },
  });
  return { ...m, keccak_256: counted };
});

const T0 = Date.parse('2026-11-23T00:00:00Z');
const DAY = 86_400_000;
const TENANT = 't_records';
const RULES: Retention = { historyMs: 7 * DAY, successLogMs: DAY, successLogMax: 1_000 };

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A webhook as the matcher builds it: `retries` in the middle, strings that JSON escapes, multi-byte characters. */
const payload = (n: number) => ({
  confirmed: false,
  chainId: '0x1',
  abi: [],
  retries: 0,
  block: { number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: '1795000000' },
  logs: [{ logIndex: '0', data: '0x', note: 'é 🚀 "quoted" \\ back\nslash' }],
  txs: [],
});

/** A stream's partition named by its URL's `p` (0 without one). */
const partitionByQuery = (_tenant: string, url: string): number => Number(new URL(url).searchParams.get('p') ?? 0);

async function engine(rx: Receiver, rules: Retention = RULES) {
  const { store, clock, dispatcher, close } = deliveryRig(T0, { retention: rules, partitionOf: partitionByQuery });
  const streams = new StreamsService({ kv: store, clock, dispatcher });
  const evmStreams = evm.resources({ kv: store, clock, dispatcher });
  const make = async (tag: string, query = ''): Promise<string> =>
    String((await evmStreams.create(TENANT, definition(`${rx.url}?${query || tag}`, tag), undefined)).id);
  const send = async (id: string, ns: number[]): Promise<void> => {
    await dispatcher.enqueueBatch(ns.map((n) => ({ streamId: id, payload: payload(n) })));
    await dispatcher.settled();
  };
  /** Rows really in a range, against its counter. */
  const rows = (r: { table: 'history' | 'deliveryLogs'; prefix: string }) =>
    store.count(r.table, { start: r.prefix, end: `${r.prefix}\uffff` });
  return { store, clock, dispatcher, streams, make, send, rows, close };
}

describe('delivery records', () => {
  let rx: Receiver;
  let e: Awaited<ReturnType<typeof engine>> | undefined;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());
  afterEach(async () => {
    await e?.close();
    e = undefined;
    rx.state.answer = () => 200;
  });

  it('keeps the body bytes from enqueue to POST, history and replay, and hashes each body sent once', async () => {
    e = await engine(rx);
    const before = rx.received.length;
    hashes.n = 0;
    const id = await e.make('bytes');
    const secret = (await e.streams.settings(TENANT)).secretKey;
    // The first try and its retry fail; the replay is answered.
    rx.state.answer = (r) => (r.body.streamId === id && rx.webhooks().filter((w) => w.body.streamId === id).length <= 2 ? 500 : 200);
    await e.send(id, [1]);
    await e.clock.advance(60_000);
    await e.dispatcher.settled();
    const h = e.streams.history(TENANT, 10, null, false).result[0]!;
    const replayed = await e.streams.replay(TENANT, h.id!);
    expect(replayed.delivered).toBe(true);

    const sent = rx.received.slice(before);
    const tries = sent.filter((r) => !r.test).map((r) => r.raw);
    const expected = (retries: number) => JSON.stringify({ ...payload(1), streamId: id, tag: 'bytes', retries });
    // The stored bytes with `retries` written in place: the very text JSON.stringify gives, key order kept.
    expect(tries).toEqual([expected(0), expected(1), expected(1)]);
    expect(JSON.stringify(h.payload)).toBe(tries[1]);
    expect(JSON.stringify(replayed.payload)).toBe(tries[1]);
    expect(h.tinyPayload).toMatchObject({ chainId: '0x1', retries: 1, records: 1, amount: 1, block: payload(1).block });
    for (const r of sent) expect(r.headers['x-signature']).toBe(keccak256(toBytes(r.raw + secret)));
    // One hash per POST: the test webhook, two tries and the replay.
    expect(sent).toHaveLength(4);
    expect(hashes.n).toBe(sent.length);
  });

  it('keeps the retry of a webhook whose replay failed, on its schedule', async () => {
    e = await engine(rx);
    const id = await e.make('replay-failed');
    rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
    await e.send(id, [1]);
    const h = e.streams.history(TENANT, 10, null, false).result[0]!;
    expect((await e.streams.replay(TENANT, h.id!)).delivered).toBe(false);
    expect(e.dispatcher.queueSize(id)).toBe(1);
    rx.state.answer = () => 200;
    await e.clock.advance(60_000);
    await e.dispatcher.settled();
    // The first try, the failed replay, and the retry a minute after the first try, delivered.
    expect(
      rx
        .webhooks()
        .filter((w) => w.body.streamId === id)
        .map((w) => w.body.retries),
    ).toEqual([0, 0, 1]);
    expect(e.dispatcher.queueSize(id)).toBe(0);
    expect(e.streams.history(TENANT, 10, null, false).result[0]).toMatchObject({ id: h.id, delivered: true });
  });

  it('lets a retry in flight when a replay delivers complete, and sends none after it', async () => {
    e = await engine(rx);
    const id = await e.make('replay-in-flight');
    const mine = () => rx.webhooks().filter((w) => w.body.streamId === id);
    // The retry (retries 1) is held on the wire and then refused; the first try fails, the replay is answered.
    rx.state.answer = (r) => (r.body.streamId === id && (r.body.retries === 1 || mine().length === 1) ? 500 : 200);
    rx.state.delay = (r) => (r.body.streamId === id && r.body.retries === 1 ? 300 : 0);
    try {
      await e.send(id, [1]);
      const h = e.streams.history(TENANT, 10, null, false).result[0]!;
      const retrying = e.clock.advance(60_000);
      expect(await until(() => mine().length === 2, 5_000)).toBe(true);
      expect((await e.streams.replay(TENANT, h.id!)).delivered).toBe(true);
      await retrying;
      await e.dispatcher.settled();
      // Past every later retry time.
      await e.clock.advance(DAY);
      await e.dispatcher.settled();
      expect(mine().map((w) => w.body.retries)).toEqual([0, 1, 0]);
      expect(e.dispatcher.queueSize(id)).toBe(0);
      // The retry's outcome rewrote the record, still delivered.
      expect(e.streams.history(TENANT, 10, null, false).result[0]).toMatchObject({
        id: h.id,
        delivered: true,
        tinyPayload: { retries: 1 },
      });
      expect(e.streams.stats(TENANT, id)).toMatchObject({ totalWebhooksFailed: 2, totalWebhooksDelivered: 0 });
    } finally {
      rx.state.delay = () => 0;
    }
  });

  it('removes expired logs and history by range on the service clock, with their counters', async () => {
    e = await engine(rx);
    const ok = await e.make('ok');
    const bad = await e.make('bad');
    rx.state.answer = (r) => (r.body.streamId === bad ? 500 : 200);
    await e.send(ok, [1, 2, 3]);
    await e.send(bad, [9]);
    const logs = () => e!.streams.logs(TENANT, 100, null);
    expect(logs().total).toBe(4);
    expect(e.streams.history(TENANT, 10, null, true).total).toBe(1);

    // A day on: the successes' logs have gone; the failed webhook's eight attempts and its record stay.
    await e.clock.advance(DAY + 60_000);
    await e.dispatcher.settled();
    expect(logs().total).toBe(3 + 8);
    expect(await e.dispatcher.purge()).toBe(3);
    const [s, f, h] = [logRange(TENANT, 0, 'success'), logRange(TENANT, 0, 'failed'), historyRange(TENANT, 0)];
    expect([e.rows(s), e.rows(f), e.rows(h)]).toEqual([0, 8, 1]);
    expect(logs().total).toBe(8);
    expect(logs().result.every((l) => l.deliveryStatus === 'failed')).toBe(true);

    // A week after the first failure: the record and the attempts older than a week go (attempts at 0 and 1 min).
    await e.clock.advance(6 * DAY + 60_000);
    await e.dispatcher.purge();
    expect([e.rows(f), e.rows(h)]).toEqual([6, 0]);
    expect(logs().total).toBe(6);
    expect(e.streams.history(TENANT, 10, null, true).total).toBe(0);
    await e.clock.advance(DAY);
    await e.dispatcher.purge();
    expect(logs().total).toBe(0);
    // No counter is left for empty ranges.
    expect(e.store.range('counts')).toEqual([]);

    // In batches: 5 expired rows, 2 per transaction.
    await e.send(ok, [10, 11, 12, 13, 14]);
    await e.clock.advance(DAY + 1);
    expect(await purgeExpired(e.store, e.clock.now(), RULES, 2)).toBe(5);
    expect(e.rows(s)).toBe(0);
    expect(logs().total).toBe(0);
  });

  it('keeps at most CHAINPOST_DELIVERY_LOG_MAX success logs per tenant, dropping the oldest', async () => {
    e = await engine(rx, { ...RULES, successLogMax: 5 });
    const id = await e.make('cap');
    for (let n = 0; n < 8; n++) {
      await e.send(id, [n]);
      await e.clock.advance(1); // one millisecond apart: ids in time order
    }
    const page = e.streams.logs(TENANT, 100, null);
    expect(page.total).toBe(5);
    expect(page.result.map((l) => l.blockNumber)).toEqual(['7', '6', '5', '4', '3']);
    expect(e.rows(logRange(TENANT, 0, 'success'))).toBe(5);
    expect(e.streams.stats(TENANT, id).totalWebhooksDelivered).toBe(8);
  });

  it('shares the success-log cap among the partitions holding a tenant’s logs, the purge bringing an older partition down to its share', async () => {
    e = await engine(rx, { ...RULES, successLogMax: 6 });
    const ranges = [0, 1, 2].map((p) => logRange(TENANT, p, 'success'));
    const first = await e.make('share-0', 'p=0');
    for (let n = 0; n < 8; n++) await e.send(first, [n]);
    // Alone, the tenant's one partition keeps the whole cap.
    expect(e.rows(ranges[0]!)).toBe(6);
    const second = await e.make('share-1', 'p=1');
    const third = await e.make('share-2', 'p=2');
    for (let n = 0; n < 8; n++) await e.send(second, [100 + n]);
    for (let n = 0; n < 8; n++) await e.send(third, [200 + n]);
    // Each partition keeps the share it had at its last write (the second 6 / 2, the third 6 / 3), the first its 6
    // until the purge.
    expect(ranges.map((r) => e!.rows(r))).toEqual([6, 3, 2]);
    await purgeExpired(e.store, e.clock.now(), { ...RULES, successLogMax: 6 });
    expect(ranges.map((r) => e!.rows(r))).toEqual([2, 2, 2]);
    expect(e.streams.logs(TENANT, 100, null).total).toBe(6);
    // Each keeps its newest.
    expect(
      e.streams
        .logs(TENANT, 100, null)
        .result.map((l) => l.blockNumber)
        .sort(),
    ).toEqual(['106', '107', '206', '207', '6', '7']);
  });

  it('goes on from a cursor whose partition’s range was purged empty since, over the ranges left', async () => {
    e = await engine(rx);
    rx.state.answer = () => 500;
    const older = await e.make('gone-1', 'p=1');
    const newer = await e.make('gone-0', 'p=0');
    await e.send(older, [1, 2]);
    await e.clock.advance(1);
    await e.send(newer, [3]);
    const blocks = (page: { result: Array<{ payload?: unknown }> }): string[] =>
      page.result.map((h) => (h.payload as { block: { number: string } }).block.number);
    const first = e.streams.history(TENANT, 1, null, false);
    expect(blocks(first)).toEqual(['3']);
    // Partition 0's range emptied (as a purge does: its rows and its counter) before the next page is asked.
    const gone = historyRange(TENANT, 0);
    e.store.transact(() => {
      e!.store.removeRange('history', { start: gone.prefix, end: `${gone.prefix}\uffff`, limit: 100 });
      e!.store.remove('counts', `history/${gone.prefix}`);
    });
    expect(blocks(e.streams.history(TENANT, 10, first.cursor!, false))).toEqual(['2', '1']);
  });

  it('pages history and logs newest first reading a page of rows, never counting the range', async () => {
    e = await engine(rx);
    const ok = await e.make('page-ok');
    const bad = await e.make('page-bad');
    rx.state.answer = (r) => (r.body.streamId === bad ? 500 : 200);
    const N = 25; // 25 failures leave the URL at 75%: still active
    await e.send(
      ok,
      Array.from({ length: N }, (_, i) => i),
    );
    await e.send(
      bad,
      Array.from({ length: N }, (_, i) => 100 + i),
    );
    const c = counting(e.store);
    const view = new StreamsService({ kv: c.kv, clock: e.clock, dispatcher: e.dispatcher });
    const LIMIT = 10;
    for (const [list, total, ranges] of [
      ['history', N, 1],
      ['logs', 2 * N, 2],
    ] as const) {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        c.reset();
        const p: { result: Array<{ id?: string }>; total: number; cursor?: string } =
          list === 'history' ? view.history(TENANT, LIMIT, cursor, true) : view.logs(TENANT, LIMIT, cursor);
        // limit + 2 rows of each range at most, and one counter per range.
        expect(c.reads(), list).toBeLessThanOrEqual(ranges * (LIMIT + 2) + ranges);
        expect(p.total).toBe(total);
        ids.push(...p.result.map((r) => r.id!));
        cursor = p.cursor ?? null;
      } while (cursor !== null);
      expect(ids, list).toHaveLength(total);
      expect([...ids].sort().reverse(), list).toEqual(ids);
    }
  });

  it('stops sending at the 31st failure in a row, however often the stream is read meanwhile', async () => {
    e = await engine(rx);
    const id = await e.make('error-race');
    rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
    try {
      // Read the stream each event-loop turn, as a block's webhooks do: a read between an outcome's transaction
      // and its commit must not leave the dispatcher sending as if it were still active.
      let reading = true;
      const read = (): void => {
        if (!reading) return;
        void e!.dispatcher.prepare([{ streamId: id, payload: payload(0) }]);
        setImmediate(read);
      };
      read();
      await e.send(
        id,
        Array.from({ length: 45 }, (_, i) => i),
      );
      reading = false;
      expect(rx.webhooks().filter((w) => w.body.streamId === id && w.body.chainId === '0x1')).toHaveLength(31);
      expect(e.store.get<{ status: string }>('streams', streamKey(TENANT, id))?.status).toBe('error');
    } finally {
      rx.state.answer = () => 200;
    }
  });
});
