import { rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import type { ChainState } from '../engine/evm/follower.js';
import type { FollowerStatus } from '../engine/ingest/follow.js';
import { decodeRecord } from '../engine/evm/record.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { freePort } from './kit/free-port.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore, type Store } from '../storage/env.js';
import { startBinary, startChainpost, stopAndClean, tempDir, until, type Running, type RunningBinary } from './helpers.js';

/**
 * Ingestion through the real server binary: several upstreams at once (one
 * refusing connections, one accepting and never answering), the backoff on a
 * failing one, and a kill -9 in the middle of a catch-up.
 */
const ACCOUNT0 = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const ACCOUNT1 = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
const POLL_MS = 50;

const hex = (n: number): string => `0x${n.toString(16)}`;

/** A lagging node: accepts TCP connections, reads the requests, never answers. */
async function hungNode(): Promise<{ port: number; requests: () => string; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let received = '';
  let connections = 0;
  const srv = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('data', (c: Buffer) => void (received += c.toString()));
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (srv.address() as { port: number }).port,
    requests: () => received,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        srv.close(() => resolve());
      }),
  };
}

const chains = async (s: Running): Promise<FollowerStatus[]> => {
  const res = await s.call('/health');
  expect(res.status).toBe(200);
  return res.body.chains as FollowerStatus[];
};
const chainOf = async (s: Running, chain: string): Promise<FollowerStatus> => {
  const c = (await chains(s)).find((x) => x.chain === chain);
  expect(c, `chain ${chain} in /health`).toBeDefined();
  return c!;
};
const metrics = async (s: Running): Promise<string> => (await s.call('/metrics')).body as string;
const metric = (text: string, name: string, chain: string): number | undefined => {
  const m = new RegExp(`^${name}\\{chain="${chain}"\\} (\\S+)$`, 'm').exec(text);
  return m === null ? undefined : Number(m[1]);
};

const logLines = (s: Running): Array<Record<string, unknown>> =>
  s
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });

describe('ingestion in the server binary', () => {
  it('keeps following a healthy chain while another upstream refuses connections and a third hangs', { timeout: 15_000 }, async () => {
    let anvil: Anvil | undefined;
    let rpc: ReturnType<typeof jsonRpcUpstream> | undefined;
    let hung: Awaited<ReturnType<typeof hungNode>> | undefined;
    let s: Running | undefined;
    try {
      anvil = await startAnvil();
      rpc = jsonRpcUpstream(anvil.url);
      hung = await hungNode();
      const dead = await freePort(); // nothing listens there
      s = await startChainpost({
        // The bad ones first: a server that took the chains one after another would be stuck before 0x539.
        CHAINPOST_CHAINS: `0x89=http://127.0.0.1:${hung.port},0x1=http://127.0.0.1:${dead},0x539=${anvil.url}`,
        CHAINPOST_POLL_MS: String(POLL_MS),
      });
      const started = performance.now();
      await rpc.call('anvil_mine', ['0x7']);
      const target = parseInt(await rpc.call<string>('eth_blockNumber', []), 16);
      expect(target).toBe(7);

      // Well inside the client's 30 s timeout: a hung 0x89 must not be what 0x539 waits for.
      const reached = await until(async () => {
        const all = await chains(s!);
        const ok = all.find((c) => c.chain === '0x539');
        const bad = all.find((c) => c.chain === '0x1');
        return ok?.head === target && (bad?.upstreamErrors ?? 0) > 0;
      }, 6_000);
      const all = await chains(s);
      expect(reached, JSON.stringify(all)).toBe(true);
      expect(performance.now() - started).toBeLessThan(7_000);
      expect(all.map((c) => c.chain).sort()).toEqual(['0x1', '0x539', '0x89']);

      const healthy = all.find((c) => c.chain === '0x539')!;
      expect(healthy).toMatchObject({ head: target, upstream: 'ok', upstreamErrors: 0 });
      expect(healthy.lastError).toBeUndefined();

      const failing = all.find((c) => c.chain === '0x1')!;
      expect(failing).toMatchObject({ head: -1, upstream: 'failing', lastError: expect.any(String) });
      expect(failing.lastError!.length).toBeGreaterThan(0);
      expect(failing.upstreamErrors).toBeGreaterThan(0);

      // The hung node got the follower's request and is sitting on it: no block, no error yet.
      expect(hung.connections()).toBeGreaterThan(0);
      expect(hung.requests()).toContain('eth_blockNumber');
      const lagging = all.find((c) => c.chain === '0x89')!;
      expect(lagging).toMatchObject({ head: -1, upstream: 'ok', upstreamErrors: 0 });

      const text = await metrics(s);
      expect(text).toMatch(/^# TYPE chainpost_chain_upstream_errors_total counter$/m);
      expect(text).toMatch(/^chainpost_chain_upstream_failing\{chain="0x1"\} 1$/m);
      expect(text).toMatch(/^chainpost_chain_upstream_failing\{chain="0x539"\} 0$/m);
      expect(metric(text, 'chainpost_chain_upstream_errors_total', '0x1')).toBeGreaterThan(0);
      expect(metric(text, 'chainpost_chain_upstream_errors_total', '0x539')).toBe(0);
      expect(metric(text, 'chainpost_chain_head', '0x539')).toBe(target);
      expect(metric(text, 'chainpost_chain_head', '0x1')).toBe(-1);

      // Log lines reach us through a pipe, maybe a little after the HTTP answers.
      const failingLine = (l: Record<string, unknown>): boolean =>
        l['msg'] === 'upstream failing' && l['chain'] === '0x1' && l['level'] === 'warn' && typeof l['err'] === 'string';
      await until(async () => logLines(s!).some(failingLine), 2_000);
      const warned = logLines(s).filter((l) => l['msg'] === 'upstream failing');
      expect(warned.some(failingLine)).toBe(true);
      expect(warned.filter((l) => l['chain'] === '0x539')).toEqual([]);

      // A hung node does not hold up a shutdown: what is in flight is aborted.
      const stopping = performance.now();
      expect(await s.stop('SIGTERM')).toBe(0);
      expect(performance.now() - stopping).toBeLessThan(5_000);
    } finally {
      await stopAndClean(s);
      await rpc?.close();
      await anvil?.stop();
      await hung?.close();
    }
  });

  it('backs off on a failing upstream instead of retrying every poll interval', { timeout: 10_000 }, async () => {
    let s: Running | undefined;
    try {
      const dead = await freePort(); // nothing listens there
      const spawned = performance.now();
      s = await startChainpost({ CHAINPOST_CHAINS: `0x1=http://127.0.0.1:${dead}`, CHAINPOST_POLL_MS: String(POLL_MS) });
      // After failure k the follower waits POLL_MS·2^k. Seen first at a count of n (so before failure n + 1 came),
      // failure n + 3 comes at least POLL_MS·(2^(n+1) + 2^(n+2)) later; without a backoff, 3·POLL_MS.
      const errors = async (): Promise<number> => (await chainOf(s!, '0x1')).upstreamErrors;
      expect(await until(async () => (await errors()) >= 1, 5_000)).toBe(true);
      const seen = performance.now();
      const n = await errors();
      expect(await until(async () => (await errors()) >= n + 3, 8_000)).toBe(true);
      expect(performance.now() - seen, `failures ${n} to ${n + 3} came sooner than the backoff allows`).toBeGreaterThanOrEqual(
        POLL_MS * (2 ** (n + 1) + 2 ** (n + 2)),
      );
      const status = await chainOf(s, '0x1');
      // The follower cannot have run longer than this (it starts after the spawn): within `elapsed` ms at most
      // floor(log2(elapsed/100 + 1)) + 1 attempts; one more for slack.
      const elapsed = performance.now() - spawned;
      const bound = Math.floor(Math.log2(elapsed / 100 + 1)) + 2;
      expect(status.upstream).toBe('failing');
      expect(
        status.upstreamErrors,
        `after ${Math.round(elapsed)} ms; without backoff ~${Math.round(elapsed / POLL_MS)}`,
      ).toBeLessThanOrEqual(bound);
      expect(status.upstreamErrors).toBeGreaterThanOrEqual(3);
      const counted = metric(await metrics(s), 'chainpost_chain_upstream_errors_total', '0x1');
      expect(counted).toBeGreaterThanOrEqual(status.upstreamErrors);
      expect(counted).toBeLessThanOrEqual(bound);
      // One warn line per failed attempt (they reach us through a pipe, maybe a little after the HTTP answers).
      const warnedFor = (): Array<Record<string, unknown>> =>
        logLines(s!).filter((l) => l['msg'] === 'upstream failing' && l['chain'] === '0x1');
      await until(async () => warnedFor().length >= status.upstreamErrors, 1_000);
      const warned = warnedFor();
      expect(warned.length).toBeGreaterThanOrEqual(status.upstreamErrors);
      expect(warned.length).toBeLessThanOrEqual(bound);
    } finally {
      await stopAndClean(s);
    }
  });

  it('after a kill -9 mid catch-up, a restart completes the chain with no gap and no stale block', { timeout: 30_000 }, async () => {
    let anvil: Anvil | undefined;
    let rpc: ReturnType<typeof jsonRpcUpstream> | undefined;
    // The built binary: the kill -9 of the server's process is what this test checks.
    let s: RunningBinary | undefined;
    let restarted: Running | undefined;
    let store: Store | undefined;
    const dir = tempDir();
    // Every block kept (no retention pruning), so every one can be checked.
    // From block 0 (a first start would begin at the node's head): every block mined before the start is ingested.
    const env = {
      CHAINPOST_CHAINS: '',
      CHAINPOST_START_BLOCKS: '0x539=0',
      CHAINPOST_CONFIRMATIONS: '0x539=2',
      CHAINPOST_POLL_MS: String(POLL_MS),
      CHAINPOST_RETENTION_BLOCKS: '1000000',
    };
    try {
      anvil = await startAnvil({ args: ['--no-mining'] });
      rpc = jsonRpcUpstream(anvil.url);
      env.CHAINPOST_CHAINS = `0x539=${anvil.url}`;
      /** Mines `n` blocks, each with one transfer from the first default account. */
      const mineWithTxs = async (n: number): Promise<number> => {
        for (let i = 0; i < n; i++) {
          await rpc!.call('eth_sendTransaction', [{ from: ACCOUNT0, to: ACCOUNT1, value: hex(i + 1) }]);
          await rpc!.call('anvil_mine', ['0x1']);
        }
        return parseInt(await rpc!.call<string>('eth_blockNumber', []), 16);
      };
      let target = await mineWithTxs(200);
      expect(target).toBe(200);

      // Start the server on the 200 blocks and kill it once it is past ~30% of them. Should it
      // catch up before a poll sees it mid-way, kill it anyway, mine twice as many and start again.
      let from = -1;
      let killedAt: number | undefined;
      for (let round = 0; killedAt === undefined && round < 3; round++) {
        if (round > 0) {
          await s!.stop('SIGKILL');
          from = target;
          target = await mineWithTxs(200 * 2 ** round);
        }
        s = await startBinary(env, dir);
        const lower = from + 0.3 * (target - from);
        const settled = await until(
          async () => {
            const { head } = await chainOf(s!, '0x539');
            if (head >= target) return true;
            if (head > lower) {
              await s!.stop('SIGKILL');
              killedAt = head;
              return true;
            }
            return false;
          },
          5_000,
          5,
        );
        expect(settled, 'the server neither caught up nor got past 30% within 5 s').toBe(true);
      }
      expect(killedAt, 'the kill landed while the server was catching up').toBeDefined();
      expect(s!.child.signalCode).toBe('SIGKILL');

      // What the killed server left: a prefix of the chain, short of the node's head.
      store = openStore(dir);
      const left = store.get<ChainState>('chainState', '0x539')!;
      expect(left.head).toBeGreaterThanOrEqual(killedAt!);
      expect(left.head).toBeLessThan(target);
      await store.close();
      store = undefined;

      // The restart reads what the killed process left: no signal left to send, so in this process.
      const r = (restarted = await startChainpost(env, dir));
      const caughtUp = await until(async () => (await chainOf(r, '0x539')).head === target, 10_000);
      const after = await chainOf(r, '0x539');
      expect(caughtUp, JSON.stringify(after)).toBe(true);
      expect(after).toMatchObject({ head: target, confirmed: target - 2, upstream: 'ok', upstreamErrors: 0 });
      expect(await r.stop('SIGTERM')).toBe(0);

      store = openStore(dir);
      const state = store.get<ChainState>('chainState', '0x539')!;
      expect(state.head).toBe(target);
      expect(state.confirmed).toBe(state.head - 2);
      const missing: string[] = [];
      const stale: string[] = [];
      for (let n = 0; n <= state.head; n++) {
        const key = blockKey('0x539', n);
        const theirs = await rpc.call<{ hash: string }>('eth_getBlockByNumber', [hex(n), false]);
        const bytes = store.getRaw('blocks', key);
        if (bytes === undefined) missing.push(`blocks ${n}`);
        else {
          const record = decodeRecord(bytes);
          if (record.header['hash'] !== theirs.hash || record.txs.length !== (n === 0 ? 0 : 1)) stale.push(`blocks ${n}`);
        }
        if (store.getRaw('probes', key) === undefined) missing.push(`probes ${n}`);
        if (store.get<string>('canon', key) !== theirs.hash) stale.push(`canon ${n}`);
      }
      expect(missing).toEqual([]);
      expect(stale).toEqual([]);
      // Nothing above the head either.
      expect(store.getRaw('blocks', blockKey('0x539', state.head + 1))).toBeUndefined();
      expect(store.count('blocks', { start: '0x539/', end: '0x539/~' })).toBe(state.head + 1);
      expect(store.count('canon', { start: '0x539/', end: '0x539/~' })).toBe(state.head + 1);
    } finally {
      await store?.close();
      await stopAndClean(s);
      await stopAndClean(restarted);
      rmSync(dir, { recursive: true, force: true });
      await rpc?.close();
      await anvil?.stop();
    }
  });

  it('does not follow a chain that stopped producing blocks before the service date', { timeout: 10_000 }, async () => {
    let s: Running | undefined;
    try {
      // 0x504 stopped producing blocks on 2026-08-01 (spec, Versioning); the service date is after it.
      s = await startChainpost({ CHAINPOST_CHAINS: '0x504=http://127.0.0.1:9', CHAINPOST_NOW: '2026-08-01T00:00:00Z' });
      expect(await chains(s)).toEqual([]);
      expect(logLines(s).find((l) => l['msg'] === 'not following a chain that no longer produces blocks')).toMatchObject({
        chain: '0x504',
        since: '2026-08-01',
      });
    } finally {
      await stopAndClean(s);
    }
  });
});
