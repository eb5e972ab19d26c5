/**
 * npm run bench:solana — the Solana family's figures, each beside a naive baseline measured
 * in the same run:
 * - matchTxPerSec (one thread, what one match worker does): mainnet-size bench slots of the stand-in
 *   (test/kit/solana-rpc/bench.ts: 3,000 transactions, two in three votes) matched against 1,000,000 watched
 *   accounts compiled as the server compiles them (compileSolanaFilter), by walking each slot's probe
 *   column; baseline: JSON.parse of the slot's getBlock answer and a JS Set of the watched strings, each
 *   transaction's keys, programs, mints and token owners looked up.
 * - ingestSlotsPerSec: the server binary following the stand-in Solana node (its own process) over
 *   consecutive bench slots, getBlock JSON to commit; baseline: getBlock, JSON.parse, the parent link
 *   checked and one LMDB put of the JSON per slot, in this process.
 * Also what a slot costs on the way (prepare: scan, record, probe column; the webhook body).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { blockKey } from '../engine/ingest/chain-store.js';
import { FilterSet } from '../engine/match/filter-set.js';
import { solanaBody } from '../engine/solana/body.js';
import { compileSolanaFilter, walkSolanaProbe, type WatchedSolanaStream } from '../engine/solana/filter.js';
import { prepareSolanaBlock, type PreparedSolanaBlock } from '../engine/solana/prepared.js';
import { SolRecordView } from '../engine/solana/record.js';
import { solanaTxIndexes } from '../engine/solana/webhook.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { openStore } from '../storage/env.js';
import { VOTE_PROGRAM } from '../test/kit/solana-rpc/build.js';
import { benchChain, poolTouches, unusedAddresses } from '../test/kit/solana-rpc/bench.js';
import { getBlockResponse } from '../test/kit/solana-rpc/render.js';
import { serverFollows, type FollowRate } from './follow.js';
import { startProcess, type Started } from '../test/kit/proc.js';
import { msPer, printRows, report, round, sized } from './report.js';

const START = 320_000_000;
/** Slots the server follows (the stand-in serves them all from the start). */
const SLOTS = Number(process.env['BENCH_SLOTS'] ?? sized(300, 48));
/** Slots matched in this process. */
const MATCH_SLOTS = sized(8, 2);
const WATCHED = Number(process.env['BENCH_WATCHED'] ?? sized(1_000_000, 1_000));
/** Streams the watched accounts are spread over (each account watched by one). */
const STREAMS = sized(1_000, 10);
const KEY = 'cpk_bench_solana_0123456789abcdef';
const GET_BLOCK = {
  encoding: 'json',
  transactionDetails: 'full',
  maxSupportedTransactionVersion: 0,
  rewards: false,
  commitment: 'confirmed',
} as const;

const sum = (xs: number[]): number => xs.reduce((a, x) => a + x, 0);

// The stand-in renders its slots as it starts; in its own process, it does so while this one builds and compiles.
const standInReady = startProcess(
  [
    fileURLToPath(new URL('../test/kit/solana-rpc/main.js', import.meta.url)),
    '--blocks',
    'bench',
    '--slots',
    String(SLOTS),
    '--start',
    String(START),
    '--prerender',
  ],
  {},
  240_000,
  /"url":"http:\/\/[^"]*?:(\d+)"/,
);
let standInProcess: Started | undefined;
void standInReady.then((p) => (standInProcess = p));
process.once('exit', () => standInProcess?.child.kill());

// --- the slots --------------------------------------------------------------------------------------

const { chain, pool } = benchChain({ slots: MATCH_SLOTS, start: START });
const answers = chain.slots().map((block) => {
  // The JSON-RPC response body, as the node sends it.
  return { slot: block.slot, bytes: getBlockResponse(block) };
});
const prepared = answers.map((a) => {
  const p = prepareSolanaBlock({ slot: a.slot, block: Uint8Array.prototype.slice.call(a.bytes) });
  if (p === null || 'error' in p) throw new Error(`slot ${a.slot}: no block prepared`);
  return p as PreparedSolanaBlock;
});
const totalTxs = sum(prepared.map((p) => p.txCount));
const jsonBytes = sum(answers.map((a) => a.bytes.length)) / answers.length;

// --- the watched set --------------------------------------------------------------------------------

// What the pool's transactions touch (accounts, token owners, programs, mints): a few hundred real ones among a million.
const touched = poolTouches(pool);
const realAccounts = [...new Set([...touched.accounts, ...touched.owners])].filter((a) => !touched.programs.has(a)).slice(0, 100);
const accounts = [...realAccounts, ...unusedAddresses(WATCHED - realAccounts.length)];
const realPrograms = [...touched.programs].filter((p) => p !== VOTE_PROGRAM).slice(0, 1);
const realMints = [...touched.mints].slice(0, 1);
const entries: WatchedSolanaStream[] = Array.from({ length: STREAMS }, (_, index) => ({
  index,
  addresses: [],
  programIds: index === 0 ? realPrograms : [],
  mintAddresses: index === 1 ? realMints : [],
  allAddresses: false,
}));
accounts.forEach((a, i) => (entries[i % STREAMS]!.addresses as string[]).push(a));
let filter!: FilterSet;
const compiled = performance.now();
filter = new FilterSet(compileSolanaFilter(1, entries), walkSolanaProbe);
const compileSeconds = (performance.now() - compiled) / 1000;
console.error(`compiled ${accounts.length} accounts in ${round(compileSeconds)} s`);

// --- match ------------------------------------------------------------------------------------------

interface JsonTx {
  transaction: { message: { accountKeys: string[]; instructions: Array<{ programIdIndex: number }> } };
  meta: {
    loadedAddresses?: { writable: string[]; readonly: string[] };
    innerInstructions: Array<{ instructions: Array<{ programIdIndex: number }> }> | null;
    preTokenBalances: Array<{ mint: string; owner?: string }> | null;
    postTokenBalances: Array<{ mint: string; owner?: string }> | null;
  };
}
const watchedAccounts = new Set(accounts);
const watchedPrograms = new Set(realPrograms);
const watchedMints = new Set(realMints);
/** The naive matcher: the answer parsed, each transaction's keys, programs, mints and token owners looked up among the watched strings (votes left out, as the server does). */
function naiveMatch(bytes: Buffer): Set<number> {
  const txs = (JSON.parse(bytes.toString()) as { result: { transactions: JsonTx[] } }).result.transactions;
  const hit = new Set<number>();
  txs.forEach((t, index) => {
    const keys = [
      ...t.transaction.message.accountKeys,
      ...(t.meta.loadedAddresses?.writable ?? []),
      ...(t.meta.loadedAddresses?.readonly ?? []),
    ];
    const programs = [...t.transaction.message.instructions, ...(t.meta.innerInstructions ?? []).flatMap((g) => g.instructions)].map(
      (ix) => keys[ix.programIdIndex]!,
    );
    if (t.transaction.message.instructions.every((ix) => keys[ix.programIdIndex] === VOTE_PROGRAM)) return;
    const balances = [...(t.meta.preTokenBalances ?? []), ...(t.meta.postTokenBalances ?? [])];
    if (
      keys.some((k) => watchedAccounts.has(k)) ||
      balances.some((b) => (b.owner !== undefined && watchedAccounts.has(b.owner)) || watchedMints.has(b.mint)) ||
      programs.some((p) => watchedPrograms.has(p))
    )
      hit.add(index);
  });
  return hit;
}
const matchedTxs = (m: Map<number, number[]>): Set<number> => new Set([...m.values()].flat());

for (const [i, p] of prepared.entries()) {
  const fast = [...matchedTxs(filter.match(p.probe))].sort((x, y) => x - y).join();
  const naive = [...naiveMatch(answers[i]!.bytes)].sort((x, y) => x - y).join();
  if (fast !== naive)
    throw new Error(`slot ${p.slot}: the probe match and the naive matcher disagree: ${fast.slice(0, 200)} / ${naive.slice(0, 200)}`);
}
const matchMs = msPer(() => {
  for (const p of prepared) filter.match(p.probe);
});
const naiveMatchMs = msPer(() => {
  for (const a of answers) naiveMatch(a.bytes);
});
const hits = prepared.map((p) => matchedTxs(filter.match(p.probe)).size);

// What else a slot costs on one core: prepare (scan, record, probe column), and the body of its matched transactions.
const prepareMs =
  msPer(() => {
    for (const a of answers) prepareSolanaBlock({ slot: a.slot, block: Uint8Array.prototype.slice.call(a.bytes) });
  }) / answers.length;
const bodyMs =
  msPer(() => {
    for (const p of prepared) {
      const view = SolRecordView.of(p.record);
      solanaBody(view, {
        streamId: 's',
        tag: 't',
        confirmed: true,
        txIndexes: solanaTxIndexes(view, [...matchedTxs(filter.match(p.probe))]),
      });
    }
  }) / prepared.length;

// --- ingest -----------------------------------------------------------------------------------------

const standIn = await standInReady;
const { url: rpcUrl, ws } = JSON.parse(standIn.stdout().split('\n')[0]!) as { url: string; ws: string };

/**
 * The naive follower: getBlock (the same call the server makes) slot after slot, JSON.parse, the parent link
 * checked, the JSON text put in LMDB, one transaction per slot; timed from its first slot committed. With
 * `fetchOnly`, getBlock alone: what the stand-in and the loopback give one client asking slot after slot.
 */
async function naiveIngest(fetchOnly = false): Promise<{ slotsPerSec: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-sol-naive-'));
  const store = openStore(dir);
  const node = jsonRpcUpstream(rpcUrl);
  try {
    let parent: string | undefined;
    let started = 0;
    const last = Math.min(START + SLOTS - 1, START + 150);
    for (let slot = START; slot <= last; slot++) {
      const body = await node.callRaw('getBlock', [slot, GET_BLOCK]);
      if (!fetchOnly) {
        const block = (JSON.parse(Buffer.from(body).toString()) as { result: { previousBlockhash: string; blockhash: string } }).result;
        if (parent !== undefined && block.previousBlockhash !== parent) throw new Error(`slot ${slot} does not link`);
        parent = block.blockhash;
        await store.transactAsync(() => store.putRaw('blocks', blockKey('solana', slot), body));
      }
      if (slot === START) started = performance.now();
    }
    return { slotsPerSec: (last - START) / ((performance.now() - started) / 1000) };
  } finally {
    await node.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

let ingest: FollowRate;
let naiveIngestRun: { slotsPerSec: number };
let fetchOnlyRun: { slotsPerSec: number };
try {
  ingest = await serverFollows({
    env: { CHAINPOST_SOLANA_RPC: rpcUrl, CHAINPOST_SOLANA_WS: ws, CHAINPOST_SOLANA_POLL_MS: '50' },
    chain: 'solana',
    from: START,
    last: START + SLOTS - 1,
    key: KEY,
    // As a restart finds it: the server goes on from the slot before the first (a chain new to it would start at the node's tip).
    seed: (kv) => kv.put('chainState', 'solana', { head: START - 1, confirmed: START - 1, pruned: START - 1 }),
    nodePid: standIn.child.pid,
  });
  naiveIngestRun = await naiveIngest();
  fetchOnlyRun = await naiveIngest(true);
} finally {
  await standIn.stop();
}

// --- report -----------------------------------------------------------------------------------------

const figures = {
  matchTxPerSec: Math.round((totalTxs / matchMs) * 1000),
  naiveMatchTxPerSec: Math.round((totalTxs / naiveMatchMs) * 1000),
  ingestSlotsPerSec: round(ingest.perSec, 1),
  naiveIngestSlotsPerSec: round(naiveIngestRun.slotsPerSec, 1),
  fetchOnlySlotsPerSec: round(fetchOnlyRun.slotsPerSec, 1),
  ingestServerCpuMsPerSlot: round(ingest.serverCpuMsPerBlock, 2),
  ingestNodeCpuMsPerSlot: round(ingest.nodeCpuMsPerBlock, 2),
  recordBytesPerSlot: Math.round(ingest.recordBytes),
  probeBytesPerSlot: Math.round(ingest.probeBytes),
  getBlockJsonBytesPerSlot: Math.round(jsonBytes),
  compileWatchedSeconds: round(compileSeconds),
  prepareMsPerSlot: round(prepareMs, 3),
  bodyMsPerSlot: round(bodyMs, 3),
};
const baselineOf: Partial<Record<string, number>> = {
  matchTxPerSec: figures.naiveMatchTxPerSec,
  ingestSlotsPerSec: figures.naiveIngestSlotsPerSec,
  recordBytesPerSlot: figures.getBlockJsonBytesPerSlot,
};
printRows(Object.entries(figures).map(([name, value]) => [name, value, '', baselineOf[name]]));
const met = figures.matchTxPerSec >= 1_000_000 && figures.ingestSlotsPerSec >= 25;
const goals = { matchTxPerSec: '>= 1000000', ingestSlotsPerSec: '>= 25' };
report('solana', 'npm run bench:solana', figures, goals, met, [
  `Match (one thread, as one match worker): ${MATCH_SLOTS} bench slots of the stand-in (test/kit/solana-rpc/bench.ts: ${totalTxs} transactions, two in three votes, the rest SOL and SPL transfers, CPIs, v0 transactions loading accounts from lookup tables, failed transfers; ${Math.round(jsonBytes).toLocaleString('en-US')} bytes of getBlock JSON a slot), prepared as the server prepares them; matchTxPerSec = their transactions ÷ the time of FilterSet.match over each slot's probe column (engine/solana/probe.ts). Watched: ${WATCHED.toLocaleString('en-US')} accounts over ${STREAMS} streams, ${realAccounts.length} of them accounts or token owners the slots use, the rest unused keys, plus a program (${realPrograms.join()}) and a mint (${realMints.join()}), compiled as the server compiles them (compileSolanaFilter) in compileWatchedSeconds; matched transactions per slot: ${hits.join(', ')}. Naive (naiveMatchTxPerSec): JSON.parse of the slot's answer, then per transaction that is not a vote its static and loaded keys, token owners, mints and invoked programs looked up in JS Sets of the watched strings; both find the same transactions.`,
  `Ingest: the stand-in Solana node (test/kit/solana-rpc, its own process, every answer rendered before it listened) serving ${SLOTS} consecutive bench slots from ${START}; the server binary (CHAINPOST_CHAINS=none, CHAINPOST_SOLANA_POLL_MS=50, slotSubscribe on the stand-in's WebSocket, its worker pool, LMDB in a temp directory whose chain state says slot ${START - 1} was the last, as after a restart) follows them from getBlock to commit. ingestSlotsPerSec is timed from the first slot committed to the last as /health shows them (polled every 20 ms), so the server's start is excluded; from its listening line it took ${round(ingest.fromListeningSeconds)} s for ${ingest.blocks} slots. Naive (naiveIngestSlotsPerSec): getBlock with the server's parameters, JSON.parse, the parent link checked and the JSON text put in LMDB, one transaction per slot, one slot after another, timed the same way over 150 slots; fetchOnlySlotsPerSec: getBlock alone, what one client asking slot after slot gets from the stand-in over the loopback. recordBytesPerSlot and probeBytesPerSlot: what the server stored (read back from its LMDB); getBlockJsonBytesPerSlot: the node's answer. ingestServerCpuMsPerSlot and ingestNodeCpuMsPerSlot: CPU time (user + system, every thread, from /proc) the server and the stand-in used per slot over the same span.`,
  `Per slot, one core: prepareMsPerSlot prepareSolanaBlock (scan, record, probe column) of a bench slot's answer; bodyMsPerSlot the webhook body of the slot's matched transactions from its record.`,
]);
console.log(`${met ? 'goals met' : 'goals not met'}; wrote bench/results/solana.json and bench/RESULTS.md`);
