/**
 * npm run bench:fairness — one tenant's receivers that never answer against another tenant's webhooks, on the real
 * server. Tenant B's stream gets a webhook every 100 ms for 12 s (a first timeout wave of the hanging POSTs falls in
 * it); its latency, admin POST sent → webhook received, is measured alone (the baseline), then with tenant A's 540
 * streams on nine receiver origins that hold every request open (bench/hang-receiver.ts, another process), 5 webhooks
 * queued each: receivers that never answered A (the attack as reported), receivers that answered A's first webhooks
 * and then hang (A's share of the slots is then all that holds A back), and the same silent attack with both shares
 * at 512 (no per-tenant share: every slot is A's for the taking, as before the shares existed; freed slots still go
 * to the tenants in turn). A fresh server and store for each. bench:attacks runs the attack scaled down, on an earlier
 * build too (fairnessRig, fairnessRun).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startProcess, until } from '../test/kit/proc.js';
import { BIN, percentile, printRows, report, round, sized } from './report.js';

const KEY = 'cpk_bench_fairness_key_0123456789ab';
const ADMIN_KEY = 'bench_fairness_admin_key_0123456789';
const HOSTILE = sized(540, 18);
const ORIGINS = 9;
const QUEUED_EACH = sized(5, 1);
const EVERY_MS = 100;
/** How long tenant A's hanging POSTs are given to take what slots they may before B's first webhook. */
const SETTLE_MS = sized(1_000, 250);
const WINDOW_MS = sized(12_000, 1_000);
const MAX_IN_FLIGHT = 512;
/** How long tenant B's webhooks may take to arrive after the window before the run gives up on them. */
const DRAIN_MS = 60_000;

const payload = (n: number): Record<string, unknown> => ({
  confirmed: false,
  chainId: '0x1',
  block: { number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: '1795000000' },
  logs: [],
  txs: [],
});

/** Tenant B's receiver, in this process (its arrival instants are read on the clock the sends are), and tenant A's hanging receivers, in another. */
export interface FairnessRig {
  victimUrl: string;
  arrivedAt: Map<number, number>;
  hangPorts: number[];
  control: (path: string) => Promise<Response>;
  close(): Promise<void>;
}

export async function fairnessRig(): Promise<FairnessRig> {
  const arrivedAt = new Map<number, number>();
  const victim = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { chainId?: string; block?: { number?: string } };
      if (body.chainId !== '' && body.block?.number !== undefined) arrivedAt.set(Number(body.block.number), performance.now());
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => victim.listen(0, '127.0.0.1', r));
  const victimUrl = `http://127.0.0.1:${(victim.address() as AddressInfo).port}/hook`;
  const hangers = await startProcess([fileURLToPath(new URL('./hang-receiver.js', import.meta.url))], { HANG_PORTS: String(ORIGINS) });
  const hangPorts = (JSON.parse(/\{"msg":"listening".*\}/.exec(hangers.output())![0]) as { hang: number[] }).hang;
  const control = (path: string): Promise<Response> =>
    fetch(`http://127.0.0.1:${hangers.port}${path}`, { method: path === '/held' ? 'GET' : 'POST' });
  return {
    victimUrl,
    arrivedAt,
    hangPorts,
    control,
    close: async () => {
      await hangers.stop();
      victim.close();
    },
  };
}

export type Attack = 'none' | 'silent' | 'proven';
export interface Run {
  p50Ms: number;
  p99Ms: number;
  /** Tenant A's POSTs held open by its receivers, at most, during the window. */
  hostileHeld: number;
  /** Tenant B's webhooks that had not arrived when the drain ended (their latency counted as the wait so far). */
  late: number;
}

/** How a run is scaled: bench:fairness's defaults, or bench:attacks' smaller ones. */
export interface Scale {
  bin: string;
  hostile: number;
  queuedEach: number;
  windowMs: number;
  drainMs: number;
}

const FULL: Scale = { bin: BIN, hostile: HOSTILE, queuedEach: QUEUED_EACH, windowMs: WINDOW_MS, drainMs: DRAIN_MS };

/** One run on a fresh server and store: tenant B's latency with tenant A's `attack` (none: the baseline); `env` on top of the run's own variables. */
export async function fairnessRun(
  rig: FairnessRig,
  label: string,
  attack: Attack,
  env: Record<string, string> = {},
  scale: Scale = FULL,
): Promise<Run> {
  const { victimUrl, arrivedAt, hangPorts, control } = rig;
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-fairness-'));
  const server = await startProcess([scale.bin, 'serve'], {
    CHAINPOST_DATA: dir,
    CHAINPOST_PORT: '0',
    CHAINPOST_API_KEY: KEY,
    CHAINPOST_ADMIN_KEY: ADMIN_KEY,
    CHAINPOST_CHAINS: 'none',
    CHAINPOST_TEST_CLOCK: '1',
    CHAINPOST_RATE_LIMIT: '0',
    CHAINPOST_ACCESS_LOG: '0',
    CHAINPOST_PRIVATE_TARGETS: 'allow',
    ...env,
  });
  // Its warn line for every failed attempt is not kept here.
  server.child.stdout!.removeAllListeners('data');
  server.child.stdout!.resume();
  const base = `http://127.0.0.1:${server.port}`;
  const api = async (method: string, path: string, json?: unknown, key = KEY): Promise<any> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'x-api-key': key, 'x-admin-key': ADMIN_KEY, 'content-type': 'application/json' },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  const create = async (webhookUrl: string, tag: string, key = KEY): Promise<string> =>
    (await api('PUT', '/streams/evm', { webhookUrl, description: 'fairness', tag, chainIds: ['0x1'] }, key)).id as string;
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [scale.bin, 'keys', 'create', '--name', 'victim'], {
      env: { ...process.env, CHAINPOST_DATA: dir },
    });
    const victimKey = stdout.trim().split('\n').at(-1)!;
    const theirs = await create(`${victimUrl}?theirs`, 'theirs', victimKey);
    if (attack !== 'none') {
      await control(attack === 'proven' ? '/answer' : '/hang');
      const ids: string[] = [];
      for (let i = 0; i < scale.hostile; i += 10)
        ids.push(
          ...(await Promise.all(
            Array.from({ length: Math.min(10, scale.hostile - i) }, (_, k) =>
              create(`http://127.0.0.1:${hangPorts[(i + k) % ORIGINS]}/s${i + k}`, `h${i + k}`),
            ),
          )),
        );
      let next = 1;
      if (attack === 'proven') {
        await api('POST', '/admin/webhooks', { webhooks: ids.map((streamId) => ({ streamId, payload: payload(next) })) });
        next++;
        if (!(await until(async () => (await api('GET', '/stats')).totalWebhooksDelivered === scale.hostile, 60_000)))
          throw new Error('the first webhooks were not all answered');
        await control('/hang');
      }
      await api('POST', '/admin/webhooks', {
        webhooks: Array.from({ length: scale.queuedEach }, (_, k) =>
          ids.map((streamId) => ({ streamId, payload: payload(next + k) })),
        ).flat(),
      });
      // The hanging POSTs take what slots they may.
      await sleep(SETTLE_MS);
    }
    arrivedAt.clear();
    const sentAt = new Map<number, number>();
    let hostileHeld = 0;
    const started = performance.now();
    for (let n = 1; performance.now() - started < scale.windowMs; n++) {
      sentAt.set(n, performance.now());
      api('POST', `/admin/streams/${theirs}/webhooks`, { webhooks: [payload(n)] }, victimKey).catch((err: unknown) =>
        console.log(`enqueue ${n} failed: ${(err as Error).message}`),
      );
      if (attack !== 'none' && n % 10 === 0)
        hostileHeld = Math.max(hostileHeld, ((await (await control('/held')).json()) as { held: number }).held);
      await sleep(Math.max(0, started + n * EVERY_MS - performance.now()));
    }
    await until(() => arrivedAt.size >= sentAt.size, scale.drainMs);
    const now = performance.now();
    const latencies = [...sentAt].map(([n, t]) => (arrivedAt.get(n) ?? now) - t);
    const r = {
      p50Ms: round(percentile(latencies, 0.5)),
      p99Ms: round(percentile(latencies, 0.99)),
      hostileHeld,
      late: sentAt.size - arrivedAt.size,
    };
    console.log(
      `${label}: tenant B's ${latencies.length} webhooks p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms${attack === 'none' ? '' : `; tenant A's receivers held up to ${hostileHeld} POSTs open`}${r.late > 0 ? `; ${r.late} not arrived within ${scale.drainMs / 1000} s` : ''}`,
    );
    return r;
  } finally {
    await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const rig = await fairnessRig();
  let baseline: Run;
  let silent: Run;
  let proven: Run;
  let noShares: Run;
  try {
    baseline = await fairnessRun(rig, 'alone (baseline)', 'none');
    silent = await fairnessRun(rig, 'receivers that never answered A', 'silent');
    proven = await fairnessRun(rig, 'receivers that answered A, then hang', 'proven');
    noShares = await fairnessRun(rig, 'never answered, no per-tenant shares (both at 512)', 'silent', {
      CHAINPOST_DELIVERY_TENANT_SLOTS: String(MAX_IN_FLIGHT),
      CHAINPOST_DELIVERY_UNANSWERED_SLOTS: String(MAX_IN_FLIGHT),
    });
  } finally {
    await rig.close();
  }
  for (const r of [baseline, silent, proven, noShares]) if (r.late > 0) throw new Error(`${r.late} of tenant B's webhooks never arrived`);

  const ratio = (r: Run): number => round(r.p50Ms / baseline.p50Ms);
  const figures = {
    baselineP50Ms: baseline.p50Ms,
    baselineP99Ms: baseline.p99Ms,
    silentP50Ms: silent.p50Ms,
    silentP99Ms: silent.p99Ms,
    silentRatio: ratio(silent),
    silentHeld: silent.hostileHeld,
    provenP50Ms: proven.p50Ms,
    provenP99Ms: proven.p99Ms,
    provenRatio: ratio(proven),
    provenHeld: proven.hostileHeld,
    noSharesP50Ms: noShares.p50Ms,
    noSharesP99Ms: noShares.p99Ms,
    noSharesRatio: ratio(noShares),
    noSharesHeld: noShares.hostileHeld,
  };
  console.log('');
  const runs: Array<[string, Run]> = [
    ['alone', baseline],
    ['A never answered', silent],
    ['A answered then hangs', proven],
    ['no per-tenant shares', noShares],
  ];
  printRows(
    (['p50Ms', 'p99Ms'] as const).flatMap((q) =>
      runs.map(([label, r]): [string, number, string, number?] =>
        r === baseline ? [`B ${q.slice(0, 3)}, ${label}`, r[q], 'ms'] : [`B ${q.slice(0, 3)}, ${label}`, r[q], 'ms', baseline[q]],
      ),
    ),
  );
  const met = figures.silentRatio <= 2 && figures.provenRatio <= 2;
  report('fairness', 'npm run bench:fairness', figures, { silentRatio: '<= 2', provenRatio: '<= 2' }, met, [
    `Tenant B: one stream, a webhook every ${EVERY_MS} ms for ${WINDOW_MS / 1000} s through the test clock's admin route; latency = admin POST sent → webhook received by B's receiver (in the bench process, 200 at once). *Ratio = that run's B p50 ÷ baselineP50Ms (B alone), all measured in this run.`,
    `Tenant A: ${HOSTILE} streams over ${ORIGINS} receiver origins of another process that answer the test webhooks and hold every other request open until the 10-s delivery timeout, ${QUEUED_EACH} webhooks queued each, ${SETTLE_MS / 1000} s before B's first. silent: those receivers never answered A; proven: they answered A's first webhook of each stream, then hang; noShares: silent with CHAINPOST_DELIVERY_TENANT_SLOTS and CHAINPOST_DELIVERY_UNANSWERED_SLOTS at ${MAX_IN_FLIGHT} (no per-tenant share). *Held: A's POSTs the receivers held open at most (sampled every second).`,
    'Defaults: 512 in flight in all, 64 per origin, 128 per tenant, 16 per tenant to origins that have not answered it. A fresh server and store per run, on the machine the other runs share.',
  ]);
  console.log(
    `\ngoal silentRatio <= 2 and provenRatio <= 2: ${met ? 'met' : 'not met'}; wrote bench/results/fairness.json and bench/RESULTS.md`,
  );
  process.exit(0);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
