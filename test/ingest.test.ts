import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServiceClock } from '../engine/clock.js';
import { Follower, type ChainEvents } from '../engine/ingest/follower.js';
import { readProbe } from '../engine/ingest/probe.js';
import { decodeRecord, rpcBlock, type BlockRecord } from '../engine/ingest/record.js';
import { blockKey } from '../engine/ingest/store.js';
import { jsonLogger } from '../engine/log.js';
import { systemTicker } from '../engine/main.js';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore, type Store } from '../storage/env.js';
import { tempDir } from './helpers.js';

const ACCOUNT0 = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const ACCOUNT1 = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';

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
  const log = jsonLogger(() => {}, () => clock.now(), 'error');
  const follower = () => new Follower('0x539', rpc, store, clock, recorder, log, { confirmations: 2, pollMs: 50 });
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
    expect(events[0]).toBe(`reorg ${head - depth + 1}-${head}`);
    expect(events.slice(1).filter((e) => e.startsWith('seen'))).toEqual(Array.from({ length: depth }, (_, i) => `seen ${head - depth + 1 + i}`));
    const now = await rpc.call<{ hash: string }>('eth_getBlockByNumber', [`0x${head.toString(16)}`, false]);
    expect(store.get<string>('canon', blockKey('0x539', head))).toBe(now.hash);
    expect(now.hash).not.toBe(before);
    // Confirmed announcements never go back over a block already announced.
    const confirmed = events.filter((e) => e.startsWith('confirmed')).map((e) => Number(e.split(' ')[1]));
    expect(confirmed).toEqual([...confirmed].sort((a, b) => a - b));
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

  it('turns internal transactions off for a node without the call tracer, and says so', async () => {
    const noTracer = { call: <T,>(method: string, params: unknown[]) => (method === 'debug_traceBlockByNumber' ? Promise.reject(new Error('the method debug_traceBlockByNumber does not exist')) : rpc.call<T>(method, params)) };
    const other = openStore(tempDir());
    const f = new Follower('0x539', noTracer, other, clock, recorder, log, { confirmations: 2, pollMs: 50 });
    await f.sync();
    expect(f.status().internalTransactions).toBe(false);
    expect(decodeRecord(other.getRaw('blocks', blockKey('0x539', 1))!).internal).toBeNull();
    await other.close();
    rmSync(other.path, { recursive: true, force: true });
  });
});
