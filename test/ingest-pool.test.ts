import { rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { FIXTURE_BLOCKS, bundle } from './kit/fixtures.js';
import { inlineSmallBlocks, prepareBlock, writePrepared, type NodeAnswers } from '../engine/evm/prepared.js';
import { pack } from '../storage/codec.js';
import { normalizeBlock } from '../engine/evm/record.js';
import { writeBlock } from '../engine/evm/store.js';
import { TABLES, openStore, type Store } from '../storage/env.js';
import { workerPool } from '../app/worker-pool.js';
import { startChainpost, stopAndClean, tempDir } from './helpers.js';

/** A node's response body around a result. */
const body = (result: unknown): Uint8Array => Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result }));

/** Every key and value of every table, as stored. */
const dump = (s: Store): Array<[string, string, string]> =>
  TABLES.flatMap((t) =>
    [...s.db(t).getRange({})].map(({ key, value }) => [t, String(key), Buffer.from(value).toString('hex')] as [string, string, string]),
  );

/**
 * The worker path of ingestion: the node's answers, as bytes, parsed and
 * encoded in the server's worker pool and written in one batch, leave the
 * store exactly as writeBlock does from the normalized record.
 */
describe('blocks prepared in the worker pool', () => {
  const pool = workerPool(tempDir(), 2);
  const stores = [openStore(tempDir()), openStore(tempDir())] as const;
  afterAll(async () => {
    await pool.close();
    for (const s of stores) {
      await s.close();
      rmSync(s.path, { recursive: true, force: true });
    }
  });

  it('are written byte for byte as writeBlock writes the 8 mainnet bundles', async () => {
    const bundles = FIXTURE_BLOCKS.map(bundle);
    const [direct, pooled] = stores;
    direct.transact(() => {
      for (const b of bundles) writeBlock(direct, '0x1', normalizeBlock(b.block, b.receipts, b.traces));
    });
    const prepared = await Promise.all(
      bundles.map((b) => pool.ingest.prepare('0x1', { block: body(b.block), receipts: body(b.receipts), traces: body(b.traces) })),
    );
    expect(prepared.map((p) => [p!.number, p!.hash, p!.parentHash])).toEqual(
      bundles.map((b) => [b.number, b.block['hash'], b.block['parentHash']]),
    );
    // As the follower writes them: handed to the write thread as one unit.
    await pooled.writeBehind(() =>
      writePrepared(
        pooled,
        '0x1',
        prepared.map((p) => p!),
      ),
    );
    const rows = dump(direct);
    expect(rows.filter(([t]) => t === 'sales').length).toBeGreaterThan(0);
    expect(dump(pooled)).toEqual(rows);
  });

  it('say null for a block the node does not have, and refuse receipts of another block', async () => {
    const b = bundle(FIXTURE_BLOCKS[0]);
    const answers = (block: unknown, receipts: unknown): NodeAnswers => ({ block: body(block), receipts: body(receipts), traces: null });
    expect(await pool.ingest.prepare('0x1', answers(null, null))).toBeNull();
    expect(await pool.ingest.prepare('0x1', answers(b.block, null))).toBeNull();
    const other = b.receipts.map((r) => ({ ...r, blockHash: `0x${'ee'.repeat(32)}` }));
    await expect(pool.ingest.prepare('0x1', answers(b.block, other))).rejects.toThrow(/receipts are for another block/);
    expect((await pool.ingest.prepare('0x1', answers(b.block, b.receipts)))!.number).toBe(b.number);
  });

  it('are prepared on the calling thread when small, in the pool when large', async () => {
    const b = bundle(FIXTURE_BLOCKS[0]);
    const answers = (): NodeAnswers => ({ block: body(b.block), receipts: body(b.receipts), traces: body(b.traces) });
    const size = ((a: NodeAnswers) => a.block.byteLength + a.receipts.byteLength + a.traces!.byteLength)(answers());
    const sent: number[] = [];
    const counting = { prepare: (chain: string, a: NodeAnswers) => (sent.push(a.block.byteLength), pool.ingest.prepare(chain, a)) };
    const inline = await inlineSmallBlocks(counting, pack, size).prepare('0x1', answers());
    expect(sent).toEqual([]);
    expect(inline).toEqual(prepareBlock('0x1', answers(), pack));
    const pooled = await inlineSmallBlocks(counting, pack, size - 1).prepare('0x1', answers());
    expect(sent).toHaveLength(1);
    // Equal bytes (a record moved from a worker arrives as a Uint8Array, one made here is a Buffer).
    expect(Buffer.from(pooled!.record).equals(Buffer.from(inline!.record))).toBe(true);
    // A refusal comes back as a rejection either way.
    const other = { ...answers(), receipts: body(b.receipts.map((r) => ({ ...r, blockHash: `0x${'ee'.repeat(32)}` }))) };
    await expect(inlineSmallBlocks(counting, pack, size * 2).prepare('0x1', other)).rejects.toThrow(/receipts are for another block/);
  });
});

describe("the server's worker pool", () => {
  it('runs CHAINPOST_WORKER_THREADS threads, one per core when unset, and its listening line says how many', async () => {
    for (const [given, threads] of [
      ['3', 3],
      ['', availableParallelism()],
    ] as const) {
      const s = await startChainpost({ CHAINPOST_WORKER_THREADS: given });
      try {
        const listening = s
          .output()
          .split('\n')
          .find((l) => l.includes('"msg":"listening"'));
        expect(JSON.parse(listening!)).toMatchObject({ workerThreads: threads });
      } finally {
        await stopAndClean(s);
      }
    }
  });
});
