/**
 * npm run bench:data-layout — what the Data API's index layout costs per transfer, beside a compact layout it
 * could have (the Data API's goal: 10,000,000 transfers must load within a bench's minutes and fit this machine's disk):
 * - real: the blocks of test/kit/data-chain.ts (same shape as bench:data) written through the real code
 *   (indexRows, then DataIndexer.index with every Data API index) into a fresh LMDB store;
 * - compact (the baseline, a prototype): the same ERC-20 transfers as binary keys and values: one row per
 *   transfer under its token, a posting (token address) under its from and its to, a wallet-history posting
 *   under each, and a balance per (wallet, token) read and written; 7 entries per transfer.
 * Figures: `<layout>TransfersPerSec`, `<layout>EntriesPerTransfer`, `<layout>BytesPerTransfer` (B-tree and
 * overflow pages of every table; the compact layout's per ERC-20 transfer, the only ones it writes). Bounded by BENCH_LAYOUT_BLOCKS (default 64 blocks of 1,000 transfers).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { open, type Database } from 'lmdb';
import { DataIndexer } from '../engine/data-api/common/indexer.js';
import { dataIndexes } from '../engine/data-api/indexes.js';
import { ServiceClock } from '../engine/clock.js';
import { indexRows } from '../engine/evm/store.js';
import { TokenMetadata } from '../engine/evm/token-metadata.js';
import { quietLog } from '../test/kit/quiet-log.js';
import { TABLES, openStore } from '../storage/env.js';
import { addressOf, syntheticBlock, type ChainShape } from '../test/kit/data-chain.js';
import { footprint } from './lmdb-footprint.js';
import { printRows, report, sized } from './report.js';
import { noNode } from '../test/kit/no-node.js';

const CHAIN = '0x1';
const BLOCKS = Number(process.env['BENCH_LAYOUT_BLOCKS'] ?? sized(64, 2));
const BATCH = 16;
const SHAPE: ChainShape = { blocks: 10_000, transfersPerBlock: 1_000, wallets: 1_000_000, tokens: 10_000, nftContracts: 100, seed: 17 };

interface Layout {
  transfersPerSec: number;
  entriesPerTransfer: number;
  bytesPerTransfer: number;
}

/** Blocks of the synthetic chain, made before the clock starts. */
const blocks = Array.from({ length: BLOCKS }, (_, n) => syntheticBlock(CHAIN, SHAPE, n));
const transfers = blocks.reduce((n, b) => n + b.transfers.length, 0);
const erc20Transfers = blocks.reduce((n, b) => n + b.transfers.filter((t) => t.kind === 'erc20').length, 0);

async function real(dir: string): Promise<Layout> {
  const store = openStore(dir);
  const clock = new ServiceClock(
    {
      elapsedMs: () => performance.now(),
      wake: (ms, fn) => {
        const t = setTimeout(fn, ms);
        return () => clearTimeout(t);
      },
    },
    Date.now(),
    (err) => console.error(err),
  );
  const indexer = new DataIndexer(
    store,
    dataIndexes({ reads: noNode, tokens: new TokenMetadata(store, noNode.call) }),
    clock,
    quietLog(() => clock.now()),
  );
  store.transact(() => {
    for (let i = 0; i < SHAPE.tokens; i++)
      store.put('tokens', `${CHAIN}/${addressOf('token', i)}`, {
        name: `Token ${i}`,
        symbol: `T${i}`,
        decimals: 18,
        nftStandard: null,
        possibleSpam: false,
      });
  });
  const started = performance.now();
  for (let n = 0; n < BLOCKS; n += BATCH) {
    const batch = blocks.slice(n, n + BATCH);
    await store.transactAsync(() => {
      for (const b of batch) for (const r of indexRows(CHAIN, b.record)) store.put(r.table, r.key, r.value);
      // A backfill's head, far ahead: no undo rows, as when bench:data builds.
      store.put('chainState', CHAIN, { head: SHAPE.blocks - 1, confirmed: 0, tracer: null, pruned: -1 });
    });
    if (!(await indexer.index(CHAIN, batch))) throw new Error(`the indexer refused blocks from ${n}`);
  }
  const seconds = (performance.now() - started) / 1000;
  // The token names written before the clock started are not the layout's.
  const taken = footprint(
    TABLES.filter((name) => name !== 'tokens').map((name) => store.db(name)),
    transfers,
  );
  await store.close();
  return { transfersPerSec: Math.round(transfers / seconds), entriesPerTransfer: taken.entries, bytesPerTransfer: taken.bytes };
}

const bytesOf = (hex: string): Buffer => Buffer.from(hex.slice(2), 'hex');

async function compact(dir: string): Promise<Layout> {
  const root = open({ path: dir, maxDbs: 8, encoding: 'binary', compression: false, overlappingSync: false });
  const db = (name: string): Database<Buffer, Buffer> => root.openDB<Buffer, Buffer>({ name, encoding: 'binary', keyEncoding: 'binary' });
  const rows = db('rows');
  const wallets = db('wallets');
  const history = db('history');
  const balances = db('balances');
  const empty = Buffer.alloc(0);
  const started = performance.now();
  for (let n = 0; n < BLOCKS; n += BATCH) {
    await root.childTransaction(() => {
      for (const b of blocks.slice(n, n + BATCH)) {
        for (const t of b.transfers) {
          if (t.kind !== 'erc20') continue;
          const token = bytesOf(t.contract);
          const from = bytesOf(t.from);
          const to = bytesOf(t.to);
          const at = Buffer.alloc(8);
          at.writeUIntBE(t.blockNumber, 0, 5);
          at.writeUIntBE(t.logIndex, 5, 3);
          // token 20, from 20, to 20, value 32, transaction hash 32, transaction index 2
          rows.putSync(
            Buffer.concat([token, at]),
            Buffer.concat([
              from,
              to,
              Buffer.from(BigInt(t.value).toString(16).padStart(64, '0'), 'hex'),
              bytesOf(t.transactionHash),
              Buffer.from([t.transactionIndex >> 8, t.transactionIndex & 255]),
            ]),
          );
          for (const w of [from, to]) {
            wallets.putSync(Buffer.concat([w, at]), token);
            history.putSync(Buffer.concat([w, at]), empty);
            const key = Buffer.concat([w, token]);
            const before = balances.getBinaryFast(key);
            const value = Buffer.alloc(32);
            if (before !== undefined) value.set(before.subarray(0, Math.min(32, before.length)));
            balances.putSync(key, value);
          }
        }
      }
    });
  }
  const seconds = (performance.now() - started) / 1000;
  // Per ERC-20 transfer: the prototype writes those alone.
  const taken = footprint([rows, wallets, history, balances], erc20Transfers);
  await root.close();
  return { transfersPerSec: Math.round(erc20Transfers / seconds), entriesPerTransfer: taken.entries, bytesPerTransfer: taken.bytes };
}

const dirs = [mkdtempSync(join(tmpdir(), 'chainpost-layout-')), mkdtempSync(join(tmpdir(), 'chainpost-layout-'))] as const;
let r: Layout;
let c: Layout;
try {
  r = await real(dirs[0]);
  c = await compact(dirs[1]);
} finally {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
const figures = {
  transfers,
  realTransfersPerSec: r.transfersPerSec,
  realEntriesPerTransfer: r.entriesPerTransfer,
  realBytesPerTransfer: r.bytesPerTransfer,
  compactTransfersPerSec: c.transfersPerSec,
  compactEntriesPerTransfer: c.entriesPerTransfer,
  compactBytesPerTransfer: c.bytesPerTransfer,
};
// The goal's dataset: 10,000,000 transfers loaded within a bench's 5 minutes, on this machine's disk.
const goal = { realTransfersPerSec: '>= 33334', realBytesPerTransfer: '<= 2000' };
const met = r.transfersPerSec >= 33_334 && r.bytesPerTransfer <= 2_000;
printRows([
  ['transfersPerSec', r.transfersPerSec, '(real index code)', c.transfersPerSec],
  ['entriesPerTransfer', r.entriesPerTransfer, '', c.entriesPerTransfer],
  ['bytesPerTransfer', r.bytesPerTransfer, '', c.bytesPerTransfer],
]);
report('data-layout', 'npm run bench:data-layout', figures, goal, met, [
  `${transfers.toLocaleString('en-US')} transfers (${BLOCKS} blocks of test/kit/data-chain.ts, as bench:data), written into a fresh LMDB store twice: through the real code (indexRows and every Data API index, ${BATCH} blocks per transaction, no undo rows), and as a compact prototype (the baseline: the ERC-20 transfers alone as binary keys and values, counted per ERC-20 transfer, 7 entries each: the transfer under its token, a token posting and a history posting under its from and its to, a balance per wallet and token read and written). Bytes: B-tree and overflow pages of every table, per transfer.`,
  "Goal: what loading the Data API goal's 10,000,000 transfers within 5 minutes into at most 20 GB would take.",
]);
console.log(`${met ? 'goals met' : 'goals not met'}; wrote bench/results/data-layout.json and bench/RESULTS.md`);
