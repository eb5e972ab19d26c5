import { existsSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startProcess } from './kit/proc.js';
import { startAnvil } from '../http/clients/anvil.js';
// What the CLI prints, parses and refuses: run in this process (cliInProcess). The built binary (cli, startBinary)
// for what is the process's: its exit code and streams as a user sees them, a server it kills or asks for its pid.
import { BIN, cli, cliInProcess, startBinary, startChainpost, stopAndClean, tempDir, until, type Running } from './helpers.js';

/**
 * Runs `chainpost args…` (in this process, or as the binary with `run` = cli) in a fresh directory with
 * CHAINPOST_DATA unset (a new user's clone), and says what it left there.
 */
async function inFreshDir(args: string[], run = cliInProcess): Promise<Awaited<ReturnType<typeof cli>> & { left: string[]; cwd: string }> {
  const cwd = tempDir();
  try {
    const r = await run(args, undefined, { CHAINPOST_PORT: '0', CHAINPOST_CHAINS: 'none' }, cwd);
    return { ...r, left: readdirSync(cwd), cwd };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

describe('the binary', () => {
  it('prints what the CLI run in this process prints, on the same streams, with the same exit code', async () => {
    for (const [args, code] of [
      [['--help'], 0],
      [['keys', 'list', '--bogus'], 2],
      [['keys', 'revoke', 'x'], 1],
    ] as Array<[string[], number]>) {
      const [binary, here] = await Promise.all([inFreshDir(args, cli), inFreshDir(args)]);
      expect(binary.code, args.join(' ')).toBe(code);
      // The directory each ran in differs: the refusal of a missing store names it.
      expect(binary.stderr.replaceAll(binary.cwd, '<cwd>'), args.join(' ')).toBe(here.stderr.replaceAll(here.cwd, '<cwd>'));
      expect({ ...binary, stderr: '', cwd: '' }, args.join(' ')).toEqual({ ...here, stderr: '', cwd: '' });
    }
  });
});

describe('help', () => {
  it.concurrent.for([
    [['--help'], /^usage: chainpost \[<command>\]/],
    [['-h'], /^usage: chainpost \[<command>\]/],
    [['help'], /^usage: chainpost \[<command>\]/],
    [['serve', '--help'], /^usage: chainpost serve \[--roles R\]\n/],
    [['serve', '-h'], /^usage: chainpost serve \[--roles R\]\n/],
    [['help', 'serve'], /^usage: chainpost serve \[--roles R\]\n/],
    [['keys', '--help'], /^usage: chainpost keys <command>/],
    [['keys', '-h'], /^usage: chainpost keys <command>/],
    [['help', 'keys'], /^usage: chainpost keys <command>/],
    [['keys', 'list', '--help'], /^usage: chainpost keys list\n/],
    [['keys', 'create', '-h'], /^usage: chainpost keys create --name N \[--email E\] \[--tenant T\] \[--create\]\n/],
    [['keys', 'create', '--name', 'x', '--help'], /^usage: chainpost keys create /],
    [['keys', 'create', '--bogus', '--help'], /^usage: chainpost keys create /],
    [['keys', 'revoke', '--help'], /^usage: chainpost keys revoke N\n/],
    [['help', 'keys', 'revoke'], /^usage: chainpost keys revoke N\n/],
  ] as Array<[string[], RegExp]>)(
    'chainpost %j prints its usage on stdout, exits 0, and starts and creates nothing',
    async ([args, usage], { expect }) => {
      const r = await inFreshDir(args);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(usage);
      expect(r.stderr).toBe('');
      expect(r.left).toEqual([]);
    },
  );

  it('lists every command with its summary, and every option of a command', async () => {
    const top = await inFreshDir(['--help']);
    for (const c of ['serve', 'keys create', 'keys list', 'keys revoke', 'help'])
      expect(top.stdout).toMatch(new RegExp(`^  ${c} .*\\S`, 'm'));
    const create = await inFreshDir(['keys', 'create', '--help']);
    for (const o of ['--name N', '--email E', '--tenant T', '--create', '-h, --help'])
      expect(create.stdout).toMatch(new RegExp(`^  ${o} +\\S`, 'm'));
    expect((await inFreshDir(['serve', '--help'])).stdout).toMatch(/^ {2}--roles R +what this node does, of api,ingest,match,deliver /m);
  });

  it.concurrent.for([
    [['keys', 'list', '--bogus'], "keys list: unknown option '--bogus'", /^usage: chainpost keys list\n/m],
    [['keys', 'create', '--name'], "keys create: option '--name <value>' argument missing", /^usage: chainpost keys create /m],
    [['keys', 'create'], 'keys create needs --name N', /^usage: chainpost keys create /m],
    [['keys', 'revoke'], 'keys revoke needs N', /^usage: chainpost keys revoke N/m],
    [['keys', 'revoke', 'a', 'b'], 'keys revoke: unexpected argument "b"', /^usage: chainpost keys revoke N/m],
    [['serve', '--port', '1'], "serve: unknown option '--port'", /^usage: chainpost serve \[--roles R\]\n/m],
    [['serve', 'now'], 'serve: unexpected argument "now"', /^usage: chainpost serve \[--roles R\]\n/m],
    [
      ['serve', '--roles', 'api,fetch'],
      'serve: --roles: unknown role "fetch" (the roles are api, ingest, match, deliver)',
      /^usage: chainpost serve \[--roles R\]\n/m,
    ],
    [
      ['serve', '--roles='],
      'serve: --roles: expected roles separated by commas (the roles are api, ingest, match, deliver), got ""',
      /^usage: chainpost serve \[--roles R\]\n/m,
    ],
    [['keys'], 'keys needs a command', /^usage: chainpost keys <command>/m],
    [['keys', 'frobnicate'], 'unknown keys command "frobnicate"', /^usage: chainpost keys <command>/m],
    [['frobnicate'], 'unknown command "frobnicate"', /^usage: chainpost \[<command>\]/m],
    [['--bogus'], 'unknown option "--bogus"', /^usage: chainpost \[<command>\]/m],
    [['help', 'nothing'], 'no command "nothing"', /^usage: chainpost \[<command>\]/m],
  ] as Array<[string[], string, RegExp]>)(
    'chainpost %j: one line naming the problem, then the usage, on stderr; exit 2',
    async ([args, problem, usage], { expect }) => {
      const r = await inFreshDir(args);
      expect(r.code).toBe(2);
      const [first, ...rest] = r.stderr.split('\n');
      expect(first).toBe(`chainpost: ${problem}`);
      expect(rest.join('\n')).toMatch(usage);
      // Never Node's own stack or error code.
      expect(r.stderr).not.toMatch(/ERR_PARSE_ARGS|\n\s+at /);
      expect(r.stdout).toBe('');
      expect(r.left).toEqual([]);
    },
  );
});

describe('roles', () => {
  it('refuses a single process (no CHAINPOST_NATS) fewer roles than all four, with exit 1, and starts and creates nothing', async () => {
    const r = await inFreshDir(['serve', '--roles', 'api,deliver']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^chainpost: serve --roles api,deliver: a single process \(CHAINPOST_NATS unset\) does everything, api, ingest, match, deliver; set CHAINPOST_NATS for a cluster node that does less$/m,
    );
    expect(r.stdout).toBe('');
    expect(r.left).toEqual([]);
  });
});

describe('keys on a cluster node', () => {
  it("refuses keys create at once, exit 1, when the cluster's NATS does not answer, writing nothing", async () => {
    const dir = tempDir();
    try {
      expect((await cliInProcess(['keys', 'create', '--name', 'local', '--create'], dir)).code).toBe(0);
      const started = Date.now();
      const r = await cliInProcess(['keys', 'create', '--name', 'other'], dir, {
        CHAINPOST_NATS: 'nats://127.0.0.1:9',
        CHAINPOST_CHAINS: 'none',
      });
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
      expect(r.stderr).toContain('chainpost: CHAINPOST_NATS: cannot connect to nats://127.0.0.1:9: ');
      expect(Date.now() - started).toBeLessThan(5_000);
      const list = await cliInProcess(['keys', 'list'], dir);
      expect(list.stdout).toContain('local');
      expect(list.stdout).not.toContain('other');
      // The directory's lock was given back: a server could start there.
      expect(existsSync(join(dir, 'server.lock'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists the keys of the store with CHAINPOST_NATS set without the cluster (no NATS server runs here)', async () => {
    const dir = tempDir();
    try {
      expect((await cliInProcess(['keys', 'create', '--name', 'local', '--create'], dir)).code).toBe(0);
      const list = await cliInProcess(['keys', 'list'], dir, { CHAINPOST_NATS: 'nats://127.0.0.1:9', CHAINPOST_CHAINS: 'none' });
      expect(list.code).toBe(0);
      expect(list.stdout).toContain('local');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the data directory', () => {
  it('refuses a directory holding no store, naming its absolute path, CHAINPOST_DATA and --create, and creates nothing', async () => {
    for (const args of [
      ['keys', 'create', '--name', 'x'],
      ['keys', 'list'],
      ['keys', 'revoke', 'x'],
    ]) {
      const r = await inFreshDir(args);
      expect(r.code, args.join(' ')).toBe(1);
      const data = join(r.cwd, 'data');
      expect(r.stderr.split('\n')[0]).toBe(`chainpost: data directory ${data}`);
      expect(r.stderr).toContain(
        `chainpost: CHAINPOST_DATA: ${data} holds no chainpost store (no LMDB environment). Set CHAINPOST_DATA to the data directory of your server`,
      );
      expect(r.stderr).toMatch(args[1] === 'create' ? /pass --create to make a new store there/ : /`chainpost keys create --create`/);
      expect(r.left).toEqual([]);
    }
  });

  it('makes a store with --create, then uses it; every command names the directory it used on stderr', async () => {
    const dir = join(tempDir(), 'relative-to-cwd');
    try {
      // The binary: a key alone on stdout's last line, the directory alone on stderr.
      const created = await cli(['keys', 'create', '--name', 'first', '--create'], dir);
      expect(created.code).toBe(0);
      expect(created.stdout.trim().split('\n').at(-1)).toMatch(/^cpk_[A-Za-z0-9_-]{32}$/);
      expect(created.stderr).toBe(`chainpost: data directory ${dir}\n`);
      expect(existsSync(join(dir, 'data.mdb'))).toBe(true);
      const list = await cliInProcess(['keys', 'list'], dir);
      expect(list).toMatchObject({ code: 0, stderr: `chainpost: data directory ${dir}\n` });
      expect(list.stdout).toMatch(/^first\s/m);
      // A relative CHAINPOST_DATA is printed resolved against the working directory.
      const relative = await cliInProcess(['keys', 'list'], 'relative-to-cwd', {}, join(dir, '..'));
      expect(relative.stderr).toBe(`chainpost: data directory ${dir}\n`);
      expect(relative.stdout).toMatch(/^first\s/m);
    } finally {
      rmSync(join(dir, '..'), { recursive: true, force: true });
    }
  });

  it('lets serve create its directory, and names it on stderr and in the listening line; its first-start banner goes to stderr, so stdout carries JSON lines only', async () => {
    // One start of the binary, as `chainpost` alone (serve): its two streams as a user sees them.
    const parent = tempDir();
    const dir = join(parent, 'fresh');
    const s = await startProcess([BIN], {
      CHAINPOST_DATA: dir,
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: '',
      CHAINPOST_CHAINS: 'none',
      CHAINPOST_WORKER_THREADS: '1',
    });
    try {
      expect(s.output()).toContain(`chainpost: data directory ${dir}\n`);
      expect(s.stdout()).toContain(`"data":${JSON.stringify(dir)}`);
      expect(s.output()).toMatch(/^API key: cpk_/m);
      expect(s.stdout()).not.toMatch(/API key/);
      await fetch(`http://127.0.0.1:${s.port}/health`);
      expect(await s.stop()).toBe(0);
      const lines = s.stdout().trim().split('\n');
      expect(lines.length).toBeGreaterThan(2);
      for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    } finally {
      await s.stop('SIGKILL');
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('one server per data directory', () => {
  it('refuses a second server on the same directory, naming the pid holding it; keys commands still work; a server killed with SIGKILL does not block the next', async () => {
    // The first is a process of its own, to be killed; the second and the CLI beside it run in this process.
    const first = await startBinary();
    try {
      const pid = first.child.pid!;
      // The second would bring the embedded devnet (CHAINPOST_CHAINS unset): it must stop before starting it. One
      // worker thread, as every test server (a refused start has started the threads: they load their code for naught).
      const second = await cliInProcess(['serve'], first.dir, { CHAINPOST_PORT: '0', CHAINPOST_CHAINS: '', CHAINPOST_WORKER_THREADS: '1' });
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(
        `chainpost: CHAINPOST_DATA: ${first.dir} is in use by another chainpost server (pid ${pid}); stop that one first, or set CHAINPOST_DATA to another directory\n`,
      );
      expect(second.stdout).not.toMatch(/"msg":"(devnet|listening)"/);
      expect((await first.call('/health')).status).toBe(200);

      const created = await cliInProcess(['keys', 'create', '--name', 'beside-the-server'], first.dir);
      expect(created.code).toBe(0);
      expect((await cliInProcess(['keys', 'list'], first.dir)).stdout).toMatch(/^beside-the-server\s/m);

      first.child.kill('SIGKILL');
      await first.exited;
      // Its lock file stays behind (nothing runs on SIGKILL), and is found stale.
      expect(existsSync(join(first.dir, 'server.lock'))).toBe(true);
      const next = await startChainpost({}, first.dir);
      try {
        expect((await next.call('/health')).status).toBe(200);
        // Held by this process's server now: the refusal names this pid.
        expect(await cliInProcess(['serve'], first.dir, { CHAINPOST_PORT: '0', CHAINPOST_WORKER_THREADS: '1' })).toMatchObject({
          code: 1,
          stderr: expect.stringContaining(`(pid ${process.pid})`),
        });
        // A clean stop gives the directory up.
        expect(await next.stop()).toBe(0);
        expect(existsSync(join(first.dir, 'server.lock'))).toBe(false);
      } finally {
        await next.stop('SIGKILL');
      }
    } finally {
      await stopAndClean(first);
    }
  });
});

describe('status', () => {
  /** Waits until the server's /health answers 200 and `chain` has the upstream state `upstream`. */
  const upstreamIs = (s: Running, chain: string, upstream: 'ok' | 'failing') =>
    until(
      async () => {
        const r = await s.call('/health');
        return (
          r.status === 200 &&
          (r.body.chains as Array<{ chain: string; upstream: string }>).some((c) => c.chain === chain && c.upstream === upstream)
        );
      },
      15_000,
      50,
    );

  it("says ok and exits 0 when every chain's upstream answers, says failing and exits 2 when one fails, and exits 1 when no server answers", async () => {
    const anvil = await startAnvil({ chainId: 1337 });
    let ok: Running | undefined;
    let failing: Running | undefined;
    try {
      // The CLI is the point here, and it asks the servers over HTTP: they run in this process.
      ok = await startChainpost({ CHAINPOST_CHAINS: `0x539=${anvil.url}`, CHAINPOST_POLL_MS: '50' });
      // 0x1's node is a closed loopback port: a real connection refused, retried with backoff.
      failing = await startChainpost({ CHAINPOST_CHAINS: `0x539=${anvil.url},0x1=http://127.0.0.1:9`, CHAINPOST_POLL_MS: '50' });
      expect(await upstreamIs(ok, '0x539', 'ok')).toBe(true);
      expect(await upstreamIs(failing, '0x1', 'failing')).toBe(true);

      const good = await cliInProcess(['status', '--url', ok.url], undefined);
      expect(good.code, good.stderr).toBe(0);
      expect(good.stdout.split('\n')[0]).toBe(`chainpost at ${ok.url}: ok`);
      expect(good.stdout).toMatch(/^0x539  \[/m);

      const bad = await cliInProcess(['status', '--url', failing.url], undefined);
      expect(bad.code, bad.stderr).toBe(2);
      expect(bad.stdout.split('\n')[0]).toBe(`chainpost at ${failing.url}: failing (upstream of 0x1)`);
      expect(bad.stdout).toMatch(/^0x1    \[.*upstream failing: /m);
      expect(bad.stdout).toMatch(/^0x539  \[/m);
      expect(bad.stderr).toBe('');

      // A port nothing listens on (a stopped server's: this process's fetch would reach it again over a kept-alive connection).
      const closed = createServer();
      await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
      await new Promise((r) => closed.close(r));
      const none = await cliInProcess(['status', '--url', url], undefined);
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(new RegExp(`^chainpost: no server answers at ${url} `));
    } finally {
      await stopAndClean(ok);
      await stopAndClean(failing);
      await anvil.stop();
    }
  }, 60_000);
});
