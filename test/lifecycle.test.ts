import { existsSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startProcess } from './kit/proc.js';
import { SCHEMA_VERSION, openStore } from '../storage/env.js';
import { SHUTDOWN_GRACE_MS } from '../engine/config/config.js';
// The built binary: signals, the exit code and what the process prints as a user sees it.
import { BIN, cli, startBinary, startChainpost, stopAndClean, tempDir } from './helpers.js';

const version = (url: string, key: string) =>
  fetch(`${url}/api/v2.2/web3/version`, { headers: { 'x-api-key': key } }).then((r) => r.status);

describe('start-up', () => {
  it('creates the data directory and, on the very first start, one API key printed once', async () => {
    const dir = join(tempDir(), 'nested', 'data');
    const first = await startProcess([BIN], { CHAINPOST_DATA: dir, CHAINPOST_PORT: '0', CHAINPOST_API_KEY: '', CHAINPOST_CHAINS: 'none' });
    try {
      expect(existsSync(dir)).toBe(true);
      const key = /^API key: (\S+)$/m.exec(first.output())?.[1];
      expect(key).toMatch(/^cpk_[A-Za-z0-9_-]{32}$/);
      expect(await version(`http://127.0.0.1:${first.port}`, key!)).toBe(200);
      expect(await first.stop()).toBe(0);
      // The next start (in this process: what it prints is the same service's) finds the key and prints none.
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
      const list = await cli(['keys', 'list'], s.dir);
      expect(list.stdout).toMatch(/^env\s/m);
    } finally {
      await stopAndClean(s);
    }
  });

  // Each case is a process of its own that stops at once: they run side by side.
  it.concurrent.for([
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
  ] as Array<[string, string]>)('stops on a bad %s with a message naming it', async ([name, value], { expect }) => {
    const dir = tempDir();
    const r = await cli(['serve'], dir, { [name]: value, CHAINPOST_PORT: name === 'CHAINPOST_PORT' ? value : '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^chainpost: ${name}: `));
    rmSync(dir, { recursive: true, force: true });
  });

  it('names CHAINPOST_DATA when the data directory cannot be made, and accepts a dotted directory name', async () => {
    const { writeFileSync } = await import('node:fs');
    const dir = tempDir();
    writeFileSync(join(dir, 'a-file'), 'x');
    const r = await cli(['serve'], join(dir, 'a-file'), { CHAINPOST_PORT: '0' });
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
    const r = await cli(['serve'], dir, { CHAINPOST_PORT: '0' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`holds schema version 999; this chainpost reads version ${SCHEMA_VERSION}`));
    rmSync(dir, { recursive: true, force: true });
  });

  it("migrates a store of the previous layout at start, saying so in its log, and the CLI's readers open it after", async () => {
    const dir = tempDir();
    const store = openStore(dir);
    store.put('meta', 'schemaVersion', SCHEMA_VERSION - 1);
    await store.close();
    const refused = await cli(['keys', 'list'], dir, {});
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
      const r = await cli(['serve'], dir, { ...env, CHAINPOST_PORT: String(s.port) });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^chainpost: CHAINPOST_HOST/CHAINPOST_PORT: cannot listen on 127\\.0\\.0\\.1:${s.port}`, 'm'));
      expect(r.stderr + r.stdout).not.toMatch(/API key|cpk_/);
      expect((await cli(['keys', 'list'], dir)).stdout).not.toMatch(/^default\s/m);

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
  it.for(['SIGTERM', 'SIGINT'] as const)(
    'on %s stops accepting, finishes the request in flight, and exits 0',
    async (signal, { expect }) => {
      const s = await startBinary();
      try {
        const sock = connect(s.port, '127.0.0.1');
        await new Promise((r) => sock.once('connect', r));
        let answer = '';
        sock.on('data', (c) => (answer += c.toString()));
        const body = '{"tokens":[]}';
        sock.write(
          `POST /api/v2.2/erc20/prices HTTP/1.1\r\nhost: x\r\nx-api-key: ${s.key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
        );
        await new Promise((r) => setTimeout(r, 100));
        const started = Date.now();
        s.child.kill(signal);
        await new Promise((r) => setTimeout(r, 300));
        // No new connections once stopping.
        const refused = await fetch(`${s.url}/health`).then(
          () => false,
          () => true,
        );
        expect(refused).toBe(true);
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
        sock.write(`POST /api/v2.2/erc20/prices HTTP/1.1\r\nhost: x\r\nx-api-key: ${s.key}\r\ncontent-length: 100\r\n\r\n{"half":`);
        await new Promise((r) => setTimeout(r, 20));
        sock.destroy();
      }
      await new Promise((r) => setTimeout(r, 100));
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

  it('exits 0 after CHAINPOST_SHUTDOWN_GRACE_MS even when a request in flight never completes, saying it cut it', async ({ expect }) => {
    // A short grace: the default 8 s (a stop within 10 s, parseConfig's test) would be waited out in real time.
    const graceMs = 300;
    const s = await startBinary({ CHAINPOST_SHUTDOWN_GRACE_MS: String(graceMs) });
    try {
      const sock = connect(s.port, '127.0.0.1');
      await new Promise((r) => sock.once('connect', r));
      sock.write(`POST /api/v2.2/erc20/prices HTTP/1.1\r\nhost: x\r\nx-api-key: ${s.key}\r\ncontent-length: 100\r\n\r\n{"never":`);
      await new Promise((r) => setTimeout(r, 100));
      const started = Date.now();
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
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
    // The CLI's process beside a running server (in this process): the server reads the keys the CLI wrote.
    const s = await startChainpost();
    try {
      const created = await cli(['keys', 'create', '--name', 'alice', '--email', 'alice@example.org'], s.dir);
      expect(created.code).toBe(0);
      const lines = created.stdout.trim().split('\n');
      const alice = lines.at(-1)!;
      expect(alice).toMatch(/^cpk_[A-Za-z0-9_-]{32}$/);
      expect(await version(s.url, alice)).toBe(200);

      const joined = await cli(['keys', 'create', '--name', 'alice-ci', '--tenant', 'alice'], s.dir);
      expect(joined.code).toBe(0);
      expect(joined.stdout).toMatch(/in tenant "alice"/);
      const bob = await cli(['keys', 'create', '--name', 'bob'], s.dir);
      expect(bob.stdout).toMatch(/in tenant "bob"/);

      const list = await cli(['keys', 'list'], s.dir);
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
      expect(await cli(['keys', 'create', '--name', 'dup', '--create'], dir)).toMatchObject({ code: 0 });
      const dup = await cli(['keys', 'create', '--name', 'dup'], dir);
      expect(dup.code).toBe(1);
      expect(dup.stderr).toMatch(/a key named "dup" exists already/);
      const noTenant = await cli(['keys', 'create', '--name', 'x', '--tenant', 'nobody'], dir);
      expect(noTenant.stderr).toMatch(/no tenant "nobody"/);
      expect((await cli(['keys', 'create', '--name', 'bad name'], dir)).stderr).toMatch(/name: /);
      expect((await cli(['keys', 'create', '--name', 'e', '--email', 'nope'], dir)).stderr).toMatch(/email: /);
      expect((await cli(['keys', 'create'], dir)).code).toBe(2);
      expect((await cli(['keys', 'revoke', 'ghost'], dir)).stderr).toMatch(/no key named or with id "ghost"/);
      expect((await cli(['frobnicate'], dir)).code).toBe(2);
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
