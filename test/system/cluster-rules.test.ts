import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../../http/clients/anvil.js';
import { startNatsServer, type NatsServer } from '../kit/nats-server.js';
import { advance, startBinary, stopAndClean, tempDir, until, type RunningBinary } from '../helpers.js';
import { startReceiver, startSmtp, type Received } from '../receiver.js';
import { settled, splitOf, tenantOfStreams, urlIn } from './cluster-kit.js';

/**
 * The delivery rules across an owner's death (docs/decisions/cluster.md, "rules across a kill"): two nodes (the built binary) started
 * together on one nats-server, following anvil, on the test clock. The streams deliver to URLs of partitions node A
 * owns once the split settled (the test finds them from the tenant, read off the control log, and the URL); A stages
 * and attempts their webhooks, then is killed (-9), and node B takes its partitions over from the partition log.
 * On B, as in one process (test/streams.test.ts):
 * - a URL whose success rate A left at 71 % stays active at the next failure (70 %) and puts every stream of that
 *   URL in error at the one after (69 %), a stream with nothing queued too; one set active again resumes the retries
 *   A scheduled;
 * - a webhook that failed twice on A is retried at the instant A scheduled (10 minutes of service time later), with
 *   the `webhook-id` A minted when it staged it;
 * - a stream A left one webhook below the queue's cap (10,000) goes to error at the next webhook B stages, and keeps
 *   the next one in history; one A left at its cap stays in error, keeps the next in history, and once set active
 *   B delivers its 10,000 in order: none beyond the cap queued, none below it lost;
 * - streams A put in error are terminated 24 hours after the instant they entered it on A;
 * - one e-mail per stream entering error, from the node that decided it, and one per stream terminated; the alert of
 *   a stream A put in error, whose e-mail A had not sent when killed (held at the SMTP server), sent by B.
 * A second case, on a bus of its own: streams put in error by their owner while the bus is down are shown in error on
 * the other node once it is back, and stay so there after the owner is killed.
 */

const CHAIN = '0x539';
const TTL_MS = 1_500;
const KEY = 'cpk_cluster_rules_0123456789abcdefXYZ';
const CAP = 10_000;

let nats: NatsServer;
let anvil: Anvil;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let a: RunningBinary;
let b: RunningBinary;
/** The second case's bus and nodes. */
let nats2: NatsServer | undefined;
let c: RunningBinary | undefined;
let d: RunningBinary | undefined;

const env = (bus = nats, ttlMs = TTL_MS): Record<string, string> => ({
  CHAINPOST_NATS: bus.url,
  CHAINPOST_CHAINS: `${CHAIN}=${anvil.url}`,
  CHAINPOST_API_KEY: KEY,
  CHAINPOST_LEASE_TTL_MS: String(ttlMs),
  CHAINPOST_CONFIRMATIONS: `${CHAIN}=1`,
  CHAINPOST_POLL_MS: '50',
  CHAINPOST_RATE_LIMIT: '0',
  CHAINPOST_TEST_CLOCK: '1',
  CHAINPOST_METRICS_STREAMS: '1',
  CHAINPOST_SMTP_URL: smtp.url,
  CHAINPOST_ALERT_EMAIL: 'ops@example.org',
});

const block = (n: number) => ({ number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: String(1_795_000_000 + n) });
const webhook = (n: number) => ({ confirmed: false, chainId: CHAIN, abi: [], block: block(n), logs: [], txs: [], txsInternal: [] });

/** Hands webhooks to the node's delivery as a block's matches are (the test clock's admin route); answers their fates. */
async function enqueue(n: RunningBinary, items: Array<{ streamId: string; payload: unknown }>): Promise<string[]> {
  const r = await n.call('/admin/webhooks', { method: 'POST', json: { webhooks: items } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.results as string[];
}
const blocks = (streamId: string, from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({ streamId, payload: webhook(from + i) }));

const make = async (n: RunningBinary, webhookUrl: string): Promise<string> => {
  const made = await n.call('/streams/evm', { method: 'PUT', json: { webhookUrl, chainIds: [CHAIN], tag: webhookUrl.slice(-8) } });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return made.body.id as string;
};
const statusOf = async (n: RunningBinary, id: string): Promise<{ status: string; statusMessage: string }> =>
  (await n.call(`/streams/evm/${id}`)).body;
/** The node's failed-delivery records of `ids`. */
const historyOf = async (n: RunningBinary, ids: readonly string[]): Promise<Array<Record<string, any>>> =>
  ((await n.call('/history?limit=100&excludePayload=true')).body.result as Array<Record<string, any>>).filter((h) =>
    ids.includes(h.streamId),
  );
/** The stream's x-queue-size as the node's /metrics says it. */
const queuedOn = async (n: RunningBinary, id: string): Promise<number> => {
  const line = ((await n.call('/metrics')).body as string)
    .split('\n')
    .find((l) => l.startsWith(`chainpost_stream_webhooks_queued{stream="${id}"}`));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
};
const serviceNow = async (n: RunningBinary): Promise<number> => Date.parse((await n.call('/admin/clock')).body.now);

beforeAll(async () => {
  [nats, anvil, rx, smtp] = await Promise.all([startNatsServer(), startAnvil({ chainId: 1337 }), startReceiver(), startSmtp()]);
  [a, b] = await Promise.all([startBinary(env(), tempDir()), startBinary(env(), tempDir())]);
}, 60_000);

afterAll(async () => {
  await stopAndClean(a);
  await stopAndClean(b);
  await stopAndClean(c);
  await stopAndClean(d);
  await nats2?.close();
  await rx?.close();
  await smtp?.close();
  await anvil?.stop();
  await nats?.close();
});

describe('the delivery rules across a kill: two nodes (the built binary) on one nats-server', () => {
  it("keeps the success rate, a retry's instant and the queue's cap on the node that takes a killed owner's partitions", async () => {
    // Both nodes up: the partitions split between them by the plan, each adopted, the split the same a lease TTL on.
    const ofA = await splitOf(a, b, TTL_MS);

    // URLs of partitions A owns: the tenant (from the control log) and the URL hash to one.
    const probe = await make(a, `${rx.url}/probe`);
    const tenant = await tenantOfStreams(nats);
    const onA = (name: string) => urlIn(ofA, tenant, `${rx.url}/${name}`);
    const [retryUrl, capUrl, fullUrl, rateUrl, goneUrl] = [
      await onA('retry'),
      await onA('cap'),
      await onA('full'),
      await onA('rate'),
      await onA('gone'),
    ];
    expect((await a.call(`/streams/evm/${probe}`, { method: 'DELETE' })).status).toBe(200);

    const retryStream = await make(a, retryUrl);
    const capStream = await make(a, capUrl);
    const fullStream = await make(a, fullUrl);
    const rateStreams = [await make(a, rateUrl), await make(a, rateUrl), await make(a, rateUrl), await make(b, rateUrl)];
    const goneStreams = [await make(a, goneUrl), await make(b, goneUrl)];
    // Written through the control log: each node answers once it applied its own; the other applies them soon after.
    const all = [retryStream, capStream, fullStream, ...rateStreams, ...goneStreams];
    for (const n of [a, b])
      expect(
        await until(
          async () => (await Promise.all(all.map((id) => n.call(`/streams/evm/${id}`)))).every((r) => r.status === 200),
          10_000,
          50,
        ),
      ).toBe(true);
    const urlOf = (r: Received): string | undefined => {
      const id = r.body?.streamId;
      if (id === retryStream) return retryUrl;
      if (id === capStream) return capUrl;
      if (id === fullStream) return fullUrl;
      return rateStreams.includes(id) ? rateUrl : goneStreams.includes(id) ? goneUrl : undefined;
    };
    // The cap's stream is held unanswered (so its success rate cannot put it in error first), until released.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    rx.state.answer = (r) => (urlOf(r) === undefined ? 200 : 500);
    rx.state.delay = (r) => (urlOf(r) === capUrl || urlOf(r) === fullUrl ? held : 0);
    const mine = (id: string) => rx.webhooks().filter((w) => w.body.streamId === id);

    // Streams that entered error on A: their URL's 31st failure in a row. B shows them in error (the control log).
    await enqueue(a, [...blocks(goneStreams[0]!, 1, 16), ...blocks(goneStreams[1]!, 1, 15)]);
    expect(
      await until(async () => (await Promise.all(goneStreams.map((id) => statusOf(b, id)))).every((s) => s.status === 'error'), 15_000, 50),
    ).toBe(true);
    const erredAt = Date.parse(/terminated 24 hours after (\S+)\./.exec((await statusOf(b, goneStreams[0]!)).statusMessage)![1]!);

    // A retry scheduled on A: the webhook fails at once and again a minute later (both clocks moved alike), so its
    // next retry is due 10 minutes after that, as A's log says.
    expect(await enqueue(a, blocks(retryStream, 1, 1))).toEqual(['queued']);
    expect(await until(async () => (await historyOf(a, [retryStream])).length === 1, 10_000, 50)).toBe(true);
    await Promise.all([advance(a, 60), advance(b, 60)]);
    expect(mine(retryStream).map((w) => w.body.retries)).toEqual([0, 1]);
    const failures = () =>
      a
        .output()
        .split('\n')
        .filter((l) => l.includes('"msg":"webhook delivery failed"') && l.includes(retryStream))
        .map((l) => JSON.parse(l) as { attempt: number; nextRetryAt: string });
    expect(await until(() => failures().length === 2, 5_000, 50)).toBe(true);
    const dueAt = Date.parse(failures()[1]!.nextRetryAt);
    // Published: B applied the record of its second failure.
    expect(await until(async () => (await historyOf(b, [retryStream]))[0]?.tinyPayload?.retries === 1, 10_000, 50)).toBe(true);

    // A queue one webhook below the cap on A: each batch answered once durable in the partition's log.
    const capAt = performance.now();
    const fill = async (id: string, count: number) => {
      // (In requests under the 1 MB a request body may hold.)
      for (let from = 1; from <= count; from += 2_500)
        expect((await enqueue(a, blocks(id, from, Math.min(2_500, count + 1 - from)))).every((r) => r === 'queued')).toBe(true);
    };
    await fill(capStream, CAP - 1);
    const capMs = performance.now() - capAt;
    // Another at its cap on A: in error there. Its alert's e-mail is held at the SMTP server until A is killed (then
    // refused): B, taking the partition, sends it.
    let killed!: () => void;
    const afterKill = new Promise<void>((resolve) => (killed = resolve));
    let fullHeld = false;
    smtp.state.hold = (data) => {
      // (A's e-mail alone: B's is answered.)
      if (fullHeld || !data.includes(`stream ${fullStream} is in error`)) return undefined;
      fullHeld = true;
      return afterKill;
    };
    await fill(fullStream, CAP);
    expect((await statusOf(a, fullStream)).statusMessage).toMatch(/queue of undelivered webhooks reached 10000/);
    expect((await statusOf(a, capStream)).status).toBe('active');

    // The rate's URL at 71 % on A: 29 failures over three of its four streams, recorded and published.
    await enqueue(a, [...blocks(rateStreams[0]!, 1, 10), ...blocks(rateStreams[1]!, 1, 10), ...blocks(rateStreams[2]!, 1, 9)]);
    expect(await until(async () => (await historyOf(b, rateStreams)).length === 29, 15_000, 50)).toBe(true);
    for (const id of rateStreams) expect((await statusOf(b, id)).status).toBe('active');

    // A is killed, its alert's e-mail unanswered: B takes and adopts every partition.
    expect(await until(() => fullHeld, 10_000, 20)).toBe(true);
    await a.stop('SIGKILL');
    killed();
    const killedAt = performance.now();
    expect(await until(() => settled([b]), 8 * TTL_MS, 20)).toBe(true);
    const adoptedMs = performance.now() - killedAt;

    // The success rate: the next failure leaves it at 70 % (every stream active), the one after puts every stream of
    // the URL in error, the one with nothing queued too.
    expect(await enqueue(b, blocks(rateStreams[0]!, 100, 1))).toEqual(['queued']);
    expect(await until(async () => (await historyOf(b, rateStreams)).length === 30, 10_000, 50)).toBe(true);
    for (const id of rateStreams) expect((await statusOf(b, id)).status, 'at 70 %').toBe('active');
    expect(await enqueue(b, blocks(rateStreams[1]!, 100, 1))).toEqual(['queued']);
    expect(
      await until(async () => (await Promise.all(rateStreams.map((id) => statusOf(b, id)))).every((s) => s.status === 'error'), 10_000, 50),
    ).toBe(true);
    for (const id of rateStreams) expect((await statusOf(b, id)).statusMessage).toMatch(/success rate of .* fell to 69%, below 70%/);
    // In error nothing is sent; a new webhook goes straight to history.
    expect(await enqueue(b, blocks(rateStreams[2]!, 200, 1))).toEqual(['history']);

    // The cap: B's queue of the stream is A's, 9,999 (its next POST says so); the 10,000th puts the stream in
    // error, the 10,001st is kept in history, not queued.
    expect(await queuedOn(b, capStream)).toBe(CAP - 1);
    expect(await until(() => mine(capStream).length >= 2, 10_000, 50)).toBe(true);
    expect(mine(capStream).at(-1)!.headers['x-queue-size']).toBe(String(CAP - 1));
    expect(mine(capStream).at(-1)!.body.block.number).toBe('1');
    expect(await enqueue(b, blocks(capStream, CAP, 1))).toEqual(['queued']);
    const capped = await statusOf(b, capStream);
    expect(capped.status).toBe('error');
    expect(capped.statusMessage).toMatch(/queue of undelivered webhooks reached 10000/);
    expect(await enqueue(b, blocks(capStream, CAP + 1, 1))).toEqual(['history']);
    expect(await queuedOn(b, capStream)).toBe(CAP);

    // The queue A left at its cap: in error on B, nothing sent, the next webhook kept in history, none queued beyond it.
    const fullBefore = mine(fullStream).length;
    expect((await statusOf(b, fullStream)).status).toBe('error');
    expect(await queuedOn(b, fullStream)).toBe(CAP);
    expect(await enqueue(b, blocks(fullStream, CAP + 1, 1))).toEqual(['history']);
    expect(await queuedOn(b, fullStream)).toBe(CAP);
    release();
    // None lost below it: set active again, B delivers each of the 10,000, in order, and the queue empties.
    rx.state.answer = (r) => (urlOf(r) === fullUrl || urlOf(r) === undefined ? 200 : 500);
    expect((await b.call(`/streams/evm/${fullStream}/status`, { method: 'POST', json: { status: 'active' } })).status).toBe(200);
    const drainAt = performance.now();
    expect(await until(async () => (await queuedOn(b, fullStream)) === 0, 150_000, 200)).toBe(true);
    const drainMs = performance.now() - drainAt;
    const sent = mine(fullStream)
      .slice(fullBefore)
      .map((w) => Number(w.body.block.number));
    expect(sent).toEqual(Array.from({ length: CAP }, (_, i) => i + 1));

    // The retry: not before the instant A scheduled, and at it, on B.
    rx.state.answer = () => 200;
    const now = await serviceNow(b);
    expect(dueAt - now).toBeGreaterThan(60_000);
    await advance(b, Math.floor((dueAt - now) / 1000) - 5);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(mine(retryStream).map((w) => w.body.retries)).toEqual([0, 1]);
    await advance(b, 10);
    expect(await until(() => mine(retryStream).length === 3, 5_000, 50)).toBe(true);
    expect(mine(retryStream).map((w) => w.body.retries)).toEqual([0, 1, 2]);
    // Its id, minted when A staged it, the same on B's attempt.
    expect(new Set(mine(retryStream).map((w) => w.headers['webhook-id'])).size).toBe(1);
    expect(mine(retryStream)[0]!.headers['webhook-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(await until(async () => (await historyOf(b, [retryStream]))[0]?.delivered === true, 5_000, 50)).toBe(true);

    // One of the URL's streams set active again: its URL starts over at 100 % and the retries A scheduled resume (due by
    // now), each delivered; the others stay in error.
    expect((await b.call(`/streams/evm/${rateStreams[0]}/status`, { method: 'POST', json: { status: 'active' } })).status).toBe(200);
    const resumed = () => mine(rateStreams[0]!).filter((w) => w.body.retries === 1);
    expect(await until(() => resumed().length === 11, 10_000, 50)).toBe(true);
    expect(await until(async () => (await queuedOn(b, rateStreams[0]!)) === 0, 5_000, 50)).toBe(true);

    // The streams A put in error are terminated on B 24 hours after the instant they entered it on A, not later.
    await advance(b, Math.floor((erredAt + 24 * 3_600_000 - (await serviceNow(b))) / 1000) - 5);
    for (const id of goneStreams) expect((await statusOf(b, id)).status, 'just before 24 hours in error').toBe('error');
    await advance(b, 10);
    for (const id of goneStreams) expect((await statusOf(b, id)).status, '24 hours in error').toBe('terminated');
    for (const id of rateStreams.slice(1)) expect((await statusOf(b, id)).status, 'in error since after the kill').toBe('error');
    // One e-mail per stream entering error, from the node that decided it (A, or B after the kill; B for the one A
    // was killed sending), none again on the other; one per stream terminated.
    const inError = [...goneStreams, fullStream, ...rateStreams, capStream];
    const mails = () => smtp.mails.filter((m) => m.to.includes('ops@example.org'));
    const erredMails = () =>
      mails()
        .map((m) => /Subject: chainpost: stream (\S+) is in error/.exec(m.data)?.[1])
        .filter((id) => id !== undefined);
    // (Waited for, then compared: a failure names the streams whose e-mail is missing.)
    await until(() => erredMails().length >= inError.length, 10_000, 50);
    expect(erredMails().sort()).toEqual([...inError].sort());
    const ended = () => mails().filter((m) => /stayed in error for 24 hours/.test(m.data));
    expect(await until(() => ended().length >= goneStreams.length, 10_000, 50)).toBe(true);
    for (const id of goneStreams) expect(ended().filter((m) => m.data.includes(id))).toHaveLength(1);
    expect(ended()).toHaveLength(goneStreams.length);
    console.log(
      `cluster-rules: ${CAP - 1} webhooks staged on A in ${capMs.toFixed(0)} ms; B adopted every partition ${adoptedMs.toFixed(0)} ms after the kill; B delivered the ${CAP} of the queue A left at its cap in ${drainMs.toFixed(0)} ms`,
    );
  }, 240_000);

  it("shares a stream's error its owner decided while the bus was down: the other node shows it, and keeps it once the owner is killed", async () => {
    // Its own bus, with a lease TTL longer than the outage (a lease lost would take the unit back).
    await stopAndClean(b);
    const ttlMs = 6_000;
    nats2 = await startNatsServer();
    [c, d] = await Promise.all([startBinary(env(nats2, ttlMs), tempDir()), startBinary(env(nats2, ttlMs), tempDir())]);
    const [owner, other] = [c, d];
    const ofC = await splitOf(owner, other, ttlMs);
    const probe = await make(owner, `${rx.url}/probe`);
    const url = await urlIn(ofC, await tenantOfStreams(nats2), `${rx.url}/outage`);
    expect((await owner.call(`/streams/evm/${probe}`, { method: 'DELETE' })).status).toBe(200);
    const streams = [await make(owner, url), await make(other, url)];
    for (const n of [owner, other])
      expect(
        await until(
          async () => (await Promise.all(streams.map((id) => n.call(`/streams/evm/${id}`)))).every((r) => r.status === 200),
          10_000,
          50,
        ),
      ).toBe(true);
    // Its URL at 70 %: 30 failures, recorded and published.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    rx.state.answer = (r) => (streams.includes(r.body?.streamId) ? 500 : 200);
    rx.state.delay = () => 0;
    await enqueue(owner, blocks(streams[0]!, 1, 30));
    expect(await until(async () => (await historyOf(other, streams)).length === 30, 15_000, 50)).toBe(true);
    // The 31st is held at the receiver while the bus goes down; answered 500 then, it puts both streams in error on
    // the owner, whose state cannot reach the control log then.
    rx.state.delay = (r) => (streams.includes(r.body?.streamId) ? held : 0);
    const got = rx.webhooks().length;
    await enqueue(owner, blocks(streams[0]!, 31, 1));
    expect(await until(() => rx.webhooks().length > got, 10_000, 20)).toBe(true);
    await nats2.stop('kill');
    release();
    expect(
      await until(async () => (await Promise.all(streams.map((id) => statusOf(owner, id)))).every((s) => s.status === 'error'), 10_000, 20),
    ).toBe(true);
    const erred = await statusOf(owner, streams[1]!);
    await nats2.start();
    // Back: the other node shows both in error, as the owner decided (its instant too).
    expect(
      await until(
        async () => (await Promise.all(streams.map((id) => statusOf(other, id)))).every((s) => s.status === 'error'),
        20_000,
        100,
      ),
    ).toBe(true);
    expect((await statusOf(other, streams[1]!)).statusMessage).toBe(erred.statusMessage);
    expect(await until(async () => (await historyOf(other, streams)).length === 31, 10_000, 50)).toBe(true);
    // The owner killed, the other takes its partitions: the streams stay in error, a new webhook is kept in history.
    await owner.stop('SIGKILL');
    expect(await until(() => settled([other]), 8 * ttlMs, 50)).toBe(true);
    for (const id of streams) expect((await statusOf(other, id)).status).toBe('error');
    expect(await enqueue(other, blocks(streams[1]!, 32, 1))).toEqual(['history']);
  }, 120_000);
});
