import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IndexState } from '../engine/data-api/common/indexer.js';
import { CATCH_UP_BATCH, type ChainState } from '../engine/evm/follower.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { openStore } from '../storage/env.js';
import { mined, publicClient } from './contracts.js';
import { advance, cliInProcess, startBinary, startChainpost, stopAndClean, tempDir, until, type Running } from './helpers.js';
import { nodeProxy, type NodeProxy } from './node-proxy.js';
import { startReceiver } from './receiver.js';
import { A0, A1 } from './streams-harness.js';

/**
 * CHAINPOST_START_BLOCKS end to end: anvil holds blocks mined before the server
 * starts; the server backfills from the start block through a proxy that holds
 * the node's receipts part-way, so the backfill is caught running (its /health
 * figures, the CLI's bar, the 10 s log line on the test clock), killed there and
 * started again; then every block from the start block is stored with anvil's
 * hash, the Data API indexes reach the head with a retention far smaller than the
 * backfill, and a stream gets no webhook for the backfilled history, only for
 * what came after.
 */

const K = 200;
const TOP = 450;
/** The block of the transfer to A1 inside the backfilled range. */
const HISTORY_TX = 400;
const RETENTION = 50;

type Json = Record<string, any>;

let anvil: Anvil;
let proxy: NodeProxy;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let s: Running | undefined;
const dir = tempDir();

const rpc = <T>(method: string, params: unknown[] = []): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;
const mine = (n: number) => rpc('anvil_mine', [`0x${n.toString(16)}`]);
const nodeHead = async (): Promise<number> => Number(await publicClient(anvil.url).getBlockNumber());
const chain = async (r: Running): Promise<Json> => ((await r.call('/health')).body.chains as Json[]).find((c) => c['chain'] === '0x539')!;
const env = (): Record<string, string> => ({
  CHAINPOST_CHAINS: `0x539=${proxy.url}`,
  CHAINPOST_START_BLOCKS: `0x539=${K}`,
  CHAINPOST_CONFIRMATIONS: '0x539=2',
  CHAINPOST_POLL_MS: '20',
  CHAINPOST_RETENTION_BLOCKS: String(RETENTION),
  CHAINPOST_RATE_LIMIT: '0',
  CHAINPOST_TEST_CLOCK: '1',
  CHAINPOST_NOW: '2026-11-24T00:00:00Z',
});
/** Log lines of the server (JSON on stdout) with this message. */
const logged = (r: Running, msg: string): Json[] =>
  r
    .stdout()
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}"`))
    .map((l) => JSON.parse(l) as Json);

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  await mine(HISTORY_TX - 1);
  const hash = await rpc<`0x${string}`>('eth_sendTransaction', [{ from: A0, to: A1, value: '0x1' }]);
  // anvil answers with the hash before its automine has always finished the block.
  await mined(anvil.url, hash);
  expect(await nodeHead()).toBe(HISTORY_TX);
  await mine(TOP - HISTORY_TX);
  expect(await nodeHead()).toBe(TOP);
  rx = await startReceiver();
  proxy = await nodeProxy(anvil.url);
}, 60_000);

afterAll(async () => {
  await stopAndClean(s);
  rmSync(dir, { recursive: true, force: true });
  await proxy?.close();
  await rx?.close();
  await anvil?.stop();
});

describe('backfill from CHAINPOST_START_BLOCKS on anvil', () => {
  it('backfills from the start block with progress in /health, the CLI and the log, resumes after a kill, indexes it all, and sends no webhook for history', {
    timeout: 90_000,
  }, async () => {
    // Receipts of the first 100 blocks pass, then the node holds them: the backfill stops part-way.
    let release = proxy.hold('eth_getBlockReceipts', 100);
    // The built binary: what a kill -9 mid-backfill leaves is what the resume is checked on.
    s = await startBinary(env(), dir);

    // Running: figures move, then stand where the node holds (a receipt is held, and the head stood still for 0.5 s).
    const seen: Json[] = [];
    const held = await until(
      async () => {
        const c = await chain(s!);
        seen.push(c);
        const last = seen.slice(-6);
        return (
          proxy.calls('eth_getBlockReceipts') > 100 &&
          last.length === 6 &&
          last.every((x) => x['head'] === c['head']) &&
          c['indexed'] >= c['head'] - CATCH_UP_BATCH
        );
      },
      30_000,
      100,
    );
    const running = seen.at(-1)!;
    expect(held, JSON.stringify(running)).toBe(true);
    expect(running['head']).toBeLessThan(TOP);
    expect(running['backfill']).toMatchObject({ from: K, to: TOP, done: false });
    expect(running['oldest']).toBe(K);
    // A rate was measured while blocks came in (service time runs at real speed too).
    const rated = seen.filter((c) => c['backfill']?.['blocksPerSec'] > 0);
    expect(rated.length, JSON.stringify(seen.slice(0, 3))).toBeGreaterThan(0);
    expect(rated[0]!['backfill']['etaSeconds']).toBeGreaterThan(0);
    // The indexes kept up with the backfill (the follower wakes them every CATCH_UP_BATCH blocks while catching up).
    expect(running['indexed']).toBeGreaterThanOrEqual(running['head'] - CATCH_UP_BATCH);
    expect(running['indexed']).toBeLessThanOrEqual(running['head']);

    // The CLI's bar, as a plain line per chain: it runs while the log line and the stream below are
    // checked (the node holds the backfill meanwhile: the figures stand).
    const statusRun = cliInProcess(['status', '--url', s.url], undefined);
    // The log's progress line comes with 10 s of service time (real time moves it too: one may have come already).
    const lines = logged(s, 'backfill').length;
    await advance(s, 10);
    expect(await until(() => logged(s!, 'backfill').length > lines, 5_000)).toBe(true);
    const line = logged(s, 'backfill').at(-1)!;
    expect(line).toMatchObject({ chain: '0x539', from: K, to: TOP, percent: expect.any(Number) });
    expect(line['head']).toBeGreaterThanOrEqual(running['head']);
    expect(line['head']).toBeLessThan(TOP);

    // A stream watching A1, created before the backfill reaches A1's old transfer.
    const made = await s.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: rx.url, description: 'backfill', tag: 'backfill', chainIds: ['0x539'], includeNativeTxs: true },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const streamId = made.body.id as string;
    expect((await s.call(`/streams/evm/${streamId}/address`, { method: 'POST', json: { address: [A1] } })).status).toBe(200);

    const status = await statusRun;
    expect(status.code, status.stderr).toBe(0);
    const bar = new RegExp(
      `^0x539  \\[#+-+\\] +\\d+\\.\\d%  backfill ${K}-${TOP} at (\\d+), [\\d.]+ blocks/s, (eta \\d+ (s|min|h)|eta unknown), indexed (\\d+)$`,
      'm',
    ).exec(status.stdout);
    expect(bar, status.stdout).not.toBeNull();
    // (On a loaded machine the head may have moved a little since: it only goes up, and stays short of `to`.)
    expect(Number(bar![1])).toBeGreaterThanOrEqual(running['head']);
    expect(Number(bar![1])).toBeLessThan(TOP);
    expect(Number(bar![4])).toBeGreaterThanOrEqual(running['indexed']);

    // Killed mid-backfill (the binary's process: see the start above); the node moves on meanwhile; started again.
    await s.stop('SIGKILL');
    await mine(5);
    release();
    const receiptsBefore = proxy.calls('eth_getBlockReceipts');
    s = await startChainpost(env(), dir);
    const resumed = await chain(s);
    expect(resumed['backfill']).toMatchObject({ from: K, to: TOP });
    expect(resumed['head']).toBeGreaterThanOrEqual(running['head']);

    const end = TOP + 5;
    const done = await until(
      async () => {
        const c = await chain(s!);
        return c['backfill']?.['done'] === true && c['head'] === end && c['indexed'] === end;
      },
      30_000,
      50,
    );
    const after = await chain(s);
    expect(done, JSON.stringify(after)).toBe(true);
    expect(after['backfill']).toMatchObject({ from: K, to: TOP, done: true, etaSeconds: 0 });
    // Resumed where the store stopped: each block's receipts asked about once (and what was fetched ahead when killed).
    expect(proxy.calls('eth_getBlockReceipts') - receiptsBefore).toBeLessThan(end - running['head'] + 30);
    expect(logged(s, 'backfill done')).toMatchObject([{ chain: '0x539', from: K, to: TOP }]);
    // The CLI's bar once done, running while the live blocks and the pruning are checked below.
    const finalRun = cliInProcess(['status', '--url', s.url], undefined);

    // New activity after the backfill: the stream gets it, and nothing of the history before it.
    const sent = await rpc<`0x${string}`>('eth_sendTransaction', [{ from: A0, to: A1, value: '0x2' }]);
    // Its block (anvil may answer with the hash before the block is mined).
    const live = Number((await mined(anvil.url, sent)).blockNumber);
    await mine(3);
    expect(
      await until(
        () => rx.webhooks().filter((w) => w.body.streamId === streamId && w.body.block.number === String(live)).length >= 2,
        15_000,
      ),
      'webhooks of the new block',
    ).toBe(true);
    expect(
      rx
        .webhooks()
        .map((w) => Number(w.body.block.number))
        .filter((n) => n <= TOP),
    ).toEqual([]);

    // Retention far below the backfill: records below the window are pruned, but only once indexed.
    const pruned = await until(
      async () => {
        const c = await chain(s!);
        return c['oldest'] > K + 100 && c['indexed'] >= c['head'] - 1;
      },
      15_000,
      50,
    );
    expect(pruned, JSON.stringify(await chain(s))).toBe(true);
    expect(logged(s, 'indexing failed; trying again')).toEqual([]);

    const final = await finalRun;
    // (This anvil mines only when asked: on a slow machine its head may have stood still long enough to be stalled.)
    expect(final.stdout).toMatch(
      new RegExp(`^0x539  \\[#{30}\\] 100\\.0%  backfill ${K}-${TOP} done, head \\d+, indexed \\d+(, stalled: .*)?$`, 'm'),
    );

    // The store: every block from K on with anvil's hash, nothing below K, the backfill kept in the chain's state.
    // Read once the server has stopped: it runs in this process, and opening a second LMDB handle here takes a
    // synchronous write transaction on this thread while the server's own writes are under way.
    expect(await s.stop()).toBe(0);
    const store = openStore(dir);
    try {
      const state = store.get<ChainState>('chainState', '0x539')!;
      expect(state.backfill).toEqual({ from: K, to: TOP });
      expect(store.get<string>('canon', blockKey('0x539', K - 1))).toBeUndefined();
      expect(store.count('canon', { start: '0x539/', end: blockKey('0x539', K) })).toBe(0);
      // anvil's hashes in one batch request: a call per block, one after another, took seconds.
      const numbers = Array.from({ length: state.head - K + 1 }, (_, i) => K + i);
      const batch = numbers.map((n, id) => ({
        jsonrpc: '2.0',
        id,
        method: 'eth_getBlockByNumber',
        params: [`0x${n.toString(16)}`, false],
      }));
      const answers = (await (
        await fetch(anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(batch) })
      ).json()) as Array<{ id: number; result: { hash: string } }>;
      const theirs = new Map(answers.map((a) => [numbers[a.id], a.result.hash]));
      expect(theirs.size).toBe(numbers.length);
      const wrong = numbers.filter((n) => store.get<string>('canon', blockKey('0x539', n)) !== theirs.get(n));
      expect(wrong).toEqual([]);
      expect(store.get<IndexState>('indexState', '0x539')!.number).toBeGreaterThanOrEqual(state.head - 1);
    } finally {
      await store.close();
    }
  });

  it('starts a chain new to the store at the node head by default, and keeps a stored chain whatever CHAINPOST_START_BLOCKS says', {
    timeout: 60_000,
  }, async () => {
    // The file's anvil, straight (no proxy), at whatever head the test above left it: the node head decides.
    const top = await nodeHead();
    expect(top).toBeGreaterThanOrEqual(TOP);
    const otherDir = tempDir();
    let r: Running | undefined;
    try {
      const base = { CHAINPOST_CHAINS: `0x539=${anvil.url}`, CHAINPOST_POLL_MS: '20', CHAINPOST_RATE_LIMIT: '0' };
      r = await startChainpost(base, otherDir);
      expect(await until(async () => (await chain(r!))['head'] >= top, 10_000)).toBe(true);
      const first = await chain(r);
      expect(first['backfill']).toMatchObject({ from: top, to: top, done: true });
      expect(first['oldest']).toBe(top);
      await r.stop('SIGTERM');

      // Lower than what is stored: the stored chain stays, and the log says so.
      r = await startChainpost({ ...base, CHAINPOST_START_BLOCKS: '0x539=5' }, otherDir);
      expect(logged(r, 'a start block is set for a chain already in the store: its stored state is kept')).toMatchObject([
        { chain: '0x539', startBlock: 5, followedFrom: top },
      ]);
      await mine(2);
      expect(await until(async () => (await chain(r!))['head'] >= top + 2, 10_000)).toBe(true);
      const again = await chain(r);
      expect(again['backfill']).toMatchObject({ from: top, to: top, done: true });
      expect(again['oldest']).toBe(top);
      await r.stop('SIGTERM');
      const store = openStore(otherDir);
      try {
        expect(store.count('canon', { start: '0x539/', end: blockKey('0x539', top) })).toBe(0);
      } finally {
        await store.close();
      }
    } finally {
      await stopAndClean(r);
    }
  });
});
