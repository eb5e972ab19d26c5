/**
 * npm run bench:ingest — the normalizer and the LMDB writer over the real
 * mainnet fixture blocks replayed in a loop (each copy stored as its own block
 * number), then a scan of the stored probe columns.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { buildProbe, readProbe } from '../engine/ingest/probe.js';
import { encodeRecord, normalizeBlock } from '../engine/ingest/record.js';
import { CATCH_UP_BATCH } from '../engine/ingest/follower.js';
import { blockKey, transferKeys, transfersOf, writeBlock } from '../engine/ingest/store.js';
import { openStore } from '../storage/env.js';
import { FIXTURE_BLOCKS, bundle } from './fixtures.js';
import { printRows, report } from './report.js';

const BLOCKS = Number(process.env['BENCH_BLOCKS'] ?? 4_000);
const CHAIN = '0x1';
const bundles = FIXTURE_BLOCKS.map(bundle);
const txCounts = ((n: number[]) => ({ min: Math.min(...n), max: Math.max(...n) }))(bundles.map((b) => (b.block['transactions'] as unknown[]).length));

const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-ingest-'));
const store = openStore(dir);
/** Block numbers of the copies start here (mainnet-size numbers). */
const FIRST = 20_000_000;

/**
 * Seconds to write `count` fixture copies CATCH_UP_BATCH per transaction, as the follower commits while
 * catching up; `write` gets the copy's index, its bundle and its block renumbered to FIRST + index.
 */
function writeInBatches(count: number, write: (j: number, b: (typeof bundles)[number], block: Record<string, unknown>) => void): number {
  const started = performance.now();
  for (let i = 0; i < count; i += CATCH_UP_BATCH) {
    store.transact(() => {
      for (let j = i; j < Math.min(i + CATCH_UP_BATCH, count); j++) {
        const b = bundles[j % bundles.length]!;
        write(j, b, { ...b.block, number: `0x${(FIRST + j).toString(16)}` });
      }
    });
  }
  return (performance.now() - started) / 1000;
}

try {
  // Write: normalize and store as the follower does while catching up: CATCH_UP_BATCH blocks per transaction
  // (record, hash, probe column and transfer indexes of each), commits flushed to disk.
  let json = 0;
  const writeSeconds = writeInBatches(BLOCKS, (_j, b, block) => {
    writeBlock(store, CHAIN, normalizeBlock(block, b.receipts, b.traces));
    json += b.jsonBytes;
  });
  // What the blocks take in LMDB: every page of the tables they were written to.
  const pages = (t: 'blocks' | 'probes' | 'canon' | 'blockHashes' | 'transfers' | 'sales'): number => {
    const st = store.db(t).getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
    return st.pageSize * (st.treeBranchPageCount + st.treeLeafPageCount + st.overflowPages);
  };
  const tableBytes = { blocks: pages('blocks'), probes: pages('probes'), canon: pages('canon') + pages('blockHashes'), transfers: pages('transfers') + pages('sales') };
  const stored = Object.values(tableBytes).reduce((a, n) => a + n, 0);

  // Scan: read each probe column from LMDB without a copy and walk every address and topic.
  const scanStarted = performance.now();
  let touched = 0;
  for (let i = 0; i < BLOCKS; i++) {
    const bytes = store.getRaw('probes', blockKey(CHAIN, FIRST + i))!;
    const p = readProbe(bytes);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let a = 0; a < p.addressCount; a++) touched = (touched + dv.getUint32(p.addressesAt + a * 20, true)) >>> 0;
    for (let t = 0; t < p.topicCount; t++) touched = (touched + dv.getUint32(p.topicsAt + t * 32, true)) >>> 0;
  }
  const scanSeconds = (performance.now() - scanStarted) / 1000;

  // Where the time goes: the same blocks through the normalizer, the record encoder, the probe
  // column and the transfer extraction, with no LMDB at all (one core).
  const cpuStarted = performance.now();
  for (let j = 0; j < BLOCKS; j++) {
    const b = bundles[j % bundles.length]!;
    const r = normalizeBlock(b.block, b.receipts, b.traces);
    encodeRecord(r);
    buildProbe(r);
    for (const t of transfersOf(r)) transferKeys(CHAIN, t);
  }
  const cpuSeconds = (performance.now() - cpuStarted) / 1000;

  // The floor under any encoder that stores bytes: a walk of the stored record that hex-decodes each
  // "0x" string with Node's native decoder into one buffer, nothing else (no structure, no keys, no LMDB).
  const scratch = Buffer.allocUnsafe(4 << 20);
  const records = bundles.map((b) => normalizeBlock(b.block, b.receipts, b.traces));
  const decodeAll = (v: unknown, at: number): number => {
    if (typeof v === 'string') return v.startsWith('0x') ? at + scratch.write(v.slice(2), at, 'hex') : at;
    if (Array.isArray(v)) return v.reduce((a: number, x) => decodeAll(x, a), at);
    if (v !== null && typeof v === 'object') return Object.values(v).reduce((a: number, x) => decodeAll(x, a), at);
    return at;
  };
  const floorStarted = performance.now();
  let floorBytes = 0;
  for (let j = 0; j < BLOCKS; j++) floorBytes += decodeAll(records[j % records.length], 0);
  const floorSeconds = (performance.now() - floorStarted) / 1000;

  // Baseline: the naive writer, the node's JSON kept as it came (one value per block, no probe column
  // and no index), committed as the follower commits, over a quarter of the blocks.
  const naiveBlocks = Math.ceil(BLOCKS / 4);
  const naiveSeconds = writeInBatches(naiveBlocks, (j, b, block) => {
    store.putRaw('meta', `naive/${blockKey(CHAIN, FIRST + j)}`, Buffer.from(JSON.stringify([block, b.receipts, b.traces])));
  });

  const figures = {
    blocksWrittenPerSec: Math.round(BLOCKS / writeSeconds),
    naiveBlocksWrittenPerSec: Math.round(naiveBlocks / naiveSeconds),
    encodeOnlyBlocksPerSec: Math.round(BLOCKS / cpuSeconds),
    hexDecodeFloorBlocksPerSec: Math.round(BLOCKS / floorSeconds),
    probeColumnScanBlocksPerSec: Math.round(BLOCKS / scanSeconds),
    bytesPerBlockStored: Math.round(stored / BLOCKS),
    bytesPerBlockNodeJson: Math.round(json / BLOCKS),
  };
  const ratio = figures.bytesPerBlockStored / figures.bytesPerBlockNodeJson;
  printRows([
    ['blocks written/s', figures.blocksWrittenPerSec, '/s', figures.naiveBlocksWrittenPerSec],
    ['naive writer blocks/s', figures.naiveBlocksWrittenPerSec, '/s'],
    ['encode only blocks/s', figures.encodeOnlyBlocksPerSec, '/s'],
    ['hex decode floor blocks/s', figures.hexDecodeFloorBlocksPerSec, '/s'],
    ['probe columns scanned/s', figures.probeColumnScanBlocksPerSec, '/s'],
    ['bytes per block stored', figures.bytesPerBlockStored, 'B', figures.bytesPerBlockNodeJson],
    ['bytes per block, node JSON', figures.bytesPerBlockNodeJson, 'B'],
  ]);
  const met = figures.blocksWrittenPerSec >= 2_000 && figures.probeColumnScanBlocksPerSec >= 20_000 && ratio <= 0.4;
  report('ingest', 'npm run bench:ingest', figures, { blocksWrittenPerSec: '>= 2000', probeColumnScanBlocksPerSec: '>= 20000 (one core)', bytesPerBlockStored: '<= 40% of bytesPerBlockNodeJson' }, met, [
    `${BLOCKS} blocks: the ${bundles.length} complete mainnet bundles of ../shared/fixtures/evm/chainstorage (${txCounts.min}–${txCounts.max} transactions each) replayed under new numbers, from the node's parsed JSON; normalize + record + probe column + hash + transfer indexes, ${CATCH_UP_BATCH} blocks per LMDB transaction as the follower commits while catching up, each commit flushed to disk.`,
    `Baseline (naiveBlocksWrittenPerSec): the node's JSON stored as it came, one value per block, ${CATCH_UP_BATCH} blocks per transaction, no probe column or index (${naiveBlocks} blocks); encodeOnlyBlocksPerSec: normalize + record + probe column + transfer keys with no LMDB, one core; hexDecodeFloorBlocksPerSec: only a walk of the stored record with the native hex decode of each of its "0x" strings (${Math.round(floorBytes / BLOCKS)} B per block), one core.`,
    `Stored = the LMDB pages of the tables written (per block: records ${Math.round(tableBytes.blocks / BLOCKS)} B, probe columns ${Math.round(tableBytes.probes / BLOCKS)} B, transfer and sales indexes ${Math.round(tableBytes.transfers / BLOCKS)} B, hashes both ways ${Math.round(tableBytes.canon / BLOCKS)} B, where the replicas share the fixtures' ${FIXTURE_BLOCKS.length} block hashes, so blockHashes holds that many keys); node JSON = block + receipts + callTracer traces. Stored/JSON = ${(100 * ratio).toFixed(1)}%. Scan checksum ${touched}.`,
  ]);
  console.log(`\n${met ? 'goals met' : 'goals not met'}; wrote bench/results/ingest.json and bench/RESULTS.md`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
