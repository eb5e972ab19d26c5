import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import type { Adapters } from '../app/server.js';
import { cliInProcess, startChainpost, stopAndClean, type Running } from './helpers.js';
import { startReceiver, startSmtp } from './receiver.js';

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
export type Smtp = Awaited<ReturnType<typeof startSmtp>>;

export interface DeliveryEnv {
  s: Running;
  rx: Receiver;
  smtp: Smtp;
}

/** What a stream of each family on this server says, as its server follows no chain (the EVM one on 0x1). */
export const NOT_FOLLOWED = {
  evm: 'Stream cannot fire on chain 0x1 (eth): this server does not follow it. Add it to CHAINPOST_CHAINS and restart the server.',
  bitcoin:
    "Stream cannot fire on chain bitcoin: this server does not follow it. Set CHAINPOST_BITCOIN_RPC (a Bitcoin Core node's URL) and restart the server.",
  solana:
    "Stream cannot fire on chain solana: this server does not follow it. Set CHAINPOST_SOLANA_RPC (a Solana node's URL) and restart the server.",
} as const;

/**
 * For the enclosing describe: the real server on the test clock (no chain), a
 * webhook receiver and an SMTP server for its alerts (to ops@example.org), given
 * to `use` once started; each test starts with the receiver answering 200. `adapters`: the server's (a ticker the
 * suite moves).
 */
export function deliveryEnv(use: (env: DeliveryEnv) => void, adapters: Adapters = {}): void {
  let env: DeliveryEnv | undefined;
  beforeAll(async () => {
    const rx = await startReceiver();
    const smtp = await startSmtp();
    // Per-stream delivery series on /metrics: the streams tests read a stream's own.
    const s = await startChainpost(
      {
        CHAINPOST_TEST_CLOCK: '1',
        CHAINPOST_NOW: '2026-11-22T12:00:00Z',
        CHAINPOST_RATE_LIMIT: '0',
        CHAINPOST_SMTP_URL: smtp.url,
        CHAINPOST_ALERT_EMAIL: 'ops@example.org',
        CHAINPOST_METRICS_STREAMS: '1',
      },
      undefined,
      adapters,
    );
    env = { s, rx, smtp };
    use(env);
  });
  afterAll(async () => {
    await stopAndClean(env?.s);
    await env?.rx.close();
    await env?.smtp.close();
  });
  beforeEach(() => {
    env!.rx.state.answer = () => 200;
    env!.rx.state.answerTests = () => 200;
  });
}

/**
 * Calls on one family's Streams API (`/streams/<family>`) against the server of `env()`, for the tests of that
 * family's resource: `make` creates a stream with `defaults` (and the receiver's URL), `makeIn` one of another
 * family, `all` reads a list by cursor checking each page's total, `stranger` gives the headers of another key.
 */
export function familyCalls(env: () => DeliveryEnv, family: 'bitcoin' | 'solana', defaults: Record<string, unknown>) {
  const call: Running['call'] = (path, init) => env().s.call(path, init);
  const put = (json: unknown, path = `/streams/${family}`) => call(path, { method: 'PUT', json });
  const post = (path: string, json?: unknown) => call(path, { method: 'POST', ...(json === undefined ? {} : { json }) });
  const del = (path: string, json?: unknown) => call(path, { method: 'DELETE', ...(json === undefined ? {} : { json }) });
  const stream = async (id: string) => (await call(`/streams/${family}/${id}`)).body;
  const enqueue = (id: string, webhooks: unknown[]) => post(`/admin/streams/${id}/webhooks`, { webhooks });
  const make = async (extra: Record<string, unknown> = {}) => {
    const r = await put({ webhookUrl: env().rx.url, ...defaults, ...extra });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.id as string;
  };
  const makeIn = async (other: 'evm' | 'bitcoin' | 'solana') => {
    const r = await put(
      { webhookUrl: env().rx.url, ...(other === 'evm' ? { chainIds: ['0x1'], includeNativeTxs: true } : {}) },
      `/streams/${other}`,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.id as string;
  };
  const all = async (path: string, limit: number): Promise<{ items: any[]; pages: number; total: number }> => {
    const items: any[] = [];
    let cursor: string | undefined;
    let pages = 0;
    let total = -1;
    do {
      const p = await call(`${path}?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      expect(p.status, JSON.stringify(p.body)).toBe(200);
      if (total >= 0) expect(p.body.total).toBe(total);
      total = p.body.total;
      items.push(...p.body.result);
      cursor = p.body.cursor;
      pages++;
    } while (cursor);
    expect(items).toHaveLength(total);
    return { items, pages, total };
  };
  const stranger = async (name: string) => ({
    headers: { 'x-api-key': (await cliInProcess(['keys', 'create', '--name', name], env().s.dir)).stdout.trim().split('\n').at(-1)! },
  });
  /**
   * The shape rules of the address endpoints, shared by every family: not a string or array → 400 naming
   * `address`; none; up to 10,000 a call (`valid` that many times is stored once), one more refused.
   */
  const addressShapes = async (id: string, valid: string) => {
    for (const address of [7, [], null, [valid, 7]]) {
      const r = await post(`/streams/${family}/${id}/address`, { address });
      expect(r.status, JSON.stringify(address)).toBe(400);
      expect(r.body.details.field, JSON.stringify(address)).toMatch(/^address/);
    }
    expect((await post(`/streams/${family}/${id}/address`, {})).body.details.field).toBe('address');
    expect((await stream(id)).amountOfAddresses).toBe(0);
    const most = await post(`/streams/${family}/${id}/address`, { address: Array(10_000).fill(valid) });
    expect(most.status).toBe(200);
    expect((await stream(id)).amountOfAddresses).toBe(1);
    const tooMany = await post(`/streams/${family}/${id}/address`, { address: Array(10_001).fill(valid) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.details.field).toBe('address');
    expect((await del(`/streams/${family}/${id}/address`, { address: 'hello' })).body.details.field).toBe('address');
    expect((await stream(id)).amountOfAddresses).toBe(1);
  };
  return { put, post, del, stream, enqueue, make, makeIn, all, stranger, addressShapes };
}
