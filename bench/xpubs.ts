/**
 * bench:xpubs — adding xpubs to one Bitcoin stream up to CHAINPOST_MAX_XPUBS (1,000), against the real server
 * following the stand-in Bitcoin Core: an add's latency around the 10th key and around the 1,000th (an add reads
 * by key, whatever the stream holds), and GET /health's latency while a burst of adds runs, beside its latency
 * with nothing else to do, measured in the same run (the add's derivation runs in the worker pool).
 * `--before <path/to/bin/chainpost.js>` measures another build (the code before a change) the same way first
 * and adds its figures as before…. bench:attacks measures a smaller stream the same way (measureXpubs).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LIMITS } from '../engine/streams/limits.js';
import { mainnetChain } from '../test/kit/bitcoin-core/fixtures.js';
import { manyXpubs } from '../test/kit/bitcoin-core/keys.js';
import { startBitcoinCore } from '../test/kit/bitcoin-core/server.js';
import { startProcess } from '../test/kit/proc.js';
import { BIN, percentile, printRows, report, round, sized } from './report.js';

const KEY = 'cpk_bench_xpubs_key_0123456789abcdef';
/** The stream's xpubs: the limit (at the smoke size, enough for both ends and a burst between them). */
const XPUBS = sized(DEFAULT_LIMITS.xpubs, 80);
/** Adds timed one at a time at each end: the first EDGE (the first WARM left out: each worker builds its table of multiples of G at its first), and the last EDGE. */
const EDGE = 30;
const WARM = 10;
/** Adds in flight at once during the burst. */
const BURST_CONCURRENCY = 8;
/** /health probes with nothing else to do (the baseline). */
const IDLE_PROBES = sized(400, 40);

/** What one build measures. */
export interface Run {
  addMsAround10th: number;
  addMsAround1000th: number;
  burstAddsPerSec: number;
  healthIdle: number[];
  healthDuringAdds: number[];
  /** With `oneMore`: the status of an add past the `xpubs` the stream holds (the limit, where the server has one). */
  oneMoreStatus?: number;
}

/**
 * The measurements on the server `bin` (this build's, or another's given with --before), its stream filled to
 * `xpubs`; `env` on top of the run's own variables; `oneMore`: then one add more.
 */
export async function measureXpubs(bin: string, xpubs = XPUBS, env: Record<string, string> = {}, oneMore = false): Promise<Run> {
  const core = await startBitcoinCore({ chain: mainnetChain() });
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end('ok'));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/`;
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-xpubs-'));
  const server = await startProcess([bin, 'serve'], {
    CHAINPOST_DATA: dir,
    CHAINPOST_PORT: '0',
    CHAINPOST_API_KEY: KEY,
    CHAINPOST_CHAINS: 'none',
    CHAINPOST_BITCOIN_RPC: core.url,
    CHAINPOST_RATE_LIMIT: '0',
    CHAINPOST_ACCESS_LOG: '0',
    // The receiver is on loopback, and a server following a chain denies private targets by default.
    CHAINPOST_PRIVATE_TARGETS: 'allow',
    ...env,
  });
  const base = `http://127.0.0.1:${server.port}`;
  const api = async (method: string, path: string, json?: unknown): Promise<any> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  const probe = async (): Promise<number> => {
    const t = performance.now();
    const res = await fetch(`${base}/health`);
    await res.arrayBuffer();
    return performance.now() - t;
  };
  try {
    const keys = manyXpubs(xpubs + 1);
    const { id } = await api('PUT', '/streams/bitcoin', { webhookUrl: hook, tag: 'bench' });
    const add = async (i: number): Promise<number> => {
      const t = performance.now();
      await api('POST', `/streams/bitcoin/${id}/xpub`, { xpub: keys[i] });
      return performance.now() - t;
    };
    // The baseline once the server has caught up with the stand-in's chain (its blocks ingested) and warmed up.
    for (;;) {
      const chains = (await api('GET', '/health')).chains as Array<{ chain: string; head: number }>;
      if (chains.find((c) => c.chain === 'bitcoin')?.head === core.chain.height) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    for (let i = 0; i < 50; i++) await probe();
    const healthIdle: number[] = [];
    for (let i = 0; i < IDLE_PROBES; i++) healthIdle.push(await probe());

    const first: number[] = [];
    for (let i = 0; i < EDGE; i++) first.push(await add(i));

    // The burst: BURST_CONCURRENCY adds at a time, /health probed one after another meanwhile.
    const healthDuringAdds: number[] = [];
    let next = EDGE;
    const last = xpubs - EDGE;
    let adding = true;
    const t0 = performance.now();
    const prober = (async () => {
      while (adding) healthDuringAdds.push(await probe());
    })();
    await Promise.all(
      Array.from({ length: BURST_CONCURRENCY }, async () => {
        while (next < last) await add(next++);
      }),
    );
    adding = false;
    await prober;
    const burstMs = performance.now() - t0;

    const end: number[] = [];
    for (let i = last; i < xpubs; i++) end.push(await add(i));
    const total = (await api('GET', `/streams/bitcoin/${id}/xpub?limit=1`)).total as number;
    if (total !== xpubs) throw new Error(`the stream holds ${total} xpubs, not ${xpubs}`);
    const oneMoreStatus = oneMore
      ? (
          await fetch(`${base}/streams/bitcoin/${id}/xpub`, {
            method: 'POST',
            headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
            body: JSON.stringify({ xpub: keys[xpubs] }),
          })
        ).status
      : undefined;
    return {
      oneMoreStatus,
      addMsAround10th: percentile(first.slice(WARM), 0.5),
      addMsAround1000th: percentile(end, 0.5),
      burstAddsPerSec: ((last - EDGE) / burstMs) * 1000,
      healthIdle,
      healthDuringAdds,
    };
  } finally {
    await server.stop('SIGTERM');
    await core.close();
    receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { before: { type: 'string' } } });
  const before = values.before === undefined ? undefined : await measureXpubs(values.before);
  const now = await measureXpubs(BIN);
  const p99 = (xs: number[]): number => percentile(xs, 0.99);
  const figures: Record<string, number> = {
    addMsAround10th: round(now.addMsAround10th),
    addMsAround1000th: round(now.addMsAround1000th),
    ratioAdd1000thVs10th: round(now.addMsAround1000th / now.addMsAround10th),
    burstAddsPerSec: round(now.burstAddsPerSec, 0),
    healthP50IdleMs: round(percentile(now.healthIdle, 0.5)),
    healthP99IdleMs: round(p99(now.healthIdle)),
    healthP50DuringAddsMs: round(percentile(now.healthDuringAdds, 0.5)),
    healthP99DuringAddsMs: round(p99(now.healthDuringAdds)),
    ratioHealthP99DuringVsIdle: round(p99(now.healthDuringAdds) / p99(now.healthIdle)),
    healthProbesDuringAdds: now.healthDuringAdds.length,
    ...(before === undefined
      ? {}
      : {
          beforeAddMsAround10th: round(before.addMsAround10th),
          beforeAddMsAround1000th: round(before.addMsAround1000th),
          beforeHealthP99IdleMs: round(p99(before.healthIdle)),
          beforeHealthP99DuringAddsMs: round(p99(before.healthDuringAdds)),
        }),
  };

  printRows([
    ['add, around the 10th', figures.addMsAround10th!, 'ms'],
    ['add, around the 1,000th', figures.addMsAround1000th!, 'ms', figures.addMsAround10th],
    ['/health p99, idle', figures.healthP99IdleMs!, 'ms'],
    ['/health p99, during adds', figures.healthP99DuringAddsMs!, 'ms', figures.healthP99IdleMs],
    ['adds/s in the burst', figures.burstAddsPerSec!, '/s'],
    ...(before === undefined
      ? []
      : [
          ['/health p99 during adds, --before', figures.beforeHealthP99DuringAddsMs!, 'ms', figures.healthP99DuringAddsMs] as [
            string,
            number,
            string,
            number,
          ],
        ]),
  ]);
  const goal = { ratioAdd1000thVs10th: '<= 1.5', healthP99DuringAddsMs: '< 20' };
  const met = figures.ratioAdd1000thVs10th! <= 1.5 && figures.healthP99DuringAddsMs! < 20;
  report(
    'xpubs',
    before === undefined ? 'npm run bench:xpubs' : 'npm run bench:xpubs -- --before <an earlier build>/bin/chainpost.js',
    figures,
    goal,
    met,
    [
      `One Bitcoin stream, ${XPUBS} xpubs (CHAINPOST_MAX_XPUBS' default) added through POST /streams/bitcoin/:id/xpub on the real server following the stand-in Bitcoin Core (CHAINPOST_BITCOIN_GAP 20: 40 addresses derived per key, in the worker pool).`,
      `addMsAround10th: the median of adds ${WARM + 1} to ${EDGE}, one at a time; addMsAround1000th: the median of the last ${EDGE}, one at a time. Between them a burst of ${BURST_CONCURRENCY} adds at a time while GET /health is probed one request after another (healthP99DuringAddsMs); the baseline is ${IDLE_PROBES} probes before any add, in the same run.`,
      ...(before === undefined
        ? []
        : [
            `before…: the same measurements on the build given with --before (the code before xpubs were counted and read by key), first, on its own stand-in, receiver and data directory.`,
          ]),
    ],
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
