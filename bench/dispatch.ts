/**
 * npm run bench:dispatch — the delivery engine end to end on loopback: 100,000
 * webhooks over 1,000 streams through the real dispatcher (LMDB queues, group
 * commit, undici keep-alive pools) to a receiver in another process, beside the
 * same run with a naive sender (a new connection per webhook, no pooling); and a
 * tinybench of the timer wheel against a binary heap (1,000,000 timers).
 * BENCH_CAPTURE=1 has the dispatcher capture its units of work per partition (engine/cluster/delivery-capture.ts), as a
 * cluster node's does; unset, as one process runs.
 */
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Bench } from 'tinybench';
import xxhash from 'xxhash-wasm';
import { ServiceClock } from '../engine/clock.js';
import { type PendingUnit, partitionOf } from '../engine/cluster/partitions.js';
import { DELIVERY_TABLES, DeliveryCapture } from '../engine/cluster/delivery-capture.js';
import { createDelivery } from '../engine/delivery/dispatcher.js';
import { deliveryStreams } from '../engine/streams/delivery-streams.js';
import { DELIVERY_TIMEOUT_MS } from '../engine/delivery/limits.js';
import { TimerWheel } from '../engine/delivery/timer-wheel.js';
import { MinHeap } from '../engine/heap.js';
import { systemTicker } from '../app/process.js';
import type { Sender } from '../engine/ports.js';
import { evm } from '../engine/evm/index.js';
import { StreamsService } from '../engine/streams/service.js';
import { undiciSender } from '../http/clients/webhook.js';
import { openStore, type Store } from '../storage/env.js';
import { evmDefinition } from '../test/kit/evm-stream.js';
import { startProcess } from '../test/kit/proc.js';
import { TargetPolicy } from '../engine/net/targets.js';
import { systemResolver } from '../http/clients/dns.js';
import { percentile, printRows, report, sized } from './report.js';
import { quietLog } from '../test/kit/quiet-log.js';

/** The receivers here listen on 127.0.0.1. */
const LOCAL_RECEIVERS = new TargetPolicy('allow', systemResolver);

const STREAMS = Number(process.env['BENCH_STREAMS'] ?? sized(1_000, 20));
const WEBHOOKS = Number(process.env['BENCH_WEBHOOKS'] ?? sized(100_000, 1_000));
const TIMERS = sized(1_000_000, 10_000);
const CAPTURE = process.env['BENCH_CAPTURE'] === '1';
/** A stream's partition, as the server makes it. */
const { h32 } = await xxhash();
const part = (tenant: string, url: string): number => partitionOf(h32, tenant, url);

/** A naive sender: one request per webhook on a fresh connection (no agent, no pool). */
const naiveSender: Sender = {
  post: (url, body, headers, timeoutMs) =>
    new Promise((resolve) => {
      const req = httpRequest(
        url,
        {
          method: 'POST',
          headers: { ...headers, connection: 'close', 'content-length': Buffer.byteLength(body) },
          agent: false,
          timeout: timeoutMs,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (err) => resolve({ error: err.message }));
      req.end(body);
    }),
};

/** Wraps a sender to record each send's latency. */
function timed(inner: Sender, latencies: number[]): Sender {
  return {
    post: async (...args) => {
      const t = performance.now();
      const r = await inner.post(...args);
      latencies.push(performance.now() - t);
      return r;
    },
  };
}

/** Bytes of the LMDB pages (branch, leaf, overflow) of the delivery tables. */
function storedBytes(store: Store): number {
  return [...DELIVERY_TABLES].reduce((sum, t) => {
    const st = store.db(t).getStats() as {
      pageSize: number;
      treeBranchPageCount: number;
      treeLeafPageCount: number;
      overflowPages: number;
    };
    return sum + st.pageSize * (st.treeBranchPageCount + st.treeLeafPageCount + st.overflowPages);
  }, 0);
}

/** CPU time (user + system) of this process since `from`, µs. */
const cpuSince = (from: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(from);
  return u.user + u.system;
};

async function deliverAll(
  label: string,
  sender: Sender,
  url: string,
  count: number,
): Promise<{ perSec: number; p99Ms: number; storedBytesPerWebhook: number; cpuUs: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-dispatch-'));
  const store = openStore(dir);
  const clock = new ServiceClock(systemTicker, Date.now());
  const latencies: number[] = [];
  let captured = 0;
  const dispatcher = createDelivery({
    kv: store,
    clock,
    sender: timed(sender, latencies),
    log: quietLog(() => clock.now()),
    streams: deliveryStreams(store),
    alertEmail: undefined,
    partitionOf: part,
    ...(CAPTURE
      ? {
          capture: new DeliveryCapture(
            store,
            part,
            (units: PendingUnit[]) => void (captured += units.reduce((n, u) => n + u.change.rows.length, 0)),
          ),
        }
      : {}),
  });
  const streams = evm.resources({ kv: store, clock, dispatcher });
  const shared = new StreamsService({ kv: store, clock, dispatcher });
  try {
    const ids: string[] = [];
    for (let i = 0; i < STREAMS; i++) ids.push(String((await streams.create('bench', evmDefinition(url, `s${i}`), undefined)).id));
    latencies.length = 0; // test webhooks are not part of the figure
    const started = performance.now();
    const cpu0 = process.cpuUsage();
    const perBatch = 10_000;
    for (let sent = 0; sent < count; sent += perBatch) {
      const batch = Array.from({ length: Math.min(perBatch, count - sent) }, (_, i) => {
        const n = sent + i;
        return {
          streamId: ids[n % ids.length]!,
          payload: {
            confirmed: false,
            chainId: '0x1',
            block: { number: String(n), hash: '0x', timestamp: '1795000000' },
            logs: [],
            txs: [],
            txsInternal: [],
          },
        };
      });
      await dispatcher.enqueueBatch(batch);
      await new Promise((r) => setImmediate(r));
    }
    for (;;) {
      await dispatcher.settled();
      const delivered = shared.stats('bench').totalWebhooksDelivered;
      if (delivered >= count) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    const seconds = (performance.now() - started) / 1000;
    const cpuUs = +(cpuSince(cpu0) / count).toFixed(1);
    const perSec = Math.round(count / seconds);
    const p99Ms = +percentile(latencies, 0.99).toFixed(2);
    const storedBytesPerWebhook = Math.round(storedBytes(store) / count);
    console.log(
      `${label}: ${count} webhooks over ${STREAMS} streams in ${seconds.toFixed(2)} s = ${perSec}/s, p99 send ${p99Ms} ms, ${storedBytesPerWebhook} B stored and ${cpuUs} µs of CPU per webhook${CAPTURE ? `, ${captured} rows captured` : ''}`,
    );
    return { perSec, p99Ms, storedBytesPerWebhook, cpuUs };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function wheelVersusHeap(): Promise<{ wheelOpsPerSec: number; heapOpsPerSec: number; bytesPerTimer: number }> {
  const base = Date.now();
  // The same workload for both: schedule 1,000,000 timers within a day, cancel 10%, fire the rest.
  const ats = Float64Array.from({ length: TIMERS }, () => base + Math.floor(Math.random() * 86_400_000));
  const ops = TIMERS + TIMERS / 10 + (TIMERS - TIMERS / 10);
  const bench = new Bench({ iterations: 3, time: 0, warmup: false });
  let fired = 0;
  bench.add('timer wheel', () => {
    const w = new TimerWheel(base);
    const handles = new Int32Array(TIMERS);
    for (let i = 0; i < TIMERS; i++) handles[i] = w.schedule(ats[i]!, i);
    for (let i = 0; i < TIMERS; i += 10) w.cancel(handles[i]!);
    w.advance(base + 86_400_000, () => void fired++);
  });
  bench.add('binary heap', () => {
    const h = new MinHeap<{ at: number; seq: number; cancelled: boolean }>();
    const items = new Array<{ at: number; seq: number; cancelled: boolean }>(TIMERS);
    for (let i = 0; i < TIMERS; i++) h.push((items[i] = { at: ats[i]!, seq: i, cancelled: false }));
    for (let i = 0; i < TIMERS; i += 10) items[i]!.cancelled = true;
    for (let x = h.pop(); x !== undefined; x = h.pop()) if (!x.cancelled) fired++;
  });
  await bench.run();
  const rate = (name: string): number => {
    const r = bench.tasks.find((t) => t.name === name)!.result as unknown as { latency: { mean: number } };
    return Math.round(ops / (r.latency.mean / 1000));
  };
  const w = new TimerWheel(base);
  for (let i = 0; i < TIMERS; i++) w.schedule(ats[i]!, i);
  return { wheelOpsPerSec: rate('timer wheel'), heapOpsPerSec: rate('binary heap'), bytesPerTimer: +(w.bytes / w.size).toFixed(1) };
}

/** The HTTP path alone, no engine: as many loops as streams, POSTing through the same sender. The ceiling of this machine. */
async function rawSend(url: string, count: number): Promise<{ perSec: number; cpuCores: number; cpuUs: number }> {
  const sender = undiciSender({ targets: LOCAL_RECEIVERS, ticker: systemTicker });
  const cpu0 = process.cpuUsage();
  const body = new TextEncoder().encode(
    JSON.stringify({
      confirmed: false,
      chainId: '0x1',
      block: { number: '1', hash: '0x', timestamp: '1795000000' },
      logs: [],
      txs: [],
      txsInternal: [],
      streamId: 'x'.repeat(36),
      tag: 's',
      retries: 0,
    }),
  );
  const started = performance.now();
  await Promise.all(
    Array.from({ length: STREAMS }, async () => {
      for (let i = 0; i < count / STREAMS; i++) await sender.post(url, body, { 'content-type': 'application/json' }, DELIVERY_TIMEOUT_MS);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = cpuSince(cpu0);
  await sender.close();
  const perSec = Math.round(count / seconds);
  const cpuCores = +(used / 1e6 / seconds).toFixed(2);
  const cpuUs = +(used / count).toFixed(1);
  console.log(`raw undici, no engine: ${perSec}/s, using ${cpuCores} cores of this process, ${cpuUs} µs of CPU per POST`);
  return { perSec, cpuCores, cpuUs };
}

const receiver = await startProcess([fileURLToPath(new URL('./receiver-server.js', import.meta.url))], {});
const url = `http://127.0.0.1:${receiver.port}/hook`;
const loadBefore = loadavg();
let pooled: Awaited<ReturnType<typeof deliverAll>>;
let naive: Awaited<ReturnType<typeof deliverAll>>;
let raw: Awaited<ReturnType<typeof rawSend>>;
try {
  raw = await rawSend(url, WEBHOOKS);
  const sender = undiciSender({ targets: LOCAL_RECEIVERS, ticker: systemTicker });
  pooled = await deliverAll('chainpost (undici pools, group commit)', sender, url, WEBHOOKS);
  await sender.close();
  // BENCH_ONLY=pooled skips the baseline (for profiling the engine alone); the figures then say so.
  naive =
    process.env['BENCH_ONLY'] === 'pooled'
      ? { perSec: NaN, p99Ms: NaN, storedBytesPerWebhook: NaN, cpuUs: NaN }
      : await deliverAll('naive sender (a connection per webhook)', naiveSender, url, WEBHOOKS);
} finally {
  await receiver.stop();
}
const timers =
  process.env['BENCH_ONLY'] === 'pooled' ? { wheelOpsPerSec: NaN, heapOpsPerSec: NaN, bytesPerTimer: NaN } : await wheelVersusHeap();

const figures = {
  webhooksPerSec: pooled.perSec,
  ratioVsRawPost: +(pooled.perSec / raw.perSec).toFixed(2),
  naiveWebhooksPerSec: naive.perSec,
  ratioVsNaive: +(pooled.perSec / naive.perSec).toFixed(2),
  p99Ms: pooled.p99Ms,
  storedBytesPerWebhook: pooled.storedBytesPerWebhook,
  wheelOpsPerSec: timers.wheelOpsPerSec,
  heapOpsPerSec: timers.heapOpsPerSec,
  bytesPerTimer: timers.bytesPerTimer,
  rawSendPerSec: raw.perSec,
  rawSendCpuCores: raw.cpuCores,
  cpuUsPerWebhook: pooled.cpuUs,
  rawCpuUsPerPost: raw.cpuUs,
};
console.log('');
printRows([
  ['webhooks/s', figures.webhooksPerSec, '/s', figures.naiveWebhooksPerSec],
  ['naive webhooks/s', figures.naiveWebhooksPerSec, '/s'],
  ['p99 send latency', figures.p99Ms, 'ms', naive.p99Ms],
  ['wheel ops/s', figures.wheelOpsPerSec, 'ops/s', figures.heapOpsPerSec],
  ['heap ops/s', figures.heapOpsPerSec, 'ops/s'],
  ['bytes per pending timer', figures.bytesPerTimer, 'B'],
  ['raw HTTP path, no engine', figures.rawSendPerSec, '/s'],
  ['engine ÷ raw HTTP path', figures.ratioVsRawPost, '×'],
  ['stored bytes per webhook', figures.storedBytesPerWebhook, 'B'],
  ['CPU per webhook', figures.cpuUsPerWebhook, 'µs', figures.rawCpuUsPerPost],
  ['CPU per raw POST', figures.rawCpuUsPerPost, 'µs'],
]);
const load = [loadBefore, loadavg()].map((l) => l.map((x) => x.toFixed(2)).join(' ')).join(' before, ');
console.log(`load average ${load} after`);
const met = figures.ratioVsRawPost >= 0.5 && figures.p99Ms <= 50 && figures.bytesPerTimer <= 100;
if (process.env['BENCH_ONLY'] === 'pooled') {
  console.log('\nBENCH_ONLY=pooled: profiling run, no baseline; results not written');
  process.exit(0);
}
report('dispatch', 'npm run bench:dispatch', figures, { ratioVsRawPost: '>= 0.5', p99Ms: '<= 50', bytesPerTimer: '<= 100' }, met, [
  `ratioVsRawPost = webhooksPerSec ÷ rawSendPerSec, both measured in this run. The machine is shared: load average ${load} after the run.`,
  `cpuUsPerWebhook: CPU time of the bench process (engine, LMDB and undici; the receiver is another process) per webhook delivered, beside rawCpuUsPerPost for the POSTs alone: less sensitive than the rates to the other work on this machine.`,
  `storedBytesPerWebhook: the LMDB pages of the delivery tables (${[...DELIVERY_TABLES].join(', ')}) after the pooled run ÷ webhooks delivered (each leaves one success log).`,
  `${WEBHOOKS} webhooks over ${STREAMS} streams, enqueued in batches of 10,000; per-stream order kept; outcomes group-committed to LMDB; receiver (node:http, 200) in its own process; delivery timeout ${DELIVERY_TIMEOUT_MS / 1000} s.`,
  `Naive sender: same dispatcher and queues, a new TCP connection per webhook (p99 ${naive.p99Ms} ms).`,
  `rawSendPerSec: the same POSTs through the same undici pool with no engine at all (${STREAMS} loops), using ${raw.cpuCores} of the ${cpus().length} cores of this machine in the sending process alone (the receiver runs on the same machine).`,
  `Timers: ${TIMERS.toLocaleString('en-US')} scheduled within a day, 10% cancelled, the rest fired; ops = schedules + cancels + fires. bytesPerTimer: the wheel's typed arrays / pending timers.`,
]);
console.log(
  `\ngoal ratioVsRawPost >= 0.5, p99Ms <= 50 and bytesPerTimer <= 100: ${met ? 'met' : 'not met'}; wrote bench/results/dispatch.json and bench/RESULTS.md`,
);
