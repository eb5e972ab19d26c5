import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync, gzipSync } from 'node:zlib';
import { open } from 'lmdb';
import { afterEach, describe, expect, it } from 'vitest';
import { formatUnits, parseUnits, type Hex } from 'viem';
import { startAnvil } from '../http/clients/anvil.js';
import { SCHEMA_VERSION, openStore } from '../storage/env.js';
import { readHexKey } from '../storage/hex-keys.js';
import { deploy, publicClient, walletClient, mined, write } from './contracts.js';
import { devnetApi } from './data-api.js';
// The built binary: an older build's server and this one's, started on the same data as a user upgrades.
import { cliInProcess, startBinary, startChainpost, tempDir, until, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';

/**
 * Upgrades, on a store the previous layout version (5) really wrote: test/fixtures/stores/v5 holds the store of
 * chainpost at V5_COMMIT (built from this repository's history) after it followed anvil with streams, two
 * tenants' keys and ERC-20 transfers, and what that chainpost answered then. This chainpost refuses it to every
 * command that would not migrate it, naming the one that does; migrates it at start; and answers each recorded
 * request exactly as the old one did. A store of a newer version is refused, never read.
 *
 * MAKE_V5_STORE=1 remakes the fixture (builds V5_COMMIT from `git archive`, about a minute).
 */

type Json = Record<string, any>;

/** The last commit whose SCHEMA_VERSION is 5 (the parent of "Schema 6: …"). */
const V5_COMMIT = '088e2f4^';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIXTURE = join(ROOT, 'test/fixtures/stores/v5');
/** A node that answers nothing: the server on the fixture serves from its store alone. */
const NO_NODE = { CHAINPOST_CHAINS: '0x539=http://127.0.0.1:9' };
/** topic0 of Transfer(address,address,uint256). */
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

/** A recorded request: its path, the key it used (the server's, or the second tenant's), and what chainpost at V5_COMMIT answered. */
interface Recorded {
  path: string;
  as: 'main' | 'other';
  status: number;
  body: unknown;
}

interface Answers {
  commit: string;
  otherKey: string;
  recorded: Recorded[];
}

/** Unzips the fixture's store into a fresh data directory. */
function fixtureStore(): string {
  const dir = tempDir();
  writeFileSync(join(dir, 'data.mdb'), gunzipSync(readFileSync(join(FIXTURE, 'data.mdb.gz'))));
  return dir;
}

const answers = (): Answers => JSON.parse(readFileSync(join(FIXTURE, 'answers.json'), 'utf8')) as Answers;

/**
 * The latest instant the recorded answers carry: about when the old server stopped. The new one's clock starts
 * there, or the retention rules would have removed since (on the real date) what the old one still answered with:
 * the delivery logs are kept a day.
 */
function recordedAt(a: Answers): string {
  const instants = JSON.stringify(a.recorded).match(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g) ?? [];
  expect(instants.length).toBeGreaterThan(0);
  return instants.reduce((latest, t) => (t > latest ? t : latest));
}

const ask = (s: Running, path: string, key: string) => s.call(path, { headers: { 'x-api-key': key } });

describe('a store written by layout version 5', () => {
  let dir: string | undefined;
  let s: Running | undefined;
  afterEach(async () => {
    await s?.stop('SIGKILL');
    s = undefined;
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('is refused by the commands that would not migrate it, naming `chainpost serve`; read as nothing meanwhile', async () => {
    expect(SCHEMA_VERSION).toBe(13);
    dir = fixtureStore();
    const commands = [
      ['keys', 'list'],
      ['keys', 'create', '--name', 'late'],
      ['backup', join(dir, 'nowhere')],
    ];
    // At once.
    const results = await Promise.all(commands.map((args) => cliInProcess(args, dir)));
    for (const [i, args] of commands.entries()) {
      const r = results[i]!;
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr).toMatch(
        new RegExp(
          `^chainpost: CHAINPOST_DATA: ${dir} holds schema version 5, which this chainpost migrates to version ${SCHEMA_VERSION} when it starts on it: run \`chainpost serve\` \\(npm start\\) on this CHAINPOST_DATA once, then this command$`,
          'm',
        ),
      );
      expect(r.stdout).toBe('');
    }
    expect(() => openStore(dir!)).toThrow(/holds schema version 5/);
    // Still version 5, unchanged: a refused open writes nothing.
    const raw = open({ path: dir, noSubdir: false, readOnly: true });
    expect(raw.openDB({ name: 'meta', encoding: 'binary' }).getBinary('schemaVersion')).toEqual(Buffer.from([5]));
    await raw.close();
  });

  /** Answers that gained fields since version 5: each added field as this version derives it from the stored data. */
  const ADDED_SINCE_5: Record<string, (body: any, recorded: Recorded[]) => Record<string, unknown>> = {
    // Each ERC-20 transfer's value in the token's units (the recorded tokens have decimals()).
    'erc20 transfers': (b) => ({
      result: b.result.map((t: Json) => ({ ...t, value_decimal: formatUnits(BigInt(t['value']), Number(t['token_decimals'])) })),
    }),
    '/settings': (b) => ({ standardWebhooksSecret: `whsec_${Buffer.from(b.secretKey, 'utf8').toString('base64')}` }),
    // The stream's delivery state: its URL (as its record answered), that URL's rate and its queue (version 5 stored
    // no failure of it: none was recorded).
    '/stats/:streamId': (b, recorded) => ({
      webhookUrl: recorded
        .filter((r) => r.path.startsWith('/streams/'))
        .flatMap((r) => (r.body as { result?: unknown[] }).result ?? [r.body])
        .find((st) => (st as { id?: string }).id === b.streamId)?.['webhookUrl' as never],
      successRate: 100,
      queueSize: 0,
      lastError: null,
    }),
  };

  it('is migrated by the server at start, which then answers every recorded request as chainpost version 5 did', async () => {
    dir = fixtureStore();
    const all = answers();
    const { recorded, otherKey } = all;
    expect(recorded.length).toBeGreaterThanOrEqual(10);
    // The delivery rows of version 5 (no partition), which the migration moves into partition 0.
    const raw = open({ path: dir, noSubdir: false, readOnly: true });
    const deliveryRows = ['history', 'deliveryLogs', 'counts', 'stats'].reduce((n, name) => n + raw.openDB({ name }).getKeysCount(), 0);
    // The wallet history rows repeating an address's tx/ list (before version 11), which the migration drops.
    // Version 5 keys are text (their hex encoding came with the migration).
    const keys = [...raw.openDB<unknown, Buffer>({ name: 'addressTxs', keyEncoding: 'binary' }).getKeys()].map((k) => k.toString('utf8'));
    const repeated = keys.filter((k) => k.startsWith('hist/') && keys.includes(`tx/${k.slice('hist/'.length)}`)).length;
    // The `tx/` and `a/` lists' rows, a row per entry, which the migration groups a row per block (before version 13),
    // but for the blocks that have undo rows: every block of this short devnet chain has one, so none is grouped here
    // and its rows are read as they are (test/unit/engine/data-api/common/block-groups.test.ts and the ERC-20 log
    // test group rows and read both forms).
    const textKeys = (name: string): string[] =>
      [...raw.openDB<unknown, Buffer>({ name, keyEncoding: 'binary' }).getKeys()].map((k) => readHexKey(k, 0, k.length));
    const lists =
      textKeys('addressTxs').filter((k) => k.startsWith('tx/')).length +
      textKeys('contractLogs').filter((k) => k.split('/')[1] === 'a').length;
    expect(lists).toBeGreaterThan(0);
    expect(textKeys('indexUndo').length).toBeGreaterThan(0);
    await raw.close();
    expect(deliveryRows).toBeGreaterThan(0);
    expect(repeated).toBeGreaterThan(0);
    s = await startBinary({ ...NO_NODE, CHAINPOST_NOW: recordedAt(all) }, dir);
    const said = s
      .stdout()
      .split('\n')
      .filter((l) => l.includes('the store'))
      .map((l) => JSON.parse(l) as Json);
    expect(said).toEqual([
      expect.objectContaining({
        msg: 'migrating the store to this layout; the server answers once it is done',
        from: 5,
        to: SCHEMA_VERSION,
      }),
      expect.objectContaining({
        msg: 'migrated the store',
        from: 5,
        to: SCHEMA_VERSION,
        rewrittenKeys: deliveryRows + repeated,
      }),
    ]);
    for (const r of recorded) {
      const got = await ask(s, r.path, r.as === 'main' ? s.key : otherKey);
      // Fields added to an answer since version 5, derived from what it stored: the rest as it answered.
      const adds =
        ADDED_SINCE_5[
          r.path
            .replace(/^\/stats\/[0-9a-f-]{36}$/, '/stats/:streamId')
            .replace(/^\/api\/v2\.2\/(erc20\/)?0x[0-9a-f]{40}(\/erc20)?\/transfers\?.*$/, 'erc20 transfers')
        ];
      const want = adds === undefined ? r.body : { ...(r.body as object), ...adds(r.body, recorded) };
      expect([got.status, got.body], `${r.path} as ${r.as}`).toEqual([r.status, want]);
    }
    await s.stop();
    s = undefined;
    const store = openStore(dir);
    expect(store.get('meta', 'schemaVersion')).toBe(SCHEMA_VERSION);
    expect(store.get('meta', 'migratingFrom')).toBeUndefined();
    await store.close();
    // The CLI's readers open it now.
    const list = await cliInProcess(['keys', 'list'], dir);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^second-tenant\s/m);
  }, 60_000);

  it('marked as a newer version, is refused by the server and the CLI, naming both versions, and left as it is', async () => {
    dir = fixtureStore();
    const raw = open({ path: dir, noSubdir: false });
    const newer = SCHEMA_VERSION + 1;
    // msgpack of a small number: the byte itself.
    await raw.openDB({ name: 'meta', encoding: 'binary' }).put('schemaVersion', Buffer.from([newer]));
    await raw.close();
    const refusal = new RegExp(
      `${dir} holds schema version ${newer}; this chainpost reads version ${SCHEMA_VERSION}\\. Use a matching chainpost or another CHAINPOST_DATA directory\\.`,
    );
    // The server's refusal in this process (the binary's start is the migration's, above): what it would print, then exit 1.
    const [served, list] = await Promise.allSettled([startChainpost(NO_NODE, dir), cliInProcess(['keys', 'list'], dir)]);
    expect(served.status).toBe('rejected');
    expect(String((served as PromiseRejectedResult).reason)).toMatch(/exited with 1 before listening/);
    expect(String((served as PromiseRejectedResult).reason)).toMatch(refusal);
    const r = (list as PromiseFulfilledResult<Awaited<ReturnType<typeof cliInProcess>>>).value;
    expect(r.code, 'keys list').toBe(1);
    expect(r.stderr).toMatch(refusal);
    const again = open({ path: dir, noSubdir: false, readOnly: true });
    expect(again.openDB({ name: 'meta', encoding: 'binary' }).getBinary('schemaVersion')).toEqual(Buffer.from([newer]));
    await again.close();
  }, 60_000);

  it.runIf(process.env['MAKE_V5_STORE'] === '1')(
    '(MAKE_V5_STORE=1) remakes the fixture with chainpost at V5_COMMIT',
    { timeout: 300_000 },
    async () => {
      await makeFixture();
    },
  );
});

/** Builds chainpost at V5_COMMIT, lets it write a store with real data, and keeps the store (compacted) and its answers. */
async function makeFixture(): Promise<void> {
  const old = mkdtempSync(join(tmpdir(), 'chainpost-v5-'));
  const data = tempDir();
  execFileSync('sh', ['-c', `git -C "${ROOT}" archive ${V5_COMMIT} | tar -x -C "${old}"`]);
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(old, 'node_modules'));
  execFileSync(join(old, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], { cwd: old });
  const bin = join(old, 'bin/chainpost.js');
  expect(readFileSync(join(old, 'storage/env.ts'), 'utf8')).toMatch(/SCHEMA_VERSION = 5;/);
  const anvil = await startAnvil({ chainId: 1337 });
  const rx = await startReceiver();
  let s: Running | undefined;
  try {
    s = await startBinary(serverEnv(anvil), data, bin);
    const main = s;
    const other = execFileSync(process.execPath, [bin, 'keys', 'create', '--name', 'second-tenant'], {
      env: { ...process.env, CHAINPOST_DATA: data },
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .at(-1)!;
    // Streams first, so the blocks below are delivered and logged.
    const streams: string[] = [];
    for (const [key, tag] of [
      [main.key, 'senders'],
      [other, 'other-tenant'],
    ] as const) {
      const r = await main.call('/streams/evm', {
        method: 'PUT',
        json: { webhookUrl: rx.url, chainIds: ['0x539'], tag, description: tag, includeNativeTxs: true },
        headers: { 'x-api-key': key },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(
        (await main.call(`/streams/evm/${r.body.id}/address`, { method: 'POST', json: { address: A0 }, headers: { 'x-api-key': key } }))
          .status,
      ).toBe(200);
      streams.push(r.body.id);
    }
    const token = await deploy(anvil.url, 'TestToken', ['Version Five', 'VFV', 6, parseUnits('1000', 6)]);
    for (const [to, amount] of [
      [A1, '10'],
      [A2, '2.5'],
      [A1, '7'],
    ] as const) {
      await write(anvil.url, { address: token.address, abi: token.abi, functionName: 'transfer', args: [to, parseUnits(amount, 6)] });
    }
    const paid = await (await walletClient(anvil.url)).sendTransaction({ to: A2 as Hex, value: 10n ** 15n });
    await mined(anvil.url, paid);
    // Deep enough for the confirmed deliveries too.
    await publicClient(anvil.url).request({ method: 'anvil_mine' as never, params: ['0x3'] as never });
    const head = Number(await publicClient(anvil.url).getBlockNumber());
    expect(
      await until(
        async () => ((await main.call('/health')).body.chains as Json[]).find((c) => c['chain'] === '0x539')?.['head'] >= head,
        20_000,
        50,
      ),
    ).toBe(true);
    let last = -1;
    expect(
      await until(
        async () => {
          const n = rx.webhooks().length;
          const settled = n === last && n > 0;
          last = n;
          return settled;
        },
        30_000,
        1_000,
      ),
    ).toBe(true);
    const t = token.address.toLowerCase();
    const blockTwo = await publicClient(anvil.url).getBlock({ blockNumber: 2n });
    const paths: Array<[string, 'main' | 'other']> = [
      ['/streams/evm?limit=100', 'main'],
      ['/streams/evm?limit=100', 'other'],
      [`/streams/evm/${streams[0]}`, 'main'],
      [`/streams/evm/${streams[0]}/address`, 'main'],
      ['/settings', 'main'],
      ['/settings', 'other'],
      ['/history/logs?limit=100', 'main'],
      ['/stats', 'main'],
      [`/stats/${streams[1]}`, 'other'],
      [devnetApi(`/${A1}/erc20/transfers`), 'main'],
      [devnetApi(`/${A1}/erc20/transfers`, 'order=ASC'), 'main'],
      [devnetApi(`/${A0}/erc20`), 'main'],
      [devnetApi(`/erc20/${t}/transfers`), 'main'],
      [devnetApi(`/${t}/logs`), 'main'],
      [devnetApi(`/${t}/logs`, `topic0=${TRANSFER}`), 'other'],
      [devnetApi('/dateToBlock', `date=${new Date(Number(blockTwo.timestamp) * 1000).toISOString()}`), 'main'],
    ];
    const recorded: Recorded[] = [];
    for (const [path, as] of paths) {
      const r = await ask(main, path, as === 'main' ? main.key : other);
      recorded.push({ path, as, status: r.status, body: r.body });
    }
    expect(await s.stop()).toBe(0);
    s = undefined;
    // Compacted (free pages left out) and gzipped: what the repository keeps.
    const copy = mkdtempSync(join(tmpdir(), 'chainpost-v5-copy-'));
    const env = open({ path: data, noSubdir: false });
    await env.backup(copy, true);
    await env.close();
    mkdirSync(FIXTURE, { recursive: true });
    writeFileSync(join(FIXTURE, 'data.mdb.gz'), gzipSync(readFileSync(join(copy, 'data.mdb')), { level: 9 }));
    const commit = execFileSync('git', ['-C', ROOT, 'rev-parse', V5_COMMIT], { encoding: 'utf8' }).trim();
    writeFileSync(join(FIXTURE, 'answers.json'), `${JSON.stringify({ commit, otherKey: other, recorded } satisfies Answers, null, 1)}\n`);
    rmSync(copy, { recursive: true, force: true });
  } finally {
    await s?.stop('SIGKILL');
    await rx.close();
    await anvil.stop();
    rmSync(data, { recursive: true, force: true });
    if (existsSync(old)) rmSync(old, { recursive: true, force: true });
  }
}
