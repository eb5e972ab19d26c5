/**
 * npm run bench:ingest — the server's follower catching up a chain from a
 * local JSON-RPC stand-in (test/kit/node-standin.ts, the mainnet fixture bundles
 * renumbered and relinked) from fetch to commit, while an authenticated GET is
 * sent every 10 ms, beside a naive follower of the same chain in the same run
 * and a cluster's ingest node (no API, so no Data API index; nats-server);
 * then the normalizer and the LMDB writer over the fixture blocks replayed in
 * a loop (each copy stored as its own block number), and a scan of the stored
 * probe columns.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { parseJsonBytes } from '../engine/ingest/json-bytes.js';
import { prepareBlock } from '../engine/evm/prepared.js';
import { buildProbe, readProbe } from '../engine/evm/probe.js';
import { encodeRecord, normalizeBlock } from '../engine/evm/record.js';
import { CATCH_UP_BATCH, COMMIT_BLOCKS } from '../engine/evm/follower.js';
import { transferKeys, transfersOf, writeBlock } from '../engine/evm/store.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { pack } from '../storage/codec.js';
import { openStore } from '../storage/env.js';
import { FIXTURE_BLOCKS, bundle } from '../test/kit/fixtures.js';
import { startNatsServer, type NatsServer } from '../test/kit/nats-server.js';
import { bytesWritten, cpuMs, startProcess, threadCpuMs, until } from '../test/kit/proc.js';
import { BIN, percentile, printRows, report, round, sized } from './report.js';

const BLOCKS = Number(process.env['BENCH_BLOCKS'] ?? sized(4_000, 32));
/** Blocks of the stand-in's chain the followers catch up. */
const CATCH_UP_BLOCKS = Number(process.env['BENCH_CATCH_UP_BLOCKS'] ?? sized(2_000, 32));
/** An authenticated GET is sent this often during the catch-up. */
const GET_EVERY_MS = 10;
/** Quick runs while working on the pipeline: the catch-ups alone, printed, nothing written. */
const CATCH_UP_ONLY = process.env['BENCH_CATCH_UP_ONLY'] === '1';
/** Catch-up rounds (server, naive follower, fetch alone, a cluster ingest node, in turn); each catch-up figure is the median of theirs. */
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? sized(3, 1));
/** Where the server writes a CPU profile of each of its threads (node --cpu-prof), when set; the ingest node's under ingest-node/. */
const PROFILE_DIR = process.env['BENCH_PROFILE_DIR'];
/** More node options for the server (space-separated, e.g. --trace-gc), and a file its output is written to once it stops (the ingest node's: that name + .ingest-node). */
const SERVER_NODE_ARGS = (process.env['BENCH_SERVER_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
const SERVER_LOG = process.env['BENCH_SERVER_LOG'];
const KEY = 'cpk_bench_ingest_0123456789abcdef';
const loadBefore = loadavg()[0]!;
const CHAIN = '0x1';
const bundles = FIXTURE_BLOCKS.map(bundle);
const txCounts = ((n: number[]) => ({ min: Math.min(...n), max: Math.max(...n) }))(
  bundles.map((b) => (b.block['transactions'] as unknown[]).length),
);

const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-ingest-'));
const store = openStore(dir);
/** Block numbers of the copies start here (mainnet-size numbers). */
const FIRST = 20_000_000;

/**
 * Seconds to write `count` fixture copies CATCH_UP_BATCH per synchronous transaction (as the follower
 * committed before it wrote COMMIT_BLOCKS per asynchronous one); `write` gets the copy's index, its bundle and its block renumbered to FIRST + index.
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

/**
 * The real path: the server binary following the stand-in (its follower, its worker pool, LMDB on a temp
 * directory), timed from its `listening` line (its follower starts just before) until /health shows the
 * last block; meanwhile this process sends an authenticated Data API GET every GET_EVERY_MS and times each.
 * With `nats`: a cluster's ingest node on it instead (`serve --roles ingest,match,deliver`: no API, so no Data API
 * index and no GET), timed from its log's line that it follows the chain (its lease taken), its blocks published.
 */
async function serverCatchUp(
  nodeUrl: string,
  standInPid: number | undefined,
  nats?: NatsServer,
): Promise<{
  seconds: number;
  /** Until the indexes held the last block too. */
  indexedSeconds: number;
  getMs: number[];
  head: number;
  indexed: number;
  /** The indexes' distance behind the head when the head reached the last block. */
  lagAtEnd: number;
  threads: ThreadCpu[];
  standInCpuMs: number;
  /** The nats-server's CPU meanwhile (0 without one). */
  natsCpuMs: number;
  written: number;
  pid: string;
}> {
  const dataDir = mkdtempSync(join(tmpdir(), 'chainpost-bench-catchup-'));
  const server = await startProcess(
    [
      ...(PROFILE_DIR === undefined
        ? []
        : ['--cpu-prof', `--cpu-prof-dir=${nats === undefined ? PROFILE_DIR : join(PROFILE_DIR, 'ingest-node')}`]),
      ...SERVER_NODE_ARGS,
      BIN,
      'serve',
      ...(nats === undefined ? [] : ['--roles', 'ingest,match,deliver']),
    ],
    {
      CHAINPOST_DATA: dataDir,
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: KEY,
      CHAINPOST_CHAINS: `0x1=${nodeUrl}`,
      CHAINPOST_START_BLOCKS: '0x1=0',
      CHAINPOST_POLL_MS: '20',
      CHAINPOST_ACCESS_LOG: '0',
      ...(nats === undefined ? {} : { CHAINPOST_NATS: nats.url }),
    },
    30_000,
  );
  if (nats !== undefined && !(await until(() => server.output().includes('cluster: following a chain'), 30_000, 5)))
    throw new Error(`the ingest node took the chain's lease not within 30 s: ${server.output().slice(-2_000)}`);
  const started = performance.now();
  const natsAtStart = cpuMs(nats?.pid());
  const threadsAtStart = threadCpuMs(server.child.pid);
  const writtenAtStart = bytesWritten(server.child.pid);
  const standInAtStart = cpuMs(standInPid);
  const url = `http://127.0.0.1:${server.port}`;
  try {
    const getMs: number[] = [];
    const inFlight = new Set<Promise<void>>();
    const get = (): void => {
      const t0 = performance.now();
      const p = fetch(`${url}/api/v2.2/nft/0x06012c8cf97bead5deae237070f9587f8e7a266d/1/transfers?chain=0x1&limit=10`, {
        headers: { 'x-api-key': KEY },
      })
        .then(async (res) => {
          await res.arrayBuffer();
          if (res.status !== 200) throw new Error(`GET answered ${res.status}`);
          getMs.push(performance.now() - t0);
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    };
    // No GET for the ingest node: it serves no API.
    const timer = nats === undefined ? setInterval(get, GET_EVERY_MS) : undefined;
    let head = -1;
    let indexed = -1;
    // Bounded: on a machine too busy to finish, the rate is taken over the blocks it reached.
    const deadline = started + 150_000;
    while (head < CATCH_UP_BLOCKS - 1 && performance.now() < deadline) {
      // /health every 20 ms: the end of the catch-up is seen within that, without loading the server much.
      await new Promise((r) => setTimeout(r, 20));
      const health = (await (await fetch(`${url}/health`)).json()) as { chains: Array<{ head: number; indexed?: number | null }> };
      head = health.chains[0]?.head ?? -1;
      indexed = health.chains[0]?.indexed ?? -1;
    }
    const seconds = (performance.now() - started) / 1000;
    const threadsAtEnd = threadCpuMs(server.child.pid);
    const written = bytesWritten(server.child.pid) - writtenAtStart;
    const standInCpuMs = cpuMs(standInPid) - standInAtStart;
    const natsCpuMs = cpuMs(nats?.pid()) - natsAtStart;
    clearInterval(timer);
    await Promise.all(inFlight);
    // Then until the Data API's indexes hold the last block too (bounded as above), where they are built.
    const lagAtEnd = head - indexed;
    while (nats === undefined && indexed < head && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      const health = (await (await fetch(`${url}/health`)).json()) as { chains: Array<{ indexed?: number | null }> };
      indexed = health.chains[0]?.indexed ?? -1;
    }
    const indexedSeconds = (performance.now() - started) / 1000;
    const threads = [...threadsAtEnd].map(([tid, t]) => ({ tid, name: t.name, ms: t.ms - (threadsAtStart.get(tid)?.ms ?? 0) }));
    return {
      seconds,
      indexedSeconds,
      getMs,
      head,
      indexed,
      lagAtEnd,
      threads,
      standInCpuMs,
      natsCpuMs,
      written,
      pid: String(server.child.pid),
    };
  } finally {
    await server.stop();
    if (SERVER_LOG !== undefined) writeFileSync(nats === undefined ? SERVER_LOG : `${SERVER_LOG}.ingest-node`, server.output());
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** CPU a thread of the server used during the catch-up, ms. */
interface ThreadCpu {
  tid: string;
  name: string;
  ms: number;
}

/**
 * The server's threads' CPU during the catch-up, in a line, busiest first: the main thread, then each other (Node
 * names none of its worker, libuv and V8 threads apart: the profile of each worker tells them apart).
 */
function threadLine(threads: ThreadCpu[], blocks: number, mainTid: string | undefined): string {
  return threads
    .filter((t) => t.ms > 0)
    .sort((a, b) => (a.tid === mainTid ? -1 : b.tid === mainTid ? 1 : b.ms - a.ms))
    .map((t) => `${t.tid === mainTid ? 'main' : `${t.name} ${t.tid}`} ${round(t.ms / blocks)} ms`)
    .join(', ');
}

/** A block's three answers as the follower asks for them (block with transactions, receipts, callTracer traces), side by side. */
function answersOf(node: ReturnType<typeof jsonRpcUpstream>, n: number): Promise<Uint8Array[]> {
  const tag = `0x${n.toString(16)}`;
  return Promise.all([
    node.callRaw('eth_getBlockByNumber', [tag, true]),
    node.callRaw('eth_getBlockReceipts', [tag]),
    node.callRaw('debug_traceBlockByNumber', [tag, { tracer: 'callTracer' }]),
  ]);
}

/**
 * The naive follower: the same fetches in the same batches (CATCH_UP_BATCH blocks, their three answers
 * each, concurrently), JSON.parse of each answer, the parent link checked, the node's JSON stored as it
 * came (its three answers per block), one asynchronous LMDB transaction per COMMIT_BLOCKS, as the follower commits.
 */
async function naiveCatchUp(nodeUrl: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-naive-'));
  const naive = openStore(dir);
  const node = jsonRpcUpstream(nodeUrl);
  const started = performance.now();
  try {
    let parent: string | undefined;
    for (let first = 0; first < CATCH_UP_BLOCKS; first += CATCH_UP_BATCH) {
      const numbers = Array.from({ length: Math.min(CATCH_UP_BATCH, CATCH_UP_BLOCKS - first) }, (_, i) => first + i);
      const answers = await Promise.all(
        numbers.map(async (n) => {
          const bodies = await answersOf(node, n);
          const [block] = bodies.map((b) => (JSON.parse(Buffer.from(b).toString()) as { result: Record<string, unknown> }).result);
          return { n, block: block!, bodies };
        }),
      );
      for (const a of answers) {
        if (parent !== undefined && a.block['parentHash'] !== parent) throw new Error(`block ${a.n} does not link`);
        parent = String(a.block['hash']);
      }
      for (let i = 0; i < answers.length; i += COMMIT_BLOCKS) {
        await naive.transactAsync(() => {
          for (const a of answers.slice(i, i + COMMIT_BLOCKS))
            a.bodies.forEach((b, k) => naive.putRaw('blocks', `${blockKey(CHAIN, a.n)}/${k}`, b));
        });
      }
    }
    return (performance.now() - started) / 1000;
  } finally {
    await node.close();
    await naive.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The fetch alone, for the machine's ceiling: the same three answers per block, CATCH_UP_BATCH blocks in
 * flight, each body dropped as it comes; the rate and this process's CPU per block (the stand-in's is not counted).
 */
async function fetchOnlyRun(nodeUrl: string): Promise<{ blocksPerSec: number; cpuMsPerBlock: number }> {
  const node = jsonRpcUpstream(nodeUrl);
  const started = performance.now();
  const cpu = process.cpuUsage();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < CATCH_UP_BLOCKS) {
      await answersOf(node, next++);
    }
  };
  await Promise.all(Array.from({ length: CATCH_UP_BATCH }, lane));
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  await node.close();
  return { blocksPerSec: CATCH_UP_BLOCKS / seconds, cpuMsPerBlock: (used.user + used.system) / 1000 / CATCH_UP_BLOCKS };
}

/** Milliseconds per block of `work` over the fixture blocks, one core (after a warm-up round). */
function msPerBlock(work: (i: number) => void, rounds = sized(25, 1)): number {
  for (let i = 0; i < bundles.length; i++) work(i);
  const started = performance.now();
  for (let r = 0; r < rounds; r++) for (let i = 0; i < bundles.length; i++) work(i);
  return (performance.now() - started) / (rounds * bundles.length);
}

// Every answer is made before it listens: some seconds for 2,000 blocks.
const standIn = await startProcess(
  [fileURLToPath(new URL('../test/kit/node-standin.js', import.meta.url)), String(CATCH_UP_BLOCKS)],
  {},
  120_000,
);
const nodeUrl = `http://127.0.0.1:${standIn.port}`;

/** One round: the server's catch-up, then the naive follower's, the fetch alone, and a cluster ingest node's, over the same stand-in. */
interface Round {
  catchUp: Awaited<ReturnType<typeof serverCatchUp>>;
  /** A cluster's ingest node's (no Data API index), on a nats-server of its own. */
  ingestNode: Awaited<ReturnType<typeof serverCatchUp>>;
  naiveSeconds: number;
  fetchOnly: Awaited<ReturnType<typeof fetchOnlyRun>>;
  load: number;
}
/** A round's figures. */
const roundFigures = ({ catchUp, ingestNode, naiveSeconds, fetchOnly }: Round) => ({
  catchUpBlocksPerSec: Math.round((catchUp.head + 1) / catchUp.seconds),
  naiveCatchUpBlocksPerSec: Math.round(CATCH_UP_BLOCKS / naiveSeconds),
  indexLagBlocks: catchUp.lagAtEnd,
  catchUpIndexedBlocksPerSec: Math.round((catchUp.indexed + 1) / catchUp.indexedSeconds),
  httpP99DuringCatchUpMs: round(percentile(catchUp.getMs, 0.99)),
  httpP50DuringCatchUpMs: round(percentile(catchUp.getMs, 0.5)),
  catchUpServerCpuMsPerBlock: round(catchUp.threads.reduce((a, t) => a + t.ms, 0) / (catchUp.head + 1)),
  catchUpStandInCpuMsPerBlock: round(catchUp.standInCpuMs / (catchUp.head + 1)),
  catchUpDiskBytesPerBlock: Math.round(catchUp.written / (catchUp.head + 1)),
  clusterIngestCatchUpBlocksPerSec: Math.round((ingestNode.head + 1) / ingestNode.seconds),
  clusterIngestCpuMsPerBlock: round(ingestNode.threads.reduce((a, t) => a + t.ms, 0) / (ingestNode.head + 1)),
  clusterNatsCpuMsPerBlock: round(ingestNode.natsCpuMs / (ingestNode.head + 1)),
  fetchOnlyBlocksPerSec: Math.round(fetchOnly.blocksPerSec),
  fetchCpuMsPerBlock: round(fetchOnly.cpuMsPerBlock),
});
type RoundFigures = ReturnType<typeof roundFigures>;
/** Each figure the median of the rounds'. */
const medians = (all: RoundFigures[]): RoundFigures =>
  Object.fromEntries(
    Object.keys(all[0]!).map((k) => {
      const sorted = all.map((f) => f[k as keyof RoundFigures]).sort((a, b) => a - b);
      return [k, sorted[Math.floor(sorted.length / 2)]!];
    }),
  ) as RoundFigures;

const rounds: Round[] = [];
try {
  for (let r = 0; r < ROUNDS; r++) {
    const load = loadavg()[0]!;
    const catchUp = await serverCatchUp(nodeUrl, standIn.child.pid);
    const naiveSeconds = await naiveCatchUp(nodeUrl);
    const fetchOnly = await fetchOnlyRun(nodeUrl);
    // A fresh nats-server each round: a node on the last one's would apply the blocks its stream holds instead.
    const nats = await startNatsServer();
    let ingestNode: Round['ingestNode'];
    try {
      ingestNode = await serverCatchUp(nodeUrl, standIn.child.pid, nats);
    } finally {
      await nats.close();
    }
    rounds.push({ catchUp, ingestNode, naiveSeconds, fetchOnly, load });
    console.log(`round ${r + 1} (load ${load.toFixed(2)}): ${JSON.stringify(roundFigures(rounds.at(-1)!))}`);
  }
} finally {
  await standIn.stop();
}
const perRound = rounds.map(roundFigures);
const caught = medians(perRound);
/** The round whose server catch-up rate is the median: its threads and answer times are the ones described. */
const middle = rounds[perRound.indexOf(perRound.find((f) => f.catchUpBlocksPerSec === caught.catchUpBlocksPerSec)!)]!;
/** Where the server's time went during the catch-up: CPU per block of each of its threads, and of the stand-in. */
const cpuLine = `server threads' CPU per block: ${threadLine(middle.catchUp.threads, middle.catchUp.head + 1, middle.catchUp.pid)}; stand-in ${round(middle.catchUp.standInCpuMs / (middle.catchUp.head + 1))} ms`;
if (CATCH_UP_ONLY) {
  console.log(JSON.stringify(caught));
  console.log(cpuLine);
  console.log(`load average ${loadBefore.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end`);
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
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
    const st = store.db(t).getStats() as {
      pageSize: number;
      treeBranchPageCount: number;
      treeLeafPageCount: number;
      overflowPages: number;
    };
    return st.pageSize * (st.treeBranchPageCount + st.treeLeafPageCount + st.overflowPages);
  };
  const tableBytes = {
    blocks: pages('blocks'),
    probes: pages('probes'),
    canon: pages('canon') + pages('blockHashes'),
    transfers: pages('transfers') + pages('sales'),
  };
  const stored = Object.values(tableBytes).reduce((a, n) => a + n, 0);

  // Scan: read each probe column from LMDB without a copy and walk every address and topic. The first pass
  // is cold (the code not yet optimized, the pages not yet read), as after a start; the second is the steady
  // state a matcher scans in, and the one the goal is judged on.
  const scan = (): { seconds: number; touched: number } => {
    const started = performance.now();
    let touched = 0;
    for (let i = 0; i < BLOCKS; i++) {
      const bytes = store.getRaw('probes', blockKey(CHAIN, FIRST + i))!;
      const p = readProbe(bytes);
      const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (let a = 0; a < p.addressCount; a++) touched = (touched + dv.getUint32(p.addressesAt + a * 20, true)) >>> 0;
      for (let t = 0; t < p.topicCount; t++) touched = (touched + dv.getUint32(p.topicsAt + t * 32, true)) >>> 0;
    }
    return { seconds: (performance.now() - started) / 1000, touched };
  };
  const coldScan = scan();
  const { seconds: scanSeconds, touched } = scan();

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

  // The machine's ceiling for any follower of this node: a block's answers fetched (this process's CPU), then
  // parsed, checked and encoded into what is written (prepareBlock, as a pool worker runs it), with nothing
  // else on the machine: no node serving, no commit, no HTTP. Beside it, the parse alone two ways.
  const answers = bundles.map((b) =>
    [b.block, b.receipts, b.traces].map((result) => Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result }))),
  );
  const jsonParseMs = msPerBlock((i) => answers[i]!.forEach((a) => JSON.parse(a.toString('latin1'))));
  const parseMs = msPerBlock((i) => answers[i]!.forEach((a) => parseJsonBytes(a)));
  const prepareMs = msPerBlock((i) =>
    prepareBlock(CHAIN, { block: answers[i]![0]!, receipts: answers[i]![1]!, traces: answers[i]![2]! }, pack),
  );
  const ceiling = (cpus().length * 1000) / (caught.fetchCpuMsPerBlock + prepareMs);

  // Baseline: the naive writer, the node's JSON kept as it came (one value per block, no probe column
  // and no index), committed as writeInBatches commits, over a quarter of the blocks.
  const naiveBlocks = Math.ceil(BLOCKS / 4);
  const naiveSeconds = writeInBatches(naiveBlocks, (j, b, block) => {
    store.putRaw('meta', `naive/${blockKey(CHAIN, FIRST + j)}`, Buffer.from(JSON.stringify([block, b.receipts, b.traces])));
  });

  const figures = {
    catchUpBlocksPerSec: caught.catchUpBlocksPerSec,
    naiveCatchUpBlocksPerSec: caught.naiveCatchUpBlocksPerSec,
    indexLagBlocks: caught.indexLagBlocks,
    catchUpIndexedBlocksPerSec: caught.catchUpIndexedBlocksPerSec,
    httpP99DuringCatchUpMs: caught.httpP99DuringCatchUpMs,
    catchUpServerCpuMsPerBlock: caught.catchUpServerCpuMsPerBlock,
    catchUpDiskBytesPerBlock: caught.catchUpDiskBytesPerBlock,
    clusterIngestCatchUpBlocksPerSec: caught.clusterIngestCatchUpBlocksPerSec,
    clusterIngestCpuMsPerBlock: caught.clusterIngestCpuMsPerBlock,
    clusterNatsCpuMsPerBlock: caught.clusterNatsCpuMsPerBlock,
    blocksWrittenPerSec: Math.round(BLOCKS / writeSeconds),
    naiveBlocksWrittenPerSec: Math.round(naiveBlocks / naiveSeconds),
    encodeOnlyBlocksPerSec: Math.round(BLOCKS / cpuSeconds),
    hexDecodeFloorBlocksPerSec: Math.round(BLOCKS / floorSeconds),
    probeColumnScanBlocksPerSec: Math.round(BLOCKS / scanSeconds),
    probeColumnColdScanBlocksPerSec: Math.round(BLOCKS / coldScan.seconds),
    bytesPerBlockStored: Math.round(stored / BLOCKS),
    bytesPerBlockNodeJson: Math.round(json / BLOCKS),
    fetchOnlyBlocksPerSec: caught.fetchOnlyBlocksPerSec,
    fetchCpuMsPerBlock: caught.fetchCpuMsPerBlock,
    jsonParseMsPerBlock: round(jsonParseMs),
    parseMsPerBlock: round(parseMs),
    prepareMsPerBlock: round(prepareMs),
    ceilingBlocksPerSec: Math.round(ceiling),
  };
  const ratio = figures.bytesPerBlockStored / figures.bytesPerBlockNodeJson;
  printRows([
    ['catch-up blocks/s', figures.catchUpBlocksPerSec, '/s', figures.naiveCatchUpBlocksPerSec],
    ['naive catch-up blocks/s', figures.naiveCatchUpBlocksPerSec, '/s'],
    ['indexes behind the head at its end', figures.indexLagBlocks, 'blocks'],
    ['catch-up with the indexes, blocks/s', figures.catchUpIndexedBlocksPerSec, '/s'],
    ['HTTP p99 during catch-up', figures.httpP99DuringCatchUpMs, 'ms'],
    ['server CPU per block (all threads)', figures.catchUpServerCpuMsPerBlock, 'ms'],
    ['server disk writes per block', figures.catchUpDiskBytesPerBlock, 'B'],
    ["a cluster's ingest node, blocks/s", figures.clusterIngestCatchUpBlocksPerSec, '/s', figures.naiveCatchUpBlocksPerSec],
    ['ingest node CPU per block (all threads)', figures.clusterIngestCpuMsPerBlock, 'ms'],
    ['nats-server CPU per block', figures.clusterNatsCpuMsPerBlock, 'ms'],
    ['blocks written/s', figures.blocksWrittenPerSec, '/s', figures.naiveBlocksWrittenPerSec],
    ['naive writer blocks/s', figures.naiveBlocksWrittenPerSec, '/s'],
    ['encode only blocks/s', figures.encodeOnlyBlocksPerSec, '/s'],
    ['hex decode floor blocks/s', figures.hexDecodeFloorBlocksPerSec, '/s'],
    ['probe columns scanned/s', figures.probeColumnScanBlocksPerSec, '/s'],
    ['probe columns scanned/s, first pass', figures.probeColumnColdScanBlocksPerSec, '/s'],
    ['bytes per block stored', figures.bytesPerBlockStored, 'B', figures.bytesPerBlockNodeJson],
    ['bytes per block, node JSON', figures.bytesPerBlockNodeJson, 'B'],
    ['fetch only blocks/s', figures.fetchOnlyBlocksPerSec, '/s'],
    ['fetch CPU per block', figures.fetchCpuMsPerBlock, 'ms'],
    ['JSON.parse per block', figures.jsonParseMsPerBlock, 'ms'],
    ['parseJsonBytes per block', figures.parseMsPerBlock, 'ms'],
    ['prepare per block (parse+encode)', figures.prepareMsPerBlock, 'ms'],
    ['machine ceiling blocks/s', figures.ceilingBlocksPerSec, '/s'],
  ]);
  const met =
    figures.catchUpBlocksPerSec >= figures.naiveCatchUpBlocksPerSec &&
    figures.catchUpBlocksPerSec >= 0.6 * figures.ceilingBlocksPerSec &&
    figures.indexLagBlocks <= 64 &&
    figures.httpP99DuringCatchUpMs <= 20 &&
    figures.probeColumnScanBlocksPerSec >= 20_000 &&
    ratio <= 0.4;
  const goals = {
    catchUpBlocksPerSec: '>= naiveCatchUpBlocksPerSec and >= 0.6 × ceilingBlocksPerSec',
    indexLagBlocks: '<= 64',
    httpP99DuringCatchUpMs: '<= 20',
    probeColumnScanBlocksPerSec: '>= 20000 (one core)',
    bytesPerBlockStored: '<= 40% of bytesPerBlockNodeJson',
  };
  report('ingest', 'npm run bench:ingest', figures, goals, met, [
    `Catch-up: ${CATCH_UP_BLOCKS} blocks served by a local JSON-RPC stand-in in its own process (test/kit/node-standin.ts: the ${bundles.length} bundles in turn, renumbered from 0 and relinked parent by parent, answers cut once and served as ready bytes), followed by the server binary (CHAINPOST_START_BLOCKS=0x1=0: the whole chain backfilled, as a user catching up a month of a chain; its follower with CHAINPOST_POLL_MS=20, its worker pool, LMDB on a temp directory; everything it does in production: record, probe column, index rows, matching, and the Data API's indexes, which the catch-up keeps pace with) from fetch to commit, timed from its listening line until /health shows the last block; indexLagBlocks: how far the Data API's indexes (/health's indexed) were behind then; catchUpIndexedBlocksPerSec: timed until they held it too. Meanwhile this process sent an authenticated GET of the Data API every ${GET_EVERY_MS} ms. Naive (naiveCatchUpBlocksPerSec): the same fetches and batches of ${CATCH_UP_BATCH} in this process, JSON.parse of every answer, parent links checked, the node's answers stored as they came, one asynchronous LMDB transaction per ${COMMIT_BLOCKS} blocks; it indexes nothing. ${ROUNDS} rounds (server, naive, fetch alone, ingest node, in turn); each catch-up figure is the median of the rounds' (${rounds.map((r, i) => `round ${i + 1}, load ${r.load.toFixed(2)}: ${perRound[i]!.catchUpBlocksPerSec} vs ${perRound[i]!.naiveCatchUpBlocksPerSec} blocks/s, lag ${perRound[i]!.indexLagBlocks}, p99 ${perRound[i]!.httpP99DuringCatchUpMs} ms`).join('; ')}). In the median round: ${middle.catchUp.head + 1} blocks in ${round(middle.catchUp.seconds)} s, ${middle.catchUp.getMs.length} GETs answered (p50 ${round(percentile(middle.catchUp.getMs, 0.5))} ms, max ${round(Math.max(...middle.catchUp.getMs))} ms); ${cpuLine} (/proc/PID/task: Node gives its threads one name; the main thread is the serving one, the others are the worker pool's, the store's writer thread, LMDB's write thread and V8's and libuv's). catchUpServerCpuMsPerBlock: every thread of the server, per block; catchUpDiskBytesPerBlock: what it had written to the disk (/proc/PID/io write_bytes) per block. A cluster's ingest node (clusterIngestCatchUpBlocksPerSec, after the fetch alone in each round): the same binary as a node of a one-node cluster on a nats-server of its own (CHAINPOST_NATS, \`serve --roles ingest,match,deliver\`), which serves no API and so builds no Data API index (a cluster's nodes with \`api\` index the blocks they apply), publishes each block to JetStream and matches as the owner of every delivery partition; timed from its log line that it follows the chain (its lease taken) until /health shows the last block, no GET sent (rounds: ${perRound.map((f) => f.clusterIngestCatchUpBlocksPerSec).join(', ')} blocks/s); clusterIngestCpuMsPerBlock: its threads' CPU, clusterNatsCpuMsPerBlock the nats-server's, per block.`,
    `${BLOCKS} blocks: the ${bundles.length} complete mainnet bundles of test/fixtures/evm/chainstorage (mainnet bundles, sources in test/fixtures/README.md; ${txCounts.min}–${txCounts.max} transactions each) replayed under new numbers, from the node's parsed JSON; normalize + record + probe column + hash + transfer indexes, ${CATCH_UP_BATCH} blocks per synchronous LMDB transaction (the follower itself commits ${COMMIT_BLOCKS} per asynchronous one), each commit flushed to disk.`,
    `Baseline (naiveBlocksWrittenPerSec): the node's JSON stored as it came, one value per block, ${CATCH_UP_BATCH} blocks per transaction, no probe column or index (${naiveBlocks} blocks); encodeOnlyBlocksPerSec: normalize + record + probe column + transfer keys with no LMDB, one core; hexDecodeFloorBlocksPerSec: only a walk of the stored record with the native hex decode of each of its "0x" strings (${Math.round(floorBytes / BLOCKS)} B per block), one core.`,
    `Ceiling (ceilingBlocksPerSec) = ${cpus().length} cores × 1000 ÷ (fetchCpuMsPerBlock + prepareMsPerBlock): what a follower of this node could reach here if fetching and preparing were all the machine did, spread perfectly over every core, with the node's serving, the commits and LMDB's write thread free. fetchOnlyBlocksPerSec: the same fetches (three answers a block, ${CATCH_UP_BATCH} blocks in flight) with the bodies dropped, and fetchCpuMsPerBlock this process's CPU for them; prepareMsPerBlock: prepareBlock (engine/evm/prepared.ts, what a pool worker does per block: parse, check, record, probe column, index rows) over the fixture answers, one core; jsonParseMsPerBlock: Buffer.toString + JSON.parse of the three answers, parseMsPerBlock: parseJsonBytes of them (engine/ingest/json-bytes.ts, which never makes a string over 64 KB: V8 puts larger ones in its large-object space, slow to fill on this machine).`,
    `Machine shared with whatever else runs on it: 1-minute load average ${loadBefore.toFixed(2)} when the bench started, ${loadavg()[0]!.toFixed(2)} at the end.`,
    `Stored = the LMDB pages of the tables written (per block: records ${Math.round(tableBytes.blocks / BLOCKS)} B, probe columns ${Math.round(tableBytes.probes / BLOCKS)} B, transfer and sales indexes ${Math.round(tableBytes.transfers / BLOCKS)} B, hashes both ways ${Math.round(tableBytes.canon / BLOCKS)} B, where the replicas share the fixtures' ${FIXTURE_BLOCKS.length} block hashes, so blockHashes holds that many keys); node JSON = block + receipts + callTracer traces. Stored/JSON = ${(100 * ratio).toFixed(1)}%. Probe scan: two passes over the stored columns, one core; probeColumnScanBlocksPerSec is the second (steady state), probeColumnColdScanBlocksPerSec the first (cold, as after a start). Scan checksum ${touched}.`,
  ]);
  console.log(`\nload average ${loadBefore.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end`);
  console.log(`${met ? 'goals met' : 'goals not met'}; wrote bench/results/ingest.json and bench/RESULTS.md`);
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
