import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startAnvil, type Anvil } from '../../http/clients/anvil.js';
import { freePort } from './free-port.js';
import { jsonRpcUpstream } from '../../http/clients/rpc.js';
import type { Hold } from '../../app/server.js';
import { startProcess, type Listening } from './proc.js';
import { minedReceipt } from './anvil-rpc.js';
import { watchAtScale, type Scale } from './startup-store.js';

/**
 * One start of the real server (bin/chainpost.js) on a store watching at scale, following a real anvil, with a
 * real webhook receiver (bench:startup, test/startup-scale.test.ts):
 *   1. a first server, on the empty store (its start timed: the baseline), creates one stream through the API and
 *      follows anvil for a while, then stops;
 *   2. the store layer copies that stream to `scale.streams` streams of `scale.perStream` addresses each (tenants of
 *      1,000 streams, the first the key's);
 *   3. while no server runs, `downBlocks` transfers are mined, each to a watched address of another stream;
 *   4. the server is spawned again: its first answers (GET /streams/evm?limit=1 with a key, GET /health 200) are
 *      timed from the spawn, `upBlocks` more transfers are mined as soon as it answers, and requests go on one
 *      after another the whole time, their latencies kept (the serving thread's longest hold shows there);
 *   5. until every transfer's block has reached the stream watching its address (or `limitMs`).
 * With `start` and `hold` (a server in the test process), the measured start's watchlist read is held until a request
 * was answered naming it as still starting, and each filter set compiled in the pool until two requests were answered
 * after it: what is answered meanwhile is then certain at any scale, not a matter of how long the read and the
 * compile take (the figures at scale are bench:startup's).
 */
export interface StartupOptions {
  /** bin/chainpost.js (found from where the caller runs: dist-bench/bench/ or test/). */
  bin: string;
  scale: Scale;
  downBlocks: number;
  upBlocks: number;
  /** Give up waiting for the webhooks after this long from the spawn. */
  limitMs: number;
  /** Extra environment for the measured start. */
  env?: Record<string, string>;
  /** Starts a server on this environment (the default: spawns `bin serve`); `hold`, for the measured start only. */
  start?: (env: Record<string, string>, hold?: Hold) => Promise<Listening>;
  /** Hold the measured start's watchlist read and pool compiles (above; only with `start`). */
  hold?: boolean;
  /** Once matching resumed, with the measured server still up (bench:scale's live changes). */
  then?: (live: LiveRun) => Promise<void>;
}

/** The measured server once matching resumed, for `then`: its port, the chain and the receiver. */
export interface LiveRun {
  port: number;
  /** Every stream id, in the order written, and the addresses of stream i (the scaled store's). */
  ids: string[];
  addressOf(stream: number, k: number): string;
  /** A request to the server with the key. */
  call(path: string, init?: { method?: string; body?: unknown }): Promise<{ status: number; body: unknown }>;
  /** A transfer to `to` mined in a block of its own: its block number. */
  transfer(to: string): Promise<number>;
  /** When (performance.now()) the receiver had a webhook of `streamId` for `block` naming a transfer to `to`; undefined: not yet. */
  deliveredAt(streamId: string, block: number, to: string): number | undefined;
}

export interface StartupRun {
  /** Spawn → first 200 of GET /streams/evm?limit=1 (with a key). */
  firstAnswerMs: number;
  /** Spawn → first 200 of GET /health (every part up: the watchlist read, the worker pool ready). */
  healthyMs: number;
  /** Spawn → the last transfer's block delivered to its stream (NaN when one never came). */
  matchingResumedMs: number;
  /** The server's log lines around the filter set compiled in the pool, from the spawn (NaN: none logged). */
  compileStartMs: number;
  compileEndMs: number;
  /** The longest request of those sent one after another (GET /streams/evm?limit=1, and GET /health until 200) from the first answer until matching resumed. */
  maxRequestMs: number;
  /** The same, of the requests in flight while the filter set was compiling, and how many there were. */
  maxRequestDuringCompileMs: number;
  answeredDuringCompile: number;
  /** GET /health answers (503) naming the watchlist as still starting: requests answered while it was read. */
  answeredWhileLoading: number;
  /** Transfers whose block reached the stream watching the address: while down, after start. */
  deliveredDown: number;
  deliveredUp: number;
  /** Writing the scaled store (store layer). */
  writeMs: number;
  /** The LMDB pages of the scaled store's stream tables once written (streamAddresses, streams), bytes. */
  storeBytes: { streamAddresses: number; streams: number };
  /** The kept watched sets (scale.keep): milliseconds to compile and write them, and their bytes. */
  keepMs: number;
  keptBytes: number;
  /** Spawn → first answer of a server on a store without streams, in the same run. */
  baselineFirstAnswerMs: number;
  output: string;
}

const KEY = 'cpk_bench_startup_key_0123456789abcdef';
const FROM = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const CHAIN = '0x539';

export async function startupRun(opts: StartupOptions): Promise<StartupRun> {
  const anvil = await startAnvil({ chainId: 1337 });
  const received: Array<{
    at: number;
    body: { streamId?: string; confirmed?: boolean; block?: { number: string }; txs?: Array<{ toAddress: string }> };
  }> = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      if (raw !== '') received.push({ at: performance.now(), body: JSON.parse(raw) as (typeof received)[number]['body'] });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const dirs: string[] = [];
  const tempDir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'chainpost-startup-'));
    dirs.push(d);
    return d;
  };
  const env = {
    CHAINPOST_API_KEY: KEY,
    CHAINPOST_CHAINS: `${CHAIN}=${anvil.url}`,
    CHAINPOST_CONFIRMATIONS: `${CHAIN}=2`,
    CHAINPOST_POLL_MS: '50',
    CHAINPOST_RATE_LIMIT: '0',
    CHAINPOST_ACCESS_LOG: '0',
    CHAINPOST_PRIVATE_TARGETS: 'allow',
  };
  const start = opts.start ?? ((env: Record<string, string>) => startProcess([opts.bin, 'serve'], env, 120_000));
  // The measured start's holds: each waits for the requests the loop below has answered (a check after each).
  let answered = 0;
  let answeredWhileLoading = 0;
  let released = false;
  const waiting = new Set<() => boolean>();
  const recheck = (): void => {
    for (const w of waiting) if (w()) waiting.delete(w);
  };
  const waitFor = (ready: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      const w = (): boolean => {
        if (!ready() && !released) return false;
        resolve();
        return true;
      };
      if (!w()) waiting.add(w);
    });
  const hold: Hold = (step) => {
    if (step === 'watchlist page') return waitFor(() => answeredWhileLoading > 0);
    const from = answered;
    return waitFor(() => answered >= from + 2);
  };
  let server: Listening | undefined;
  try {
    // 1. A stream made through the API, in the stored form of this code; the server follows anvil a while. Its
    // start is the baseline: the same server on a store without streams.
    const dir = tempDir();
    const baseline = await spawnTimed(start, dir, env);
    const first = await baseline.started;
    server = first;
    const made = await call(first.port, '/streams/evm', {
      method: 'PUT',
      body: { webhookUrl: hook, description: 'startup', tag: 'startup', chainIds: [CHAIN], includeNativeTxs: true },
    });
    const id = (made.body as { id: string }).id;
    await mine(anvil, 3);
    await first.stop();
    server = undefined;

    // 2. The store at scale.
    const scaled = await watchAtScale(dir, id, opts.scale);
    // The streams the transfers go to: spread over the store (the first, the last, and between).
    const targets = Array.from({ length: opts.downBlocks + opts.upBlocks }, (_, i) => {
      const stream = Math.floor(((i + 0.5) / (opts.downBlocks + opts.upBlocks)) * opts.scale.streams);
      return { stream, streamId: scaled.ids[stream]!, address: scaled.addressOf(stream, (i * 7) % opts.scale.perStream), block: -1 };
    });

    // 3. While no server runs.
    for (const t of targets.slice(0, opts.downBlocks)) t.block = await transfer(anvil, t.address);

    // 4. The measured start.
    const run = await spawnTimed(start, dir, { ...env, ...opts.env }, opts.hold === true ? hold : undefined);
    run.started.then(
      (s) => (server = s),
      () => {},
    );
    const t0 = run.t0;
    for (const t of targets.slice(opts.downBlocks)) t.block = await transfer(anvil, t.address);
    const delivered = (ts: typeof targets): number =>
      ts.filter((t) =>
        received.some(
          (r) =>
            r.body.streamId === t.streamId &&
            r.body.block?.number === String(t.block) &&
            r.body.txs?.some((x) => x.toAddress === t.address),
        ),
      ).length;
    const latencies: Array<{ at: number; ms: number }> = [];
    const timed = async (path: string): Promise<{ status: number; body: unknown } | undefined> => {
      const at = performance.now();
      const r = await call(run.port, path).catch(() => undefined);
      latencies.push({ at: at - t0, ms: performance.now() - at });
      if (r !== undefined) answered++;
      return r;
    };
    let resumedAt = NaN;
    let healthyMs = NaN;
    while (performance.now() - t0 < opts.limitMs) {
      const r = await timed('/streams/evm?limit=1');
      if (r?.status !== 200) throw new Error(`GET /streams/evm answered ${r?.status ?? 'nothing'} after the first answer`);
      if (Number.isNaN(healthyMs)) {
        const h = await timed('/health');
        if (h?.status === 200) healthyMs = performance.now() - t0;
        else if ((h?.body as { starting?: string[] } | undefined)?.starting?.includes('watchlist') === true) answeredWhileLoading++;
      }
      recheck();
      if (delivered(targets) === targets.length) {
        resumedAt =
          Math.max(
            ...targets.map((t) => received.find((r) => r.body.streamId === t.streamId && r.body.block?.number === String(t.block))!.at),
          ) - t0;
        break;
      }
    }
    if (!Number.isNaN(resumedAt) && opts.then !== undefined)
      await opts.then({
        port: run.port,
        ids: scaled.ids,
        addressOf: scaled.addressOf,
        call: (path, init) => call(run.port, path, init),
        transfer: (to) => transfer(anvil, to),
        deliveredAt: (streamId, block, to) =>
          received.find(
            (r) => r.body.streamId === streamId && r.body.block?.number === String(block) && r.body.txs?.some((x) => x.toAddress === to),
          )?.at,
      });
    const output = (await run.started).output();
    const lineAt = (msg: string): number => run.lineAt(output, msg);
    const compileStartMs = lineAt('compiling a filter set in the worker pool');
    const compileEndMs = lineAt('compiled a filter set');
    // Requests in flight at some time of the compile: one held through a compile on the serving thread counts.
    const during = latencies.filter((l) => l.at <= compileEndMs && l.at + l.ms >= compileStartMs);
    return {
      firstAnswerMs: run.firstAnswerMs,
      healthyMs,
      matchingResumedMs: resumedAt,
      compileStartMs,
      compileEndMs,
      maxRequestMs: Math.max(...latencies.map((l) => l.ms)),
      maxRequestDuringCompileMs: during.length === 0 ? NaN : Math.max(...during.map((l) => l.ms)),
      answeredDuringCompile: during.length,
      answeredWhileLoading,
      deliveredDown: delivered(targets.slice(0, opts.downBlocks)),
      deliveredUp: delivered(targets.slice(opts.downBlocks)),
      writeMs: scaled.writeMs,
      storeBytes: scaled.storeBytes,
      keepMs: scaled.keepMs,
      keptBytes: scaled.keptBytes,
      baselineFirstAnswerMs: baseline.firstAnswerMs,
      output,
    };
  } finally {
    released = true;
    recheck();
    await server?.stop();
    await new Promise<void>((resolve) => {
      receiver.closeAllConnections();
      receiver.close(() => resolve());
    });
    await anvil.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

/** A server started on `dir` at a port chosen here, and how long from the start until GET /streams/evm?limit=1 answered 200. */
async function spawnTimed(start: NonNullable<StartupOptions['start']>, dir: string, env: Record<string, string>, hold?: Hold) {
  const port = await freePort();
  const t0 = performance.now();
  // The log lines' times are the server's clock (the wall clock): from the spawn on this process's.
  const wallAtSpawn = Date.now();
  const started = start({ ...env, CHAINPOST_DATA: dir, CHAINPOST_PORT: String(port) }, hold);
  let failed: unknown;
  started.catch((err: unknown) => (failed = err));
  let firstAnswerMs = NaN;
  while (performance.now() - t0 < 60_000 && failed === undefined) {
    const r = await call(port, '/streams/evm?limit=1').catch(() => undefined);
    if (r?.status === 200) {
      firstAnswerMs = performance.now() - t0;
      break;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  if (failed !== undefined) throw failed;
  if (Number.isNaN(firstAnswerMs)) {
    await started.then(
      (s) => s.stop(),
      () => {},
    );
    throw new Error('the server did not answer within 60 s');
  }
  return {
    port,
    t0,
    firstAnswerMs,
    started,
    /** Milliseconds from the spawn to the server's first log line with this message in `output` (NaN: none). */
    lineAt(output: string, msg: string): number {
      const line = output.split('\n').find((l) => l.includes(`"msg":"${msg}"`));
      return line === undefined ? NaN : Date.parse((JSON.parse(line) as { time: string }).time) - wallAtSpawn;
    },
  };
}

async function call(
  port: number,
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: init.method ?? 'GET',
    headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
}

const mine = (anvil: Anvil, n: number): Promise<unknown> => jsonRpcUpstream(anvil.url).call('anvil_mine', [`0x${n.toString(16)}`]);

/** A value transfer to `to`, mined in a block of its own (anvil's automine); its block number. */
async function transfer(anvil: Anvil, to: string): Promise<number> {
  const rpc = jsonRpcUpstream(anvil.url);
  const hash = await rpc.call<string>('eth_sendTransaction', [{ from: FROM, to, value: '0x1' }]);
  return Number((await minedReceipt(rpc, hash)).blockNumber);
}
