import { existsSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION, openStore } from '../storage/env.js';
import { SHUTDOWN_GRACE_MS } from '../engine/config/config.js';
// The built binary (cli, startBinary): signals, the exit code and what the process prints as a user sees it. The
// server's and the CLI's own behaviour runs in this process (startChainpost, cliInProcess).
import { cli, cliInProcess, startBinary, startChainpost, stopAndClean, tempDir, until } from './helpers.js';

const version = (url: string, key: string) =>
  fetch(`${url}/api/v2.2/web3/version`, { headers: { 'x-api-key': key } }).then((r) => r.status);

/**
 * Resolves once the server on `port` has read what was sent to it before: one request answered on a connection of
 * its own, which takes it more turns of its event loop (accept, read) than the bytes already waiting on the others.
 */
async function servedSoFar(port: number): Promise<void> {
  const sock = connect(port, '127.0.0.1');
  let answer = '';
  await new Promise<void>((resolve, reject) => {
    sock.on('data', (c) => {
      answer += c.toString();
      if (answer.includes('\r\n\r\n')) resolve();
    });
    sock.once('error', reject);
    sock.write('GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n');
  });
  sock.destroy();
}

/** Whether a new connection to `port` is refused. */
const refused = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(false);
    });
    sock.once('error', () => resolve(true));
  });

/** Writes `text` on `sock`, resolving once it is handed to the kernel. */
const send = (sock: Socket, text: string): Promise<void> =>
  new Promise((resolve, reject) => sock.write(text, (err) => (err ? reject(err) : resolve())));

describe('start-up', () => {
  it('creates the data directory and, on the very first start, one API key printed once', async () => {
    // In this process: the binary's own streams on a first start are test/cli.test.ts's.
    const dir = join(tempDir(), 'nested', 'data');
    const first = await startChainpost({ CHAINPOST_API_KEY: '' }, dir);
    try {
      expect(existsSync(dir)).toBe(true);
      const key = /^API key: (\S+)$/m.exec(first.output())?.[1];
      expect(key).toMatch(/^cpk_[A-Za-z0-9_-]{32}$/);
      expect(await version(first.url, key!)).toBe(200);
      expect(await first.stop()).toBe(0);
      // The next start finds the key and prints none.
      const second = await startChainpost({ CHAINPOST_API_KEY: '' }, dir);
      try {
        expect(second.output()).not.toMatch(/API key:/);
        expect(await version(second.url, key!)).toBe(200);
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('creates the key given by CHAINPOST_API_KEY and prints no other', async () => {
    const s = await startChainpost({ CHAINPOST_API_KEY: 'cpk_given_by_the_environment_1' });
    try {
      expect(s.output()).not.toMatch(/API key:/);
      expect(await version(s.url, 'cpk_given_by_the_environment_1')).toBe(200);
      const list = await cliInProcess(['keys', 'list'], s.dir);
      expect(list.stdout).toMatch(/^env\s/m);
    } finally {
      await stopAndClean(s);
    }
  });

  // The CLI's `serve` in this process: a refused configuration never starts the server.
  it.for([
    ['CHAINPOST_PORT', 'http'],
    ['CHAINPOST_RATE_LIMIT', 'fast'],
    ['CHAINPOST_CHAINS', '0x1=nowhere'],
    ['CHAINPOST_NOW', 'tomorrow'],
    ['CHAINPOST_TEST_CLOCK', 'on'],
    ['CHAINPOST_SMTP_URL', 'mail.example'],
    ['CHAINPOST_HOST', 'not_a_host'],
    ['CHAINPOST_CONFIRMATIONS', '0x539=deep'],
    ['CHAINPOST_ALERT_EMAIL', 'ops-at-example'],
    ['CHAINPOST_API_KEY', 'tiny'],
    ['CHAINPOST_NATS', 'http://127.0.0.1:4222'],
    ['CHAINPOST_LEASE_TTL_MS', '500'],
  ] as Array<[string, string]>)('stops on a bad %s with a message naming it', async ([name, value], { expect }) => {
    const dir = tempDir();
    const r = await cliInProcess(['serve'], dir, { [name]: value, CHAINPOST_PORT: name === 'CHAINPOST_PORT' ? value : '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^chainpost: ${name}: `));
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops a cluster node that would start the embedded devnet, saying why and what to set, and starts nothing', async () => {
    const dir = join(tempDir(), 'data');
    const r = await cliInProcess(['serve'], dir, { CHAINPOST_NATS: 'nats://127.0.0.1:4222', CHAINPOST_PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^chainpost: CHAINPOST_CHAINS: unset on a cluster node \(CHAINPOST_NATS is set\): each node would start its own embedded devnet/m,
    );
    expect(r.stderr).toMatch(/Set it to the EVM nodes the cluster follows/);
    expect(existsSync(dir)).toBe(false);
    rmSync(dirname(dir), { recursive: true, force: true });
  });

  it("stops a cluster node whose NATS creds file cannot be read, naming its absolute path, before anything starts; never shows the URL's credentials", async () => {
    const cwd = tempDir();
    const dir = join(cwd, 'data');
    const env = { CHAINPOST_CHAINS: 'none', CHAINPOST_PORT: '0', CHAINPOST_WORKER_THREADS: '1' };
    const missing = await cliInProcess(
      ['serve'],
      dir,
      {
        ...env,
        CHAINPOST_NATS: 'nats://alice:s3cret-pass@127.0.0.1:4222,nats://t0ken-s3cret@127.0.0.1:4223',
        CHAINPOST_NATS_CREDS: 'nats.creds',
      },
      cwd,
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`\nchainpost: CHAINPOST_NATS_CREDS: cannot read the creds file ${join(cwd, 'nats.creds')} (ENOENT)\n`);
    // A directory is no file to read either.
    const folder = await cliInProcess(['serve'], dir, { ...env, CHAINPOST_NATS: 'nats://127.0.0.1:4222', CHAINPOST_NATS_CREDS: cwd });
    expect(folder.code).toBe(1);
    expect(folder.stderr).toContain(`\nchainpost: CHAINPOST_NATS_CREDS: cannot read the creds file ${cwd} (EISDIR)\n`);
    // Refused before the data directory is made, the worker threads or a listener started.
    expect(existsSync(dir)).toBe(false);
    expect(missing.stderr + missing.stdout + folder.stderr + folder.stdout).not.toMatch(/s3cret|alice/);
    rmSync(cwd, { recursive: true, force: true });
  });

  it('the binary stops on a refused configuration with exit code 1, the message on stderr and nothing on stdout', async () => {
    const dir = tempDir();
    const r = await cli(['serve'], dir, { CHAINPOST_RATE_LIMIT: 'fast', CHAINPOST_PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^chainpost: CHAINPOST_RATE_LIMIT: /m);
    expect(r.stdout).toBe('');
    rmSync(dir, { recursive: true, force: true });
  });

  it('names CHAINPOST_DATA when the data directory cannot be made, and accepts a dotted directory name', async () => {
    const { writeFileSync } = await import('node:fs');
    const dir = tempDir();
    writeFileSync(join(dir, 'a-file'), 'x');
    // One worker thread, as every test server: a start refused after the threads started has them load their code.
    const r = await cliInProcess(['serve'], join(dir, 'a-file'), { CHAINPOST_PORT: '0', CHAINPOST_WORKER_THREADS: '1' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^chainpost: CHAINPOST_DATA: cannot create the data directory/m);
    const dotted = await startChainpost({}, join(dir, 'chain.data'));
    try {
      expect((await dotted.call('/api/v2.2/web3/version')).status).toBe(200);
    } finally {
      await stopAndClean(dotted);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses to run on the pure-JS fallback of uWebSockets.js', async () => {
    const dir = tempDir();
    const r = await cli(['serve'], dir, { UWS_USE_FALLBACK: '1', CHAINPOST_PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/native uWebSockets\.js build did not load/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a data directory of another schema version', async () => {
    const dir = tempDir();
    const store = openStore(dir);
    store.put('meta', 'schemaVersion', 999);
    await store.close();
    const r = await cliInProcess(['serve'], dir, { CHAINPOST_PORT: '0', CHAINPOST_WORKER_THREADS: '1' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`holds schema version 999; this chainpost reads version ${SCHEMA_VERSION}`));
    rmSync(dir, { recursive: true, force: true });
  });

  it("migrates a store of the previous layout at start, saying so in its log, and the CLI's readers open it after", async () => {
    const dir = tempDir();
    const store = openStore(dir);
    store.put('meta', 'schemaVersion', SCHEMA_VERSION - 1);
    await store.close();
    const refused = await cliInProcess(['keys', 'list'], dir, {});
    expect(refused.stderr).toMatch(
      new RegExp(
        `holds schema version ${SCHEMA_VERSION - 1}, which this chainpost migrates to version ${SCHEMA_VERSION} when it starts on it: run \`chainpost serve\``,
      ),
    );
    const s = await startChainpost({}, dir);
    try {
      const lines = s
        .stdout()
        .split('\n')
        .filter((l) => l.includes('the store'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines).toEqual([
        expect.objectContaining({
          msg: 'migrating the store to this layout; the server answers once it is done',
          from: SCHEMA_VERSION - 1,
          to: SCHEMA_VERSION,
        }),
        expect.objectContaining({ msg: 'migrated the store', from: SCHEMA_VERSION - 1, to: SCHEMA_VERSION, rewrittenKeys: 0 }),
      ]);
    } finally {
      await s.stop();
    }
    const reopened = openStore(dir);
    expect(reopened.get('meta', 'schemaVersion')).toBe(SCHEMA_VERSION);
    await reopened.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a port already taken, naming it, and creates and prints no key; the next start prints one that works', async () => {
    // Any listener takes the port: the server in this process.
    const s = await startChainpost();
    const dir = tempDir();
    try {
      // A new store with no CHAINPOST_API_KEY: a start that succeeded would make and print its first key.
      const env = { CHAINPOST_API_KEY: '', CHAINPOST_CHAINS: 'none' };
      const r = await cliInProcess(['serve'], dir, { ...env, CHAINPOST_PORT: String(s.port), CHAINPOST_WORKER_THREADS: '1' });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^chainpost: CHAINPOST_HOST/CHAINPOST_PORT: cannot listen on 127\\.0\\.0\\.1:${s.port}`, 'm'));
      expect(r.stderr + r.stdout).not.toMatch(/API key|cpk_/);
      expect((await cliInProcess(['keys', 'list'], dir)).stdout).not.toMatch(/^default\s/m);

      // The next start (in this process) makes and prints the first key.
      const next = await startChainpost(env, dir);
      try {
        const key = /^API key: (\S+)$/m.exec(next.output())![1]!;
        expect(await version(next.url, key)).toBe(200);
      } finally {
        await next.stop();
      }
    } finally {
      await stopAndClean(s);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('shutdown', () => {
  // Each a process of its own: they run side by side.
  it.concurrent.for(['SIGTERM', 'SIGINT'] as const)(
    'on %s stops accepting, finishes the request in flight, and exits 0',
    async (signal, { expect }) => {
      const s = await startBinary();
      try {
        const sock = connect(s.port, '127.0.0.1');
        await new Promise((r) => sock.once('connect', r));
        let answer = '';
        sock.on('data', (c) => (answer += c.toString()));
        const body = '{"tokens":[]}';
        await send(
          sock,
          `POST /api/v2.2/erc20/prices HTTP/1.1\r\nhost: x\r\nx-api-key: ${s.key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
        );
        // The request is in flight (its head read, its body not whole) when the signal comes.
        await servedSoFar(s.port);
        const started = Date.now();
        s.child.kill(signal);
        // No new connections once stopping, while the request in flight holds the stop.
        expect(await until(() => refused(s.port), 10_000)).toBe(true);
        expect(answer).toBe('');
        sock.write(body.slice(5));
        const code = await s.exited;
        expect(code).toBe(0);
        expect(Date.now() - started).toBeLessThan(10_000);
        // The request in flight is answered whole: this server follows no chain, so its answer is the 400 naming `chain`.
        expect(answer).toMatch(/^HTTP\/1\.1 400 /);
        expect(answer).toContain('"details":{"field":"chain"}');
        expect(s.output()).toMatch(/"msg":"stopped"/);
      } finally {
        await stopAndClean(s);
      }
    },
  );

  it('counts nothing in flight after clients abandoned their uploads, so it stops at once', async ({ expect }) => {
    // The count is the server's, not the process's: in this process, stopped as a signal stops the binary.
    const s = await startChainpost();
    try {
      for (let i = 0; i < 5; i++) {
        const sock = connect(s.port, '127.0.0.1');
        await new Promise((r) => sock.once('connect', r));
        await send(sock, `POST /api/v2.2/erc20/prices HTTP/1.1\r\nhost: x\r\nx-api-key: ${s.key}\r\ncontent-length: 100\r\n\r\n{"half":`);
        // Counted in flight before it is abandoned.
        await servedSoFar(s.port);
        sock.destroy();
      }
      // The five closes are read.
      await servedSoFar(s.port);
      const started = Date.now();
      // Anything counted in flight would hold the stop for the whole grace (8 s).
      expect(await s.stop()).toBe(0);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(s.output()).toMatch(/"msg":"stopped"/);
      expect(s.output()).not.toMatch(/still in flight/);
    } finally {
      await stopAndClean(s);
    }
  });

  it('stops after CHAINPOST_SHUTDOWN_GRACE_MS even when a request in flight never completes, saying it cut it', async ({ expect }) => {
    // In this process: the stop is the service's, as a signal stops the binary (which then exits 0: the tests above).
    // A short grace: the default 8 s (a stop within 10 s, parseConfig's test) would be waited out in real time.
    const graceMs = 100;
    const s = await startChainpost({ CHAINPOST_SHUTDOWN_GRACE_MS: String(graceMs) });
    try {
      const sock = connect(s.port, '127.0.0.1');
      await new Promise((r) => sock.once('connect', r));
      await send(sock, `POST /api/v2.2/erc20/prices HTTP/1.1\r\nhost: x\r\nx-api-key: ${s.key}\r\ncontent-length: 100\r\n\r\n{"never":`);
      await servedSoFar(s.port);
      const started = Date.now();
      expect(await s.stop()).toBe(0);
      // It waited the grace it was given, and no longer than the default one.
      expect(Date.now() - started).toBeGreaterThanOrEqual(graceMs);
      expect(Date.now() - started).toBeLessThan(SHUTDOWN_GRACE_MS);
      expect(s.output()).toMatch(/"msg":"stopped with requests still in flight","cut":1/);
      sock.destroy();
    } finally {
      await stopAndClean(s);
    }
  });
});

describe('keys CLI', () => {
  it('creates, lists and revokes keys while the server runs, taking effect at once', async () => {
    // The server (in this process) reads the keys the CLI wrote: a create and a revoke by the binary, another
    // process, take effect at once; the other commands run in this process.
    const s = await startChainpost();
    try {
      const created = await cli(['keys', 'create', '--name', 'alice', '--email', 'alice@example.org'], s.dir);
      expect(created.code).toBe(0);
      const lines = created.stdout.trim().split('\n');
      const alice = lines.at(-1)!;
      expect(alice).toMatch(/^cpk_[A-Za-z0-9_-]{32}$/);
      expect(await version(s.url, alice)).toBe(200);

      const joined = await cliInProcess(['keys', 'create', '--name', 'alice-ci', '--tenant', 'alice'], s.dir);
      expect(joined.code).toBe(0);
      expect(joined.stdout).toMatch(/in tenant "alice"/);
      const bob = await cliInProcess(['keys', 'create', '--name', 'bob'], s.dir);
      expect(bob.stdout).toMatch(/in tenant "bob"/);

      const list = await cliInProcess(['keys', 'list'], s.dir);
      expect(list.stdout).toMatch(/^alice\s+[0-9a-f]{12}\s+alice\s+alice@example\.org/m);
      expect(list.stdout).toMatch(/^alice-ci\s+[0-9a-f]{12}\s+alice\s/m);
      expect(list.stdout).toMatch(/^bob\s+[0-9a-f]{12}\s+bob\s/m);
      expect(list.stdout).not.toContain(alice);

      const revoked = await cli(['keys', 'revoke', 'alice'], s.dir);
      expect(revoked.code).toBe(0);
      expect(await version(s.url, alice)).toBe(401);
      expect(await version(s.url, joined.stdout.trim().split('\n').at(-1)!)).toBe(200);
    } finally {
      await stopAndClean(s);
    }
  });

  it('refuses bad input with a clear message and a non-zero exit', async () => {
    const dir = tempDir();
    try {
      expect(await cliInProcess(['keys', 'create', '--name', 'dup', '--create'], dir)).toMatchObject({ code: 0 });
      const dup = await cliInProcess(['keys', 'create', '--name', 'dup'], dir);
      expect(dup.code).toBe(1);
      expect(dup.stderr).toMatch(/a key named "dup" exists already/);
      const noTenant = await cliInProcess(['keys', 'create', '--name', 'x', '--tenant', 'nobody'], dir);
      expect(noTenant.stderr).toMatch(/no tenant "nobody"/);
      expect((await cliInProcess(['keys', 'create', '--name', 'bad name'], dir)).stderr).toMatch(/name: /);
      expect((await cliInProcess(['keys', 'create', '--name', 'e', '--email', 'nope'], dir)).stderr).toMatch(/email: /);
      expect((await cliInProcess(['keys', 'create'], dir)).code).toBe(2);
      expect((await cliInProcess(['keys', 'revoke', 'ghost'], dir)).stderr).toMatch(/no key named or with id "ghost"/);
      expect((await cliInProcess(['frobnicate'], dir)).code).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('works as `npm run cli -- keys create --name N --create` from a clone, the key alone on the last line', async () => {
    const dir = tempDir();
    try {
      const { execFile } = await import('node:child_process');
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(
          'npm',
          ['run', 'cli', '--', 'keys', 'create', '--name', 'from-npm', '--create'],
          { env: { ...process.env, CHAINPOST_DATA: dir } },
          (err, out) => (err ? reject(err) : resolve(out)),
        ),
      );
      expect(stdout.trim().split('\n').at(-1)).toMatch(/^cpk_[A-Za-z0-9_-]{32}$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
