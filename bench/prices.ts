/**
 * npm run bench:prices — the figures for prices derived from DEX swaps:
 * - a synthetic DEX chain (bench/dex-chain.ts) of BENCH_SWAPS swaps (default 1,000,000) over 10,000 Uniswap V2
 *   pairs, written through the real code: each block's follower rows (indexRows) and the DEX, price-mark and
 *   candle indexes with block times (DataIndexer.index, batches of blocks as a backfill writes them), into LMDB in a temp dir:
 *   `swapsIndexedPerSec` (the indexing alone, one thread), beside its floor `swapWriteFloorPerSec` (bench/swap-floor.ts:
 *   the same store writing only the DEX index's rows of each swap, nothing read or computed);
 * - autocannon (bounded, loopback) on GET /erc20/:address/price for random tokens and POST /erc20/prices with 100
 *   random tokens, on the server binary following the chain's node (bench/data-node.ts, at its head), then on the
 *   same core and routes served by Fastify (bench/alt-server.ts): `priceP99Ms`, `batchPricesP99Ms` and their req/s.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { cannon, type CannonRequest, type CannonRun } from './cannon.js';
import { ServiceClock } from '../engine/clock.js';
import { blockTimesIndex } from '../engine/data-api/chain/index/writer.js';
import { dexIndex } from '../engine/data-api/dex/index/writer.js';
import { DataIndexer, type DataIndex } from '../engine/data-api/common/indexer.js';
import { priceMarksIndex } from '../engine/data-api/dex/index/marks-writer.js';
import { candleIndex } from '../engine/data-api/dex/index/candle-writer.js';
import { TokenMetadata } from '../engine/evm/token-metadata.js';
import type { Pricing } from '../engine/chains/pricing.js';
import { indexRows } from '../engine/evm/store.js';
import { quietLog } from '../test/kit/quiet-log.js';
import { openStore } from '../storage/env.js';
import { dexBlock, FACTORY, tokenOf, USDC, WETH, type DexShape } from './dex-chain.js';
import { prng } from '../test/kit/data-chain.js';
import { startProcess, type Started } from '../test/kit/proc.js';
import { BIN, printRows, report, round, sized } from './report.js';
import { swapWriteFloor } from './swap-floor.js';

const CHAIN = '0x1';
const SWAPS = Number(process.env['BENCH_SWAPS'] ?? sized(1_000_000, 1_000));
/**
 * Swaps per block: 100, so that 1,000,000 swaps span 10,000 blocks of 12 s (33 h): every price then reads its pools
 * 24 h before as well (the probe checks it), as on a chain the indexes have followed for more than a day.
 */
const PER_BLOCK = 100;
const SHAPE: DexShape = {
  blocks: Math.ceil(SWAPS / PER_BLOCK) + 1,
  swapsPerBlock: PER_BLOCK,
  pools: sized(10_000, 100),
  tokens: sized(5_000, 50),
  seed: 18,
};
/** Blocks per index transaction: 20,000 swaps, a backfill's batch. */
const BATCH = 200;
const DURATION_S = Number(process.env['BENCH_SECONDS'] ?? sized(4, 1));
/** Seconds of each endpoint's warm-up (none at the smoke size: autocannon's shortest run is a second). */
const WARM_UP_S = sized(2, 0);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 8);
const KEY = 'cpk_bench_prices_0123456789abcdef';
const BATCH_TOKENS = 100;
/**
 * Blocks of the floor (bench/swap-floor.ts): 200,000 swaps, into a fresh store. A smaller store than the build's,
 * so its writes are if anything faster: the floor it gives is an upper bound.
 */
const FLOOR_BLOCKS = Math.min(2_000, SHAPE.blocks - 1);

const PRICING: Pricing = {
  wrappedNative: WETH,
  stablecoins: [USDC],
  whitelist: [],
  factories: [{ address: FACTORY, kind: 'v2', name: 'BenchSwap' }],
};

const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-prices-'));
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

/** Writes the chain through the real index code; the seconds the indexing took (the follower's rows aside). */
async function build(): Promise<number> {
  const store = openStore(dir);
  try {
    store.transact(() => {
      for (let i = 0; i < SHAPE.tokens; i++)
        store.put('tokens', `${CHAIN}/${tokenOf(i)}`, {
          name: `Token ${i}`,
          symbol: `T${i}`,
          decimals: 18,
          nftStandard: null,
          possibleSpam: false,
        });
      store.put('tokens', `${CHAIN}/${WETH}`, {
        name: 'Wrapped Ether',
        symbol: 'WETH',
        decimals: 18,
        nftStandard: null,
        possibleSpam: false,
      });
      store.put('tokens', `${CHAIN}/${USDC}`, { name: 'USD Coin', symbol: 'USDC', decimals: 6, nftStandard: null, possibleSpam: false });
    });
    const pricing = (c: string): Pricing | undefined => (c === CHAIN ? PRICING : undefined);
    const tokens = new TokenMetadata(store, async () => null);
    const indexes: DataIndex[] = [
      blockTimesIndex,
      dexIndex({ call: async () => null, pricing }) as DataIndex,
      priceMarksIndex({ tokens, pricing }) as DataIndex,
      candleIndex({ tokens, pricing }) as DataIndex,
    ];
    const indexer = new DataIndexer(store, indexes, clock, log);
    let indexing = 0;
    for (let n = 0; n < SHAPE.blocks; n += BATCH) {
      const blocks = Array.from({ length: Math.min(BATCH, SHAPE.blocks - n) }, (_, i) => dexBlock(CHAIN, SHAPE, n + i));
      await store.transactAsync(() => {
        for (const b of blocks) for (const r of indexRows(CHAIN, b.record)) store.put(r.table, r.key, r.value);
        // A backfill's head, far ahead of the indexes: no undo rows.
        store.put('chainState', CHAIN, {
          head: SHAPE.blocks - 1,
          confirmed: SHAPE.blocks - 13,
          tracer: null,
          pruned: blocks.at(-1)!.number,
        });
      });
      const t0 = performance.now();
      if (!(await indexer.index(CHAIN, blocks))) throw new Error(`the indexer refused blocks ${n}…`);
      // Every batch counts, the first too (block 0 creates the pools: their PairCreated and first Sync are indexed work).
      indexing += performance.now() - t0;
    }
    return indexing / 1000;
  } finally {
    await store.close();
  }
}

type Run = CannonRun;

const rand = prng(7);
/** A token that has a pool (every token does: pools cycle through them). */
const randomToken = (): string => tokenOf(Math.floor(rand() * SHAPE.tokens));

const shoot = (port: number, requests: CannonRequest[], seconds: number): Promise<Run> =>
  cannon(port, requests, { seconds, connections: CONNECTIONS, key: KEY });

const single = (): Array<{ method: 'GET'; path: string }> =>
  Array.from({ length: 2_000 }, () => ({ method: 'GET', path: `/api/v2.2/erc20/${randomToken()}/price?chain=0x1` }));
const batch = (): Array<{ method: 'POST'; path: string; body: string; headers: Record<string, string> }> =>
  Array.from({ length: 200 }, () => ({
    method: 'POST',
    path: '/api/v2.2/erc20/prices?chain=0x1',
    body: JSON.stringify({ tokens: Array.from({ length: BATCH_TOKENS }, () => ({ token_address: randomToken() })) }),
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
  }));

async function measure(server: Started): Promise<{ price: Run; batch: Run }> {
  const probe = await fetch(`http://127.0.0.1:${server.port}/api/v2.2/erc20/${tokenOf(5)}/price?chain=0x1`, {
    headers: { 'x-api-key': KEY },
  });
  if (probe.status !== 200) throw new Error(`price: ${probe.status} ${await probe.text()}`);
  // The dataset spans more than a day: a price reads 24 h before too, or the bench measures half a price.
  if (SWAPS >= 1_000_000 && ((await probe.json()) as { usdPrice24h: number | null }).usdPrice24h === null)
    throw new Error('the probe price has no usdPrice24h: the dataset is shorter than a day');
  const out: { price?: Run; batch?: Run } = {};
  for (const [name, requests] of [
    ['price', single],
    ['batch', batch],
  ] as const) {
    if (WARM_UP_S > 0) await shoot(server.port, requests(), WARM_UP_S);
    out[name] = await shoot(server.port, requests(), DURATION_S);
  }
  return out as { price: Run; batch: Run };
}

const serve = (args: string[], nodeUrl: string): Promise<Started> =>
  startProcess(
    args,
    {
      CHAINPOST_DATA: dir,
      CHAINPOST_PORT: '0',
      CHAINPOST_API_KEY: KEY,
      CHAINPOST_CHAINS: `0x1=${nodeUrl}`,
      CHAINPOST_RATE_LIMIT: '0',
      CHAINPOST_ACCESS_LOG: '0',
      CHAINPOST_PRICING: JSON.stringify({ '0x1': PRICING }),
    },
    60_000,
  );

/** The floor's swaps per second, in a temp dir of its own. */
async function floor(): Promise<number> {
  const floorDir = mkdtempSync(join(tmpdir(), 'chainpost-bench-swap-floor-'));
  const store = openStore(floorDir);
  try {
    const { swaps, seconds } = await swapWriteFloor(store, CHAIN, SHAPE, FLOOR_BLOCKS, BATCH);
    return swaps / seconds;
  } finally {
    await store.close();
    rmSync(floorDir, { recursive: true, force: true });
  }
}

let uws: { price: Run; batch: Run };
let fastify: { price: Run; batch: Run };
let indexSeconds: number;
let floorPerSec: number;
try {
  indexSeconds = await build();
  floorPerSec = await floor();
  const node = await startProcess([fileURLToPath(new URL('./data-node.js', import.meta.url)), String(SHAPE.blocks - 1)], {}, 15_000);
  try {
    const server = await serve([BIN, 'serve'], `http://127.0.0.1:${node.port}`);
    try {
      uws = await measure(server);
    } finally {
      await server.stop();
    }
    const alt = await serve([fileURLToPath(new URL('./alt-server.js', import.meta.url)), 'fastify'], `http://127.0.0.1:${node.port}`);
    try {
      fastify = await measure(alt);
    } finally {
      await alt.stop();
    }
  } finally {
    await node.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const swaps = (SHAPE.blocks - 1) * PER_BLOCK;
const figures: Record<string, number> = {
  priceReqPerSec: Math.round(uws.price.reqPerSec),
  priceP99Ms: uws.price.p99Ms,
  batchPricesReqPerSec: Math.round(uws.batch.reqPerSec),
  batchPricesP99Ms: uws.batch.p99Ms,
  fastifyPriceReqPerSec: Math.round(fastify.price.reqPerSec),
  fastifyPriceP99Ms: fastify.price.p99Ms,
  fastifyBatchPricesReqPerSec: Math.round(fastify.batch.reqPerSec),
  fastifyBatchPricesP99Ms: fastify.batch.p99Ms,
  swapsIndexedPerSec: Math.round(swaps / indexSeconds),
  swapWriteFloorPerSec: Math.round(floorPerSec),
  swaps,
  pools: SHAPE.pools,
};
const goal = { priceP99Ms: '<= 5', batchPricesP99Ms: '<= 20', swapsIndexedPerSec: '>= 100000' };
const met =
  uws.price.p99Ms <= 5 &&
  uws.batch.p99Ms <= 20 &&
  figures['swapsIndexedPerSec']! >= 100_000 &&
  uws.price.non2xx === 0 &&
  uws.batch.non2xx === 0;
printRows([
  ['priceReqPerSec', figures['priceReqPerSec']!, '', fastify.price.reqPerSec],
  ['priceP99Ms', uws.price.p99Ms, '', fastify.price.p99Ms],
  ['batchPricesReqPerSec', figures['batchPricesReqPerSec']!, `(${BATCH_TOKENS} tokens each)`, fastify.batch.reqPerSec],
  ['batchPricesP99Ms', uws.batch.p99Ms, '', fastify.batch.p99Ms],
  [
    'swapsIndexedPerSec',
    figures['swapsIndexedPerSec']!,
    `(${round(indexSeconds, 1)} s for ${swaps.toLocaleString('en-US')} swaps; baseline: the floor, a swap's five rows written alone)`,
    floorPerSec,
  ],
  ['swapWriteFloorPerSec', figures['swapWriteFloorPerSec']!, `(${(FLOOR_BLOCKS * PER_BLOCK).toLocaleString('en-US')} swaps)`],
]);
report('prices', SWAPS === 1_000_000 ? 'npm run bench:prices' : `BENCH_SWAPS=${SWAPS} npm run bench:prices`, figures, goal, met, [
  `Dataset: a synthetic chain (bench/dex-chain.ts, seed ${SHAPE.seed}; a block every 12 s, ${round(((SHAPE.blocks - 1) * 12) / 3600, 1)} h in all): block 0 creates ${SHAPE.pools.toLocaleString('en-US')} Uniswap V2 pairs with the bench's factory (PairCreated and a first Sync each; ${SHAPE.tokens.toLocaleString('en-US')} tokens, each against the wrapped native token or the stablecoin, and the wrapped native token's stable pairs), then ${(SHAPE.blocks - 1).toLocaleString('en-US')} blocks of ${PER_BLOCK} swaps (a Sync then a Swap each, in random pairs). Written into LMDB in a temp dir through indexRows and DataIndexer.index with the block-times, DEX and price-mark indexes, ${BATCH} blocks a batch, no undo rows (a backfill's): swapsIndexedPerSec is the swaps over the indexing's time of every batch (block 0's pool creations included), one thread, the follower's rows aside.`,
  `Floor (bench/swap-floor.ts): the five rows the DEX index writes for each swap (its Sync's state, the swap, the trader's and both tokens' entries), the same keys and values, put through the same store in transactions of ${BATCH} blocks, committed as durably, over the first ${(FLOOR_BLOCKS * PER_BLOCK).toLocaleString('en-US')} swaps into a fresh store, with the logs read and every row made before the clock starts: swapWriteFloorPerSec, what no index writing those rows can exceed here; the baseline of swapsIndexedPerSec.`,
  `Requests: autocannon (${CONNECTIONS} connections; ${DURATION_S} s per endpoint after ${WARM_UP_S} s not recorded; loopback) on GET /erc20/:address/price for random tokens and POST /erc20/prices with ${BATCH_TOKENS} random tokens a request, on the server binary following the chain's node (bench/data-node.ts), then the same routes and core on Fastify (bench/alt-server.ts): the fastify… figures and the baseline column. Each price reads the token's last price mark (one read), its mark 24 h before (a range read), the wrapped native token's the same way and the pools' rows; nothing is cached between requests.`,
]);
console.log(`${met ? 'goals met' : 'goals not met'}; wrote bench/results/prices.json and bench/RESULTS.md`);
