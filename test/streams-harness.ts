import { createRequire } from 'node:module';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { Hex } from 'viem';
import { signature } from '../engine/delivery/webhook.js';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, publicClient } from './contracts.js';
import { startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { startReceiver, type Received } from './receiver.js';

/**
 * What the EVM stream tests share: a real anvil, a real receiver and the real
 * server following anvil (for a whole suite or for one test), and steps over
 * them: create a stream, wait for its webhooks, check a block brought it nothing.
 */
const require = createRequire(import.meta.url);
const { EvmStreamResult } = require('@moralisweb3/common-streams-utils');
/** The SDK, for Moralis.Streams.parsedLogs. */
export const Moralis = require('moralis').default;

export const CONFIRMATIONS = 2;
export const [A0, A1, A2] = DEV_ACCOUNTS.map((a) => a.address.toLowerCase() as Hex) as [Hex, Hex, Hex];

/** The ERC-20 events (TestToken's). */
export { ERC20_ABI } from './contracts.js';

export const serverEnv = (anvil: Anvil, more: Record<string, string> = {}): Record<string, string> => ({
  CHAINPOST_CHAINS: `0x539=${anvil.url}`,
  // The server hears anvil's new heads (newHeads), so polling is only its safety net: the default interval, not 20 ms
  // (a poll every 20 ms cost the server and anvil about a tenth of a core while they ran).
  CHAINPOST_POLL_MS: '250',
  CHAINPOST_CONFIRMATIONS: `0x539=${CONFIRMATIONS}`,
  CHAINPOST_RATE_LIMIT: '0',
  ...(process.env['E2E_LOG'] ? { CHAINPOST_LOG_LEVEL: 'debug' } : {}),
  ...more,
});

export interface StreamsEnv {
  anvil: Anvil;
  /** Replaced by a test that restarts the server. */
  s: Running;
  rx: Awaited<ReturnType<typeof startReceiver>>;
  secret: string;
  /** Streams made by createStream (a suite deletes them after each test). */
  created: string[];
}

/** Server settings beyond serverEnv, given the anvil it follows. */
export type MoreEnv = (anvil: Anvil) => Record<string, string>;

/** Starts anvil, the receiver and the server into `e`, one by one, so that stopStreamsEnv stops whatever started. */
async function startStreamsEnv(e: Partial<StreamsEnv>, more: MoreEnv): Promise<StreamsEnv> {
  e.created = [];
  e.anvil = await startAnvil({ chainId: 1337 });
  e.rx = await startReceiver();
  e.s = await startChainpost(serverEnv(e.anvil, more(e.anvil)));
  e.secret = (await e.s.call('/settings')).body.secretKey;
  return e as StreamsEnv;
}

async function stopStreamsEnv(e: Partial<StreamsEnv>): Promise<void> {
  if (process.env['E2E_LOG'] && e.s !== undefined) {
    console.log(
      JSON.stringify((await e.s.call('/history/logs')).body).slice(0, 3000),
      JSON.stringify((await e.s.call('/history')).body).slice(0, 3000),
    );
    console.log(
      e.s
        .output()
        .split('\n')
        .filter((l) => !l.includes('"request"'))
        .slice(-60)
        .join('\n'),
    );
  }
  await stopAndClean(e.s);
  await e.rx?.close();
  await e.anvil?.stop();
}

/**
 * One anvil, receiver and server for the enclosing describe (then `setup`, to
 * deploy contracts); each test's streams are deleted after it, as a later
 * test's activity is not the business of an earlier test's streams.
 */
export function streamsSuite(setup?: (env: StreamsEnv) => Promise<void>) {
  const e: Partial<StreamsEnv> = {};
  const env = (): StreamsEnv => e as StreamsEnv;
  beforeAll(async () => {
    await startStreamsEnv(e, () => ({}));
    await setup?.(env());
  }, 60_000);
  afterEach(async () => {
    for (const id of e.created?.splice(0) ?? []) await e.s!.call(`/streams/evm/${id}`, { method: 'DELETE' });
  });
  afterAll(() => stopStreamsEnv(e));
  return { env, ...streamsHarness(env) };
}

/** Runs `fn` over its own anvil, receiver and server (with `more` settings), stopped whatever happens. */
export async function withStreamsEnv(
  more: MoreEnv,
  fn: (env: StreamsEnv, harness: ReturnType<typeof streamsHarness>) => Promise<void>,
): Promise<void> {
  const e: Partial<StreamsEnv> = {};
  try {
    await startStreamsEnv(e, more);
    await fn(
      e as StreamsEnv,
      streamsHarness(() => e as StreamsEnv),
    );
  } finally {
    await stopStreamsEnv(e);
  }
}

/** Steps over a running server, anvil and receiver (given lazily: a suite starts them in beforeAll). */
export function streamsHarness(env: () => StreamsEnv) {
  const rpc = () => publicClient(env().anvil.url);
  /** A stream to the receiver on 0x539 (unless `def` says otherwise), watching `addresses`. */
  const createStream = async (def: Record<string, unknown>, addresses: string[] = []): Promise<string> => {
    const { s, rx, created } = env();
    const res = await s.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: rx.url, description: 'e2e', tag: 'e2e', chainIds: ['0x539'], ...def },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.body.id as string;
    created.push(id);
    if (addresses.length > 0)
      expect((await s.call(`/streams/evm/${id}/address`, { method: 'POST', json: { address: addresses } })).status).toBe(200);
    return id;
  };
  const mine = (blocks: number) => rpc().request({ method: 'anvil_mine' as never, params: [`0x${blocks.toString(16)}`] as never });
  const of = (id: string, block: bigint): Received[] =>
    env()
      .rx.webhooks()
      .filter((w) => w.body.streamId === id && w.body.block.number === String(block));
  /**
   * Until the stream's unconfirmed webhook of `block` came: a test that changes state in the next block waits
   * for it, as anvil may read "state at block N" from its newer state while it mines block N + 1 (a race of
   * the node's, seen as a balance of the next block in a webhook of N).
   */
  const unconfirmed = async (id: string, block: bigint): Promise<void> => {
    expect(await until(() => of(id, block).length >= 1, 10_000), `the unconfirmed webhook of block ${block} for stream ${id}`).toBe(true);
  };
  /** The stream's webhooks for a block: waits for both (unconfirmed and confirmed), mining past the confirmation depth. */
  const deliveries = async (id: string, block: bigint): Promise<Received[]> => {
    await mine(CONFIRMATIONS + 1);
    expect(await until(() => of(id, block).length >= 2, 10_000), `two webhooks of block ${block} for stream ${id}`).toBe(true);
    return of(id, block);
  };
  /**
   * Nothing for the stream in `block`, anchored on the stream itself: `anchor`
   * is a later block it does get webhooks for. The matcher takes blocks in
   * order and a stream's queue is sent in order, one webhook at a time, so once
   * both webhooks of `anchor` came, any of `block` would have come before them
   * (the receiver answers 200, so every attempt is in it).
   */
  const nothingFor = async (id: string, block: bigint, anchor: bigint): Promise<void> => {
    expect(anchor, 'the anchor block comes after the block').toBeGreaterThan(block);
    await deliveries(id, anchor);
    expect(of(id, block), `webhooks of block ${block} for stream ${id}`).toEqual([]);
  };
  /** Signed with the tenant's secret, and read by the SDK's webhook parser. */
  const checkParses = (w: Received): void => {
    expect(w.headers['x-signature']).toBe(signature(w.raw, env().secret));
    expect(EvmStreamResult.create(w.body).chain.hex).toBe('0x539');
  };
  return { rpc, createStream, mine, of, unconfirmed, deliveries, nothingFor, checkParses };
}
