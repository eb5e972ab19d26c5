import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Route } from '../http/server/route.js';
import { keptLogBase, type Listening } from './kit/proc.js';

/**
 * The service as the binary runs it, from dist/ (built before the tests run), loaded by Node itself: through vitest's
 * transform, the sources would cost every test file seconds more to load.
 */
const dist = (path: string): Promise<unknown> => import(new URL(`../dist/${path}`, import.meta.url).href);
/**
 * Loaded at the first start, not when this file is imported: test/helpers.ts imports it, and the files that use only
 * its other helpers (most unit tests) would pay the server's load each.
 */
let loaded:
  | Promise<{
      startService: typeof import('../app/server.js').startService;
      parseConfig: typeof import('../engine/config/config.js').parseConfig;
    }>
  | undefined;
const loadService = (): NonNullable<typeof loaded> =>
  (loaded ??= Promise.all([serverModule(), dist('engine/config/config.js')]).then(([server, config]) => ({
    startService: server.startService,
    parseConfig: (config as typeof import('../engine/config/config.js')).parseConfig,
  })));

/**
 * app/server.js from dist/, as the binary and startInProcess load it: for the tests that build the service or its core
 * themselves. From the sources, vitest would transform and load the server's whole graph a second time.
 */
export const serverModule = (): Promise<typeof import('../app/server.js')> =>
  dist('app/server.js') as Promise<typeof import('../app/server.js')>;

/**
 * The routes exactly as a server on `env` assembles them (so a route added later is covered too): a core built on a
 * scratch directory, following no chain, then closed.
 */
export async function serverRoutes(env: Record<string, string>): Promise<Route[]> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-test-'));
  const [{ createCore }, { parseConfig }] = await Promise.all([serverModule(), loadService()]);
  const core = await createCore({
    config: parseConfig({ ...env, CHAINPOST_DATA: dir, CHAINPOST_CHAINS: 'none' }),
    out: () => {},
    notice: () => {},
  });
  try {
    return [...core.routes];
  } finally {
    await core.dispatcher.stop();
    await core.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A server run inside the test process: what a test reads of a started server but its process. */
export interface InProcess extends Listening {
  /** The process serving (this one: its /proc/<pid> figures are the server's). */
  pid: number;
}

let started = 0;

/** The servers started here and not stopped yet: a file sharing its process with the next must leave none (test/shared-setup.ts). */
const live = new Set<InProcess>();
export const stillRunning = (): InProcess[] => [...live];

/**
 * Starts app/'s service in this process on `env` over the test process's environment (parsed as the binary parses
 * its own; process.env is left as it is): a temp LMDB, the real uWS listener on a loopback port, its own worker
 * pool and metrics. Its log lines are kept under CHAINPOST_CHILD_LOGS beside the children's, for the run's secret
 * scan. A configuration the binary refuses rejects with the text the binary would print before exiting.
 */
export async function startInProcess(env: Record<string, string>, adapters: import('../app/server.js').Adapters = {}): Promise<InProcess> {
  let out = '';
  let stdout = '';
  const keep = keptLog(env);
  const print = (text: string, toStdout: boolean): void => {
    out += text;
    if (toStdout) stdout += text;
    keep(text);
  };
  const { startService, parseConfig } = await loadService();
  let service: Awaited<ReturnType<typeof startService>>;
  try {
    const parsed = parseConfig({ ...process.env, ...env });
    const config = { ...parsed, dataDir: resolve(parsed.dataDir) };
    print(`chainpost: data directory ${config.dataDir}\n`, false);
    service = await startService({ config, out: (line) => print(line, true), notice: (text) => print(text, false), adapters });
  } catch (err) {
    print(`chainpost: ${(err as Error).message}\n`, false);
    throw new Error(`exited with 1 before listening:\n${out}`);
  }
  let stopping: Promise<number | null> | undefined;
  let exit: (code: number | null) => void = () => {};
  const exited = new Promise<number | null>((resolve) => (exit = resolve));
  // Every signal stops it the one way there is in a process that goes on: gracefully (the kill tests run the binary).
  const stop = (): Promise<number | null> => {
    stopping ??= service.stop().then(
      () => 0,
      (err: unknown) => {
        service.log.error('stop failed', { err });
        return 1;
      },
    );
    void stopping.then(exit);
    return exited;
  };
  const server: InProcess = { port: service.server.port, pid: process.pid, output: () => out, stdout: () => stdout, exited, stop };
  live.add(server);
  void exited.then(() => live.delete(server));
  return server;
}

/** Appends to this server's file under CHAINPOST_CHILD_LOGS, with the CHAINPOST_ variables it was given (test/secret-scan.ts). */
function keptLog(env: Record<string, string>): (text: string) => void {
  const base = keptLogBase(`in-process-${++started}`, { ...process.env, ...env });
  return base === undefined ? () => {} : (text) => appendFileSync(`${base}.log`, text);
}
