import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startAnvil } from '../http/clients/anvil.js';
import { freePort } from './kit/free-port.js';
import { parseConfig } from '../engine/config/config.js';
import type { Service } from '../app/server.js';
import type { Part } from '../engine/readiness.js';
// Readiness as seen from outside: over HTTP, from the server's first moment (held at a part by startService's gate).
import { TEST_KEY, advance, startChainpost, stopAndClean, tempDir, until, type Running } from './helpers.js';
import { serverModule } from './in-process.js';

const { startService } = await serverModule();

const health = async (port: number, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> => {
  const res = await fetch(`http://127.0.0.1:${port}/health`, { headers });
  return { status: res.status, body: await res.json() };
};

/** A gate for startService: holds the start before `part` until released, and says when it got there. */
function hold(part: Part): { before: (p: Part) => Promise<void>; reached: Promise<void>; release: () => void } {
  let reached!: () => void;
  let release!: () => void;
  const reachedP = new Promise<void>((r) => (reached = r));
  const released = new Promise<void>((r) => (release = r));
  return {
    before: (p) => {
      if (p !== part) return Promise.resolve();
      reached();
      return released;
    },
    reached: reachedP,
    release,
  };
}

describe('GET /health while the server starts', () => {
  it('answers 503 naming the parts still starting, then ok once all are up', async () => {
    const dir = tempDir();
    const port = await freePort();
    const lines: string[] = [];
    const gate = hold('worker pool');
    const starting = startService({
      config: parseConfig({ CHAINPOST_DATA: dir, CHAINPOST_PORT: String(port), CHAINPOST_API_KEY: TEST_KEY, CHAINPOST_CHAINS: 'none' }),
      out: (l) => lines.push(l),
      before: gate.before,
    });
    let service: Service | undefined;
    try {
      await gate.reached;
      const held = await health(port);
      expect(held.status).toBe(503);
      expect(held.body).toMatchObject({ status: 'starting', starting: ['worker pool'], chains: [] });
      expect(lines.join('')).not.toMatch(/"msg":"listening"/);
      gate.release();
      service = await starting;
      const up = await health(port);
      expect(up.status).toBe(200);
      expect(up.body).toMatchObject({ status: 'ok', chains: [] });
      expect(up.body.starting).toBeUndefined();
      expect(lines.join('')).toMatch(/"msg":"listening"/);
    } finally {
      gate.release();
      await (service ?? (await starting.catch(() => undefined)))?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("stays ok when an upstream node cannot be reached: that is the chain's state, not the server's", async () => {
    const dir = tempDir();
    const [port, dead] = [await freePort(), await freePort()];
    const service = await startService({
      config: parseConfig({
        CHAINPOST_DATA: dir,
        CHAINPOST_PORT: String(port),
        CHAINPOST_API_KEY: TEST_KEY,
        CHAINPOST_CHAINS: `0x1=http://127.0.0.1:${dead}`,
      }),
      out: () => {},
    });
    try {
      expect(await until(async () => (await health(port)).body.chains[0]?.upstream === 'failing', 10_000, 50)).toBe(true);
      const h = await health(port);
      expect(h.status).toBe(200);
      expect(h.body).toMatchObject({ status: 'ok', chains: [{ chain: '0x1', upstream: 'failing' }] });
    } finally {
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('with CHAINPOST_METRICS_KEY: the status alone (its code too) without the key, the detail with it; a node as its scheme and host', async () => {
    const dir = tempDir();
    const [port, dead] = [await freePort(), await freePort()];
    const gate = hold('worker pool');
    const METRICS_KEY = 'metrics_key_0123456789abcdef';
    const config = parseConfig({
      CHAINPOST_DATA: dir,
      CHAINPOST_PORT: String(port),
      CHAINPOST_API_KEY: TEST_KEY,
      CHAINPOST_METRICS_KEY: METRICS_KEY,
      CHAINPOST_CHAINS: `0x1=http://nodeuser:nodepass@127.0.0.1:${dead}/v3/provider-key`,
    });
    const starting = startService({ config, out: () => {}, before: gate.before });
    let service: Service | undefined;
    const holder = { authorization: `Bearer ${METRICS_KEY}` };
    try {
      await gate.reached;
      for (const headers of [{}, { authorization: `Bearer ${TEST_KEY}` }, { 'x-api-key': TEST_KEY }] as Array<Record<string, string>>)
        expect(await health(port, headers)).toEqual({ status: 503, body: { status: 'starting' } });
      expect(await health(port, holder)).toMatchObject({ status: 503, body: { status: 'starting', starting: ['worker pool'] } });
      gate.release();
      service = await starting;
      expect(await health(port)).toEqual({ status: 200, body: { status: 'ok' } });
      expect(await until(async () => (await health(port, holder)).body.chains[0]?.upstream === 'failing', 10_000, 50)).toBe(true);
      const detail = await health(port, holder);
      expect(detail.body.chains[0].node).toBe(`http://127.0.0.1:${dead}`);
      expect(JSON.stringify(detail.body)).not.toMatch(/nodeuser|nodepass|provider-key/);
    } finally {
      gate.release();
      await (service ?? (await starting.catch(() => undefined)))?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('GET /health: a chain whose head stands still', () => {
  const chain = async (s: Running): Promise<Record<string, unknown>> => (await s.call('/health')).body.chains[0];
  const stalledMetric = async (s: Running): Promise<string | undefined> =>
    /^chainpost_chain_stalled\{chain="0x539"\} (\d)$/m.exec((await s.call('/metrics')).body)?.[1];

  it('is stalled once its head has not moved for 10 block times (30 s at least) of service time, and not once a block comes', {
    timeout: 60_000,
  }, async () => {
    // anvil mining only when asked: its head moves when the test says so. 0x539's registry block time is 1 s.
    const anvil = await startAnvil();
    let s: Running | undefined;
    const mine = () =>
      fetch(anvil.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"jsonrpc":"2.0","id":1,"method":"anvil_mine","params":["0x1"]}',
      });
    try {
      s = await startChainpost({ CHAINPOST_CHAINS: `0x539=${anvil.url}`, CHAINPOST_TEST_CLOCK: '1', CHAINPOST_POLL_MS: '20' });
      await mine();
      expect(await until(async () => (await chain(s!)).head === 1, 10_000)).toBe(true);
      expect(await chain(s)).toMatchObject({ chain: '0x539', head: 1, upstream: 'ok', stalled: false });
      expect(await stalledMetric(s)).toBe('0');
      await advance(s, 40);
      // The node answers all along: only the head tells.
      expect(await chain(s)).toMatchObject({ chain: '0x539', head: 1, upstream: 'ok', stalled: true });
      expect(await stalledMetric(s)).toBe('1');
      await mine();
      expect(await until(async () => (await chain(s!)).head === 2, 10_000)).toBe(true);
      expect(await chain(s)).toMatchObject({ head: 2, stalled: false });
    } finally {
      await stopAndClean(s);
      await anvil.stop();
    }
  });

  it("counts the embedded devnet's own block time (CHAINPOST_DEVNET_BLOCK_TIME)", { timeout: 60_000 }, async () => {
    let s: Running | undefined;
    try {
      // A block an hour: stalled after 10 hours, not after the 30 s of the registry's 1-s block time.
      s = await startChainpost({
        CHAINPOST_CHAINS: '',
        CHAINPOST_DEVNET_PORT: '0',
        CHAINPOST_DEVNET_BLOCK_TIME: '3600',
        CHAINPOST_TEST_CLOCK: '1',
      });
      expect(await until(async () => (await chain(s!))?.head === 0, 10_000)).toBe(true);
      await advance(s, 60);
      expect(await chain(s)).toMatchObject({ chain: '0x539', head: 0, stalled: false });
      await advance(s, 10 * 3600);
      expect(await chain(s)).toMatchObject({ chain: '0x539', head: 0, stalled: true });
    } finally {
      await stopAndClean(s);
    }
  });
});
