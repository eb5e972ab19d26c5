/**
 * npm run soak — 30 minutes (SOAK_MINUTES) of 1,000 webhooks/s (SOAK_RATE) through the
 * real server (bin/chainpost.js, LMDB in a temp dir, loopback) to real receivers in
 * another process, 10 % of them failing (500) or hanging (no answer: the 10-s
 * delivery timeout). Not in CI, not in vitest.
 *
 * Webhooks go in through the test clock's admin route (POST /admin/webhooks: the engine
 * function the matcher calls, staged as a block's matches are, CHAINPOST_STAGE_CHUNK to a transaction; the same enqueue,
 * queue, dispatcher, sender and records as a matched block's), a webhook for each of
 * the 1,000 streams every second, not from a followed chain: a devnet cannot make 1,000 matched
 * webhooks a second on 2 cores beside the server and the receivers.
 *
 * While it runs: server RSS and open fds from /proc, event-loop delay from the
 * server's /metrics, webhooks delivered per second and queue depths, every 5 s.
 * The streams of failing and hanging receivers are set active again each minute
 * once in error, so 10 % of the streams keep failing the whole run; each time one
 * enters error, the attempts since it was set active must be exactly 31 (the 70 %
 * rule). At the end, on the same server: every webhook of a healthy stream
 * received exactly once and in order; retries never early and numbered one by one;
 * and on the test clock, four probe streams: the retry schedule to the millisecond
 * of the server's records, a no-answer retried the same way, the success rate's
 * 31st failure, the queue cap's 10,000th webhook, and error → terminated at 24 h
 * for every stream in error. Exit code 0 only if every goal holds.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  SPEC_DELIVERY_TIMEOUT_MS as DELIVERY_TIMEOUT_MS,
  SPEC_ERROR_BELOW as ERROR_BELOW,
  SPEC_ERROR_TO_TERMINATED_MS as ERROR_TO_TERMINATED_MS,
  SPEC_GIVE_UP_AFTER_MS as GIVE_UP_AFTER_MS,
  SPEC_QUEUE_CAP as QUEUE_CAP,
  SPEC_RETRY_SCHEDULE_MS as RETRY_SCHEDULE_MS,
  SPEC_START_RATE as START_RATE,
} from './soak-spec.js';
import { cpuMs, startProcess, type Started, until } from '../test/kit/proc.js';
import { BIN, percentile, report, round } from './report.js';
import type { Counts } from './soak-receiver.js';
import { storeBreakdown, type TableSize } from './store-breakdown.js';

const MINUTES = Number(process.env['SOAK_MINUTES'] ?? 30);
const RATE = Number(process.env['SOAK_RATE'] ?? 1_000);
const STREAMS = 1_000;
/** 5 % failing (500) and 5 % hanging receivers: the first streams. */
const FAILING = STREAMS / 20;
const HANGING = STREAMS / 20;
/** One admin call (staged as a block's matches are) every this long: a block a second matching every stream once; calls in flight at most. */
const TICK_MS = 1_000;
const PER_CALL = (RATE * TICK_MS) / 1000;
/** Calls in flight name disjoint streams: two calls with the same stream may be answered in either order. */
const MAX_CALLS_IN_FLIGHT = Math.max(1, Math.floor(STREAMS / PER_CALL));
const SAMPLE_MS = 5_000;
/** Samples printed: one in this many. */
const PRINT_EVERY = 6;
const RESUME_MS = 60_000;
/** The first 10 % of the run: RSS, fds and event-loop delay are judged after it. */
const WARMUP = 0.1;
/** Open fds may move with the hanging receivers' and the pools' connections; more than this above the warm-up's is a leak. */
const FD_TOLERANCE = 16;
/** Failures that take a URL's success rate from 100 below 70. */
const FAILURES_TO_ERROR = START_RATE - ERROR_BELOW + 1;
/** The server's late deliveries and the test clock's real-time drift between two reads stay within this. */
const CLOCK_SLOP_MS = 2_000;
/** The whole run stops by itself after the load plus this (drain, probes, 2 days of test clock). */
const END_PHASE_LIMIT_MS = 25 * 60_000;
/** The healthy streams' backlog at the load's end must be delivered within this. */
const DRAIN_LIMIT_MS = 10 * 60_000;
const KEY = 'cpk_bench_soak_key_0123456789abcdef';
/** The operator's credential: the admin routes (the test clock, the enqueue) take it besides the key. */
const ADMIN_KEY = 'bench_soak_admin_key_0123456789';
const HOUR = 3_600_000;

type Kind = 'ok' | 'fail' | 'hang';
const kindOf = (i: number): Kind => (i < FAILING ? 'fail' : i < FAILING + HANGING ? 'hang' : 'ok');

/** A webhook of the soak: one transfer, about a block's webhook for one wallet. */
const payload = (n: number): Record<string, unknown> => ({
  confirmed: false,
  chainId: '0x1',
  block: { number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: String(1_795_000_000 + n) },
  logs: [],
  txs: [
    {
      hash: `0x${(n + 1).toString(16).padStart(64, 'a')}`,
      fromAddress: '0x'.padEnd(42, '1'),
      toAddress: '0x'.padEnd(42, '2'),
      value: '1000000000000000',
      gas: '21000',
      gasPrice: '1000000000',
      receiptStatus: '1',
    },
  ],
  txsInternal: [],
});

interface Sample {
  t: number;
  rssMb: number;
  rssAnonMb: number;
  rssFileMb: number;
  /** V8's heap in use and the memory outside it (buffers), from the server's /metrics. */
  heapMb: number;
  externalMb: number;
  fds: number;
  loopP99Ms: number;
  loopMaxMs: number;
  delivered: number;
  failed: number;
  queued: number;
  maxStreamQueued: number;
  /** CPU time the server has used since it started, ms (all its threads). */
  cpuMs: number;
}

const failures: string[] = [];
const check = (ok: boolean, what: string): boolean => {
  if (!ok) failures.push(what);
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  return ok;
};
/** 31st, 30th, 10000th. */
const ordinal = (n: number): string => `${n}${n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th')}`;

/** VmRSS, RssAnon and RssFile of a live process, MB. */
function rss(pid: number): { rssMb: number; rssAnonMb: number; rssFileMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: round(kb('VmRSS') / 1024, 1), rssAnonMb: round(kb('RssAnon') / 1024, 1), rssFileMb: round(kb('RssFile') / 1024, 1) };
}

/** The samples of one metric from Prometheus text, by their labels' text. */
function metric(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm');
  for (const m of text.matchAll(re)) out.set(m[1] ?? '', Number(m[2]));
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'chainpost-soak-'));
const receiver = await startProcess([fileURLToPath(new URL('./soak-receiver.js', import.meta.url))], {});
const ports = JSON.parse(/\{"msg":"listening".*\}/.exec(receiver.output())![0]) as { port: number; fail: number; hang: number };
const rx = (kind: Kind, path: string): string => `http://127.0.0.1:${kind === 'ok' ? ports.port : ports[kind]}${path}`;
let server: Started | undefined;
/** Ends the run at once with the processes it started and its data directory. */
const abort = (why: string, code: number): never => {
  console.log(`soak: ${why}; stopping`);
  server?.child.kill('SIGKILL');
  receiver.child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  process.exit(code);
};
// The run stops by itself, whatever happens: the load's length plus the end phase's; and on Ctrl-C.
setTimeout(() => abort('over its time limit', 2), MINUTES * 60_000 + END_PHASE_LIMIT_MS).unref();
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => abort(`${signal} received`, 130));

// SOAK_SERVER_FLAGS: node flags for the server alone (say --cpu-prof --cpu-prof-dir=/tmp/prof; NODE_OPTIONS refuses --cpu-prof).
const serverFlags = (process.env['SOAK_SERVER_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
server = await startProcess([...serverFlags, BIN, 'serve'], {
  CHAINPOST_DATA: dir,
  CHAINPOST_PORT: '0',
  CHAINPOST_API_KEY: KEY,
  CHAINPOST_ADMIN_KEY: ADMIN_KEY,
  CHAINPOST_CHAINS: 'none',
  CHAINPOST_TEST_CLOCK: '1',
  CHAINPOST_METRICS_STREAMS: '1',
  CHAINPOST_RATE_LIMIT: '0',
  CHAINPOST_MAX_STREAMS: String(STREAMS + 4),
  CHAINPOST_PRIVATE_TARGETS: 'allow',
});
const pid = server.child.pid!;
// What the server prints is not kept (its warn lines for every failed attempt would pile up here); an error line is.
server.child.stdout!.removeAllListeners('data');
server.child.stderr!.removeAllListeners('data');
const serverErrors: string[] = [];
for (const stream of [server.child.stdout!, server.child.stderr!]) {
  stream.on('data', (c: Buffer) => {
    for (const line of c.toString().split('\n')) if (line.includes('"level":"error"') && serverErrors.length < 20) serverErrors.push(line);
  });
}
const base = `http://127.0.0.1:${server.port}`;

async function api(method: string, path: string, json?: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-api-key': KEY, 'x-admin-key': ADMIN_KEY, 'content-type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}
const enqueue = async (id: string, webhooks: Array<Record<string, unknown>>): Promise<string[]> =>
  (await api('POST', `/admin/streams/${id}/webhooks`, { webhooks })).results as string[];
const counts = async (): Promise<Counts> => (await fetch(rx('ok', '/counts'))).json() as Promise<Counts>;
const createStream = async (kind: Kind, path: string, tag: string): Promise<string> =>
  (await api('PUT', '/streams/evm', { webhookUrl: rx(kind, path), description: 'soak', tag, chainIds: ['0x1'] })).id as string;
const clockNow = async (): Promise<number> => Date.parse((await api('GET', '/admin/clock')).now as string);
const advance = async (ms: number): Promise<number> =>
  Date.parse((await api('POST', '/admin/clock/advance', { seconds: Math.max(0, ms) / 1000 })).now as string);
const stream = async (id: string): Promise<{ status: string; statusMessage: string }> => api('GET', `/streams/evm/${id}`);
const failedOf = async (id: string): Promise<number> => (await api('GET', `/stats/${id}`)).totalWebhooksFailed as number;

/** Every stream's status, with when it entered error (from its status message, ms), through the paged list. */
async function allStreams(): Promise<Map<string, { status: string; since: number | undefined }>> {
  const out = new Map<string, { status: string; since: number | undefined }>();
  let cursor: string | undefined;
  do {
    const page = await api('GET', `/streams/evm?limit=100${cursor === undefined ? '' : `&cursor=${cursor}`}`);
    for (const s of page.result as Array<{ id: string; status: string; statusMessage: string }>) {
      // "…terminated 24 hours after <ISO>." in error; "…(since <ISO>)…" once terminated.
      const iso = /(?:24 hours after|since) (\d{4}-\d\d-\d\dT[\d:.]+Z)/.exec(s.statusMessage)?.[1];
      out.set(s.id, { status: s.status, since: iso === undefined ? undefined : Date.parse(iso) });
    }
    cursor = page.cursor || undefined;
  } while (cursor !== undefined);
  return out;
}

try {
  // The probes first, so they keep their own /metrics series (the first 1,000 streams have one).
  const probe = {
    retry: await createStream('fail', '/probe-retry', 'probe-retry'),
    hang: await createStream('hang', '/probe-hang', 'probe-hang'),
    rate: await createStream('fail', '/probe-rate', 'probe-rate'),
    cap: await createStream('hang', '/probe-cap', 'probe-cap'),
  };
  const ids: string[] = new Array<string>(STREAMS);
  const made = performance.now();
  for (let i = 0; i < STREAMS; i += 20)
    await Promise.all(
      Array.from(
        { length: Math.min(20, STREAMS - i) },
        async (_, k) => (ids[i + k] = await createStream(kindOf(i + k), `/s${i + k}`, `s${i + k}`)),
      ),
    );
  console.log(
    `soak: ${STREAMS} streams (${FAILING} failing, ${HANGING} hanging) made in ${((performance.now() - made) / 1000).toFixed(1)} s; ${RATE} webhooks/s for ${MINUTES} min, server pid ${pid}`,
  );

  // ---- the load ------------------------------------------------------------
  const next = new Array<number>(STREAMS).fill(0);
  /** Per stream, webhooks the server answered 'queued' / 'history'. */
  const queued = new Array<number>(STREAMS).fill(0);
  let history = 0;
  let dropped = 0;
  let enqueued = 0;
  let callErrors = 0;
  let inFlight = 0;
  let cursor = 0;
  const samples: Sample[] = [];
  const durationMs = MINUTES * 60_000;
  const started = performance.now();
  const loadEnd = started + durationMs;

  const sample = async (): Promise<void> => {
    const text = await (await fetch(`${base}/metrics`)).text();
    const loop = metric(text, 'chainpost_event_loop_delay_seconds');
    const memory = metric(text, 'chainpost_process_memory_bytes');
    const mb = (kind: string): number => round((memory.get(`{kind="${kind}"}`) ?? NaN) / 2 ** 20, 1);
    const perStream = [...metric(text, 'chainpost_stream_webhooks_queued').values()];
    let fds = NaN;
    try {
      fds = readdirSync(`/proc/${pid}/fd`).length;
    } catch {}
    const s: Sample = {
      t: round((performance.now() - started) / 1000, 1),
      ...rss(pid),
      heapMb: mb('heapUsed'),
      externalMb: mb('external'),
      fds,
      loopP99Ms: round((loop.get('{quantile="0.99"}') ?? NaN) * 1000, 2),
      loopMaxMs: round((loop.get('{quantile="1"}') ?? NaN) * 1000, 2),
      delivered: metric(text, 'chainpost_webhooks_delivered_total').get('') ?? NaN,
      failed: metric(text, 'chainpost_webhooks_failed_total').get('') ?? NaN,
      queued: metric(text, 'chainpost_webhooks_queued').get('') ?? NaN,
      maxStreamQueued: Math.max(0, ...perStream),
      cpuMs: cpuMs(pid),
    };
    samples.push(s);
    if (samples.length % PRINT_EVERY === 1) {
      const prev = samples[Math.max(0, samples.length - 1 - PRINT_EVERY)]!;
      const perSec = s.t > prev.t ? Math.round((s.delivered - prev.delivered) / (s.t - prev.t)) : 0;
      const cores = s.t > prev.t ? ((s.cpuMs - prev.cpuMs) / 1000 / (s.t - prev.t)).toFixed(2) : '0';
      console.log(
        `t=${String(s.t).padStart(6)} s  cpu ${cores} cores  rss ${s.rssMb} MB (anon ${s.rssAnonMb}, file ${s.rssFileMb}; heap ${s.heapMb}, external ${s.externalMb})  fds ${s.fds}  loop p99 ${s.loopP99Ms} ms (max ${s.loopMaxMs})  delivered ${perSec}/s  queued ${s.queued} (max/stream ${s.maxStreamQueued})  enqueued ${Math.round(enqueued / Math.max(1, s.t))}/s`,
      );
    }
  };

  /** Per failing or hanging stream: attempts counted when it was last set active (or made), and cycles checked. */
  const attemptsAtResume = new Array<number>(FAILING + HANGING).fill(0);
  let errorCycles = 0;
  const wrongCycles: string[] = [];
  const resume = async (): Promise<void> => {
    // The list first: a stream it shows in error has had its last attempt counted by the receiver (the outcome is committed after the answer).
    const list = await allStreams();
    const c = await counts();
    for (let i = 0; i < FAILING + HANGING; i++) {
      if (list.get(ids[i]!)?.status !== 'error') continue;
      const attempts = c[kindOf(i)][`/s${i}`]?.attempts ?? 0;
      errorCycles++;
      if (attempts - attemptsAtResume[i]! !== FAILURES_TO_ERROR) wrongCycles.push(`s${i}: ${attempts - attemptsAtResume[i]!} attempts`);
      attemptsAtResume[i] = attempts;
      await api('POST', `/streams/evm/${ids[i]}/status`, { status: 'active' });
    }
  };

  const call = async (streams: number[]): Promise<void> => {
    inFlight++;
    try {
      const results = (
        await api('POST', '/admin/webhooks', { webhooks: streams.map((i) => ({ streamId: ids[i], payload: payload(next[i]!++) })) })
      ).results as string[];
      results.forEach((r, k) => {
        if (r === 'queued') queued[streams[k]!]!++;
        else if (r === 'history') history++;
        else dropped++;
      });
      enqueued += streams.length;
    } catch (err) {
      callErrors++;
      if (callErrors <= 3) console.log(`enqueue failed: ${(err as Error).message}`);
    } finally {
      inFlight--;
    }
  };

  let nextSample = started;
  /** The store's extent and tables once the warm-up is over, read beside the running server (LMDB readers may share it). */
  let storeWarm: ReturnType<typeof storeBreakdown> | undefined;
  let nextResume = started + RESUME_MS;
  let resuming: Promise<void> | undefined;
  let sampling: Promise<void> | undefined;
  const calls = new Set<Promise<void>>();
  while (performance.now() < loadEnd) {
    const now = performance.now();
    // A call at the start of each tick.
    const due = Math.min(PER_CALL * (Math.floor((now - started) / TICK_MS) + 1), (RATE * durationMs) / 1000);
    while (enqueued + (inFlight + 1) * PER_CALL <= due && inFlight < MAX_CALLS_IN_FLIGHT) {
      const streams = Array.from({ length: PER_CALL }, (_, k) => (cursor + k) % STREAMS);
      cursor = (cursor + PER_CALL) % STREAMS;
      const p = call(streams);
      calls.add(p);
      void p.finally(() => calls.delete(p));
    }
    if (now >= nextSample && sampling === undefined) {
      nextSample += SAMPLE_MS;
      sampling = sample()
        .catch((err: unknown) => console.log(`sample failed: ${(err as Error).message}`))
        .finally(() => (sampling = undefined));
    }
    if (storeWarm === undefined && now - started >= WARMUP * durationMs) storeWarm = storeBreakdown(dir);
    if (now >= nextResume && resuming === undefined) {
      nextResume += RESUME_MS;
      resuming = resume()
        .catch((err: unknown) => console.log(`resume failed: ${(err as Error).message}`))
        .finally(() => (resuming = undefined));
    }
    await sleep(5);
  }
  await Promise.all([...calls, resuming, sampling]);
  const loadSeconds = (performance.now() - started) / 1000;
  await sample();
  console.log(`soak: load done, ${enqueued} webhooks in ${loadSeconds.toFixed(1)} s`);
  const storeEnd = storeBreakdown(dir);
  storeWarm ??= storeEnd;
  const tablesWarm = new Map<string, TableSize>(storeWarm.tables.map((t) => [t.table, t]));
  console.log(
    `store: used extent ${storeWarm.extentMb} → ${storeEnd.extentMb} MB, tables ${storeWarm.tablesMb} → ${storeEnd.tablesMb} MB (after warm-up → end of load)`,
  );
  for (const t of storeEnd.tables.slice(0, 6))
    console.log(
      `  ${t.table.padEnd(14)} ${tablesWarm.get(t.table)?.mb ?? 0} → ${t.mb} MB, ${tablesWarm.get(t.table)?.entries ?? 0} → ${t.entries} entries`,
    );

  // ---- RSS, fds, event loop --------------------------------------------------
  const warm = samples.filter((s) => s.t >= WARMUP * loadSeconds);
  const median = (xs: number[]): number => percentile(xs, 0.5);
  // Three samples around the end of the warm-up, and the last three: one sample's noise (a GC about to run) is not growth.
  const rssWarm = median(warm.slice(0, 3).map((s) => s.rssMb));
  const rssEnd = median(warm.slice(-3).map((s) => s.rssMb));
  const anonWarm = median(warm.slice(0, 3).map((s) => s.rssAnonMb));
  const anonEnd = median(warm.slice(-3).map((s) => s.rssAnonMb));
  const fdsWarm = median(warm.slice(0, 3).map((s) => s.fds));
  const fdsEnd = median(warm.slice(-3).map((s) => s.fds));
  const loopP99s = warm.map((s) => s.loopP99Ms).filter((x) => Number.isFinite(x));
  const deliveredPerSec = (samples.at(-1)!.delivered - warm[0]!.delivered) / (samples.at(-1)!.t - warm[0]!.t);

  // ---- at the end: the soak's own streams -------------------------------------
  const soakCounts = await counts();
  await fetch(rx('ok', '/release'), { method: 'POST' });
  const okIdx = ids.map((_, i) => i).filter((i) => kindOf(i) === 'ok');
  const allIn = await until(
    async () => {
      const c = await counts();
      return okIdx.every((i) => (c.ok[`/s${i}`]?.attempts ?? 0) >= queued[i]!);
    },
    DRAIN_LIMIT_MS,
    500,
  );
  const drainSeconds = round((performance.now() - started) / 1000 - loadSeconds, 1);
  const drained = await counts();
  const okPaths = okIdx.map((i) => ({ i, c: drained.ok[`/s${i}`] }));
  const received = okPaths.reduce((n, { c }) => n + (c?.attempts ?? 0), 0);
  const expected = okIdx.reduce((n, i) => n + queued[i]!, 0);
  check(callErrors === 0 && dropped === 0, `every enqueue answered (${callErrors} calls failed, ${dropped} webhooks dropped)`);
  check(
    allIn && received === expected,
    `healthy streams: ${received} webhooks received of ${expected} queued (the last ${drainSeconds} s after the load's end)`,
  );
  check(
    okPaths.every(({ i, c }) => c !== undefined && c.duplicates === 0 && c.outOfOrder === 0 && c.next === queued[i]),
    `healthy streams: each webhook once and in order (${okPaths.reduce((n, { c }) => n + (c?.duplicates ?? 0), 0)} duplicates, ${okPaths.reduce((n, { c }) => n + (c?.outOfOrder ?? 0), 0)} out of order)`,
  );
  const failPaths = [...Object.entries(soakCounts.fail), ...Object.entries(soakCounts.hang)].filter(([p]) => !p.startsWith('/probe'));
  const soakRetries = failPaths.reduce((n, [, c]) => n + c.retries, 0);
  check(
    failPaths.every(([, c]) => c.badRetries === 0),
    `failing and hanging streams: every attempt's retries one above the previous attempt's (${soakRetries} retries seen)`,
  );
  check(
    failPaths.every(([, c]) => c.early === 0),
    `failing and hanging streams: no retry before the schedule's wait (${failPaths.reduce((n, [, c]) => n + c.early, 0)} early)`,
  );
  check(
    errorCycles > 0 && wrongCycles.length === 0,
    `70 % rule under load: ${errorCycles} entries into error, each after exactly ${FAILURES_TO_ERROR} failed attempts since set active${wrongCycles.length > 0 ? ` (not: ${wrongCycles.slice(0, 5).join(', ')})` : ''}`,
  );
  const maxQueued = Math.max(...samples.map((s) => s.maxStreamQueued));
  check(maxQueued <= QUEUE_CAP, `no stream's queue above ${QUEUE_CAP} in any sample (max ${maxQueued})`);

  // ---- probes on the test clock -------------------------------------------------
  // Queue cap: 9,999 queued leave the stream active; the 10,000th puts it in error; the next goes to history.
  const capBatch = (from: number, n: number): Array<Record<string, unknown>> =>
    Array.from({ length: n }, (_, k) => ({
      chainId: '0x1',
      block: { number: String(from + k), hash: '0x', timestamp: '0' },
      logs: [],
      txs: [],
    }));
  const capResults: string[] = [];
  for (let n = 0; n < QUEUE_CAP - 1; n += 2_000)
    capResults.push(...(await enqueue(probe.cap, capBatch(n, Math.min(2_000, QUEUE_CAP - 1 - n)))));
  const capBefore = (await stream(probe.cap)).status;
  const capLast = await enqueue(probe.cap, capBatch(QUEUE_CAP - 1, 1));
  const capAfter = await stream(probe.cap);
  const capOver = await enqueue(probe.cap, capBatch(QUEUE_CAP, 1));
  const capQueue = metric(await (await fetch(`${base}/metrics`)).text(), 'chainpost_stream_webhooks_queued').get(`{stream="${probe.cap}"}`);
  check(
    capResults.length === QUEUE_CAP - 1 &&
      capResults.every((r) => r === 'queued') &&
      capBefore === 'active' &&
      capLast[0] === 'queued' &&
      capAfter.status === 'error' &&
      capAfter.statusMessage.includes(`reached ${QUEUE_CAP}`) &&
      capOver[0] === 'history' &&
      capQueue === QUEUE_CAP,
    `queue cap: ${QUEUE_CAP - 1} queued → ${capBefore}; the ${ordinal(QUEUE_CAP)} → ${capAfter.status}; the next → ${capOver[0]}; queue ${capQueue}`,
  );

  // The 70 % rule: 30 failures leave the stream active, the 31st puts it in error.
  await enqueue(probe.rate, capBatch(0, FAILURES_TO_ERROR - 1));
  await until(async () => (await failedOf(probe.rate)) >= FAILURES_TO_ERROR - 1, 30_000);
  const rateBefore = (await stream(probe.rate)).status;
  await enqueue(probe.rate, capBatch(FAILURES_TO_ERROR - 1, 1));
  await until(async () => (await failedOf(probe.rate)) >= FAILURES_TO_ERROR, 30_000);
  const rateAfter = await stream(probe.rate);
  check(
    rateBefore === 'active' && rateAfter.status === 'error' && rateAfter.statusMessage.includes(`fell to ${ERROR_BELOW - 1}%`),
    `70 % rule: after ${FAILURES_TO_ERROR - 1} failures ${rateBefore}, after the ${ordinal(FAILURES_TO_ERROR)} ${rateAfter.status}`,
  );

  // Error → terminated at 24 h, for every stream in error: read just before the rate probe's 24 h are up, and just after.
  const rateSince = (await allStreams()).get(probe.rate)!.since!;
  await advance(rateSince + ERROR_TO_TERMINATED_MS - 60_000 - (await clockNow()));
  await advance(rateSince + ERROR_TO_TERMINATED_MS - 10_000 - (await clockNow()));
  const judge = async (): Promise<{ list: Map<string, { status: string; since: number | undefined }>; wrong: string[] }> => {
    const t0 = await clockNow();
    const list = await allStreams();
    const t1 = await clockNow();
    const wrong: string[] = [];
    for (const [id, s] of list) {
      if (s.status === 'error' && !(s.since! + ERROR_TO_TERMINATED_MS > t0)) wrong.push(`${id} still in error at ${t0 - s.since!} ms`);
      if (s.status === 'terminated' && !(s.since! + ERROR_TO_TERMINATED_MS <= t1)) wrong.push(`${id} terminated at ${t1 - s.since!} ms`);
    }
    return { list, wrong };
  };
  const before = await judge();
  await advance(rateSince + ERROR_TO_TERMINATED_MS + 1 - (await clockNow()));
  const after = await judge();
  const tally = (l: Map<string, { status: string }>): string =>
    ['active', 'error', 'terminated'].map((st) => `${[...l.values()].filter((s) => s.status === st).length} ${st}`).join(', ');
  check(
    before.wrong.length === 0 &&
      after.wrong.length === 0 &&
      before.list.get(probe.rate)!.status === 'error' &&
      after.list.get(probe.rate)!.status === 'terminated' &&
      okIdx.every((i) => after.list.get(ids[i]!)!.status === 'active'),
    `error → terminated at 24 h: 10 s before the probe's ${tally(before.list)}; 1 ms after ${tally(after.list)}${[
      ...before.wrong,
      ...after.wrong,
    ]
      .slice(0, 3)
      .map((w) => `; ${w}`)
      .join('')}`,
  );

  // The retry schedule: each retry not a second early, and sent at its instant (the server's history record says when each attempt failed).
  const record = async (id: string): Promise<{ date: number; retries: number; errorMessage: string }> => {
    // Newest first; a soak stream terminated meanwhile may have put its queue in history above it.
    let cursor = '';
    for (;;) {
      const page = await api('GET', `/history?limit=100&excludePayload=true${cursor === '' ? '' : `&cursor=${cursor}`}`);
      const h = (page.result as Array<{ streamId: string; date: string; tinyPayload: { retries: number }; errorMessage: string }>).find(
        (r) => r.streamId === id,
      );
      if (h !== undefined) return { date: Date.parse(h.date), retries: h.tinyPayload.retries, errorMessage: h.errorMessage };
      if (!page.cursor) throw new Error(`no history record of stream ${id}`);
      cursor = page.cursor as string;
    }
  };
  const attemptsAt = async (kind: Kind, path: string): Promise<number> => (await counts())[kind][path]?.attempts ?? 0;
  const followSchedule = async (kind: Kind, path: string, id: string, retries: number): Promise<string[]> => {
    const wrong: string[] = [];
    await enqueue(id, capBatch(0, 1));
    await until(async () => (await failedOf(id)) >= 1, DELIVERY_TIMEOUT_MS + 5_000);
    const first = await record(id);
    let last = first;
    for (let k = 0; k < retries; k++) {
      const dueAt = Math.min(last.date + RETRY_SCHEDULE_MS[k]!, first.date + GIVE_UP_AFTER_MS);
      const n = await attemptsAt(kind, path);
      await advance(dueAt - 1_000 - (await clockNow()));
      await sleep(200);
      if ((await attemptsAt(kind, path)) !== n) wrong.push(`retry ${k + 1} came before ${new Date(dueAt - 1_000).toISOString()}`);
      await advance(dueAt + 1 - (await clockNow()));
      await until(async () => (await failedOf(id)) >= k + 2, DELIVERY_TIMEOUT_MS + 5_000);
      last = await record(id);
      // Sent at its instant, failed at once (500) or after the timeout (no answer), as the history record dates it.
      const late = last.date - dueAt - (kind === 'hang' ? DELIVERY_TIMEOUT_MS : 0);
      if (last.retries !== k + 1 || late < 0 || late > CLOCK_SLOP_MS)
        wrong.push(`retry ${k + 1}: retries ${last.retries}, failed ${late} ms after its due instant (+ timeout)`);
    }
    return wrong;
  };
  const retryWrong = await followSchedule('fail', '/probe-retry', probe.retry, RETRY_SCHEDULE_MS.length);
  // After the last retry (at the 24-hour mark) none is left: two more days bring nothing.
  const attemptsDone = await attemptsAt('fail', '/probe-retry');
  await advance(48 * HOUR);
  await sleep(200);
  const attemptsLater = await attemptsAt('fail', '/probe-retry');
  const lastRecord = await record(probe.retry);
  check(
    retryWrong.length === 0 &&
      attemptsDone === RETRY_SCHEDULE_MS.length + 1 &&
      attemptsLater === attemptsDone &&
      lastRecord.retries === RETRY_SCHEDULE_MS.length,
    `retry schedule (500): ${attemptsDone} attempts at 0, ${RETRY_SCHEDULE_MS.map((m) => `${m / 60_000} min`).join(', ')} (the last capped at 24 h after the first failure), none after${retryWrong
      .slice(0, 3)
      .map((w) => `; ${w}`)
      .join('')}`,
  );
  const hangWrong = await followSchedule('hang', '/probe-hang', probe.hang, 2);
  const hangRecord = await record(probe.hang);
  check(
    hangWrong.length === 0 && hangRecord.retries === 2,
    `retry schedule (no answer): each attempt failed ${DELIVERY_TIMEOUT_MS / 1000} s after it was sent, retried ${RETRY_SCHEDULE_MS[0]! / 60_000} and ${RETRY_SCHEDULE_MS[1]! / 60_000} min later ("${hangRecord.errorMessage}")${hangWrong
      .slice(0, 3)
      .map((w) => `; ${w}`)
      .join('')}`,
  );

  // After two days of test clock, still nothing delivered twice on the healthy streams.
  const final = await counts();
  check(
    okIdx.every((i) => final.ok[`/s${i}`]!.attempts === queued[i]),
    'healthy streams: nothing delivered again after the clock moved 3 days',
  );
  check(serverErrors.length === 0, `no error line from the server${serverErrors.length > 0 ? `: ${serverErrors[0]!.slice(0, 300)}` : ''}`);

  // ---- the figures ---------------------------------------------------------------
  const figures = {
    minutes: MINUTES,
    streams: STREAMS,
    failingStreams: FAILING,
    hangingStreams: HANGING,
    enqueuedPerSec: round(enqueued / loadSeconds, 1),
    deliveredPerSec: round(deliveredPerSec, 1),
    drainSeconds,
    serverCpuCores: round((samples.at(-1)!.cpuMs - warm[0]!.cpuMs) / 1000 / (samples.at(-1)!.t - warm[0]!.t), 2),
    webhooksEnqueued: enqueued,
    webhooksToHistory: history,
    retriesSeen: soakRetries,
    errorCycles,
    rssWarmMb: rssWarm,
    rssEndMb: rssEnd,
    rssPeakMb: Math.max(...warm.map((s) => s.rssMb)),
    rssGrowthPct: round(((rssEnd - rssWarm) / rssWarm) * 100, 1),
    rssAnonWarmMb: anonWarm,
    rssAnonEndMb: anonEnd,
    rssAnonGrowthPct: round(((anonEnd - anonWarm) / anonWarm) * 100, 1),
    rssFileEndMb: warm.at(-1)!.rssFileMb,
    storeExtentWarmMb: storeWarm.extentMb,
    storeExtentEndMb: storeEnd.extentMb,
    storeTablesWarmMb: storeWarm.tablesMb,
    storeTablesEndMb: storeEnd.tablesMb,
    heapWarmMb: median(warm.slice(0, 3).map((s) => s.heapMb)),
    heapEndMb: median(warm.slice(-3).map((s) => s.heapMb)),
    externalWarmMb: median(warm.slice(0, 3).map((s) => s.externalMb)),
    externalEndMb: median(warm.slice(-3).map((s) => s.externalMb)),
    fdsWarm,
    fdsEnd,
    fdsMin: Math.min(...warm.map((s) => s.fds)),
    fdsMax: Math.max(...warm.map((s) => s.fds)),
    loopP99MaxMs: Math.max(...loopP99s),
    loopP99MedianMs: median(loopP99s),
    loopMaxMs: Math.max(...warm.map((s) => s.loopMaxMs)),
    maxStreamQueued: maxQueued,
    samples: samples.length,
  };
  const goal = {
    enqueuedPerSec: `>= ${RATE * 0.99}`,
    rssGrowthPct: '< 10',
    'fdsEnd - fdsWarm': `<= ${FD_TOLERANCE}`,
    loopP99MaxMs: '< 20',
    rules: 'every check above holds',
  };
  check(
    figures.enqueuedPerSec >= RATE * 0.99,
    `load: ${figures.enqueuedPerSec} webhooks/s enqueued (goal ${RATE}), ${figures.deliveredPerSec}/s delivered after warm-up`,
  );
  check(
    figures.rssGrowthPct < 10,
    `RSS after warm-up ${rssWarm} MB → ${rssEnd} MB at the end: ${figures.rssGrowthPct} % (peak ${figures.rssPeakMb} MB; of it anonymous ${anonWarm} → ${anonEnd} MB, ${figures.rssAnonGrowthPct} %)`,
  );
  check(
    fdsEnd - fdsWarm <= FD_TOLERANCE,
    `open fds after warm-up ${fdsWarm} → ${fdsEnd} at the end (range ${figures.fdsMin}–${figures.fdsMax}; tolerance +${FD_TOLERANCE})`,
  );
  check(
    figures.loopP99MaxMs < 20,
    `event-loop delay: p99 of every 10-s window after warm-up < 20 ms (highest ${figures.loopP99MaxMs} ms, median ${figures.loopP99MedianMs} ms; highest single delay ${figures.loopMaxMs} ms)`,
  );
  const met = failures.length === 0;
  const command = `${MINUTES === 30 ? '' : `SOAK_MINUTES=${MINUTES} `}${RATE === 1_000 ? '' : `SOAK_RATE=${RATE} `}npm run soak`;
  report('soak', command, figures, goal, met, [
    `${STREAMS} streams, ${FAILING} with a receiver answering 500 and ${HANGING} with one never answering (the 10-s delivery timeout), each set active again within a minute of entering error; webhooks enqueued through the test clock's admin route (POST /admin/webhooks: the enqueue the matcher calls, staged as a block's matches are, 200 to a transaction) ${PER_CALL} per call for ${PER_CALL} streams in turn, a call every ${TICK_MS} ms, so each stream gets ${RATE / STREAMS} a second. Receivers in their own process on three loopback ports. Samples every ${SAMPLE_MS / 1000} s; RSS, fds and event-loop delay judged after the first ${WARMUP * 100} % of the run (warm-up); rssWarm/rssEnd and fdsWarm/fdsEnd: medians of the first three samples after warm-up and of the last three. RSS (VmRSS, the goal) = rssAnon (heaps, stacks: where a leak shows) + rssFile (mostly LMDB's memory-mapped pages, which grow with the database and which the kernel may reclaim).`,
    `Rules, all checked in this run: healthy streams received every webhook once and in order; every retry numbered one above the previous attempt and none before its wait; each entry into error after exactly ${FAILURES_TO_ERROR} failed attempts since set active; no queue above ${QUEUE_CAP}; then on the test clock: the ${ordinal(QUEUE_CAP)} queued webhook puts a stream in error and the next goes to history; the ${ordinal(FAILURES_TO_ERROR)} failure (rate ${ERROR_BELOW - 1} %) puts one in error, not the ${ordinal(FAILURES_TO_ERROR - 1)}; every stream in error terminated exactly 24 h after it entered error; the retry schedule followed attempt by attempt (not a second early, its failure dated within ${CLOCK_SLOP_MS / 1000} s of its due instant), for a 500 and for no answer.`,
    ...(failures.length > 0 ? [`Not met: ${failures.join('; ')}`] : []),
  ]);
  console.log(
    `\nsoak: ${met ? 'every goal met' : `${failures.length} goal(s) not met`}; wrote bench/results/soak.json and bench/RESULTS.md`,
  );
} finally {
  await server.stop('SIGTERM');
  await receiver.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failures.length === 0 ? 0 : 1);
