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

class PortTaken extends Error {}

/** A free loopback port (nothing listens on it once this resolves). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

/** What anvil is started with: chain id (1337), extra arguments, port (see startAnvil), and how long it gets to exit on SIGTERM (the devnet's default). */
interface AnvilOptions {
  chainId?: number;
  args?: string[];
  port?: number;
  stopGraceMs?: number;
}

/**
 * anvil on `opts.port` if it is free, else on the next free one (up to 100 further); on any free port
 * when `opts.port` is 0 or unset. A port taken between the check and anvil's bind is skipped too.
 */
export async function startAnvil(opts: AnvilOptions = {}): Promise<Anvil> {
  const first = opts.port ?? 0;
  const last = Math.min(first + PORT_SEARCH - 1, 65535);
  for (let port = first, tries = 0; first === 0 ? tries < 5 : port <= last; port++, tries++) {
    if (first !== 0 && !(await portIsFree(port))) continue;
    try {
      return await launch(first === 0 ? await freePort() : port, opts);
    } catch (err) {
      if (!(err instanceof PortTaken)) throw err;
    }
  }
  throw new Error(first === 0 ? 'anvil found no free port' : `ports ${first} to ${last} are all taken`);
}

async function launch(port: number, opts: AnvilOptions): Promise<Anvil> {
  const args = ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(opts.chainId ?? 1337), ...(opts.args ?? [])];
  hasSetpriv ??= existsSync(SETPRIV);
  const child = hasSetpriv
    ? spawn(SETPRIV, ['--pdeathsig', 'KILL', anvilBinary(), ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(anvilBinary(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => void (stderr += c.toString()));
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.on('exit', killOnExit);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) {
      process.off('exit', killOnExit);
      if (/address already in use/i.test(stderr)) throw new PortTaken(stderr);
      throw new Error(`anvil exited with ${child.exitCode}: ${stderr.slice(0, 500)}`);
    }
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
      });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`anvil did not answer on ${url} within 15 s: ${stderr.slice(0, 500)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    port,
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
