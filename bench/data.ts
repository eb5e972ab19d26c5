/**
 * npm run bench:data — the Data API's figures:
 * - a synthetic chain (test/kit/data-chain.ts) of BENCH_TRANSFERS transfers (default 10,000,000) over 1,000,000
 *   wallets and 10,000 tokens, written through the real code: the follower's rows of each block (indexRows:
 *   canon, transfers, sales) and every Data API index (DataIndexer.index, the batches the server's indexer
 *   writes), into LMDB under bench/.cache/ (kept between runs: the build resumes where the last run's time
 *   budget ended, and the dataset is reused while the index code is the same);
 * - autocannon (bounded, loopback) on five endpoints for random wallets (random tokens for the token list),
 *   on the server binary following the chain's node (bench/data-node.ts: at its head, idle), and in the same
 *   run the same routes and core on Fastify (bench/alt-server.ts): `<endpoint>ReqPerSec`, `<endpoint>P99Ms`;
 * - the most index entries (range reads) one page read touches, over random wallets, against limit + 2.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { cannon, type CannonRun } from './cannon.js';
import { DataIndexer } from '../engine/data-api/common/indexer.js';
import { dataIndexes } from '../engine/data-api/indexes.js';
import type { DataDeps } from '../engine/data-api/common/deps.js';
import { walletTransfers, tokenTransfers, walletTransfersQuery, tokenTransfersQuery } from '../engine/data-api/erc20/transfers.js';
import { walletNfts, walletNftsQuery } from '../engine/data-api/nft/owned.js';
import { NftMetadata } from '../engine/data-api/nft/metadata.js';
import { historyQuery, walletHistory } from '../engine/data-api/transactions/wallet.js';
import { ServiceClock } from '../engine/clock.js';
import { quietLog } from '../test/kit/quiet-log.js';
import { indexRows } from '../engine/evm/store.js';
import { TokenMetadata } from '../engine/evm/token-metadata.js';
import { TABLES, openStore, type Store } from '../storage/env.js';
import { footprint } from './lmdb-footprint.js';
import { addressOf, syntheticBlock, type ChainShape } from '../test/kit/data-chain.js';
import { startProcess, type Started } from '../test/kit/proc.js';
import { counting } from '../test/kit/counting-kv.js';
import { BENCH_DIR, BIN, SMOKE, printRows, report, round, sized } from './report.js';
import { noNode } from '../test/kit/no-node.js';

const CHAIN = '0x1';
const TRANSFERS = Number(process.env['BENCH_TRANSFERS'] ?? sized(10_000_000, 2_000));
const PER_BLOCK = 1_000;
const SHAPE: ChainShape = {
  blocks: Math.ceil(TRANSFERS / PER_BLOCK),
  transfersPerBlock: PER_BLOCK,
  wallets: sized(1_000_000, 1_000),
  tokens: sized(10_000, 100),
  nftContracts: sized(100, 10),
  seed: 17,
};
/** Seconds this run may spend building the dataset; the rest of it waits for the next run. */
const BUILD_BUDGET_S = Number(process.env['BENCH_BUILD_SECONDS'] ?? 180);
/**
 * Blocks per index transaction while building: 100,000 transfers. A backfill's load, not the follower's block at a
 * time: at a million transfers and more, nearly every index write lands in its own B-tree page, which a
 * transaction copies and writes once however many of its writes land there.
 */
const BUILD_BATCH = 100;
const DURATION_S = Number(process.env['BENCH_SECONDS'] ?? sized(4, 1));
/**
 * autocannon's connections, one request in flight on each. 8: enough that the server (one thread, answering one
 * request at a time) has the next request waiting while autocannon, on the other core, reads the answers; more
 * only lengthen the queue (the p99 grows with it, not the rate), fewer leave the server waiting on the client.
 */
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 8);
/**
 * Random paths drawn per endpoint before its run, split between the connections. Built per request (autocannon's
 * setupRequest), the paths cost autocannon, which shares the cores with the server, much of its CPU: the run then
 * measured the client.
 */
const PATHS = Number(process.env['BENCH_PATHS'] ?? sized(2_000, 200));
/**
 * Seconds of requests, not recorded, before each endpoint's run. A new server process maps the store's pages as it
 * first touches them (minor page faults): its first thousands of requests for random wallets are slower than the
 * ones after, so with a second of warm-up the run measured that start as much as the reads.
 */
const WARM_UP_S = sized(3, 0);
const KEY = 'cpk_bench_data_0123456789abcdef';
const LIMIT = 25;

/** The compiled index code: a dataset built by other code is rebuilt. */
function codeHash(): string {
  const h = createHash('sha256');
  const dir = fileURLToPath(new URL('../engine/data-api/', import.meta.url));
  // Every folder of it: the indexes live in the domains' folders.
  for (const f of readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js'))
    .sort())
    h.update(f).update(readFileSync(join(dir, f)));
  for (const f of ['../engine/evm/store.js', '../storage/codec.js', '../storage/hex-keys.js', '../storage/env.js'])
    h.update(readFileSync(fileURLToPath(new URL(f, import.meta.url))));
  h.update(readFileSync(fileURLToPath(new URL('../test/kit/data-chain.js', import.meta.url))));
  return h.digest('hex').slice(0, 12);
}

/**
 * Where datasets are kept: bench/.cache/, or at the smoke size a temporary folder of this run's (removed as it ends),
 * so that a smoke run neither uses nor removes the dataset a measured run built.
 */
const cacheDir = SMOKE ? mkdtempSync(join(tmpdir(), 'chainpost-bench-data-')) : join(BENCH_DIR, '.cache');
if (SMOKE) process.on('exit', () => rmSync(cacheDir, { recursive: true, force: true }));
const dataDir = join(cacheDir, `data-${TRANSFERS}-${codeHash()}`);
// Datasets of older code or other sizes take disk space for nothing.
if (existsSync(cacheDir))
  for (const d of readdirSync(cacheDir))
    if (d.startsWith('data-') && join(cacheDir, d) !== dataDir) rmSync(join(cacheDir, d), { recursive: true, force: true });
mkdirSync(dataDir, { recursive: true });

/** No node behind the indexes: the chain creates its tokens in block 0 and names them in the store, so nothing is asked. */

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
const log = quietLog(() => clock.now());

interface Built {
  blocks: number;
  transfers: number;
  buildSeconds: number;
}

/** Builds (or goes on building) the dataset; the blocks built so far. */
async function build(store: Store): Promise<Built> {
  const doneFile = join(dataDir, 'built.json');
  const before = existsSync(doneFile)
    ? (JSON.parse(readFileSync(doneFile, 'utf8')) as Built)
    : { blocks: 0, transfers: 0, buildSeconds: 0 };
  if (before.blocks >= SHAPE.blocks) return before;
  const tokens = new TokenMetadata(store, noNode.call);
  const indexer = new DataIndexer(store, dataIndexes({ reads: noNode, tokens }), clock, log);
  if (before.blocks === 0) {
    // Token metadata as TokenMetadata stores it after its eth_calls.
    store.transact(() => {
      for (let i = 0; i < SHAPE.tokens; i++) {
        const nft = i >= SHAPE.tokens - SHAPE.nftContracts;
        store.put('tokens', `${CHAIN}/${addressOf('token', i)}`, {
          name: `Token ${i}`,
          symbol: `T${i}`,
          decimals: nft ? null : 18,
          nftStandard: nft ? (i % 2 === 0 ? 'erc721' : 'erc1155') : null,
          possibleSpam: false,
        });
      }
    });
  }
  const started = performance.now();
  let n = before.blocks;
  while (n < SHAPE.blocks && performance.now() - started < BUILD_BUDGET_S * 1000) {
    const blocks = Array.from({ length: Math.min(BUILD_BATCH, SHAPE.blocks - n) }, (_, i) => syntheticBlock(CHAIN, SHAPE, n + i));
    const rows = blocks
      .flatMap((b) => indexRows(CHAIN, b.record))
      .sort((a, b) => (a.table < b.table ? -1 : a.table > b.table ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const head = blocks.at(-1)!.number;
    // What the follower commits for these blocks (their records aside: the endpoints measured never read them).
    await store.transactAsync(() => {
      for (const r of rows) store.put(r.table, r.key, r.value);
      // The head as a backfill's follower has it, far ahead of the indexes: no undo rows (nothing that deep is taken back).
      store.put('chainState', CHAIN, { head: SHAPE.blocks - 1, confirmed: SHAPE.blocks - 13, tracer: null, pruned: head });
    });
    if (!(await indexer.index(CHAIN, blocks))) throw new Error(`the indexer refused blocks ${n}…${head}`);
    n = head + 1;
    if (n % 1000 < BUILD_BATCH)
      console.error(`built ${n} of ${SHAPE.blocks} blocks (${round((performance.now() - started) / 1000)} s this run)`);
  }
  const built = { blocks: n, transfers: n * PER_BLOCK, buildSeconds: before.buildSeconds + (performance.now() - started) / 1000 };
  writeFileSync(doneFile, JSON.stringify(built));
  return built;
}

const store = openStore(dataDir);
let built: Built;
try {
  built = await build(store);
} catch (err) {
  await store.close();
  throw err;
}
const complete = built.blocks >= SHAPE.blocks;
/** What the dataset takes: entries and B-tree pages (bytes) of every table, per transfer built. */
const taken = footprint(
  TABLES.map((name) => store.db(name)),
  built.transfers,
);
const size = { entriesPerTransfer: taken.entries, bytesPerTransfer: taken.bytes };
console.error(
  `dataset: ${built.blocks} of ${SHAPE.blocks} blocks (${built.transfers.toLocaleString('en-US')} transfers, built in ${round(built.buildSeconds)} s over its runs; ${size.entriesPerTransfer} entries and ${size.bytesPerTransfer} bytes per transfer)`,
);

const randomWallet = (): string => addressOf('wallet', Math.floor(Math.random() * SHAPE.wallets));
const randomToken = (): string => addressOf('token', Math.floor(Math.random() * (SHAPE.tokens - SHAPE.nftContracts)));

/** The five endpoints: figure name, path for a random wallet (or token). */
const ENDPOINTS: Array<[name: string, path: () => string]> = [
  ['walletErc20', () => `/api/v2.2/${randomWallet()}/erc20?chain=0x1`],
  ['walletErc20Transfers', () => `/api/v2.2/${randomWallet()}/erc20/transfers?chain=0x1&limit=${LIMIT}`],
  ['tokenTransfers', () => `/api/v2.2/erc20/${randomToken()}/transfers?chain=0x1&limit=${LIMIT}`],
  ['walletNfts', () => `/api/v2.2/${randomWallet()}/nft?chain=0x1&limit=${LIMIT}`],
  ['walletHistory', () => `/api/v2.2/wallets/${randomWallet()}/history?chain=0x1&limit=${LIMIT}`],
];

/** Index entries one page read touches, at most, over random wallets (first pages and the pages after them). */
async function pageReads(): Promise<{ maxRangeEntries: number; maxPointReads: number; pages: number }> {
  const c = counting(store);
  const head = SHAPE.blocks - 1;
  const tokens = new TokenMetadata(c.kv, noNode.call);
  const indexer = new DataIndexer(c.kv, [], clock, log);
  const follower = () => ({
    chain: CHAIN,
    head,
    confirmed: head - 12,
    nodeHead: head,
    oldest: 0,
    upstream: 'ok' as const,
    upstreamErrors: 0,
  });
  const deps: DataDeps = { kv: c.kv, tokens, reads: noNode, indexer, follower };
  const nft = {
    ...deps,
    metadata: new NftMetadata(c.kv, noNode, { get: () => Promise.resolve({ error: 'no fetch in the bench' }) }, clock),
  };
  // Each list with the address it pages (a cursor belongs to one query).
  const lists: Array<[address: () => string, page: (address: string, cursor: string | undefined) => Promise<{ cursor?: string | null }>]> =
    [
      [
        randomWallet,
        (address, cursor) =>
          walletTransfers(deps, CHAIN, walletTransfersQuery.parse({ address, limit: String(LIMIT), ...(cursor ? { cursor } : {}) }), []),
      ],
      [
        randomToken,
        (address, cursor) =>
          tokenTransfers(deps, CHAIN, tokenTransfersQuery.parse({ address, limit: String(LIMIT), ...(cursor ? { cursor } : {}) })),
      ],
      [
        randomWallet,
        (address, cursor) =>
          walletNfts(nft, CHAIN, walletNftsQuery.parse({ address, limit: String(LIMIT), ...(cursor ? { cursor } : {}) })),
      ],
      [
        randomWallet,
        (address, cursor) =>
          walletHistory(deps, CHAIN, historyQuery.parse({ address, limit: String(LIMIT), ...(cursor ? { cursor } : {}) })),
      ],
    ];
  let maxRangeEntries = 0;
  let maxPointReads = 0;
  let pages = 0;
  for (let i = 0; i < 50; i++) {
    for (const [pick, list] of lists) {
      // A first page, then the page after it (a cursor's read: limit + 2).
      const address = pick();
      let cursor: string | undefined;
      for (let p = 0; p < 2; p++) {
        c.reset();
        const page = await list(address, cursor);
        maxRangeEntries = Math.max(maxRangeEntries, c.ranges());
        maxPointReads = Math.max(maxPointReads, c.points());
        pages++;
        cursor = page.cursor ?? undefined;
        if (cursor === undefined) break;
      }
    }
  }
  return { maxRangeEntries, maxPointReads, pages };
}

type Run = CannonRun;

/** autocannon on one endpoint for `seconds` over PATHS random paths drawn beforehand (bench/cannon.ts). */
const run = (port: number, path: () => string, seconds = DURATION_S): Promise<Run> =>
  cannon(
    port,
    Array.from({ length: Math.ceil(PATHS / CONNECTIONS) * CONNECTIONS }, () => ({ method: 'GET' as const, path: path() })),
    { seconds, connections: CONNECTIONS, key: KEY },
  );

async function serve(args: string[], nodeUrl: string): Promise<Started> {
  return startProcess(
    args,
    {
      CHAINPOST_DATA: dataDir,
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: KEY,
      CHAINPOST_CHAINS: `0x1=${nodeUrl}`,
      CHAINPOST_RATE_LIMIT: '0',
      CHAINPOST_ACCESS_LOG: '0',
    },
    60_000,
  );
}

/** Each endpoint's run on a server, after WARM_UP_S seconds of warm-up per endpoint. */
async function measure(server: Started): Promise<Record<string, Run>> {
  const out: Record<string, Run> = {};
  for (const [name, path] of ENDPOINTS) {
    const probe = await fetch(`http://127.0.0.1:${server.port}${path()}`, { headers: { 'x-api-key': KEY } });
    if (probe.status !== 200) throw new Error(`${name}: ${probe.status} ${await probe.text()}`);
    // Not recorded: the route's code compiled and optimized, and (first endpoint) the server's start behind it.
    if (WARM_UP_S > 0) await run(server.port, path, WARM_UP_S);
    out[name] = await run(server.port, path);
  }
  return out;
}

/** Runs of the floor comparison, alternating: the machine's noise moves single runs by tens of percent. */
const FLOOR_ROUNDS = sized(3, 1);

interface FloorRuns {
  floor: Run[];
  server: Run[];
}

/**
 * tokenTransfers on bench/data-floor.ts, the least its answer costs here, against the server on the same paths, after
 * checking the floor answers what the server does (the items, byte for byte) for 20 tokens: FLOOR_ROUNDS runs of each,
 * alternating, both processes up and only one asked at a time.
 */
async function measureFloor(nodeUrl: string): Promise<FloorRuns> {
  const floorServer = await serve([fileURLToPath(new URL('./data-floor.js', import.meta.url))], nodeUrl);
  try {
    const server = await serve([BIN, 'serve'], nodeUrl);
    try {
      const path = (): string => `/api/v2.2/erc20/${randomToken()}/transfers?chain=0x1&limit=${LIMIT}`;
      for (let i = 0; i < 20; i++) {
        const one = path();
        const [real, bare] = await Promise.all(
          [server, floorServer].map(
            async (s) =>
              (await (await fetch(`http://127.0.0.1:${s.port}${one}`, { headers: { 'x-api-key': KEY } })).json()) as { result: unknown[] },
          ),
        );
        if (JSON.stringify(real!.result) !== JSON.stringify(bare!.result))
          throw new Error(`bench/data-floor.ts answers ${one} otherwise than the server`);
      }
      const runs: FloorRuns = { floor: [], server: [] };
      if (WARM_UP_S > 0) for (const s of [floorServer, server]) await run(s.port, path, WARM_UP_S);
      const answered = (run: Run): Run => {
        if (run.non2xx > 0) throw new Error(`${run.non2xx} answers of tokenTransfers were not 2xx in the floor comparison`);
        return run;
      };
      for (let i = 0; i < FLOOR_ROUNDS; i++) {
        runs.floor.push(answered(await run(floorServer.port, path)));
        runs.server.push(answered(await run(server.port, path)));
      }
      return runs;
    } finally {
      await server.stop();
    }
  } finally {
    await floorServer.stop();
  }
}

/** The run of median req/s. */
const median = (runs: Run[]): Run => [...runs].sort((a, b) => a.reqPerSec - b.reqPerSec)[runs.length >> 1]!;

if (!complete) {
  await store.close();
  console.log(
    `the dataset is not complete yet (${built.blocks} of ${SHAPE.blocks} blocks): run npm run bench:data again to go on building it; nothing measured`,
  );
  process.exit(0);
}

const reads = await pageReads();
await store.close();

const node = await startProcess([fileURLToPath(new URL('./data-node.js', import.meta.url)), String(SHAPE.blocks - 1)], {}, 15_000);
const nodeUrl = `http://127.0.0.1:${node.port}`;
let uws: Record<string, Run>;
let fastify: Record<string, Run>;
let floor: FloorRuns;
try {
  const server = await serve([BIN, 'serve'], nodeUrl);
  try {
    uws = await measure(server);
  } finally {
    await server.stop();
  }
  const alt = await serve([fileURLToPath(new URL('./alt-server.js', import.meta.url)), 'fastify'], nodeUrl);
  try {
    fastify = await measure(alt);
  } finally {
    await alt.stop();
  }
  floor = await measureFloor(nodeUrl);
} finally {
  await node.stop();
}

const figures: Record<string, number> = {};
const goal: Record<string, string> = {};
let met = true;
for (const [name] of ENDPOINTS) {
  figures[`${name}ReqPerSec`] = Math.round(uws[name]!.reqPerSec);
  figures[`${name}P99Ms`] = uws[name]!.p99Ms;
  figures[`${name}MaxMs`] = uws[name]!.maxMs;
  figures[`fastify${name[0]!.toUpperCase()}${name.slice(1)}ReqPerSec`] = Math.round(fastify[name]!.reqPerSec);
  figures[`fastify${name[0]!.toUpperCase()}${name.slice(1)}P99Ms`] = fastify[name]!.p99Ms;
  figures[`fastify${name[0]!.toUpperCase()}${name.slice(1)}MaxMs`] = fastify[name]!.maxMs;
  goal[`${name}ReqPerSec`] = '>= 10000';
  goal[`${name}P99Ms`] = '<= 5';
  met &&= uws[name]!.reqPerSec >= 10_000 && uws[name]!.p99Ms <= 5 && uws[name]!.non2xx === 0;
}
const floorRun = median(floor!.floor);
const serverRun = median(floor!.server);
figures['floorTokenTransfersReqPerSec'] = Math.round(floorRun.reqPerSec);
figures['floorTokenTransfersP99Ms'] = floorRun.p99Ms;
figures['floorServerTokenTransfersReqPerSec'] = Math.round(serverRun.reqPerSec);
figures['floorServerTokenTransfersP99Ms'] = serverRun.p99Ms;
figures['maxIndexEntriesPerPage'] = reads.maxRangeEntries;
figures['pageLimit'] = LIMIT;
figures['maxPointReadsPerPage'] = reads.maxPointReads;
figures['transfers'] = built.transfers;
figures['buildSeconds'] = round(built.buildSeconds, 1);
figures['buildTransfersPerSec'] = Math.round(built.transfers / built.buildSeconds);
figures['entriesPerTransfer'] = size.entriesPerTransfer;
figures['bytesPerTransfer'] = size.bytesPerTransfer;
goal['maxIndexEntriesPerPage'] = `<= ${LIMIT + 2}`;
met &&= reads.maxRangeEntries <= LIMIT + 2;

printRows(
  ENDPOINTS.flatMap(
    ([name]): Array<[string, number, string, number?]> => [
      [`${name}ReqPerSec`, figures[`${name}ReqPerSec`]!, '', fastify[name]!.reqPerSec],
      [`${name}P99Ms`, figures[`${name}P99Ms`]!, '', fastify[name]!.p99Ms],
      [`${name}MaxMs`, figures[`${name}MaxMs`]!, '(slowest request)', fastify[name]!.maxMs],
    ],
  ).concat([
    [
      'floorTokenTransfersReqPerSec',
      figures['floorTokenTransfersReqPerSec']!,
      `(bench/data-floor.ts, median of ${FLOOR_ROUNDS}: ${floor!.floor.map((r) => Math.round(r.reqPerSec)).join(', ')})`,
    ],
    ['floorTokenTransfersP99Ms', floorRun.p99Ms, ''],
    [
      'floorServerTokenTransfersReqPerSec',
      figures['floorServerTokenTransfersReqPerSec']!,
      `(the server, alternating with it: ${floor!.server.map((r) => Math.round(r.reqPerSec)).join(', ')})`,
    ],
    ['floorServerTokenTransfersP99Ms', serverRun.p99Ms, ''],
    ['maxIndexEntriesPerPage', reads.maxRangeEntries, `(limit ${LIMIT}; ${reads.pages} pages)`],
    ['maxPointReadsPerPage', reads.maxPointReads, ''],
    ['buildTransfersPerSec', figures['buildTransfersPerSec']!, ''],
    ['entriesPerTransfer', size.entriesPerTransfer, '(LMDB entries, every table)'],
    ['bytesPerTransfer', size.bytesPerTransfer, '(B-tree pages, every table)'],
  ]),
);
report('data', TRANSFERS === 10_000_000 ? 'npm run bench:data' : `BENCH_TRANSFERS=${TRANSFERS} npm run bench:data`, figures, goal, met, [
  `Dataset: a synthetic chain of ${SHAPE.blocks.toLocaleString('en-US')} blocks of ${PER_BLOCK} transfers (${built.transfers.toLocaleString('en-US')} in all; test/kit/data-chain.ts, seed ${SHAPE.seed}): ERC-20 transfers mostly (three in ten mints), one in ten an ERC-721 or ERC-1155 transfer, between ${SHAPE.wallets.toLocaleString('en-US')} wallets spread over the key space, over ${SHAPE.tokens.toLocaleString('en-US')} tokens (${SHAPE.nftContracts} NFT collections) of which a few carry most transfers; block 0 creates every token. Written through the real code: each block's follower rows (indexRows: canon, block hashes, transfers, sales) and every Data API index (DataIndexer.index, batches of ${BUILD_BATCH} blocks), into LMDB under bench/.cache/ (kept between runs; built in ${round(built.buildSeconds)} s over its runs, buildTransfersPerSec). What it takes: entriesPerTransfer (LMDB entries of every table) and bytesPerTransfer (their B-tree and overflow pages), per transfer built.`,
  `Requests: autocannon (${CONNECTIONS} connections, BENCH_CONNECTIONS; ${DURATION_S} s per endpoint after ${WARM_UP_S} s not recorded, loopback), each request for a random wallet (a random ERC-20 token for tokenTransfers): ${PATHS.toLocaleString('en-US')} random paths per endpoint drawn before its run (BENCH_PATHS), each connection going round its own share (a path built per request cost autocannon, which shares the cores with the server, much of its CPU; every path given to every connection delayed the first requests while autocannon made the other connections' requests, and the slowest request measured that), limit ${LIMIT} on the lists, on the server binary (uWebSockets.js) following the chain's node (bench/data-node.ts, at its head), then on the same core and routes served by Fastify (bench/alt-server.ts): the fastify… figures and the baseline column. Goal per endpoint: >= 10,000 req/s and p99 <= 5 ms, no non-2xx.`,
  `Floor: bench/data-floor.ts answers tokenTransfers with the same items, byte for byte (checked for 20 random tokens before it is measured), from the same store, at the least cost found here: bare uWebSockets.js, no key, validation, rate limit or metrics, one lmdb-js range per page read as bytes and each row's bytes written straight into the answer's text (no objects, no JSON.stringify), token and block fields read once and kept. Measured like the servers, ${FLOOR_ROUNDS} runs of it alternating with ${FLOOR_ROUNDS} of the server on the same paths (both up, one asked at a time), each figure the run of median req/s: floorTokenTransfers… the floor's, floorServerTokenTransfers… the server's. What the server could reach at most, on this machine with this layout, with autocannon on the same 2 cores.`,
  `Page reads: the four paged lists called in-process over a counting store for 50 random wallets (tokens) each, a first page and the next; maxIndexEntriesPerPage the most entries range reads returned for one page (goal <= limit + 2), maxPointReadsPerPage the most point reads (a row's block, token or summary).`,
]);
console.log(`${met ? 'goals met' : 'goals not met'}; wrote bench/results/data.json and bench/RESULTS.md`);
