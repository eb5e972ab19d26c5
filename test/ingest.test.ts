import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClock } from '../engine/clock.js';
import { EvmFollower } from '../engine/evm/follower.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import { readProbe } from '../engine/evm/probe.js';
import { decodeRecord, rpcBlock, type BlockRecord } from '../engine/evm/record.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import { jsonLogger } from '../engine/log.js';
import { NodeError } from '../engine/ports.js';
import { systemTicker } from '../app/process.js';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore, type Store } from '../storage/env.js';
import { workerPool } from '../app/worker-pool.js';
import { tempDir, until } from './helpers.js';
import { quietLog } from './kit/quiet-log.js';

const ACCOUNT0 = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const ACCOUNT1 = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';

// The server's worker pool: the node's answers are parsed and encoded in its threads, as in the server.
const pool = workerPool(tempDir(), 2);
afterAll(() => pool.close());

describe('EVM ingestion from a real anvil node', () => {
  let anvil: Anvil;
  let rpc: ReturnType<typeof jsonRpcUpstream>;
  let store: Store;
  let dir: string;
  const events: string[] = [];
  const recorder: ChainEvents = {
    seen: (_c, n) => void events.push(`seen ${n}`),
    confirmed: (_c, n) => void events.push(`confirmed ${n}`),
    reorged: (_c, from, to) => void events.push(`reorg ${from}-${to}`),
  };
  const clock = new ServiceClock(systemTicker, Date.now());
  const log = quietLog(() => clock.now());
  const follower = () => new EvmFollower('0x539', rpc, store, clock, recorder, log, { confirmations: 2, pollMs: 50, pool: pool.ingest });
  const send = (value: string) => rpc.call<string>('eth_sendTransaction', [{ from: ACCOUNT0, to: ACCOUNT1, value }]);
  const mine = (n = 1) => rpc.call('anvil_mine', [`0x${n.toString(16)}`]);
  const record = (n: number): BlockRecord => decodeRecord(store.getRaw('blocks', blockKey('0x539', n))!);

  beforeAll(async () => {
    anvil = await startAnvil({ args: ['--no-mining'] });
    rpc = jsonRpcUpstream(anvil.url);
    dir = tempDir();
    store = openStore(dir);
  });
  afterAll(async () => {
    await rpc.close();
    await anvil.stop();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores each block with its receipts and call traces, and announces seen then confirmed in order', async () => {
    await send('0x1');
    await send('0x2');
    await mine();
    await mine(3);
    const f = follower();
    await f.sync();
    expect(f.status()).toMatchObject({ head: 4, confirmed: 2, internalTransactions: true, upstream: 'ok' });
    expect(events).toEqual(['seen 0', 'seen 1', 'seen 2', 'confirmed 0', 'seen 3', 'confirmed 1', 'seen 4', 'confirmed 2']);
    const b1 = record(1);
    expect(b1.txs).toHaveLength(2);
    expect(b1.txs.map((t) => t.tx['value'])).toEqual(['0x1', '0x2']);
    expect(b1.internal).toEqual([]);
    // The stored block rebuilds the node's own answer.
    expect(rpcBlock(b1)).toEqual(await rpc.call('eth_getBlockByNumber', ['0x1', true]));
    const p = readProbe(store.getRaw('probes', blockKey('0x539', 1))!);
    expect(p.addressCount).toBe(4); // from and to of each transaction
  });

  it.each([1, 3])('rolls back a reorg of depth %i and follows the new branch', async (depth) => {
    const f = follower();
    await f.sync();
    const head = f.status().head;
    const before = store.get<string>('canon', blockKey('0x539', head));
    events.length = 0;
    await rpc.call('anvil_reorg', [depth, []]);
    await f.sync();
    // The new branch is seen block by block; a block whose confirmation the reorg took back (it was on
    // the old branch) is confirmed again once the new one is 2 deep, and nothing else is.
    const expected = [`reorg ${head - depth + 1}-${head}`];
    let confirmed = Math.min(head - 2, head - depth);
    for (let n = head - depth + 1; n <= head; n++) {
      expected.push(`seen ${n}`);
      while (confirmed < n - 2) expected.push(`confirmed ${++confirmed}`);
    }
    expect(events).toEqual(expected);
    const now = await rpc.call<{ hash: string }>('eth_getBlockByNumber', [`0x${head.toString(16)}`, false]);
    expect(store.get<string>('canon', blockKey('0x539', head))).toBe(now.hash);
    expect(now.hash).not.toBe(before);
  });

  it('resumes after a restart from the last committed block, without repeating a confirmation', async () => {
    const first = follower();
    await first.sync();
    const { head, confirmed } = first.status();
    first.stop();
    await mine(2);
    events.length = 0;
    const second = follower();
    await second.sync();
    expect(events).toEqual([`seen ${head + 1}`, `confirmed ${confirmed + 1}`, `seen ${head + 2}`, `confirmed ${confirmed + 2}`]);
  });

  it('keeps the last blocks of the retention window in full and prunes older records and probe columns, hashes kept', async () => {
    await mine(6);
    const other = openStore(tempDir());
    const f = new EvmFollower('0x539', rpc, other, clock, recorder, log, { confirmations: 2, pollMs: 50, retention: 3, pool: pool.ingest });
    await f.sync();
    const { head, oldest } = f.status();
    expect(head).toBeGreaterThan(6);
    // The last 3 blocks stay (all deeper ones are confirmed, 2 deep).
    expect(oldest).toBe(head - 2);
    for (let n = 0; n <= head; n++) {
      const key = blockKey('0x539', n);
      expect([n, other.has('blocks', key), other.has('probes', key)]).toEqual([n, n >= oldest, n >= oldest]);
      expect(other.has('canon', key)).toBe(true);
    }
    // It survives a restart: the next follower goes on from where pruning stopped.
    await mine(2);
    const again = new EvmFollower('0x539', rpc, other, clock, recorder, log, {
      confirmations: 2,
      pollMs: 50,
      retention: 3,
      pool: pool.ingest,
    });
    await again.sync();
    expect(again.status().oldest).toBe(again.status().head - 2);
    expect(other.has('blocks', blockKey('0x539', again.status().oldest - 1))).toBe(false);
    await other.close();
    rmSync(other.path, { recursive: true, force: true });
  });

  it('prunes nothing a listener has yet to read, however far behind it is', async () => {
    await mine(6);
    const other = openStore(tempDir());
    let unread: number | undefined = 2;
    const f = new EvmFollower('0x539', rpc, other, clock, { ...recorder, oldestUnread: () => unread }, log, {
      confirmations: 2,
      pollMs: 50,
      retention: 3,
      pool: pool.ingest,
    });
    await f.sync();
    expect(f.status().oldest).toBe(2);
    expect([other.has('blocks', blockKey('0x539', 1)), other.has('blocks', blockKey('0x539', 2))]).toEqual([false, true]);
    // Once read, the window closes up at the next sync.
    unread = undefined;
    await mine(1);
    await f.sync();
    expect(f.status().oldest).toBe(f.status().head - 2);
    await other.close();
    rmSync(other.path, { recursive: true, force: true });
  });

  it('follows new heads through the WebSocket subscription, without waiting for a poll', async () => {
    const f = new EvmFollower('0x539', rpc, store, clock, recorder, log, { confirmations: 2, pollMs: 600_000, pool: pool.ingest });
    f.start();
    try {
      // Subscribed once the node accepted eth_subscribe.
      expect(await until(() => f.status().subscription, 5_000)).toBe(true);
      await until(() => f.status().head >= 0, 5_000);
      const start = f.status().head;
      // The next poll is 10 minutes away: only a newHeads notification can bring the block in.
      let reached = false;
      for (let i = 0; i < 10 && !reached; i++) {
        await mine();
        reached = await until(() => f.status().head > start + i, 500);
      }
      expect(reached).toBe(true);
    } finally {
      f.stop();
    }
  });

  it('takes nothing from a commit that failed: the block is ingested again, with no gap', async () => {
    await mine(3);
    const other = openStore(tempDir());
    let failOnce = true;
    const flaky: ChainEvents = {
      ...recorder,
      seen: (_c, n) => {
        if (n === 1 && failOnce) {
          failOnce = false;
          throw new Error('the listener failed');
        }
      },
    };
    const f = new EvmFollower('0x539', rpc, other, clock, flaky, log, { confirmations: 2, pollMs: 50, pool: pool.ingest });
    await f.sync();
    expect(f.status()).toMatchObject({ head: -1, upstream: 'failing', lastError: 'the listener failed' });
    await f.sync();
    const head = f.status().head;
    expect(head).toBeGreaterThan(1);
    for (let n = 0; n <= head; n++) expect([n, other.has('blocks', blockKey('0x539', n))]).toEqual([n, true]);
    await other.close();
    rmSync(other.path, { recursive: true, force: true });
  });

  it('waits for the next wake-up when the node announces a block it cannot serve yet', async () => {
    const other = openStore(tempDir());
    let calls = 0;
    const behind = {
      call: <T>(method: string, params: unknown[]): Promise<T> => {
        calls++;
        if (method === 'eth_blockNumber')
          return rpc.call<string>(method, params).then((h) => `0x${(parseInt(h, 16) + 5).toString(16)}` as T);
        return rpc.call<T>(method, params);
      },
    };
    const f = new EvmFollower('0x539', behind, other, clock, recorder, log, { confirmations: 2, pollMs: 50, pool: pool.ingest });
    await f.sync();
    const head = parseInt(await rpc.call<string>('eth_blockNumber', []), 16);
    expect(f.status()).toMatchObject({ head, upstream: 'ok' });
    // Catching up takes a few calls per block; asking again and again for the missing one would take thousands.
    expect(calls).toBeLessThan(10 * (head + 1) + 20);
    await other.close();
    rmSync(other.path, { recursive: true, force: true });
  });

  it('keeps the call tracer on when the node could not be reached for the first trace', async () => {
    const other = openStore(tempDir());
    let dropOnce = true;
    const flaky = {
      call: <T>(method: string, params: unknown[]): Promise<T> => {
        if (method === 'debug_traceBlockByNumber' && dropOnce) {
          dropOnce = false;
          return Promise.reject(new Error('socket hang up'));
        }
        return rpc.call<T>(method, params);
      },
    };
    const f = new EvmFollower('0x539', flaky, other, clock, recorder, log, { confirmations: 2, pollMs: 50, pool: pool.ingest });
    await f.sync();
    // Traces of the other blocks fetched beside it may already have found the tracer: either way it is not turned off.
    expect(f.status()).toMatchObject({ upstream: 'failing' });
    expect(f.status().internalTransactions).not.toBe(false);
    await f.sync();
    expect(f.status()).toMatchObject({ upstream: 'ok', internalTransactions: true });
    expect(decodeRecord(other.getRaw('blocks', blockKey('0x539', 1))!).internal).toEqual([]);
    await other.close();
    rmSync(other.path, { recursive: true, force: true });
  });

  it('turns internal transactions off for a node without the call tracer, and says so', async () => {
    const noTracer = {
      call: <T>(method: string, params: unknown[]) =>
        method === 'debug_traceBlockByNumber'
          ? Promise.reject(new NodeError(-32601, 'the method debug_traceBlockByNumber does not exist'))
          : rpc.call<T>(method, params),
    };
    const other = openStore(tempDir());
    const f = new EvmFollower('0x539', noTracer, other, clock, recorder, log, { confirmations: 2, pollMs: 50, pool: pool.ingest });
    await f.sync();
    expect(f.status().internalTransactions).toBe(false);
    expect(decodeRecord(other.getRaw('blocks', blockKey('0x539', 1))!).internal).toBeNull();
    await other.close();
    rmSync(other.path, { recursive: true, force: true });
  });
});

/** A dead node, on the service clock: retried with doubling waits (from the poll interval up to 30 s), reported, and followed again once it answers. */
describe('a failing upstream', () => {
  it('is retried with backoff, reported in the status and the log, and recovers', async () => {
    const frozen = { elapsedMs: () => 0, wake: () => () => {} };
    const clock = new ServiceClock(frozen, 0);
    const lines: string[] = [];
    const log = jsonLogger(
      (l) => void lines.push(l),
      () => clock.now(),
      'info',
    );
    const calls: number[] = [];
    let dead = true;
    const upstream = {
      call: <T>(method: string): Promise<T> => {
        if (method === 'eth_blockNumber') calls.push(clock.now());
        return dead
          ? Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1'))
          : Promise.resolve((method === 'eth_blockNumber' ? '-0x1' : null) as T);
      },
    };
    const store = openStore(tempDir());
    const none: ChainEvents = { seen: () => {}, confirmed: () => {}, reorged: () => {} };
    const f = new EvmFollower('0x1', upstream, store, clock, none, log, { confirmations: 2, pollMs: 50, pool: pool.ingest });
    const settle = () => new Promise((r) => setImmediate(r));
    const run = async (ms: number) => {
      for (let t = 0; t < ms; t += 50) {
        await settle();
        await clock.advance(50);
      }
      await settle();
    };
    f.start();
    await run(120_000);
    const gaps = calls.slice(1).map((t, i) => t - calls[i]!);
    expect(gaps).toEqual([100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
    expect(f.status()).toMatchObject({ upstream: 'failing', upstreamErrors: calls.length, lastError: 'connect ECONNREFUSED 127.0.0.1:1' });
    expect(lines.filter((l) => l.includes('"msg":"upstream failing"'))).toHaveLength(calls.length);
    // Back up: the next attempt succeeds and polling returns to its interval.
    dead = false;
    const due = calls.at(-1)! + 30_000;
    calls.length = 0;
    await run(30_000);
    expect(f.status()).toMatchObject({ upstream: 'ok', upstreamErrors: 12 });
    expect(calls[0]).toBe(due);
    expect(new Set(calls.slice(1).map((t, i) => t - calls[i]!))).toEqual(new Set([50]));
    expect(calls.length).toBeGreaterThan(100);
    f.stop();
    await store.close();
    rmSync(store.path, { recursive: true, force: true });
  });
});

describe('a chain that stops producing blocks', () => {
  it('is followed until its removal date, then no more', async () => {
    const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, 0);
    const lines: string[] = [];
    const calls: number[] = [];
    const upstream = {
      call: <T>(method: string): Promise<T> => (
        calls.push(clock.now()), Promise.resolve((method === 'eth_blockNumber' ? '-0x1' : null) as T)
      ),
    };
    const store = openStore(tempDir());
    const none: ChainEvents = { seen: () => {}, confirmed: () => {}, reorged: () => {} };
    const f = new EvmFollower(
      '0x504',
      upstream,
      store,
      clock,
      none,
      jsonLogger(
        (l) => void lines.push(l),
        () => clock.now(),
        'info',
      ),
      { confirmations: 2, pollMs: 50, until: 1_000, pool: pool.ingest },
    );
    f.start();
    for (let t = 0; t < 3_000; t += 50) {
      await new Promise((r) => setImmediate(r));
      await clock.advance(50);
    }
    expect(calls).toHaveLength(1_000 / 50);
    expect(Math.max(...calls)).toBeLessThan(1_000);
    expect(lines.filter((l) => l.includes('stopped following'))).toHaveLength(1);
    await store.close();
    rmSync(store.path, { recursive: true, force: true });
  });
});
