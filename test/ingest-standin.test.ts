import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandIn } from './kit/node-standin.js';
import { ServiceClock } from '../engine/clock.js';
import { CATCH_UP_BATCH, EvmFollower } from '../engine/evm/follower.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import { normalizeBlock, type Json } from '../engine/evm/record.js';
import { writeBlock } from '../engine/evm/store.js';
import { systemTicker } from '../app/process.js';
import type { Table } from '../engine/ports.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore, type Store } from '../storage/env.js';
import { workerPool } from '../app/worker-pool.js';
import { startChainpost, stopAndClean, tempDir, until, type Running } from './helpers.js';
import { quietLog } from './kit/quiet-log.js';

/**
 * Catching up a chain of mainnet-size blocks from the bench's JSON-RPC
 * stand-in (the fixture bundles renumbered and relinked) through the worker
 * pool, with asynchronous commits: the store ends as writeBlock leaves it, and
 * the server answers requests all along.
 */
const BLOCKS = 3 * CATCH_UP_BATCH + 5;
const WRITTEN: Table[] = ['blocks', 'probes', 'canon', 'blockHashes', 'transfers', 'sales'];
/**
 * Where two stores differ in the tables a block writes: a key one holds and the other not, or held with other bytes.
 * Compared as bytes, not as hex text (megabytes of it for mainnet-size blocks, and a slow deep equal).
 */
function differences(a: Store, b: Store): string[] {
  const out: string[] = [];
  for (const t of WRITTEN) {
    const theirs = new Map([...b.db(t).getRange({})].map(({ key, value }) => [String(key), Buffer.from(value)]));
    for (const { key, value } of a.db(t).getRange({})) {
      const other = theirs.get(String(key));
      if (other === undefined) out.push(`${t} ${String(key)}: only in the first`);
      else if (!other.equals(Buffer.from(value))) out.push(`${t} ${String(key)}: other bytes`);
      theirs.delete(String(key));
    }
    for (const key of theirs.keys()) out.push(`${t} ${key}: only in the second`);
  }
  return out;
}

describe('a catch-up from the JSON-RPC stand-in', () => {
  let node: Awaited<ReturnType<typeof startStandIn>>;
  let rpc: ReturnType<typeof jsonRpcUpstream>;
  const pool = workerPool(tempDir(), 2);
  const stores: Store[] = [];
  beforeAll(async () => {
    node = await startStandIn(BLOCKS);
    rpc = jsonRpcUpstream(`http://127.0.0.1:${node.port}`);
  });
  afterAll(async () => {
    await rpc.close();
    await node.close();
    await pool.close();
    for (const s of stores) {
      await s.close();
      rmSync(s.path, { recursive: true, force: true });
    }
  });

  it('leaves the store as writeBlock does with the same answers, events in order', async () => {
    const [pooled, direct] = [openStore(tempDir()), openStore(tempDir())];
    stores.push(pooled, direct);
    const events: string[] = [];
    const recorder: ChainEvents = {
      seen: (_c, n, hash) => void events.push(`seen ${n} ${hash}`),
      confirmed: (_c, n, hash) => void events.push(`confirmed ${n} ${hash}`),
      reorged: () => void events.push('reorg'),
    };
    const clock = new ServiceClock(systemTicker, Date.now());
    const f = new EvmFollower(
      '0x1',
      rpc,
      pooled,
      clock,
      recorder,
      quietLog(() => clock.now()),
      { confirmations: 2, pollMs: 50, pool: pool.ingest },
    );
    await f.sync();
    expect(f.status()).toMatchObject({ head: BLOCKS - 1, confirmed: BLOCKS - 3, internalTransactions: true, upstream: 'ok' });
    const blocks: Json[] = [];
    const records: Array<ReturnType<typeof normalizeBlock>> = [];
    for (let n = 0; n < BLOCKS; n++) {
      const tag = `0x${n.toString(16)}`;
      const [block, receipts, traces] = await Promise.all([
        rpc.call<Json>('eth_getBlockByNumber', [tag, true]),
        rpc.call<Json[]>('eth_getBlockReceipts', [tag]),
        rpc.call<Json[]>('debug_traceBlockByNumber', [tag, { tracer: 'callTracer' }]),
      ]);
      records.push(normalizeBlock(block, receipts, traces));
      blocks.push(block);
    }
    // One commit (each is flushed to disk): a block's keys are its own, so the store ends the same as with one per block.
    direct.transact(() => {
      for (const record of records) writeBlock(direct, '0x1', record);
    });
    expect(pooled.count('blocks', { start: '0x1/', end: '0x1/~' })).toBe(BLOCKS);
    expect(differences(pooled, direct)).toEqual([]);
    expect(events.filter((e) => e.startsWith('seen'))).toEqual(blocks.map((b, n) => `seen ${n} ${String(b['hash'])}`));
    // Each with its block's hash, also while the commit holding that block is still in flight (not readable yet).
    expect(events.filter((e) => e.startsWith('confirmed'))).toEqual(
      Array.from({ length: BLOCKS - 2 }, (_, n) => `confirmed ${n} ${String(blocks[n]!['hash'])}`),
    );
  });
});

describe('the server catching up a long chain', () => {
  /** More blocks than a few catch-up batches; the last is answered by the node only once a request was answered meanwhile (so the window is there on any machine). */
  const LONG = 8 * CATCH_UP_BATCH;
  let node: Awaited<ReturnType<typeof startStandIn>>;
  let server: Running | undefined;
  let release = (): void => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  beforeAll(async () => {
    node = await startStandIn(LONG, 0, (block) => (block === LONG - 1 ? released : Promise.resolve()));
  });
  afterAll(async () => {
    release();
    await stopAndClean(server);
    await node.close();
  });

  it('answers authenticated requests meanwhile', async () => {
    server = await startChainpost({
      CHAINPOST_CHAINS: `0x1=http://127.0.0.1:${node.port}`,
      CHAINPOST_POLL_MS: '20',
      CHAINPOST_ACCESS_LOG: '0',
    });
    const head = async (): Promise<number> => ((await server!.call('/health')).body.chains as Array<{ head: number }>)[0]!.head;
    // Answered while blocks are coming in: after the first and before the last.
    const answered: number[] = [];
    await until(async () => {
      const before = await head();
      const res = await server!.call('/api/v2.2/nft/0x06012c8cf97bead5deae237070f9587f8e7a266d/1/transfers?chain=0x1');
      expect(res.status).toBe(200);
      if (before >= 0 && (await head()) < LONG - 1) {
        answered.push(before);
        release();
      }
      return before === LONG - 1;
    }, 120_000);
    expect(answered.length).toBeGreaterThan(0);
    expect(await head()).toBe(LONG - 1);
  }, 150_000);
});
