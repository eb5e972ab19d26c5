// A real nats-server for the tests of bus/ (and the benches): the Debian package's binary, on loopback, with
// JetStream on a temporary directory. Shared by tests and benches, hence test/kit/ (see its README).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
  const config = join(dir, 'nats.conf');
  const write = (listen: string): void =>
    writeFileSync(
      config,
      [
        `listen: "${listen}"`,
        `max_payload: ${options.maxPayload ?? MAX_PAYLOAD}`,
        `jetstream { store_dir: "${join(dir, 'js')}" }`,
        options.extraConfig ?? '',
      ].join('\n'),
    );
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let out = '';

  const launch = (): Promise<number> => {
    out = '';
    const c = spawn(BINARY, ['-c', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = c;
    exited = new Promise((resolve) => c.once('exit', () => resolve()));
    return new Promise((resolve, reject) => {
      let port = 0;
      const timer = setTimeout(() => {
        c.kill('SIGKILL');
        reject(new Error(`nats-server not ready within ${READY_MS} ms:\n${out}`));
      }, READY_MS);
      const onData = (chunk: Buffer): void => {
        out += chunk.toString();
        port ||= Number(LISTENING.exec(out)?.[1] ?? 0);
        if (port === 0 || !READY.test(out)) return;
        clearTimeout(timer);
        resolve(port);
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

  write('127.0.0.1:-1');
  const port = await launch();
  // Restarts take the port the first start was given.
  write(`127.0.0.1:${port}`);

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
    url: `nats://127.0.0.1:${port}`,
    port,
    dir,
    running,
    stop,
    start: async () => {
      if (running()) throw new Error('nats-server runs already');
      await launch();
    },
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    output: () => out,
  };
}

/**
 * Runs `body` on a world of its own (`make`: its clients, on a nats-server of its own), then closes the world, which
 * closes its server: a test's cases that wait on the server's wall time run side by side this way.
 */
export async function onOwnNatsServer<S extends { close(): Promise<void> }>(
  make: (nats: NatsServer) => S,
  body: (scene: S) => Promise<void>,
): Promise<void> {
  const scene = make(await startNatsServer());
  try {
    await body(scene);
  } finally {
    await scene.close();
  }
}
