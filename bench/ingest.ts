/**
 * npm run bench:ingest — the normalizer and the LMDB writer over the real
 * mainnet fixture blocks replayed in a loop (each copy stored as its own block
 * number), then a scan of the stored probe columns.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { readProbe } from '../engine/ingest/probe.js';
import { normalizeBlock } from '../engine/ingest/record.js';
import { blockKey, writeBlock } from '../engine/ingest/store.js';
import { openStore } from '../storage/env.js';
import { printRows, report } from './report.js';

const BLOCKS = Number(process.env['BENCH_BLOCKS'] ?? 4_000);
const FIXTURES = [4370006, 4404763, 7280016, 11098450, 13998626, 15753009, 16899757, 17053184];
const CHAIN = '0x1';
/** Blocks per transaction while catching up (engine/ingest/follower.ts). */
const CATCH_UP = 16;

const bundles = FIXTURES.map((n) => {
  const dir = fileURLToPath(new URL(`../../../shared/fixtures/evm/chainstorage/eth-mainnet-${n}/`, import.meta.url));
  const files = ['block.json', 'receipts.json', 'traces.json'].map((f) => readFileSync(`${dir}${f}`, 'utf8'));
  return { block: JSON.parse(files[0]!), receipts: JSON.parse(files[1]!), traces: JSON.parse(files[2]!), jsonBytes: files.reduce((a, f) => a + Buffer.byteLength(f), 0) };
});

const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-ingest-'));
const store = openStore(dir);
try {
  // Write: normalize and store as the follower does while catching up: CATCH_UP blocks per transaction
  // (record, hash, probe column and transfer indexes of each), commits flushed to disk.
  let json = 0;
  const started = performance.now();
  for (let i = 0; i < BLOCKS; i += CATCH_UP) {
    store.transact(() => {
      for (let j = i; j < Math.min(i + CATCH_UP, BLOCKS); j++) {
        const b = bundles[j % bundles.length]!;
        const block = { ...b.block, number: `0x${(20_000_000 + j).toString(16)}` };
        writeBlock(store, CHAIN, normalizeBlock(block, b.receipts, b.traces));
        json += b.jsonBytes;
      }
    });
  }
  const writeSeconds = (performance.now() - started) / 1000;
  // What the blocks take in LMDB: every page of the tables they were written to.
  const pages = (t: 'blocks' | 'probes' | 'canon' | 'transfers'): number => {
    const st = store.db(t).getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
    return st.pageSize * (st.treeBranchPageCount + st.treeLeafPageCount + st.overflowPages);
  };
  const tableBytes = { blocks: pages('blocks'), probes: pages('probes'), canon: pages('canon'), transfers: pages('transfers') };
  const stored = Object.values(tableBytes).reduce((a, n) => a + n, 0);

  // Scan: read each probe column from LMDB without a copy and walk every address and topic.
  const scanStarted = performance.now();
  let touched = 0;
  for (let i = 0; i < BLOCKS; i++) {
    const bytes = store.getRaw('probes', blockKey(CHAIN, 20_000_000 + i))!;
    const p = readProbe(bytes);
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let a = 0; a < p.addressCount; a++) touched ^= dv.getUint32(p.addressesAt + a * 20, true);
    for (let t = 0; t < p.topicCount; t++) touched ^= dv.getUint32(p.topicsAt + t * 32, true);
  }
  const scanSeconds = (performance.now() - scanStarted) / 1000;

  const figures = {
    blocksWrittenPerSec: Math.round(BLOCKS / writeSeconds),
    probeColumnScanBlocksPerSec: Math.round(BLOCKS / scanSeconds),
    bytesPerBlockStored: Math.round(stored / BLOCKS),
    bytesPerBlockNodeJson: Math.round(json / BLOCKS),
  };
  const ratio = figures.bytesPerBlockStored / figures.bytesPerBlockNodeJson;
  printRows([
    ['blocks written/s', figures.blocksWrittenPerSec, '/s'],
    ['probe columns scanned/s', figures.probeColumnScanBlocksPerSec, '/s'],
    ['bytes per block stored', figures.bytesPerBlockStored, 'B', figures.bytesPerBlockNodeJson],
    ['bytes per block, node JSON', figures.bytesPerBlockNodeJson, 'B'],
  ]);
  const met = figures.blocksWrittenPerSec >= 2_000 && figures.probeColumnScanBlocksPerSec >= 20_000 && ratio <= 0.4;
  report('ingest', 'npm run bench:ingest', figures, { blocksWrittenPerSec: '>= 2000', probeColumnScanBlocksPerSec: '>= 20000 (one core)', bytesPerBlockStored: '<= 40% of bytesPerBlockNodeJson' }, met, [
    `${BLOCKS} blocks: the 8 complete mainnet bundles of ../shared/fixtures/evm/chainstorage (64–210 transactions each) replayed under new numbers, from the node's parsed JSON; normalize + record + probe column + hash + transfer indexes, ${CATCH_UP} blocks per LMDB transaction as the follower commits while catching up, each commit flushed to disk.`,
    `Stored = the LMDB pages of the tables written (per block: records ${Math.round(tableBytes.blocks / BLOCKS)} B, probe columns ${Math.round(tableBytes.probes / BLOCKS)} B, transfer indexes ${Math.round(tableBytes.transfers / BLOCKS)} B, hashes ${Math.round(tableBytes.canon / BLOCKS)} B); node JSON = block + receipts + callTracer traces. Stored/JSON = ${(100 * ratio).toFixed(1)}%. Scan checksum ${touched}.`,
  ]);
  console.log(`\n${met ? 'goals met' : 'goals not met'}; wrote bench/results/ingest.json and bench/RESULTS.md`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
