import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUnits } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { openStore } from '../storage/env.js';
import { deploy, publicClient, write, type Deployed } from './contracts.js';
import { devnetApi } from './data-api.js';
import { cli, cliInProcess, startChainpost, stopAndClean, tempDir, indexedTo, until, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';

/**
 * `chainpost backup DIR` end to end: the real server follows a real anvil with streams, two tenants' keys and
 * indexed ERC-20 transfers in its store; the backup CLI runs as its own process while the server goes on
 * answering reads and creating streams; a second server started on the copy answers what the first did.
 */

type Json = Record<string, any>;

let anvil: Anvil;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let s: Running;
let token: Deployed;
/** The key of a second tenant, made by `chainpost keys create` before the backup. */
let other: string;
const work = tempDir();

/** What the copy must answer as the original did: a Data API read of each kind the test wrote, settings, the other tenant's streams. */
const READS = [devnetApi(`/${A1}/erc20/transfers`), devnetApi(`/${A0}/erc20`), devnetApi(`/erc20/${'TOKEN'}/transfers`), '/settings'];
const reads = (): string[] => READS.map((p) => p.replace('TOKEN', token.address.toLowerCase()));

const streamBody = (i: number) => ({
  webhookUrl: rx.url,
  chainIds: ['0x539'],
  tag: `backup-${i}`,
  description: `stream ${i}`,
  includeNativeTxs: true,
});

async function indexed(server: Running): Promise<void> {
  const target = Number(await publicClient(anvil.url).getBlockNumber());
  const ok = await indexedTo(server, target);
  expect(ok, `the server ingested block ${target}`).toBe(true);
}

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  rx = await startReceiver();
  s = await startChainpost(serverEnv(anvil));
  // Its own process, while the chain is written.
  const creating = cli(['keys', 'create', '--name', 'second-tenant'], s.dir);
  token = await deploy(anvil.url, 'TestToken', ['Backup Token', 'BKP', 6, parseUnits('1000', 6)]);
  for (const [to, amount] of [
    [A1, '10'],
    [A2, '2.5'],
    [A1, '7'],
  ] as const) {
    await write(anvil.url, { address: token.address, abi: token.abi, functionName: 'transfer', args: [to, parseUnits(amount, 6)] });
  }
  await indexed(s);
  for (let i = 0; i < 5; i++) expect((await s.call('/streams/evm', { method: 'PUT', json: streamBody(i) })).status).toBe(200);
  const created = await creating;
  expect(created.code, created.stderr).toBe(0);
  other = created.stdout.trim().split('\n').at(-1)!;
  expect((await s.call('/streams/evm', { method: 'PUT', json: streamBody(100), headers: { 'x-api-key': other } })).status).toBe(200);
}, 90_000);

afterAll(async () => {
  await stopAndClean(s);
  await rx?.close();
  await anvil?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** A tenant's streams, every page; the total each page states is the count. */
async function streamsOf(server: Running, key: string): Promise<Json[]> {
  const out: Json[] = [];
  let cursor: string | undefined;
  let total: number | undefined;
  do {
    const r = await server.call(`/streams/evm?limit=100${cursor === undefined ? '' : `&cursor=${cursor}`}`, {
      headers: { 'x-api-key': key },
    });
    expect(r.status).toBe(200);
    total ??= r.body.total;
    expect(r.body.total).toBe(total);
    out.push(...r.body.result);
    cursor = r.body.cursor ?? undefined;
  } while (cursor !== undefined);
  expect(out).toHaveLength(total!);
  return out;
}

describe('chainpost backup', () => {
  for (const compact of [false, true]) {
    it(`copies the live store while the server serves and writes${compact ? ' (--compact)' : ''}; a server on the copy answers the same`, async () => {
      const target = join(work, compact ? 'compact' : 'plain');
      mkdirSync(target);
      const before = await Promise.all(reads().map((p) => s.call(p)));
      for (const r of before) expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(before[0]!.body.result).toHaveLength(2);
      const streamsBefore = await streamsOf(s, s.key);

      // Reads and stream creations go on while the backup runs in its own process.
      let running = true;
      let served = 0;
      let made = 0;
      const traffic = (async () => {
        for (let i = 1000; running; i++) {
          const [created, read] = await Promise.all([s.call('/streams/evm', { method: 'PUT', json: streamBody(i) }), s.call(reads()[0]!)]);
          expect(created.status).toBe(200);
          expect(read.body).toEqual(before[0]!.body);
          made++;
          served++;
        }
      })();
      // Some writes land before the copy starts, so it is taken from a store being written.
      await until(() => made >= 3, 10_000);
      served = 0;
      const backup = await cli(['backup', ...(compact ? ['--compact'] : []), target], s.dir);
      running = false;
      await traffic;
      expect(backup.code, backup.stderr).toBe(0);
      expect(backup.stdout).toMatch(
        new RegExp(`^copied the store to ${join(target, 'data.mdb')} \\(\\d+ bytes${compact ? ', compacted' : ''}\\)$`, 'm'),
      );
      expect(readdirSync(target)).toEqual(['data.mdb']);
      // Requests begun while the backup ran were answered.
      expect(served).toBeGreaterThan(0);

      const streamsAfter = await streamsOf(s, s.key);
      const copy = await startChainpost(serverEnv(anvil), target);
      try {
        const answers = await Promise.all(reads().map((p) => copy.call(p)));
        expect(answers.map((a) => [a.status, a.body])).toEqual(before.map((b) => [b.status, b.body]));
        expect(await streamsOf(copy, other)).toEqual(await streamsOf(s, other));
        // The copy is one moment of the store: every stream made before the backup, some made during it, each whole.
        const copied = await streamsOf(copy, copy.key);
        const ids = new Set(copied.map((x) => x['id']));
        for (const x of streamsBefore) expect(ids.has(x['id'])).toBe(true);
        expect(copied.length).toBeGreaterThanOrEqual(streamsBefore.length);
        expect(copied.length).toBeLessThanOrEqual(streamsAfter.length);
        const byId = new Map(streamsAfter.map((x) => [x['id'], x]));
        for (const x of copied) expect(x).toEqual(byId.get(x['id']));
        // Both keys work on the copy; the copy follows the chain on from where the original was.
        expect((await copy.call('/streams/evm', { headers: { 'x-api-key': other } })).status).toBe(200);
        await indexed(copy);
      } finally {
        await copy.stop('SIGKILL');
      }
    }, 60_000);
  }

  it('copies a store of the embedded devnet without its chain: a server on the copy begins a new devnet, no reorg, its streams kept', async () => {
    const dir = tempDir();
    const target = join(work, 'devnet');
    mkdirSync(target);
    // CHAINPOST_CHAINS empty: the embedded devnet, a block every 0.2 s.
    const env = { CHAINPOST_CHAINS: '', CHAINPOST_DEVNET_PORT: '0', CHAINPOST_DEVNET_BLOCK_TIME: '0.2', CHAINPOST_POLL_MS: '50' };
    const head = async (server: Running): Promise<number> => (await server.call('/health')).body.chains?.[0]?.head ?? -1;
    const genesis = async (server: Running): Promise<string> => {
      const res = await fetch(`${server.url}/rpc/0x539/${server.key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockByNumber', params: ['0x0', false] }),
      });
      return ((await res.json()) as { result: { hash: string } }).result.hash;
    };
    const original = await startChainpost(env, dir);
    let copy: Running | undefined;
    try {
      expect((await original.call('/streams/evm', { method: 'PUT', json: streamBody(1) })).status).toBe(200);
      // A few blocks to copy (a new devnet's first blocks would replace them in a rollback).
      expect(await until(async () => (await head(original)) >= 3, 20_000, 50)).toBe(true);
      const backup = await cli(['backup', target], dir);
      expect(backup.code, backup.stderr).toBe(0);
      const was = await head(original);
      const originalGenesis = await genesis(original);
      const streams = await streamsOf(original, original.key);
      await original.stop();

      copy = await startChainpost(env, target);
      // Past the copied head: a rollback of the copied chain would have happened by then.
      expect(await until(async () => (await head(copy!)) > was + 2, 20_000, 50)).toBe(true);
      expect(copy.stdout()).not.toContain('"msg":"reorg"');
      const cleared = copy
        .stdout()
        .split('\n')
        .find((l) => l.includes('"msg":"no devnet state'));
      expect(cleared, copy.output().slice(-3000)).toBeDefined();
      expect(JSON.parse(cleared!)).toMatchObject({
        level: 'info',
        chain: '0x539',
        state: join(target, 'devnet', 'state.json'),
        rows: expect.any(Number),
      });
      expect(JSON.parse(cleared!).rows).toBeGreaterThan(was);
      // A new devnet: another genesis; the streams and keys came with the copy.
      expect(await genesis(copy)).not.toBe(originalGenesis);
      expect(await streamsOf(copy, copy.key)).toEqual(streams);
    } finally {
      await original.stop('SIGKILL');
      await copy?.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('refuses a missing or non-empty target, or the data directory itself, with a message and exit 1, and writes nothing', async () => {
    const missing = join(work, 'missing');
    const full = join(work, 'full');
    mkdirSync(full);
    writeFileSync(join(full, 'notes.txt'), 'mine');
    const empty = tempDir();
    mkdirSync(join(work, 'from-nothing'));
    // The CLI's own run in this process (its exit code and output are the binary's: test/cli.test.ts), at once.
    const [r1, r2, r3, usage, r4] = await Promise.all([
      cliInProcess(['backup', missing], s.dir),
      cliInProcess(['backup', full], s.dir),
      cliInProcess(['backup', s.dir], s.dir),
      cliInProcess(['backup'], s.dir),
      cliInProcess(['backup', join(work, 'from-nothing')], join(empty, 'nothing')),
    ]);
    expect(r1.code).toBe(1);
    expect(r1.stderr).toMatch(
      new RegExp(`^chainpost: the backup target ${missing} does not exist: create an empty directory for it first$`, 'm'),
    );

    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/the backup target .*full is not empty \(it holds notes\.txt\): give an empty directory/);
    expect(readdirSync(full)).toEqual(['notes.txt']);

    expect(r3.code).toBe(1);
    expect(r3.stderr).toMatch(/the backup target .* is the data directory itself/);

    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^chainpost: backup needs DIR\nusage: chainpost backup \[--compact\] DIR/m);

    expect(r4.code).toBe(1);
    expect(r4.stderr).toMatch(/CHAINPOST_DATA: .* holds no chainpost store/);
    rmSync(empty, { recursive: true, force: true });
  });

  it('copies a store the CLI opened alone (no server), readable as a store', async () => {
    const dir = tempDir();
    const target = join(work, 'offline');
    mkdirSync(target);
    try {
      const made = await cli(['keys', 'create', '--name', 'offline', '--create'], dir);
      expect(made.code).toBe(0);
      expect((await cli(['backup', target], dir)).code).toBe(0);
      const copy = openStore(target, { create: false });
      expect(copy.values<{ name: string }>('keys').map((k) => k.name)).toEqual(['offline']);
      await copy.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
