/**
 * npx tsc -p tsconfig.json && node dist/bench/bitcoin-record.js — the Bitcoin family's
 * block record and probe column over mainnet block 574200 (3,315 transactions, 8,150
 * outputs; test/fixtures): parse, record encode, probe build, and probe match against a
 * KeySet of 1,000,000 random script keys plus 100 real ones of the block (tinybench, one
 * thread). The goal (issue 15): matchTxPerSec ≥ 1,000,000 per worker.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { Bench } from 'tinybench';
import { bitcoinBody } from '../engine/bitcoin/body.js';
import { blockFromRaw } from '../engine/bitcoin/block.js';
import { bitcoinProbeMatch, buildBtcProbe, scriptKey } from '../engine/bitcoin/probe.js';
import { parseBlock } from '../engine/bitcoin/raw.js';
import { BtcRecordView, encodeRecord } from '../engine/bitcoin/record.js';
import { KeySet, buildKeySet, type KeySetInput } from '../engine/match/key-set.js';

const HEIGHT = 574200;
const FILE = `btc-mainnet-${HEIGHT}-0000000000000000001602407ac49862a7bca9d00f7f402db20b7be2f5de59d2.hex.gz`;
const RANDOM_KEYS = 1_000_000;
const REAL_KEYS = 100;
const STREAMS = 1_000;

// The repository's test fixtures, whether this runs from source or from dist/bench.
const repo = new URL(import.meta.url.includes('/dist/bench/') ? '../../' : '../', import.meta.url);
const bytes = Buffer.from(gunzipSync(readFileSync(new URL(`test/fixtures/bitcoin/raw-blocks/${FILE}`, repo))).toString().trim(), 'hex');

const block = blockFromRaw(parseBlock(bytes), HEIGHT);
const record = encodeRecord(block);
const probe = buildBtcProbe(block.txs);
const txs = block.txs.length;

// Real keys: the scripts of every 20th output with an address in the probe, each watched by one stream.
const entries: KeySetInput[] = [];
const seen = new Set<string>();
for (let k = 0; entries.length < REAL_KEYS; k += 20 * 36) {
  const key = probe.subarray(5 + (k / 36) * 32, 5 + (k / 36) * 32 + 32);
  const hex = Buffer.from(key).toString('hex');
  if (!seen.has(hex)) entries.push({ key: Uint8Array.prototype.slice.call(key), streams: [entries.length % STREAMS] });
  seen.add(hex);
}
for (let i = 0; i < RANDOM_KEYS; i++) entries.push({ key: randomBytes(32), streams: [i % STREAMS] });
const built = performance.now();
const keys = new KeySet(buildKeySet(32, entries));
const buildMs = performance.now() - built;
const expected = bitcoinProbeMatch(keys, probe);
const matchedTxs = new Set([...expected.values()].flat().map((ref) => ref & 0xffffff));

// Few iterations: parsing the block takes ~0.1 s, and tinybench's default minimum is 64 runs a task.
const bench = new Bench({ time: 500, iterations: 5, warmupTime: 100, warmupIterations: 2 });
let sink = 0;
bench
  .add('parseBlock', () => {
    sink += parseBlock(bytes).tx.length;
  })
  .add('blockFromRaw + encodeRecord', () => {
    sink += encodeRecord(blockFromRaw(parseBlock(bytes), HEIGHT)).length;
  })
  .add('encodeRecord', () => {
    sink += encodeRecord(block).length;
  })
  .add('buildBtcProbe', () => {
    sink += buildBtcProbe(block.txs).length;
  })
  .add('bitcoinProbeMatch', () => {
    sink += bitcoinProbeMatch(keys, probe).size;
  })
  .add('view + body of the matched transactions', () => {
    const view = BtcRecordView.of(record);
    sink += bitcoinBody(view, { streamId: 's', tag: 't', confirmed: true, includeInputs: true, includeOutputs: true, txIndexes: [...matchedTxs].sort((a, b) => a - b) }).transactions.length;
  });
await bench.run();

const mean = (name: string): number => (bench.tasks.find((t) => t.name === name)!.result as unknown as { latency: { mean: number } }).latency.mean;
const matchMs = mean('bitcoinProbeMatch');
const probeEntries = (probe.length - 5) / 36;
console.table(bench.tasks.map((t) => ({ task: t.name, 'ms/block': Number(mean(t.name).toFixed(3)) })));
console.log(
  JSON.stringify(
    {
      block: HEIGHT,
      txs,
      recordBytes: record.length,
      blockBytes: bytes.length,
      probeEntries,
      probeBytes: probe.length,
      keySet: { keys: entries.length, buildMs: Math.round(buildMs), matchedStreams: expected.size, matchedTxs: matchedTxs.size },
      encodeRecordMsPerBlock: Number(mean('encodeRecord').toFixed(3)),
      rawToRecordMsPerBlock: Number(mean('blockFromRaw + encodeRecord').toFixed(3)),
      buildProbeMsPerBlock: Number(mean('buildBtcProbe').toFixed(3)),
      matchMsPerBlock: Number(matchMs.toFixed(4)),
      matchTxPerSec: Math.round((txs / matchMs) * 1000),
      matchProbesPerSec: Math.round((probeEntries / matchMs) * 1000),
      goal: { matchTxPerSec: 1_000_000, met: (txs / matchMs) * 1000 >= 1_000_000 },
      // The machine is shared: figures move with its load.
      machine: { cpu: cpus()[0]?.model, cores: cpus().length, loadAverage1m: loadavg()[0] },
      sink,
    },
    null,
    2,
  ),
);
