// A real nats-server for the tests of bus/ (and the benches): the Debian package's binary, on loopback, with
// JetStream on a temporary directory. Shared by tests and benches, hence test/kit/ (see its README).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

/** Where Debian's nats-server package puts the binary; NATS_SERVER names another. */
const BINARY = process.env['NATS_SERVER'] ?? '/usr/sbin/nats-server';
/** What blocks need (bus/streams.ts checks the server's max_payload against it). */
const MAX_PAYLOAD = '8MB';
/** How long a SIGTERM may take before SIGKILL: JetStream flushes its store on a graceful stop. */
const GRACE_MS = 3_000;
/** How long the server may take to say it is ready (a loaded machine). */
const READY_MS = 20_000;

export interface NatsServer {
  /** `nats://127.0.0.1:<port>`: the same across restarts. */
  readonly url: string;
  readonly port: number;
  /** The temporary directory of the config and the JetStream store. */
  readonly dir: string;
  /** The process's id while it runs (a bench reads its CPU from /proc). */
  pid(): number | undefined;
  /** Whether the process runs. */
  running(): boolean;
  /** Stops the process (SIGTERM, SIGKILL after a grace; `kill`: SIGKILL at once), keeping its port and store. */
  stop(how?: 'term' | 'kill'): Promise<void>;
  /** Starts it again on the same port and store; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  close(): Promise<void>;
  /** What the server printed since it was last started. */
  output(): string;
}

export interface NatsServerOptions {
  /** The server's max_payload (nats-server's size syntax); default what blocks need. */
  maxPayload?: string;
  /** Lines added to the config (an `authorization { … }` block). */
  extraConfig?: string;
}

/** The log line that gives the client port, and the one that says the server accepts connections. */
const LISTENING = /Listening for client connections on [^\s:]+:(\d+)/;
const READY = /Server is ready/;

/** Starts nats-server on 127.0.0.1 (a free port) with JetStream; resolves once it accepts connections. */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-nats-'));
  const server = natsProcess(dir, (listen) => [
    `listen: "${listen}"`,
    `max_payload: ${options.maxPayload ?? MAX_PAYLOAD}`,
    `jetstream { store_dir: "${join(dir, 'js')}" }`,
    options.extraConfig ?? '',
  ]);
  await server.start();
  return server;
}

/**
 * A nats-server process over `dir`, its config the lines `config` gives for its client listen address: the first
 * start on a port of fixedPorts, every restart on the same port.
 */
function natsProcess(dir: string, config: (listen: string) => string[]): NatsServer {
  const file = join(dir, 'nats.conf');
  const write = (listen: string): void => writeFileSync(file, config(listen).join('\n'));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let out = '';
  let port = 0;

  const launch = (): Promise<number> => {
    out = '';
    const c = spawn(BINARY, ['-c', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    exited = new Promise((resolve) => c.once('exit', () => resolve()));
    return new Promise((resolve, reject) => {
      let listening = 0;
      const timer = setTimeout(() => {
        c.kill('SIGKILL');
        reject(new Error(`nats-server not ready within ${READY_MS} ms:\n${out}`));
      }, READY_MS);
      const onData = (chunk: Buffer): void => {
        out += chunk.toString();
        listening ||= Number(LISTENING.exec(out)?.[1] ?? 0);
        if (listening === 0 || !READY.test(out)) return;
        clearTimeout(timer);
        resolve(listening);
      };
      c.stdout!.on('data', onData);
      c.stderr!.on('data', onData);
      c.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`nats-server exited before it was ready:\n${out}`));
      });
    });
  };

  const running = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;
  const stop = async (how: 'term' | 'kill' = 'term'): Promise<void> => {
    const c = child;
    if (c === undefined || !running()) return exited;
    c.kill(how === 'kill' ? 'SIGKILL' : 'SIGTERM');
    const timer = setTimeout(() => c.kill('SIGKILL'), GRACE_MS);
    await exited;
    clearTimeout(timer);
  };
  return {
    get url() {
      return `nats://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    dir,
    pid: () => (running() ? child!.pid : undefined),
    running,
    stop,
    start: async () => {
      if (running()) throw new Error('nats-server runs already');
      if (port === 0) port = (await fixedPorts(1))[0]!;
      write(`127.0.0.1:${port}`);
      port = await launch();
    },
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    output: () => out,
  };
}

/**
 * Runs `body` on a world of its own (`make`: its clients, on a NATS server or cluster `start` starts for it), then
 * closes the world, which closes its servers: a test's cases that wait on the server's wall time run side by side.
 */
export async function inOwnWorld<N, S extends { close(): Promise<void> }>(
  start: () => Promise<N>,
  make: (nats: N) => S,
  body: (scene: S) => Promise<void>,
): Promise<void> {
  const scene = make(await start());
  try {
    await body(scene);
  } finally {
    await scene.close();
  }
}

/** inOwnWorld on a nats-server of its own. */
export const onOwnNatsServer = <S extends { close(): Promise<void> }>(
  make: (nats: NatsServer) => S,
  body: (scene: S) => Promise<void>,
): Promise<void> => inOwnWorld(() => startNatsServer(), make, body);

/** Three nats-servers routed into one JetStream cluster: a replicated stream survives one of them stopped. */
export interface NatsCluster {
  /** Every server's client URL, comma-separated (CHAINPOST_NATS's form): a client moves to another when its server dies. */
  readonly url: string;
  /** The servers, each stopped and started on its own (`stop('kill')`: a crash), named `n1`, `n2`, … in order. */
  readonly servers: readonly NatsServer[];
  /** The cluster's name, and each server's (server_name), as JetStream's stream info names a stream's leader. */
  readonly name: string;
  readonly names: readonly string[];
  /** Stops every server and removes their directories. */
  close(): Promise<void>;
}

/** The cluster's name in the servers' configs. */
const CLUSTER_NAME = 'chainpost-test';

/**
 * Starts `size` (default 3) nats-servers on 127.0.0.1, each with JetStream on a directory of its own and a route to
 * every other; resolves once every one accepts connections and the cluster has a JetStream meta leader (streams can
 * be created). The route ports are taken free beforehand, each server's config lists them all, and a restart keeps
 * its ports, as a deployment's fixed config would.
 */
export async function startNatsCluster(options: { size?: number; maxPayload?: string } = {}): Promise<NatsCluster> {
  const size = options.size ?? 3;
  const routePorts = await fixedPorts(size);
  const names = routePorts.map((_, i) => `n${i + 1}`);
  const servers = routePorts.map((routePort, i) => {
    const dir = mkdtempSync(join(tmpdir(), `chainpost-nats-${names[i]}-`));
    return natsProcess(dir, (listen) => [
      `server_name: ${names[i]}`,
      `listen: "${listen}"`,
      `max_payload: ${options.maxPayload ?? MAX_PAYLOAD}`,
      `jetstream { store_dir: "${join(dir, 'js')}" }`,
      `cluster {`,
      `  name: ${CLUSTER_NAME}`,
      `  listen: "127.0.0.1:${routePort}"`,
      `  routes: [${routePorts
        .filter((p) => p !== routePort)
        .map((p) => `"nats-route://127.0.0.1:${p}"`)
        .join(', ')}]`,
      `}`,
    ]);
  });
  const close = async (): Promise<void> => {
    await Promise.all(servers.map((s) => s.close()));
  };
  try {
    await Promise.all(servers.map((s) => s.start()));
    // JetStream answers on every server once the servers have chosen a meta leader: until then no stream can be made.
    // Asked, not read from the logs: a server that learns the leader while it joins does not always say so.
    const deadline = performance.now() + READY_MS;
    for (const s of servers) {
      while (!(await jetStreamAnswers(s.url))) {
        if (performance.now() > deadline)
          throw new Error(`no JetStream meta leader within ${READY_MS} ms:\n${servers.map((x) => x.output()).join('\n')}`);
        await sleep(50);
      }
    }
    // And the meta leader counts every server as a peer: till then a stream of `size` copies is refused ("no
    // suitable peers for placement"), as a bucket of CHAINPOST_NATS_REPLICAS=3 was at a test's start.
    while (!(await placesCopies(servers[0]!.url, size))) {
      if (performance.now() > deadline)
        throw new Error(`no stream of ${size} copies placed within ${READY_MS} ms:\n${servers.map((x) => x.output()).join('\n')}`);
      await sleep(100);
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { url: servers.map((s) => s.url).join(','), servers, name: CLUSTER_NAME, names, close };
}

/** Whether the server at `url` answers a JetStream request (its account's info): it does once it knows the meta leader. */
async function jetStreamAnswers(url: string): Promise<boolean> {
  const nc = await connect({ servers: url, timeout: 1_000 }).catch(() => undefined);
  if (nc === undefined) return false;
  try {
    await (await jetstreamManager(nc, { timeout: 1_000 })).getAccountInfo();
    return true;
  } catch {
    return false;
  } finally {
    await nc.close();
  }
}

/** Whether the cluster at `url` places a stream of `copies` replicas (made and deleted again). */
async function placesCopies(url: string, copies: number): Promise<boolean> {
  const nc = await connect({ servers: url, timeout: 1_000 }).catch(() => undefined);
  if (nc === undefined) return false;
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5_000 });
    const name = `chainpost_probe_${process.pid}`;
    await jsm.streams.add({ name, subjects: [`chainpost.probe.${process.pid}`], num_replicas: copies });
    await jsm.streams.delete(name);
    return true;
  } catch {
    return false;
  } finally {
    await nc.close();
  }
}

/**
 * `n` distinct loopback ports, free a moment ago, from below the kernel's ephemeral range: a port a server is to bind
 * later (a route port named in every config, a client port kept across a restart) must not be one the kernel hands
 * out meanwhile as the local port of some outgoing connection, as a port taken with `listen(0)` can be (a CI run's
 * cluster once never formed: its routes were refused).
 */
async function fixedPorts(n: number): Promise<number[]> {
  const low = ephemeralLow();
  const ports = new Set<number>();
  for (let tries = 0; ports.size < n; tries++) {
    if (tries > 1_000) throw new Error(`no ${n} free ports below ${low}`);
    const port = FIXED_FROM + Math.floor(Math.random() * (low - FIXED_FROM));
    if (!ports.has(port) && (await bindable(port))) ports.add(port);
  }
  return [...ports];
}

/** Where fixedPorts starts: above the well-known and registered ports services commonly take. */
const FIXED_FROM = 20_000;

/** The first port of the kernel's ephemeral range (ip_local_port_range; Linux's default if unreadable). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > FIXED_FROM + 1_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether `port` can be bound on 127.0.0.1 now (bound and let go again). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}
