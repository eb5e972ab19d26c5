/**
 * xpub/ypub/zpub address derivation on one core (this process's one thread):
 * 20,000 receive addresses of each key type through deriveAddresses (the
 * fast secp256k1 path) in one call and in calls of 20 (a wallet's window),
 * against the first, noble-based derivation on 1,000 of each (it runs about
 * ten times slower). Prints `xpubAddressesPerSec` (goal ≥ 20,000; wall time,
 * tinybench), the same per second of this process's CPU time (all its
 * threads, GC included), the windows' rate, the baseline and the ratio;
 * writes nothing. BENCH_ADDRESSES sets the 20,000.
 * `npx tsc -p tsconfig.json && node dist/bench/bitcoin-xpub.js`
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Bench } from 'tinybench';
import { base58check } from '../engine/bitcoin/encoding.js';
import { prepareTable } from '../engine/bitcoin/secp256k1-table.js';
import { deriveAddresses, parseExtendedKey, type ExtendedKey } from '../engine/bitcoin/xpub.js';
import { nobleDeriveAddresses } from '../engine/bitcoin/xpub-noble.js';
import { round } from './report.js';

const FAST = Number(process.env['BENCH_ADDRESSES'] ?? 20_000);
const BASELINE = Math.max(1, Math.floor(FAST / 20));

const fixture = (name: string): any => JSON.parse(readFileSync(new URL(`../../test/fixtures/bitcoin/xpub-vectors/${name}`, import.meta.url), 'utf8'));
/** The same key under another SLIP-132 version (its first 4 bytes). */
const withVersion = (text: string, version: number): string => {
  const bytes = base58check.decode(text);
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(0, version);
  return base58check.encode(bytes);
};

const vectors = fixture('bip49-84-86-vectors.parsed.json');
const keys: ExtendedKey[] = [
  parseExtendedKey((fixture('bip32-vectors.bitcoinjs-bip32.json').valid[0].children[1] as { base58: string }).base58), // xpub, m/0'
  parseExtendedKey(withVersion(vectors.bip49_testnet.entries[0].account0Xpub as string, 0x049d7cb2)), // ypub
  parseExtendedKey(vectors.bip84_mainnet.entries[0].xpub as string), // zpub
];

const loadStart = loadavg();
const tableStart = performance.now();
prepareTable();
const tableMs = performance.now() - tableStart;

const bench = new Bench({ iterations: 2, time: 0, warmupIterations: 1 });
bench.add('fast', () => {
  for (const key of keys) deriveAddresses(key, 0, 0, FAST);
});
// A wallet's usual call: the next 20 addresses of a branch (each child's comb in Jacobian coordinates).
bench.add('windows of 20', () => {
  for (const key of keys) for (let from = 0; from < FAST; from += 20) deriveAddresses(key, 0, from, 20);
});
bench.add('noble', () => {
  for (const key of keys) nobleDeriveAddresses(key, 0, 0, BASELINE);
});
await bench.run();
const meanMs = (name: string): number => (bench.tasks.find((t) => t.name === name)!.result as unknown as { latency: { mean: number } }).latency.mean;

// The two paths agree on the addresses both derive.
for (const key of keys) {
  const a = deriveAddresses(key, 0, 0, BASELINE).join();
  if (a !== nobleDeriveAddresses(key, 0, 0, BASELINE).join()) throw new Error(`${key.type}: the fast and noble paths differ`);
}

// This process's CPU time for one more fast run: the machine is shared, and wall time counts other processes' turns.
const cpuStart = process.cpuUsage();
for (const key of keys) deriveAddresses(key, 0, 0, FAST);
const cpu = process.cpuUsage(cpuStart);
const cpuMs = (cpu.user + cpu.system) / 1000;

const perSec = (count: number, ms: number): number => Math.round((keys.length * count) / (ms / 1000));
const xpubAddressesPerSec = perSec(FAST, meanMs('fast'));
const baseline = perSec(BASELINE, meanMs('noble'));
const load = [loadStart, loadavg()].map((l) => l.map((x) => x.toFixed(2)).join(' ')).join(' at start, ');
process.stdout.write(
  `${JSON.stringify(
    {
      xpubAddressesPerSec,
      goal: '>= 20000',
      met: xpubAddressesPerSec >= 20_000,
      xpubAddressesPerCpuSec: perSec(FAST, cpuMs),
      inWindowsOf20PerSec: perSec(FAST, meanMs('windows of 20')),
      baselineNobleAddressesPerSec: baseline,
      ratio: round(xpubAddressesPerSec / baseline, 1),
      addresses: `${FAST} of each of xpub, ypub, zpub (baseline ${BASELINE} of each), receive branch, one thread`,
      tableBuildMs: round(tableMs, 0),
      loadavg: `${load} at end`,
    },
    null,
    2,
  )}\n`,
);
