/**
 * npm run bench:bitcoin — the Bitcoin family's figures, each beside a naive baseline
 * measured in the same run:
 * - matchTxPerSec: real mainnet blocks 574200, 540107 and 277647 matched on one thread against
 *   1,000,000 watched addresses compiled as the server compiles them (compileBitcoinFilter), by
 *   walking each block's probe column; baseline: a JS Set of the address strings, each output's
 *   address computed from its script and looked up.
 * - ingestBlocksPerSec: the server binary following the stand-in Bitcoin Core (its own process)
 *   serving those blocks relinked into one chain, fetch to commit; baseline: getblockhash + getblock,
 *   JSON.parse and one LMDB put of the JSON per block, in this process.
 * - xpubAddressesPerSec: addresses derived from an xpub, a ypub and a zpub on one core; baseline:
 *   the first derivation, on @noble/curves's BigInt points (engine/bitcoin/xpub-noble.ts).
 * Also what a block costs on the way (parse, record, probe column, webhook body), as
 * bench/bitcoin-record.ts measured before it was folded in here.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { bitcoinBody } from '../engine/bitcoin/body.js';
import { blockFromRaw, parseBlock } from '../test/kit/bitcoin-core/raw.js';
import { normalizeZ } from '@noble/curves/abstract/curve.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToNumberBE } from '@noble/curves/utils.js';
import { compileBitcoinFilter, walkBitcoinProbe, type WatchedWallet } from '../engine/bitcoin/filter.js';
import { prepareBitcoinBlock } from '../engine/bitcoin/prepared.js';
import { buildBtcProbe } from '../engine/bitcoin/probe.js';
import { BtcRecordView, encodeRecord } from '../engine/bitcoin/record.js';
import { classifyScript } from '../engine/bitcoin/script.js';
import { deriveAddresses, parseExtendedKey } from '../engine/bitcoin/xpub.js';
import { nobleDeriveAddresses } from '../engine/bitcoin/xpub-noble.js';
import { BIP84_ZPUB, withVersion } from '../test/kit/bitcoin-core/keys.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import { FilterSet } from '../engine/match/filter-set.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore } from '../storage/env.js';
import { bigBlock } from '../test/kit/bitcoin-core/fixtures.js';
import { serverFollows, type FollowRate } from './follow.js';
import { startProcess, type Started } from '../test/kit/proc.js';
import { msPer, printRows, report, round, sized } from './report.js';

/** The real mainnet blocks of test/fixtures/bitcoin/raw-blocks: 3,315 transactions; 230 with 7,033 inputs; and 277647. */
const HEIGHTS = [574200, 540107, 277647];
const WATCHED = Number(process.env['BENCH_WATCHED'] ?? sized(1_000_000, 1_000));
/** Real addresses of the blocks among the watched, so matches happen. */
const REAL_WATCHED = 100;
/** Streams the watched addresses are spread over (each address watched by one). */
const STREAMS = sized(1_000, 10);
/** The stand-in's chain: HEIGHTS this many times over, relinked at heights 0 … 3·REPEAT − 1. */
const REPEAT = Number(process.env['BENCH_REPEAT'] ?? sized(20, 2));
const CHAIN_BLOCKS = HEIGHTS.length * REPEAT;
const XPUB_ADDRESSES = sized(20_000, 500);
/** The naive CKDpub is slow: fewer addresses per key, enough for a steady rate. */
const NAIVE_XPUB_ADDRESSES = Number(process.env['BENCH_NAIVE_XPUB'] ?? sized(1_000, 50));
const KEY = 'cpk_bench_bitcoin_0123456789abcdef';

/** Seconds `work` takes, once. */
function seconds(work: () => void): number {
  const started = performance.now();
  work();
  return (performance.now() - started) / 1000;
}

// The stand-in renders every getblock answer before it listens (some 30 s): started first, in its own
// process, it does so while this one makes and compiles the watched set; it is idle before anything is timed.
const standInStarted = performance.now();
const standInReady = startProcess(
  [
    fileURLToPath(new URL('../test/kit/bitcoin-core/main.js', import.meta.url)),
    '--blocks',
    HEIGHTS.join(','),
    '--repeat',
    String(REPEAT),
    '--start',
    '0',
    '--prerender',
    '3',
  ],
  {},
  240_000,
  /"url":"http:\/\/[^"]*?:(\d+)"/,
);
// Killed if this process exits early (a failed check below), so no stand-in outlives the bench.
let standInProcess: Started | undefined;
let standInSeconds = NaN;
void standInReady.then((p) => {
  standInProcess = p;
  standInSeconds = (performance.now() - standInStarted) / 1000;
});
process.once('exit', () => standInProcess?.child.kill());

// --- the blocks -------------------------------------------------------------------------------------

const blocks = HEIGHTS.map((height) => {
  const bytes = bigBlock(height);
  const block = blockFromRaw(parseBlock(bytes), height);
  return { height, bytes, block, record: encodeRecord(block), probe: buildBtcProbe(block.txs) };
});
const totalTxs = blocks.reduce((a, b) => a + b.block.txs.length, 0);

// --- the watched set --------------------------------------------------------------------------------

/** Output scripts of the five address kinds (P2PKH, P2SH, P2WPKH, P2WSH, P2TR) around random hashes. */
const SCRIPT_SHAPES: Array<[prefix: number[], hashBytes: number, suffix: number[]]> = [
  [[0x76, 0xa9, 20], 20, [0x88, 0xac]],
  [[0xa9, 20], 20, [0x87]],
  [[0x00, 20], 20, []],
  [[0x00, 32], 32, []],
  [[0x51, 32], 32, []],
];

/**
 * `count` Taproot output keys: a Taproot key must be an x coordinate on the curve (the server refuses
 * others), and testing random ones costs a square root each; successive points from a random one, made
 * affine together, cost a point addition each.
 */
function taprootKeys(count: number): Uint8Array[] {
  let p = secp256k1.Point.BASE.multiply(1n + (bytesToNumberBE(randomBytes(32)) % (secp256k1.Point.Fn.ORDER - 1n)));
  const points = Array.from({ length: count }, () => (p = p.add(secp256k1.Point.BASE)));
  return normalizeZ(secp256k1.Point, points).map((a) => a.toBytes(true).subarray(1));
}

/** `count` random valid mainnet addresses of the five kinds in turn, encoded as the server encodes an output's address. */
function randomAddresses(count: number): string[] {
  const pool = randomBytes(count * 32);
  const taproot = taprootKeys(Math.ceil(count / SCRIPT_SHAPES.length));
  return Array.from({ length: count }, (_, i) => {
    const [prefix, n, suffix] = SCRIPT_SHAPES[i % SCRIPT_SHAPES.length]!;
    const hash = prefix[0] === 0x51 ? taproot[Math.floor(i / SCRIPT_SHAPES.length)]! : pool.subarray(i * 32, i * 32 + n);
    return classifyScript(Uint8Array.of(...prefix, ...hash, ...suffix)).address!;
  });
}

/** REAL_WATCHED distinct addresses paid in the blocks, taken evenly across their outputs. */
function realAddresses(): string[] {
  const all = [
    ...new Set(
      blocks.flatMap((b) =>
        b.block.txs.flatMap((t) => t.vout.map((o) => classifyScript(o.script).address)).filter((a): a is string => a !== undefined),
      ),
    ),
  ];
  const step = Math.floor(all.length / REAL_WATCHED);
  return Array.from({ length: REAL_WATCHED }, (_, i) => all[i * step]!);
}

const made = performance.now();
const addresses = [...realAddresses(), ...randomAddresses(WATCHED - REAL_WATCHED)];
const makeSeconds = (performance.now() - made) / 1000;
console.error(`made ${addresses.length} addresses in ${round(makeSeconds)} s`);
const byStream: string[][] = Array.from({ length: STREAMS }, () => []);
addresses.forEach((a, i) => byStream[i % STREAMS]!.push(a));
const wallets: WatchedWallet[] = byStream.map((list, index) => ({
  index,
  addresses: list,
  derived: new Uint8Array(0),
  allAddresses: false,
}));
let filter!: FilterSet;
const compileSeconds = seconds(() => {
  filter = new FilterSet(compileBitcoinFilter(1, wallets), walkBitcoinProbe);
});

console.error(`compiled in ${round(compileSeconds)} s`);
const standIn = await standInReady;

// --- match ------------------------------------------------------------------------------------------

/** Indexes of the transactions a match answered, for the sanity check against the naive matcher. */
const matchedTxs = (m: Map<number, number[]>): Set<number> => new Set([...m.values()].flat().map((ref) => ref & 0xffffff));

const naiveSet = new Set(addresses);
/**
 * The naive matcher: per output, and per input whose spent output is known (the probe column has those
 * too), its address from its script, looked up among the watched strings.
 */
function naiveMatch(b: (typeof blocks)[number]): Set<number> {
  const hit = new Set<number>();
  const watched = (script: Uint8Array): boolean => {
    const a = classifyScript(script).address;
    return a !== undefined && naiveSet.has(a);
  };
  b.block.txs.forEach((t, index) => {
    if (t.vout.some((o) => watched(o.script)) || t.vin.some((i) => i.prevout !== undefined && watched(i.prevout.script))) hit.add(index);
  });
  return hit;
}

for (const b of blocks) {
  const fast = [...matchedTxs(filter.match(b.probe))].sort((x, y) => x - y).join();
  const naive = [...naiveMatch(b)].sort((x, y) => x - y).join();
  if (fast !== naive)
    throw new Error(`block ${b.height}: the probe match and the naive matcher disagree: ${fast.slice(0, 200)} / ${naive.slice(0, 200)}`);
}
const matchMs = blocks.map((b) => msPer(() => filter.match(b.probe)));
const naiveMatchMs = blocks.map((b) => msPer(() => naiveMatch(b)));
const sum = (xs: number[]): number => xs.reduce((a, x) => a + x, 0);
const hits = blocks.map((b) => matchedTxs(filter.match(b.probe)).size);

// What else a block costs on one core, averaged over the three blocks: raw bytes to record, probe column, the webhook body of its matched transactions.
const avgMs = (work: (b: (typeof blocks)[number]) => unknown): number => sum(blocks.map((b) => msPer(() => work(b), 200))) / blocks.length;
const rawToRecordMs = avgMs((b) => encodeRecord(blockFromRaw(parseBlock(b.bytes), b.height)));
const buildProbeMs = avgMs((b) => buildBtcProbe(b.block.txs));
const bodyMs = avgMs((b) => {
  const txIndexes = [...matchedTxs(filter.match(b.probe))].sort((x, y) => x - y);
  return bitcoinBody(BtcRecordView.of(b.record), {
    streamId: 's',
    tag: 't',
    confirmed: true,
    includeInputs: true,
    includeOutputs: true,
    txIndexes,
  });
});

// --- ingest -----------------------------------------------------------------------------------------

/**
 * The naive follower: block after block, getblockhash then getblock (verbosity 3, what the server asks
 * for, so both carry the same bytes), JSON.parse, the parent link checked, the JSON text put in LMDB as
 * it came, one transaction per block. Timed from its first block committed, as the server is. With
 * `fetchOnly`, the same two calls with each answer dropped: what the stand-in and the loopback allow.
 */
async function naiveIngest(rpcUrl: string, fetchOnly = false): Promise<{ blocksPerSec: number; jsonBytes: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-btc-naive-'));
  const store = openStore(dir);
  const node = jsonRpcUpstream(rpcUrl);
  try {
    let parent: string | undefined;
    let jsonBytes = 0;
    let started = 0;
    for (let n = 0; n < CHAIN_BLOCKS; n++) {
      const hash = await node.call<string>('getblockhash', [n]);
      const body = await node.callRaw('getblock', [hash, 3]);
      jsonBytes += body.length;
      if (fetchOnly) {
        if (n === 0) started = performance.now();
        continue;
      }
      const block = (JSON.parse(Buffer.from(body).toString()) as { result: { previousblockhash?: string; hash: string } }).result;
      if (parent !== undefined && block.previousblockhash !== parent) throw new Error(`block ${n} does not link`);
      parent = block.hash;
      await store.transactAsync(() => store.putRaw('blocks', blockKey('bitcoin', n), body));
      if (n === 0) started = performance.now();
    }
    return { blocksPerSec: (CHAIN_BLOCKS - 1) / ((performance.now() - started) / 1000), jsonBytes: jsonBytes / CHAIN_BLOCKS };
  } finally {
    await node.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What the follower's pool does with each block, on one core: the node's getblock 3 answer (the stand-in's, for the three blocks) to record and probe column. */
async function prepareMsPerBlock(rpcUrl: string): Promise<number> {
  const node = jsonRpcUpstream(rpcUrl);
  try {
    const answers: Uint8Array[] = [];
    for (let n = 0; n < HEIGHTS.length; n++)
      answers.push(await node.callRaw('getblock', [await node.call<string>('getblockhash', [n]), 3]));
    return sum(answers.map((a) => msPer(() => prepareBitcoinBlock({ block: a }), 200))) / answers.length;
  } finally {
    await node.close();
  }
}

let ingest: FollowRate;
let naiveIngestRun: Awaited<ReturnType<typeof naiveIngest>>;
let fetchOnlyRun: Awaited<ReturnType<typeof naiveIngest>>;
let prepareMs: number;
try {
  const rpcUrl = (JSON.parse(standIn.stdout().split('\n')[0]!) as { url: string }).url;
  prepareMs = await prepareMsPerBlock(rpcUrl);
  // A new chain starts at the node's best block: the start block 0 has the server backfill the whole chain.
  ingest = await serverFollows({
    env: { CHAINPOST_BITCOIN_RPC: rpcUrl, CHAINPOST_BITCOIN_POLL_MS: '50', CHAINPOST_START_BLOCKS: 'bitcoin=0' },
    chain: 'bitcoin',
    from: 0,
    last: CHAIN_BLOCKS - 1,
    key: KEY,
    nodePid: standIn.child.pid,
  });
  naiveIngestRun = await naiveIngest(rpcUrl);
  fetchOnlyRun = await naiveIngest(rpcUrl, true);
} finally {
  await standIn.stop();
}

// --- xpub -------------------------------------------------------------------------------------------

/** The BIP-84 test vector's account key (m/84'/0'/0'), and the same key under the xpub and ypub versions: one of each script type. */
const EXTENDED_KEYS = [withVersion(BIP84_ZPUB, 0x0488b21e), withVersion(BIP84_ZPUB, 0x049d7cb2), BIP84_ZPUB];

// Warm-up, and both derivations must agree.
for (const text of EXTENDED_KEYS) {
  const key = parseExtendedKey(text);
  if (deriveAddresses(key, 0, 0, 50).join() !== nobleDeriveAddresses(key, 0, 0, 50).join())
    throw new Error(`${text}: the derivations disagree`);
}
const xpubSeconds = seconds(() => {
  for (const text of EXTENDED_KEYS) deriveAddresses(parseExtendedKey(text), 0, 0, XPUB_ADDRESSES);
});
const naiveXpubSeconds = seconds(() => {
  for (const text of EXTENDED_KEYS) nobleDeriveAddresses(parseExtendedKey(text), 0, 0, NAIVE_XPUB_ADDRESSES);
});

// --- report -----------------------------------------------------------------------------------------

const figures = {
  matchTxPerSec: Math.round((totalTxs / sum(matchMs)) * 1000),
  naiveMatchTxPerSec: Math.round((totalTxs / sum(naiveMatchMs)) * 1000),
  ingestBlocksPerSec: round(ingest.perSec, 1),
  naiveIngestBlocksPerSec: round(naiveIngestRun.blocksPerSec, 1),
  fetchOnlyBlocksPerSec: round(fetchOnlyRun.blocksPerSec, 1),
  ingestServerCpuMsPerBlock: round(ingest.serverCpuMsPerBlock, 1),
  ingestNodeCpuMsPerBlock: round(ingest.nodeCpuMsPerBlock, 1),
  xpubAddressesPerSec: Math.round((EXTENDED_KEYS.length * XPUB_ADDRESSES) / xpubSeconds),
  naiveXpubAddressesPerSec: Math.round((EXTENDED_KEYS.length * NAIVE_XPUB_ADDRESSES) / naiveXpubSeconds),
  recordBytesPerBlock: Math.round(ingest.recordBytes),
  probeBytesPerBlock: Math.round(ingest.probeBytes),
  getblockJsonBytesPerBlock: Math.round(naiveIngestRun.jsonBytes),
  compileWatchedSeconds: round(compileSeconds),
  prepareMsPerBlock: round(prepareMs, 3),
  rawToRecordMsPerBlock: round(rawToRecordMs, 3),
  buildProbeMsPerBlock: round(buildProbeMs, 3),
  bodyMsPerBlock: round(bodyMs, 3),
};
// Each figure under its JSON name (the unit is in the name), the headline ones with their ratio to the baseline.
const baselineOf: Partial<Record<string, number>> = {
  matchTxPerSec: figures.naiveMatchTxPerSec,
  ingestBlocksPerSec: figures.naiveIngestBlocksPerSec,
  xpubAddressesPerSec: figures.naiveXpubAddressesPerSec,
  recordBytesPerBlock: figures.getblockJsonBytesPerBlock,
};
printRows(Object.entries(figures).map(([name, value]) => [name, value, '', baselineOf[name]]));
const met = figures.matchTxPerSec >= 1_000_000 && figures.ingestBlocksPerSec >= 20 && figures.xpubAddressesPerSec >= 20_000;
const goals = { matchTxPerSec: '>= 1000000', ingestBlocksPerSec: '>= 20', xpubAddressesPerSec: '>= 20000' };
const perBlock = (ms: number[]): string => blocks.map((b, i) => `${b.height}: ${round(ms[i]!, 3)} ms`).join(', ');
report('bitcoin', 'npm run bench:bitcoin', figures, goals, met, [
  `Match (one thread): mainnet blocks ${blocks.map((b) => `${b.height} (${b.block.txs.length} txs, ${(b.probe.length - 5) / 36} probe entries)`).join(', ')}, ${totalTxs} transactions in all; matchTxPerSec = their transactions ÷ the time to match the three (FilterSet.match over each block's probe column, engine/bitcoin/probe.ts; ${perBlock(matchMs)}). Watched: ${WATCHED.toLocaleString('en-US')} mainnet addresses over ${STREAMS} streams, ${REAL_WATCHED} of them paid in the blocks (matched transactions: ${hits.join(', ')}), the rest random P2PKH, P2SH, P2WPKH, P2WSH and P2TR in turn (made in ${round(makeSeconds)} s), compiled as the server compiles them (compileBitcoinFilter: decode, script hash, KeySet) in compileWatchedSeconds. The raw blocks carry no spent outputs but those made in the same block, so outputs and those inputs are matched, by both matchers. Naive (naiveMatchTxPerSec): a JS Set of the address strings, each output's address (and each known spent output's) computed from its script (classifyScript) and looked up (${perBlock(naiveMatchMs)}); both find the same transactions.`,
  `Ingest: the stand-in Bitcoin Core (test/kit/bitcoin-core, its own process, every getblock 3 answer rendered before it listened: ${round(standInSeconds)} s) serving the three blocks ${REPEAT} times over, relinked into one chain of ${CHAIN_BLOCKS} blocks from height 0; the server binary (CHAINPOST_CHAINS=none, CHAINPOST_BITCOIN_POLL_MS=50, CHAINPOST_START_BLOCKS=bitcoin=0: the whole chain backfilled, its worker pool, LMDB in a temp directory) follows it from fetch to commit. ingestBlocksPerSec is timed from the first block committed to the last as /health shows them (polled every 20 ms), so the server's start is excluded; from its listening line it took ${round(ingest.fromListeningSeconds)} s for ${ingest.head + 1} blocks. The stand-in knows none of the real blocks' spent outputs but those made inside the chain, so most inputs come without their spent output (the follower then asks getrawtransaction, which a node without -txindex refuses), where a real Core 23+ gives them all: real records carry more, and real blocks cost more to prepare. Naive (naiveIngestBlocksPerSec): getblockhash + getblock 3 (the same answer the server gets), JSON.parse, the parent link checked and the JSON text put in LMDB, one transaction per block, one block after another, timed the same way; fetchOnlyBlocksPerSec: the same two calls with each answer dropped, the most the stand-in and the loopback give one follower asking block after block. recordBytesPerBlock and probeBytesPerBlock: what the server stored per block (read back from its LMDB); getblockJsonBytesPerBlock: the node's answer. ingestServerCpuMsPerBlock and ingestNodeCpuMsPerBlock: CPU time (user + system, every thread, from /proc) the server and the stand-in used per block over the same span: with 2 cores, their sum bounds the rate.`,
  `xpub (one core): parseExtendedKey + deriveAddresses(key, 0, 0, ${XPUB_ADDRESSES.toLocaleString('en-US')}) for an xpub, a ypub and a zpub (the BIP-84 vector's account key under the three versions: P2PKH, P2SH-P2WPKH, P2WPKH), one call each. Naive (naiveXpubAddressesPerSec): the first derivation (engine/bitcoin/xpub-noble.ts: per child HMAC-SHA512 and @noble/curves Point.BASE.multiply(tweak).add(parent), normalized together, then hash160 and encoding) (${NAIVE_XPUB_ADDRESSES.toLocaleString('en-US')} per key); both derive the same addresses.`,
  `Per block, one core, averaged over the three blocks: prepareMsPerBlock prepareBitcoinBlock (what the pool does for the follower: the stand-in's getblock 3 answer scanned into the record and probe column); rawToRecordMsPerBlock parseBlock + blockFromRaw + encodeRecord; buildProbeMsPerBlock buildBtcProbe; bodyMsPerBlock the webhook body (inputs and outputs) of the block's matched transactions from its record.`,
]);
console.log(`${met ? 'goals met' : 'goals not met'}; wrote bench/results/bitcoin.json and bench/RESULTS.md`);
