import { createRequire } from 'node:module';
import { expect } from 'vitest';
import type { Hex } from 'viem';
import { signature } from '../engine/delivery/webhook.js';
import type { Anvil } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, publicClient, walletClient } from './contracts.js';
import { until, type Running } from './helpers.js';
import type { Received, startReceiver } from './receiver.js';

/**
 * What the EVM stream tests share: the server's settings for following anvil,
 * and steps over a running server, anvil and receiver (given lazily, as the
 * suites start them in beforeAll).
 */
const require = createRequire(import.meta.url);
const { EvmStreamResult } = require('@moralisweb3/common-streams-utils');

export const CONFIRMATIONS = 2;
export const [A0, A1, A2] = DEV_ACCOUNTS.map((a) => a.address.toLowerCase() as Hex) as [Hex, Hex, Hex];

export const serverEnv = (anvil: Anvil, more: Record<string, string> = {}): Record<string, string> => ({
  CHAINPOST_CHAINS: `0x539=${anvil.url}`,
  CHAINPOST_POLL_MS: '20',
  CHAINPOST_CONFIRMATIONS: `0x539=${CONFIRMATIONS}`,
  CHAINPOST_RATE_LIMIT: '0',
  ...(process.env['E2E_LOG'] ? { CHAINPOST_LOG_LEVEL: 'debug' } : {}),
  ...more,
});

export interface StreamsEnv {
  anvil: Anvil;
  s: Running;
  rx: Awaited<ReturnType<typeof startReceiver>>;
  secret: string;
  /** Streams made by createStream, for a suite that deletes them after each test. */
  created?: string[];
}

export function streamsHarness(env: () => StreamsEnv) {
  const rpc = () => publicClient(env().anvil.url);
  const createStream = async (def: Record<string, unknown>, addresses: string[] = []): Promise<string> => {
    const { s, rx, created } = env();
    const res = await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, description: 'e2e', tag: 'e2e', chainIds: ['0x539'], ...def } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.body.id as string;
    created?.push(id);
    if (addresses.length > 0) expect((await s.call(`/streams/evm/${id}/address`, { method: 'POST', json: { address: addresses } })).status).toBe(200);
    return id;
  };
  const mine = (blocks: number) => rpc().request({ method: 'anvil_mine' as never, params: [`0x${blocks.toString(16)}`] as never });
  const of = (id: string, block: bigint): Received[] => env().rx.webhooks().filter((w) => w.body.streamId === id && w.body.block.number === String(block));
  /** The stream's webhooks for a block: waits for both (unconfirmed and confirmed), mining past the confirmation depth. */
  const deliveries = async (id: string, block: bigint): Promise<Received[]> => {
    await mine(CONFIRMATIONS + 1);
    expect(await until(() => of(id, block).length >= 2, 10_000), `two webhooks of block ${block} for stream ${id}`).toBe(true);
    return of(id, block);
  };
  /** Nothing for the stream in that block: checked once a later block's webhook for another stream came, so the matcher passed it. */
  const nothingFor = async (id: string, block: bigint): Promise<void> => {
    await mine(CONFIRMATIONS + 1);
    const head = await rpc().getBlockNumber();
    const probe = await createStream({ includeNativeTxs: true }, [A2]);
    const hash = await (await walletClient(env().anvil.url, DEV_ACCOUNTS[2])).sendTransaction({ to: A2, value: 1n });
    await rpc().waitForTransactionReceipt({ hash });
    expect(await until(() => env().rx.webhooks().some((w) => w.body.streamId === probe && BigInt(w.body.block.number) > head), 10_000)).toBe(true);
    expect(of(id, block)).toEqual([]);
    await env().s.call(`/streams/evm/${probe}`, { method: 'DELETE' });
  };
  /** Signed with the tenant's secret, and read by the SDK's webhook parser. */
  const checkParses = (w: Received): void => {
    expect(w.headers['x-signature']).toBe(signature(w.raw, env().secret));
    expect(EvmStreamResult.create(w.body).chain.hex).toBe('0x539');
  };
  return { rpc, createStream, mine, of, deliveries, nothingFor, checkParses };
}
