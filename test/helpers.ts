import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startProcess, until as untilHolds, type Started } from './kit/proc.js';
import { startInProcess, type InProcess } from './in-process.js';
import type { Adapters } from '../app/server.js';
import type { Ticker } from '../engine/clock.js';
import { registerSecret } from './secret-scan.js';
import { checkAnswer } from './openapi-check.js';

export const BIN = fileURLToPath(new URL('../bin/chainpost.js', import.meta.url));

export const tempDir = (): string => mkdtempSync(join(tmpdir(), 'chainpost-test-'));

/** A started server, in this process or a child one. */
export interface Running extends InProcess {
  url: string;
  dir: string;
  key: string;
  /** fetch relative to the server, with the key in x-api-key unless `headers` says otherwise. */
  call(path: string, init?: RequestInit & { json?: unknown }): Promise<{ status: number; body: any; headers: Headers }>;
}

export const TEST_KEY = 'cpk_test_key_0123456789abcdefXYZ';

/** The operator's credential of the servers tests start (CHAINPOST_ADMIN_KEY): apiCaller sends it to the admin routes. */
export const TEST_ADMIN_KEY = 'test_admin_key_0123456789abcdef';

/** A server started as the built binary: its process too. */
export interface RunningBinary extends Running, Started {}

/**
 * The environment every test server starts with. No chain to follow unless a test asks for one (an unset
 * CHAINPOST_CHAINS would start the embedded anvil). Receivers and metadata servers listen on loopback, which a
 * server following chains (CHAINPOST_CHAINS, even none) refuses by default: allowed here, for every test; a test
 * of the default passes '' (unset). One worker thread: each costs its start the CPU of loading its code,
 * and tests run two files at a time on two cores; a test of the pool passes its own count ('' for one per core).
 */
const serverEnv = (env: Record<string, string>, dir: string): Record<string, string> => ({
  CHAINPOST_DATA: dir,
  CHAINPOST_PORT: '0',
  CHAINPOST_API_KEY: TEST_KEY,
  CHAINPOST_ADMIN_KEY: TEST_ADMIN_KEY,
  CHAINPOST_CHAINS: 'none',
  CHAINPOST_PRIVATE_TARGETS: 'allow',
  CHAINPOST_WORKER_THREADS: '1',
  ...env,
});

/**
 * Starts the real server (app/'s service, the same code the binary runs) in the test process on a free loopback port
 * with a temp LMDB directory: a second or more faster than a child process. `adapters`: the test's own (a ticker it
 * moves, see manualTicker); a test of another build's binary uses startBinary.
 */
export async function startChainpost(env: Record<string, string> = {}, dir = tempDir(), adapters: Adapters = {}): Promise<Running> {
  return running(await startInProcess(serverEnv(env, dir), adapters), env, dir);
}

/**
 * Real time for a server (app/'s `ticker` adapter: its service clock, webhook timeouts, event-loop window) that moves
 * only when the test says, each OS wake-up fired when due.
 */
export function manualTicker() {
  let t = 0;
  let seq = 0;
  const wakes = new Map<number, { at: number; fn: () => void }>();
  const earliest = (): [number, { at: number; fn: () => void }] | undefined => {
    let first: [number, { at: number; fn: () => void }] | undefined;
    for (const e of wakes) if (first === undefined || e[1].at < first[1].at) first = e;
    return first;
  };
  const ticker: Ticker = {
    elapsedMs: () => t,
    wake: (delay, fn) => {
      const id = seq++;
      wakes.set(id, { at: t + delay, fn });
      return () => void wakes.delete(id);
    },
  };
  return {
    ticker,
    /** Real time passes: fires the wake-ups that fall due, earliest first, each on a turn of the event loop of its own. */
    async pass(ms: number) {
      t += ms;
      for (let next = earliest(); next !== undefined && next[1].at <= t; next = earliest()) {
        wakes.delete(next[0]);
        next[1].fn();
        await new Promise((r) => setImmediate(r));
      }
      await new Promise((r) => setImmediate(r));
    },
    /** When the earliest wake-up is due. */
    armed: () => earliest()?.[1].at,
  };
}

/**
 * Starts the real server binary (`bin`: another build's, such as an older chainpost's) as a child process, as a
 * user does: for the tests that signal or kill the process, or read what it prints as a user would. `timeoutMs`
 * for its listening line (default 25 s); `args` after `serve` (`--roles …`).
 */
export async function startBinary(
  env: Record<string, string> = {},
  dir = tempDir(),
  bin = BIN,
  timeoutMs?: number,
  args: string[] = [],
): Promise<RunningBinary> {
  const started = await startProcess([bin, 'serve', ...args], serverEnv(env, dir), timeoutMs);
  return running(Object.assign(started, { pid: started.child.pid! }), env, dir);
}

function running<S extends InProcess>(started: S, env: Record<string, string>, dir: string): S & Running {
  const url = `http://127.0.0.1:${started.port}`;
  const key = env['CHAINPOST_API_KEY'] ?? TEST_KEY;
  return Object.assign(started, { url, dir, key, call: apiCaller(url, key) });
}

/** How long a test's call to a server waits for its answer (test and hook timeouts are 60 s and more). */
const CALL_WITHIN_MS = 30_000;

/**
 * fetch relative to `url`, with `key` in x-api-key unless `headers` says otherwise (x-no-key: none), and on an admin
 * route (/admin/…) TEST_ADMIN_KEY in x-admin-key unless `headers` has its own; the body parsed as JSON when it is,
 * and checked against the server's OpenAPI document (openapi-check.ts).
 */
export function apiCaller(url: string, key: string, withinMs = CALL_WITHIN_MS): Running['call'] {
  return async (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (!headers.has('x-api-key') && !headers.has('authorization') && !headers.has('x-no-key')) headers.set('x-api-key', key);
    headers.delete('x-no-key');
    if (path.startsWith('/admin/') && !headers.has('x-admin-key')) headers.set('x-admin-key', TEST_ADMIN_KEY);
    const body = init.json === undefined ? init.body : JSON.stringify(init.json);
    // Bounded unless the test gives its own signal: a server that never answers fails the call, naming it, rather
    // than a poll (`until`) that never reaches its deadline, or a hook's bare timeout.
    const signal = init.signal ?? AbortSignal.timeout(withinMs);
    const failed = (err: unknown): never => {
      if (init.signal == null && signal.aborted)
        throw new Error(`${init.method ?? 'GET'} ${path} was not answered within ${withinMs} ms`, { cause: err });
      throw err;
    };
    const res = await fetch(`${url}${path}`, { ...init, headers, body, signal }).catch(failed);
    const text = await res.text().catch(failed);
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON (metrics): keep the text
    }
    // The webhook secret (GET /settings) joins the run's secret scan.
    const secretKey = (parsed as { secretKey?: unknown } | null)?.secretKey;
    if (typeof secretKey === 'string') registerSecret(secretKey);
    // So does an API key made or rotated through the API (POST /keys, /keys/:id/rotate).
    const newKey = (parsed as { key?: unknown } | null)?.key;
    if (typeof newKey === 'string' && newKey.startsWith('cpk_')) registerSecret(newKey);
    await checkAnswer(url, init.method ?? 'GET', path, res.status, res.headers.get('content-type'), parsed);
    return { status: res.status, body: parsed, headers: res.headers };
  };
}

export async function stopAndClean(r: Running | undefined): Promise<void> {
  if (r === undefined) return;
  await r.stop('SIGKILL');
  rmSync(r.dir, { recursive: true, force: true });
}

const exec = promisify(execFile);

/** The environment `chainpost …` runs on: the test process's, CHAINPOST_DATA set to `dir` (undefined: unset) and `env`. */
function cliEnv(dir: string | undefined, env: Record<string, string>): Record<string, string | undefined> {
  const base = { ...process.env };
  delete base['CHAINPOST_DATA'];
  return { ...base, ...(dir === undefined ? {} : { CHAINPOST_DATA: dir }), ...env };
}

/**
 * Runs the CLI (`chainpost …`) as the built binary, a process of its own, against a data directory (undefined:
 * CHAINPOST_DATA unset, so ./data of `cwd`): for what the process does as a user sees it (its exit code and streams).
 * What the CLI prints, parses and refuses is checked faster with cliInProcess.
 */
export async function cli(
  args: string[],
  dir: string | undefined,
  env: Record<string, string> = {},
  cwd?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [BIN, ...args], { cwd, env: cliEnv(dir, env) });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * Runs the CLI as `cli` does, in this process: app/cli/main.ts's `run` (from dist/, as test/in-process.ts loads the
 * service) on streams it keeps, the same environment and `cwd`. Its exit code and output are the binary's (one
 * test in test/cli.test.ts compares them), without a process's start. Never for `serve` but one it refuses: a
 * server it starts would take this process's signals.
 */
export async function cliInProcess(
  args: string[],
  dir: string | undefined,
  env: Record<string, string> = {},
  cwd = process.cwd(),
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { run } = (await import(new URL('../dist/app/cli/main.js', import.meta.url).href)) as typeof import('../app/cli/main.js');
  let stdout = '';
  let stderr = '';
  const code = await run(args, { out: (text) => void (stdout += text), err: (text) => void (stderr += text), env: cliEnv(dir, env), cwd });
  return { code, stdout, stderr };
}

/**
 * Waits until the server holds chain `chain` up to block `target`: its follower's head and the Data API's indexes,
 * which read each block after the follower committed it (a test reading an index right after the head moved may not
 * see the block yet). Resolves false after `ms`.
 */
export function indexedTo(
  server: { call(path: string): Promise<{ body: any }> },
  target: number,
  chain = '0x539',
  ms = 10_000,
): Promise<boolean> {
  return until(
    async () => {
      const c = ((await server.call('/health')).body.chains as Array<Record<string, any>>).find((c) => c['chain'] === chain);
      return c?.['head'] >= target && (c?.['indexed'] === undefined || c['indexed'] >= target);
    },
    ms,
    20,
  );
}

/** Polls `probe` until it holds or `ms` run out (every 10 ms: tests wait on fast servers); says whether it held. */
export const until = (probe: () => boolean | Promise<boolean>, ms: number, every = 10): Promise<boolean> => untilHolds(probe, ms, every);

/** Moves the server's test clock forward. */
export async function advance(r: Running, seconds: number): Promise<string> {
  const res = await r.call('/admin/clock/advance', { method: 'POST', json: { seconds } });
  if (res.status !== 200) throw new Error(`advance failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.now as string;
}
