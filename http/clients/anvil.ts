import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { DEVNET_STOP_GRACE_MS } from '../../engine/config/config.js';

/**
 * anvil from node_modules (the @foundry-rs/anvil-linux-amd64 build, the only
 * one the registry here has) on a loopback port: the embedded devnet
 * (http/clients/devnet.ts) and the node of tests and benchmarks. It dies
 * with this process: on stop, on exit, on a crash that reaches the exit handler,
 * and (with setpriv, see below) on a SIGKILL of this process.
 */
export interface Anvil {
  url: string;
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);

function anvilBinary(): string {
  let pkg: string;
  try {
    pkg = require.resolve('@foundry-rs/anvil-linux-amd64/package.json');
  } catch {
    throw new Error(`no anvil build for ${process.platform}-${process.arch} in node_modules; set CHAINPOST_CHAINS to an EVM node instead`);
  }
  const bin = join(dirname(pkg), 'bin', 'anvil');
  if (!existsSync(bin)) throw new Error(`anvil is missing at ${bin}`);
  return bin;
}

// The exit handler below cannot run when this process is SIGKILLed (or the OOM
// killer hits it), which would orphan anvil. Where util-linux's setpriv is
// present, anvil runs under `setpriv --pdeathsig KILL`: the kernel SIGKILLs it
// when this process dies in any way. setpriv execs anvil, so child.pid is anvil's.
const SETPRIV = '/usr/bin/setpriv';
let hasSetpriv: boolean | undefined;

/** Whether nothing listens on the loopback port (checked by listening on it a moment). */
const portIsFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** How many ports from a requested one are tried before giving up. */
const PORT_SEARCH = 100;

/** anvil exited because its port was taken. */
export class PortTaken extends Error {}

/** How long anvil gets to bind its port. */
const LISTEN_WITHIN_MS = 15_000;

/** What anvil is started with: chain id (1337), extra arguments, port (see startAnvil), and how long it gets to exit on SIGTERM (the devnet's default). */
interface AnvilOptions {
  chainId?: number;
  args?: string[];
  port?: number;
  stopGraceMs?: number;
}

/**
 * anvil on `opts.port` if it is free, else on the next free one (up to 100 further); on a port the system gives it
 * when `opts.port` is 0 or unset. A port taken between the check and anvil's bind is skipped too.
 */
export async function startAnvil(opts: AnvilOptions = {}): Promise<Anvil> {
  const first = opts.port ?? 0;
  if (first === 0) return anvilOn(0, opts);
  const last = Math.min(first + PORT_SEARCH - 1, 65535);
  for (let port = first; port <= last; port++) {
    if (!(await portIsFree(port))) continue;
    try {
      return await anvilOn(port, opts);
    } catch (err) {
      if (!(err instanceof PortTaken)) throw err;
    }
  }
  throw new Error(`ports ${first} to ${last} are all taken`);
}

/** anvil on exactly `port` (0: one the system gives it); rejects with PortTaken when another process holds it. */
export async function anvilOn(port: number, opts: AnvilOptions = {}): Promise<Anvil> {
  const args = ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(opts.chainId ?? 1337), ...(opts.args ?? [])];
  hasSetpriv ??= existsSync(SETPRIV);
  const child = hasSetpriv
    ? spawn(SETPRIV, ['--pdeathsig', 'KILL', anvilBinary(), ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => void (stderr += c.toString()));
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.on('exit', killOnExit);
  // Ready when anvil itself says where it listens, not when something answers on the port: another process may hold
  // the port (another test's receiver, which answers anything), while this anvil exits "in use".
  let unstarted: Error | undefined;
  const bound = await new Promise<number | undefined>((resolve) => {
    let out = '';
    const heard = (c: Buffer): void => {
      out = (out + c.toString()).slice(-4096);
      const at = /Listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (at !== null) done(Number(at[1]));
    };
    const exited = (): void => done(undefined);
    // A spawn that fails (setpriv or anvil not executable) emits 'error': answered, not thrown in the process.
    child.once('error', (err) => {
      unstarted = err;
      exited();
    });
    const timer = setTimeout(exited, LISTEN_WITHIN_MS);
    const done = (at: number | undefined): void => {
      clearTimeout(timer);
      child.stdout!.off('data', heard);
      child.off('close', exited);
      // Its log of every call goes on: read and dropped, so a full pipe never stops it.
      child.stdout!.resume();
      resolve(at);
    };
    child.stdout!.on('data', heard);
    // 'close': after its exit and its stderr's end, so a port in use is read in full.
    child.once('close', exited);
  });
  if (bound === undefined) {
    process.off('exit', killOnExit);
    if (unstarted !== undefined) throw new Error(`anvil could not be started: ${unstarted.message}`);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      throw new Error(`anvil did not listen on 127.0.0.1:${port} within ${LISTEN_WITHIN_MS / 1000} s: ${stderr.slice(0, 500)}`);
    }
    if (/address already in use/i.test(stderr)) throw new PortTaken(stderr);
    throw new Error(`anvil exited with ${child.exitCode}: ${stderr.slice(0, 500)}`);
  }
  const url = `http://127.0.0.1:${bound}`;
  return {
    url,
    port: bound,
    child,
    stop: () =>
      new Promise((resolve) => {
        process.off('exit', killOnExit);
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        // A busy anvil (a long call) with a state file to write finishes the call before it exits: SIGKILL after the grace.
        const kill = setTimeout(() => child.kill('SIGKILL'), opts.stopGraceMs ?? DEVNET_STOP_GRACE_MS);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
