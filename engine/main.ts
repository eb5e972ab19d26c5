/**
 * The composition root: the only file of engine/ that imports adapters (LMDB
 * storage, the uWS front end, the worker pool) and touches process state (the
 * wall clock, stdout). The `chainpost` binary and its commands are cli/.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import xxhash from 'xxhash-wasm';
import { DEVNET_CHAIN, DEVNET_CHAIN_ID, accountsBanner, devnetFiles, startDevnet, type Devnet } from '../http/clients/devnet.js';
import { clearForNewDevnet } from '../http/clients/devnet-reset.js';
import { smtpMailer } from '../http/clients/mailer.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { slotSubscription } from '../http/clients/solana-slots.js';
import { CONNECTIONS_PER_ORIGIN, undiciSender } from '../http/clients/webhook.js';
import { undiciMetadataFetcher } from '../http/clients/metadata-fetch.js';
import { systemResolver } from '../http/clients/dns.js';
import { nftEndpoints } from '../http/server/data-nft.js';
import { authRoutes } from '../http/server/auth.js';
import { streamsRoutes } from '../http/server/streams.js';
import { crossChainRoutes } from '../http/server/crosschain.js';
import { dataRoutes } from '../http/server/data.js';
import { callsEndpoints } from '../http/server/data-calls.js';
import { txsEndpoints } from '../http/server/data-txs.js';
import { erc20Endpoints } from '../http/server/data-erc20.js';
import { defiEndpoints } from '../http/server/data-defi.js';
import { priceEndpoints } from '../http/server/data-prices.js';
import { nativeUwsLoaded, startServer, type Server } from '../http/server/app.js';
import { Pipeline } from '../http/server/pipeline.js';
import { nodeOrigin } from './redact.js';
import { rpcRoutes } from '../http/server/rpc.js';
import type { Route } from '../http/server/route.js';
import { systemRoutes, unknownRoute } from '../http/server/system.js';
import { pack } from '../storage/codec.js';
import { SCHEMA_VERSION, openStore, upgradeSchema, type Store } from '../storage/env.js';
import { lockDataDir, type DataDirLock } from '../storage/lock.js';
import { dataDir } from '../storage/data-dir.js';
import { lmdbKeyStore } from '../storage/keys.js';
import { AuthService } from './auth/service.js';
import { TokenIssuer } from './auth/token.js';
import { ServiceClock, type Ticker } from './clock.js';
import { ConfigError, followedChains, type Config } from './config.js';
import { Dispatcher } from './delivery/dispatcher.js';
import { DELIVERY_TIMEOUT_MS } from './delivery/limits.js';
import { findChain } from './chains/registry.js';
import { chainRemoval, effectiveAt } from './chains/removals.js';
import { Expiries } from './expiry.js';
import { Follower } from './evm/follower.js';
import { BitcoinFollower } from './bitcoin/follower.js';
import { BitcoinMempool } from './bitcoin/mempool.js';
import { bitcoinReplay } from './bitcoin/replay.js';
import { solanaReplay } from './solana/replay.js';
import { solanaWebhookBuilder } from './solana/webhook.js';
import { BlockReplay } from './streams/block-replay.js';
import { BITCOIN_CHAIN, type BitcoinStreamRecord } from './bitcoin/stream.js';
import { SolanaFollower } from './solana/follower.js';
import { SOLANA_CHAIN } from './solana/stream.js';
import { BitcoinWallets } from './bitcoin/wallets.js';
import { bitcoinWebhookBuilder } from './bitcoin/webhook.js';
import { XpubWindows } from './bitcoin/xpub-windows.js';
import { prepareTable } from './bitcoin/secp256k1-table.js';
import { blockKey } from './ingest/chain-store.js';
import type { ChainFollower, FollowerStatus } from './ingest/follow.js';
import { StreamsService } from './streams/service.js';
import { FollowedChains } from './streams/unfollowed.js';
import { StreamMatcher, byFamily, type BuildWebhook } from './match/matcher.js';
import { Watchlist } from './match/watchlist.js';
import { chainReads, type ChainReads } from './evm/chain-reads.js';
import { TokenMetadata } from './evm/token-metadata.js';
import { webhookBuilder } from './evm/webhook-builder.js';
import { FilterSets, inlineSmallRounds } from './match/match-blocks.js';
import { inlineSmallCompiles } from './match/compile.js';
import { inlineSmallBlocks } from './evm/prepared.js';
import type { Resolver, Upstream } from './ports.js';
import { TargetPolicy } from './net/targets.js';
import { workerPool } from '../workers/pool.js';
import { tracedEnqueue, tracedEvents, tracedPool, tracedSender, tracedUpstream, type Mark } from './block-trace.js';
import { ApiKeys } from './keys.js';
import { DataIndexer, withIndexer } from './data-api/indexer.js';
import { dataIndexes } from './data-api/indexes.js';
import type { DataDeps } from './data-api/deps.js';
import { NftMetadata } from './data-api/nft-metadata.js';
import { jsonLogger, type Logger } from './log.js';
import { Metrics } from './metrics.js';
import { RateLimiter } from './ratelimit.js';
import { NodeAccess } from './rpc/service.js';
import { OperatorAccess } from './operator.js';
import { Readiness, type Part } from './readiness.js';
import { HeadWatch, STALL_BLOCK_TIMES, STALL_MIN_MS } from './ingest/stall.js';

/** Expired challenges, bind messages, history and delivery logs go once a minute of service time. */
const PURGE_EVERY_MS = 60_000;

function schedulePurge(expiries: Expiries, dispatcher: Dispatcher, clock: ServiceClock): void {
  // The clock waits for the purge (its batches commit off the event loop), so a clock jump sees what expired within it gone.
  const tick = async (): Promise<void> => {
    expiries.purge(clock.now());
    await dispatcher.purge();
    clock.at(clock.now() + PURGE_EVERY_MS, tick);
  };
  void tick();
}

/** How long a bind or unbind message waits for its signatures. */
const BIND_TTL_MS = 15 * 60_000;

/** Connections from node access to each chain's node (callers beyond this many wait for one). */
const NODE_ACCESS_CONNECTIONS = 32;
/** Connections from the streams' trigger calls to each chain's node (calls beyond this many wait for one). */
const TRIGGER_CONNECTIONS = 8;

/** Match rounds of up to this many blocks (a new head and a confirmation) run on the main thread, larger ones in the pool. */
const INLINE_MATCH_BLOCKS = 4;

/** Filter sets of up to this many watched keys (a few ms of compiling) are compiled on the main thread, larger ones in the pool. */
const INLINE_COMPILE_KEYS = 2_000;

/** Blocks whose node answers total at most this many bytes (a devnet's) are prepared on the main thread, larger ones in the pool. */
const INLINE_PREPARE_BYTES = 32 * 1024;

/** Graceful stop: in-flight requests get this long before the process exits anyway. */
const SHUTDOWN_GRACE_MS = 8_000;

/**
 * Log lines to stdout, gathered and written once per event-loop turn: writes to
 * a pipe are synchronous on Linux, and one syscall per request line would cost
 * more than the request.
 */
let pending: string[] = [];
const flushLines = (): void => {
  if (pending.length === 0) return;
  const text = pending.join('');
  pending = [];
  process.stdout.write(text);
};
process.on('exit', flushLines);
export const stdoutLines = (line: string): void => {
  if (pending.push(line) === 1) setImmediate(flushLines);
};

/** CHAINPOST_TRACE_BLOCKS: a block's stage, at Unix-epoch ms with the monotonic clock's fraction (comparable across processes). */
const traceLine =
  (out: (line: string) => void): Mark =>
  (stage, chain, block) =>
    out(`${JSON.stringify({ msg: 'trace', stage, chain, block, at: performance.timeOrigin + performance.now() })}\n`);

/** Resolves at the next turn of the event loop, after the I/O waiting (requests) is served. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Real time and real OS timers: the one place the wall clock enters. */
export const systemTicker: Ticker = {
  elapsedMs: () => performance.now(),
  wake: (delayMs, fn) => {
    const t = setTimeout(fn, delayMs);
    t.unref();
    return () => clearTimeout(t);
  },
};

export interface Core {
  readonly config: Config;
  /** The chain followers, filled in when the server starts ingesting. */
  readonly followers: ChainFollower[];
  /** Each followed chain's node as /health shows it (its scheme and host: no user, password or path, which may hold a key), by chain key. */
  readonly nodeUrls: Map<string, string>;
  /** Each followed chain's node, by chain key, filled in with the followers. */
  readonly upstreams: Map<string, Upstream & { close(): Promise<void> }>;
  /** Reads at a block from each chain's node: the follower's, else node access's (a chain that stopped producing blocks keeps its history). */
  readonly reads: ChainReads;
  /** Token metadata read from those nodes (webhooks and the Data API share its cache). */
  readonly tokenMetadata: TokenMetadata;
  /** The Data API's indexes of each followed EVM chain, built behind its follower. */
  readonly dataIndexer: DataIndexer;
  readonly clock: ServiceClock;
  readonly store: Store;
  readonly keys: ApiKeys;
  readonly log: Logger;
  readonly pipeline: Pipeline;
  readonly routes: readonly Route[];
  readonly watchlist: Watchlist;
  /** Bitcoin streams' xpubs and their gap windows. */
  readonly wallets: BitcoinWallets;
  /** Builds Bitcoin streams' webhooks (deliveries, and blocks asked for through the API). */
  readonly bitcoinWebhooks: BuildWebhook<BitcoinStreamRecord>;
  readonly dispatcher: Dispatcher;
  /** Node access; each configured chain's node is attached when the server starts ingesting. */
  readonly nodes: NodeAccess;
  /** Set with CHAINPOST_TRACE_BLOCKS: marks a block's stages. */
  readonly mark: Mark | undefined;
  /** The parts still starting (GET /health answers 503 until none is). */
  readonly readiness: Readiness;
  /** This process's hold on the data directory: one server per CHAINPOST_DATA. */
  readonly lock: DataDirLock;
  /** Text for the person at the terminal (stderr): stdout carries JSON lines only. */
  readonly notice: (text: string) => void;
  /** Closes the store and gives up the data directory. */
  close(): Promise<void>;
}

export interface Service extends Core {
  readonly server: Server;
  stop(): Promise<void>;
}

/**
 * The V8 heap as a server wants it, set before anything is read or served (the flag applies to the whole process).
 * Without allocation-site pretenuring: V8 may decide that an allocation site's objects live long and allocate
 * them in the old generation from then on, and it decides so for state that lmdb-js makes per range read, which
 * dies with its request. Left there until the next full collection, those objects keep what they point to alive
 * through every young collection, which then copies megabytes each time and holds every request for that long
 * (the Data API's p99 in bench:data). Tracing young collections with --trace-gc-nvp shows the promoted bytes.
 */
function servingHeap(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

/**
 * Everything but the listening socket: clock, store, keys, pipeline and routes.
 * The uWS server runs on it, and so do the Fastify and node:http servers of the
 * HTTP benchmark, so all three serve the very same handlers.
 */
export async function createCore(config: Config, out: (line: string) => void = stdoutLines, notice: (text: string) => void = (text) => process.stderr.write(text), adapters: Adapters = {}): Promise<Core> {
  servingHeap();
  const clock = new ServiceClock(systemTicker, config.now ?? Date.now(), (err) => log.error('timer failed', { err }));
  const log = jsonLogger(out, () => clock.now(), config.logLevel);
  const readiness = new Readiness(['store', 'watchlist', 'worker pool', ...(config.ingest === 'embedded' ? (['devnet'] as const) : []), 'listener']);
  // The lock first: a second server must not deliver, ingest or start a devnet on this directory.
  const lock = dataDir(() => lockDataDir(config.dataDir));
  let store: Store;
  try {
    // The lock is held: an older layout is migrated here, before anything reads it.
    store = dataDir(() => openStore(config.dataDir, { migrate: true }));
    const upgraded = upgradeSchema(store, (from) => log.info('migrating the store to this layout; the server answers once it is done', { dir: config.dataDir, from, to: SCHEMA_VERSION }));
    if (upgraded !== undefined) log.info('migrated the store', { dir: config.dataDir, ...upgraded, to: SCHEMA_VERSION });
  } catch (err) {
    lock.release();
    throw err;
  }
  const close = async (): Promise<void> => {
    await store.close();
    lock.release();
  };
  readiness.up('store');
  try {
    const keys = new ApiKeys(lmdbKeyStore(store), () => clock.now());
    if (config.apiKey !== undefined && keys.ensure(config.apiKey)) log.info('created the API key given by CHAINPOST_API_KEY');
    const metrics = new Metrics();
    const followers: ChainFollower[] = [];
    const nodeUrls = new Map<string, string>();
    const perChain = (value: (s: FollowerStatus) => number) => () => followers.map((f) => ({ labels: { chain: f.status().chain }, value: value(f.status()) }));
    // The embedded devnet mines at its own pace; every other chain at its registry's.
    const heads = new HeadWatch(clock, (chain) => (config.ingest === 'embedded' && chain === DEVNET_CHAIN ? config.devnet.blockTime * 1000 : (findChain(chain)?.blockTimeMs ?? 0)));
    heads.start(() => followers.map((f) => f.status()));
    metrics.gauge('chainpost_chain_head', 'Last block ingested, per chain.', perChain((s) => s.head));
    metrics.gauge('chainpost_chain_confirmed', 'Last block announced as confirmed, per chain.', perChain((s) => s.confirmed));
    metrics.gauge('chainpost_chain_upstream_failing', "1 while the chain's upstream node fails (retried with backoff).", perChain((s) => (s.upstream === 'failing' ? 1 : 0)));
    metrics.gauge('chainpost_chain_stalled', `1 while the chain's head has not moved for ${STALL_BLOCK_TIMES} of its block times (${STALL_MIN_MS / 1000} s at least), as /health's stalled.`, perChain((s) => (heads.stalled(s.chain, s.head) ? 1 : 0)));
    metrics.gauge('chainpost_chain_upstream_errors_total', 'Failed attempts to read the chain from its upstream node.', perChain((s) => s.upstreamErrors), 'counter');
    metrics.gauge('chainpost_chain_skipped_slots_total', 'Slots the node reported skipped (no block), per Solana chain, since the start.', () => followers.flatMap((f) => {
      const s = f.status();
      return 'skippedSlots' in s && typeof s.skippedSlots === 'number' ? [{ labels: { chain: s.chain }, value: s.skippedSlots }] : [];
    }), 'counter');
    watchEventLoop(metrics);
    watchMemory(metrics);
    const pipeline = new Pipeline(keys, new RateLimiter(config.rateLimit, () => clock.now()), metrics, log, config.accessLog, new OperatorAccess(config.adminKey, () => keys.firstTenant()));
    const tokens = await TokenIssuer.open(store);
    const auth = new AuthService(store, clock, tokens, { skewMs: config.authSkewSeconds * 1000, bindTtlMs: BIND_TTL_MS, maxPending: config.maxPendingChallenges });
    const mark = config.traceBlocks ? traceLine(out) : undefined;
    // Webhook targets, the test webhook's and NFT metadata URLs: one policy, checked where each connection opens.
    const targets = new TargetPolicy(config.privateTargets, adapters.resolver ?? systemResolver);
    const sender = mark === undefined ? undiciSender({ targets }) : tracedSender(undiciSender({ targets }), mark);
    const mailer = config.smtpUrl === undefined ? undefined : smtpMailer(config.smtpUrl);
    const dispatcher = new Dispatcher(store, clock, sender, mailer, log, { alertEmail: config.alertEmail, stageChunk: config.stageChunk, maxInFlightPerOrigin: CONNECTIONS_PER_ORIGIN, maxInFlightPerTenant: config.tenantSlots, maxInFlightUnanswered: config.unansweredSlots, retention: { historyMs: config.historyDays * 86_400_000, successLogMs: config.deliveryLogDays * 86_400_000, successLogMax: config.deliveryLogMax }, awaitDeliveriesOnWake: config.testClock });
    dispatcher.exportMetrics(metrics, config.metricsStreams);
    // Each compiled filter set gets its own seed, so no fixed set of keys collides in every version.
    const { h32 } = await xxhash();
    // Deriving xpub addresses needs a table of multiples of G: built now, before requests are served, not at the first xpub added.
    if (config.bitcoin.url !== undefined) prepareTable();
    // The addresses a Bitcoin stream's xpubs watch are compiled with its own.
    const windows = new XpubWindows(config.bitcoin.gap);
    const watchlist = new Watchlist((chain, version) => h32(`${chain}/${version}`), (id) => windows.keysOf(id));
    // Read a page per turn of the event loop, after the listener is up: a million addresses take seconds, and
    // requests are answered meanwhile. Matching waits for it (the blocks' events wait in the store).
    watchlist.load(store, nextTurn).then(
      () => readiness.up('watchlist'),
      (err: unknown) => log.error('the watchlist could not be read; nothing is matched', { err }),
    );
    const wallets = new BitcoinWallets(store, windows, watchlist);
    wallets.load();
    const followed = followedChains(config);
    const streams = new StreamsService(store, clock, dispatcher, wallets.watch(watchlist), config.limits, targets, new FollowedChains((chain) => followed.has(chain), log));
    const bitcoinWebhooks = bitcoinWebhookBuilder({ probe: (chain, n) => copyOf(store.getRaw('probes', blockKey(chain, n))), windows, grown: (id) => wallets.grown(id) });
    const upstreams: Core['upstreams'] = new Map();
    const nodes = new NodeAccess(store, metrics, () => clock.now(), { gasCap: config.rpcGasCap });
    const reads = chainReads((chain) => upstreams.get(chain) ?? nodes.upstream(chain));
    const tokenMetadata = new TokenMetadata(store, reads.call, reads.code);
    // A chain's indexes begin where its follower's stored blocks do (the start block, or above what was pruned).
    const dataIndexer = new DataIndexer(store, dataIndexes({ reads, tokens: tokenMetadata, pricing: (chain) => config.pricing.get(chain) }), clock, log, { startBlock: (chain) => followers.find((f) => f.status().chain === chain)?.status().oldest });
    const fetcher = undiciMetadataFetcher({ targets });
    const nftMetadata = new NftMetadata(store, reads, fetcher, clock, { ipfsGateway: config.ipfsGateway, log });
    dispatcher.start();
    schedulePurge(new Expiries(store), dispatcher, clock);
    const dataDeps: DataDeps = { kv: store, tokens: tokenMetadata, reads, indexer: dataIndexer, follower: (chain) => followers.find((f) => f.status().chain === chain)?.status(), pricing: (chain) => config.pricing.get(chain) };
    const routes = [
      ...systemRoutes({ metrics, clock, testClock: config.testClock, metricsKey: config.metricsKey, settle: () => dispatcher.settled(), starting: () => readiness.starting(), health: () => ({ now: new Date(clock.now()).toISOString(), chains: followers.map((f) => withStall(withNode(withIndexed(f, dataIndexer), nodeUrls), heads)) }) }),
      ...streamsRoutes(streams, dispatcher, { testHooks: config.testClock, bitcoinBlocks: new BlockReplay(store, bitcoinReplay(bitcoinWebhooks, windows), dispatcher), solanaBlocks: new BlockReplay(store, solanaReplay(solanaWebhookBuilder()), dispatcher) }),
      ...authRoutes(auth, tokens),
      ...dataRoutes(clock, dataDeps, [callsEndpoints(dataDeps, { ens: config.ens }), txsEndpoints(dataDeps, clock), erc20Endpoints(dataDeps), defiEndpoints(dataDeps), priceEndpoints(dataDeps, clock), nftEndpoints({ ...dataDeps, metadata: nftMetadata }, clock)]),
      ...crossChainRoutes(clock, () => followers.map((f) => f.status().chain), dataDeps, { bitcoinGap: config.bitcoin.gap }),
      ...rpcRoutes(clock, nodes),
    ];
    return { config, clock, store, keys, log, pipeline, routes, followers, nodeUrls, upstreams, reads, tokenMetadata, dataIndexer, watchlist, wallets, bitcoinWebhooks, dispatcher, nodes, mark, readiness, lock, notice, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The event-loop delay sampler's timer interval, ms; each sample is this plus the delay. */
const LOOP_RESOLUTION_MS = 10;
/** The delay quantiles on /metrics are over windows this long. */
const LOOP_WINDOW_MS = 10_000;

/**
 * Event-loop delay on /metrics: quantiles (0.5, 0.99, 1) of the last completed
 * 10-s window, so a scrape shows how the server answers now, not since the start,
 * and scraping changes nothing. The sampler's timer fires every 10 ms; what it
 * records beyond that interval is the delay.
 */
function watchEventLoop(metrics: Metrics): void {
  const h = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  h.enable();
  const delay = (ns: number): number => (h.count === 0 ? 0 : Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS) / 1000);
  let last: Array<[quantile: string, seconds: number]> = [];
  setInterval(() => {
    last = [['0.5', delay(h.percentile(50))], ['0.99', delay(h.percentile(99))], ['1', delay(h.max)]];
    h.reset();
  }, LOOP_WINDOW_MS).unref();
  metrics.gauge('chainpost_event_loop_delay_seconds', `Event-loop delay over the last completed ${LOOP_WINDOW_MS / 1000}-s window, by quantile (none before the first window ends).`, () =>
    last.map(([quantile, value]) => ({ labels: { quantile }, value })),
  );
}

/**
 * The process's memory on /metrics: RSS split as the kernel counts it (anonymous: heaps and stacks, where a leak
 * shows; file: mostly LMDB's mapped pages, which grow with the store and which the kernel may reclaim), and V8's
 * heap and the memory outside it (buffers), so a growth can be told apart from a bigger store.
 */
function watchMemory(metrics: Metrics): void {
  metrics.gauge('chainpost_process_memory_bytes', 'Process memory by kind: rss, rssAnon, rssFile (Linux), heapUsed, heapTotal, external, arrayBuffers.', () => {
    const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
    const kinds: Record<string, number> = { rss, heapUsed, heapTotal, external, arrayBuffers, ...rssSplit() };
    return Object.entries(kinds).map(([kind, value]) => ({ labels: { kind }, value }));
  });
}

/** RssAnon and RssFile from /proc/self/status (Linux); none elsewhere. */
function rssSplit(): Record<string, number> {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (field: string): number | undefined => {
      const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
      return m === null ? undefined : Number(m[1]) * 1024;
    };
    const out: Record<string, number> = {};
    for (const [kind, field] of [['rssAnon', 'RssAnon'], ['rssFile', 'RssFile']] as const) {
      const v = kb(field);
      if (v !== undefined) out[kind] = v;
    }
    return out;
  } catch {
    return {};
  }
}

/** Adapters a caller may put in place of the real ones (tests: a resolver answering chosen addresses). */
export interface Adapters {
  resolver?: Resolver;
}

/** Test seam: awaited before each part of the server starts, so a test can hold the start at that point. */
export type BeforePart = (part: Part) => Promise<void>;

const noWait: BeforePart = () => Promise.resolve();

/** Builds and starts the whole service from a parsed configuration. */
export async function startService(config: Config, out?: (line: string) => void, before: BeforePart = noWait, adapters: Adapters = {}): Promise<Service> {
  if (!nativeUwsLoaded()) {
    throw new Error(`the native uWebSockets.js build did not load on this Node.js (ABI ${process.versions.modules}); chainpost refuses to run on the slow fallback. Use Node 20 (.nvmrc).`);
  }
  const core = await createCore(config, out, undefined, adapters);
  const { log } = core;
  /** A listener on `port`, or a ConfigError naming `variable`; `opened` is closed first when it fails. */
  const listen = async (port: number, routes: readonly Route[], variable: string, opened: Server[]): Promise<Server> => {
    try {
      return await startServer({ host: config.host, port, routes, pipeline: core.pipeline, fallback: unknownRoute });
    } catch (err) {
      for (const s of opened) await s.close(0);
      await core.close();
      throw new ConfigError(variable, `${(err as Error).message} (address in use, or not an address of this machine)`);
    }
  };
  await before('listener');
  const server = await listen(config.port, core.routes, 'CHAINPOST_HOST/CHAINPOST_PORT', []);
  // Node access alone on its own port, at {rpc_url}/:chain/:apiKey: the same route without the /rpc prefix.
  const rpcServer = config.rpcPort === undefined ? undefined : await listen(config.rpcPort, rpcRoutes(core.clock, core.nodes, ''), 'CHAINPOST_RPC_PORT', [server]);
  core.readiness.up('listener');
  let ingest: Awaited<ReturnType<typeof startIngest>>;
  try {
    ingest = await startIngest(core, before);
  } catch (err) {
    // No anvil build here, say: nothing stays open behind the error.
    await server.close(0);
    await rpcServer?.close(0);
    await core.close();
    throw err;
  }
  firstKey(core);
  log.info('listening', { host: config.host, port: server.port, privateTargets: config.privateTargets, ...(rpcServer === undefined ? {} : { rpcPort: rpcServer.port }), data: config.dataDir, now: new Date(core.clock.now()).toISOString(), testClock: config.testClock });
  const stop = async (): Promise<void> => {
    // No delivery starts from now on; those in flight get their answer (the 10 s rule) and a commit of their outcomes.
    const delivered = Promise.race([core.dispatcher.stop().then(() => true), new Promise<false>((resolve) => systemTicker.wake(DELIVERY_TIMEOUT_MS, () => resolve(false)))]);
    const [cut, rpcCut] = await Promise.all([server.close(SHUTDOWN_GRACE_MS), rpcServer?.close(SHUTDOWN_GRACE_MS) ?? 0]);
    if (cut + rpcCut > 0) log.warn('stopped with requests still in flight', { cut: cut + rpcCut });
    await ingest.stop();
    if (!(await delivered)) log.warn('stopped with webhooks still in flight; they are sent again at the next start');
    await core.close();
    log.info('stopped');
  };
  return { ...core, server, stop };
}

/**
 * A store's first API key when CHAINPOST_API_KEY is unset and it has none, printed once. Made when the start
 * has succeeded: a start that fails (a port taken, say) would otherwise print a key "shown only this once"
 * beside its error, and the next start, finding a key, would print none.
 */
function firstKey(core: Core): void {
  if (core.config.apiKey !== undefined || core.keys.count() > 0) return;
  const { key, record } = core.keys.create({ name: 'default' });
  // On stderr: stdout carries JSON log lines only.
  core.notice(`chainpost: created the first API key (name "${record.name}"); it is shown only this once:\nAPI key: ${key}\n`);
}

/**
 * One follower per configured chain, or the embedded anvil devnet as 0x539 when
 * CHAINPOST_CHAINS is unset. Chains that stopped producing blocks or were
 * removed (by the service date) are not followed.
 */
export async function startIngest(core: Core, before: BeforePart = noWait): Promise<{ stop(): Promise<void> }> {
  const { config, log, clock, store, upstreams, mark, readiness } = core;
  let devnet: Devnet | undefined;
  let chains = config.chains;
  if (config.ingest === 'embedded') {
    await before('devnet');
    const cleared = clearForNewDevnet(store, config.dataDir);
    if (cleared > 0) log.info('no devnet state: a new devnet begins, and what was ingested from its chain is cleared', { chain: DEVNET_CHAIN, state: devnetFiles(config.dataDir).state, rows: cleared });
    devnet = await startDevnet(config.dataDir, config.devnet);
    chains = new Map([[DEVNET_CHAIN, devnet.url]]);
    const confirmations = config.confirmations.get(DEVNET_CHAIN) ?? findChain(DEVNET_CHAIN)!.confirmations;
    const { blockTime } = config.devnet;
    log.info('devnet', { chain: DEVNET_CHAIN, rpc: devnet.url, port: devnet.port, pid: devnet.child.pid, blockTime, confirmations, state: devnet.stateFile, accounts: devnet.accounts.map((a) => a.address) });
    // To stderr, as the key banner: stdout stays JSON lines. The keys are anvil's public test keys.
    core.notice(
      `chainpost: devnet ${DEVNET_CHAIN} (chain id ${DEVNET_CHAIN_ID}) at ${devnet.url}: a block every ${blockTime} s and one per transaction, confirmed at ${confirmations} blocks, kept in ${devnet.stateFile}\n` +
        `funded accounts (anvil's test mnemonic "test test test test test test test test test test test junk"; these keys are public: never use them on a real chain):\n${accountsBanner(devnet.accounts)}`,
    );
    readiness.up('devnet');
  }
  // Node access has its own connections to each node: callers never queue behind ingestion, nor it behind them.
  const access: Array<{ close(): Promise<void> }> = [];
  // One pool of worker threads for the server: matching and ingestion tasks share its workers, one per core.
  await before('worker pool');
  const pool = workerPool(store.path);
  try {
    await pool.ready();
  } catch (err) {
    await pool.close();
    await devnet?.stop();
    throw err;
  }
  readiness.up('worker pool');
  core.watchlist.compileWith(inlineSmallCompiles(pool.compile, INLINE_COMPILE_KEYS, log));
  core.wallets.deriveWith(pool.xpubs);
  const match = inlineSmallRounds(pool.match, store, INLINE_MATCH_BLOCKS);
  const prepare = inlineSmallBlocks(pool.ingest, pack, INLINE_PREPARE_BYTES);
  // Trigger calls have their own connections to each node: however many hang, the follower's reads never queue behind them.
  const triggerNodes = new Map<string, Upstream>();
  const triggerCalls = chainReads((chain) => triggerNodes.get(chain)).call;
  const builder = byFamily({
    evm: webhookBuilder({ tokens: core.tokenMetadata, call: triggerCalls, gasCap: (chain) => core.nodes.callGasLimit(chain), triggerGas: BigInt(config.triggerGas), balance: core.reads.balance, watched: (id) => core.watchlist.watched(id) }),
    bitcoin: core.bitcoinWebhooks,
    solana: solanaWebhookBuilder(),
  });
  const matching = { stageChunk: config.stageChunk, triggerBudgetMs: config.triggerBudgetMs, triggerShareMs: config.triggerShareMs };
  const matcher =
    mark === undefined
      ? new StreamMatcher(store, clock, core.watchlist, match, core.dispatcher, builder, log, matching)
      : new StreamMatcher(store, clock, core.watchlist, tracedPool(match, mark), tracedEnqueue(core.dispatcher, mark), builder, log, matching);
  for (const [key, url] of chains) {
    const chain = findChain(key)!;
    const node = jsonRpcUpstream(url, { connections: NODE_ACCESS_CONNECTIONS });
    access.push(node);
    let follower: Follower | undefined;
    // Until its node-access removal (the chainFor check), a chain that stopped producing blocks keeps its archive reads.
    core.nodes.attach(chain.key, { upstream: node, nodeLatest: () => follower?.nodeLatest(), reorgs: () => follower?.reorgs() ?? 0 });
    const removal = chainRemoval(chain, 'blocks', clock.now());
    if (removal !== undefined) {
      log.warn('not following a chain that no longer produces blocks', { chain: key, since: removal.date });
      continue;
    }
    // A removal still ahead ends the following when its date comes.
    const ahead = chainRemoval(chain, 'blocks', Infinity);
    const upstream = mark === undefined ? jsonRpcUpstream(url) : tracedUpstream(chain.key, jsonRpcUpstream(url), mark);
    upstreams.set(chain.key, upstream);
    const calls = jsonRpcUpstream(url, { connections: TRIGGER_CONNECTIONS });
    access.push(calls);
    triggerNodes.set(chain.key, calls);
    core.nodeUrls.set(chain.key, nodeOrigin(url));
    const events = withIndexer(mark === undefined ? matcher.events() : tracedEvents(matcher.events(), mark), core.dataIndexer);
    follower = new Follower(key, upstream, store, clock, events, log, {
      confirmations: config.confirmations.get(key) ?? chain.confirmations,
      pollMs: config.pollMs,
      retention: config.retentionBlocks,
      pool: prepare,
      // A chain not in the store yet: from its start block, backfilled to the node's head, else from that head.
      startBlock: config.startBlocks.get(key) ?? 'head',
      ...(ahead === undefined ? {} : { until: effectiveAt(ahead.date) }),
    });
    core.followers.push(follower);
    follower.start();
  }
  if (config.bitcoin.url !== undefined) {
    const upstream = jsonRpcUpstream(config.bitcoin.url);
    upstreams.set(BITCOIN_CHAIN, upstream);
    core.nodeUrls.set(BITCOIN_CHAIN, nodeOrigin(config.bitcoin.url));
    const mempool = new BitcoinMempool({ chain: BITCOIN_CHAIN, upstream, kv: store, clock, log, watchlist: core.watchlist, sets: new FilterSets(), windows: core.wallets.windows, grown: (id) => core.wallets.grown(id), dispatcher: core.dispatcher });
    const follower = new BitcoinFollower(BITCOIN_CHAIN, upstream, store, clock, matcher.events(), log, {
      confirmations: config.confirmations.get(BITCOIN_CHAIN) ?? findChain(BITCOIN_CHAIN)!.confirmations,
      pollMs: config.bitcoin.pollMs,
      retention: config.retentionBlocks,
      pool: pool.bitcoin,
      // The mempool after the blocks: a transaction just mined is no longer there to be announced.
      afterSync: () => mempool.poll(),
      // New to the store: from its start block, backfilled to the node's best block, else from that block.
      startBlock: config.startBlocks.get(BITCOIN_CHAIN) ?? 'head',
    });
    core.followers.push(follower);
    follower.start();
  }
  let slots: ReturnType<typeof slotSubscription> | undefined;
  if (config.solana.url !== undefined) {
    const upstream = jsonRpcUpstream(config.solana.url);
    upstreams.set(SOLANA_CHAIN, upstream);
    core.nodeUrls.set(SOLANA_CHAIN, nodeOrigin(config.solana.url));
    slots = config.solana.wsUrl === undefined ? undefined : slotSubscription(config.solana.wsUrl);
    const follower = new SolanaFollower(SOLANA_CHAIN, upstream, store, clock, matcher.events(), log, {
      confirmations: config.confirmations.get(SOLANA_CHAIN) ?? findChain(SOLANA_CHAIN)!.confirmations,
      pollMs: config.solana.pollMs,
      retention: config.retentionBlocks,
      pool: pool.solana,
      ...(slots === undefined ? {} : { slots }),
    });
    core.followers.push(follower);
    follower.start();
  }
  // What a previous run announced but did not match yet.
  matcher.start([...upstreams.keys()]);
  for (const f of core.followers) if (f instanceof Follower) core.dataIndexer.wake(f.status().chain);
  return {
    async stop() {
      for (const f of core.followers) f.stop();
      core.dataIndexer.stop();
      await core.dataIndexer.settled();
      slots?.close();
      await matcher.stop();
      await pool.close();
      await Promise.all([...upstreams.values(), ...access].map((u) => u.close()));
      await devnet?.stop();
    },
  };
}

/** A chain's /health entry: its follower's status, and for an EVM chain the Data API indexes' position (`indexed`, null before the first block). */
function withIndexed(f: ChainFollower, indexer: DataIndexer): FollowerStatus & { indexed?: number | null } {
  const status = f.status();
  return f instanceof Follower ? { ...status, indexed: indexer.position(status.chain) ?? null } : status;
}

/** A /health entry with whether the chain's head has stood still too long (HeadWatch). */
const withStall = <S extends FollowerStatus>(status: S, heads: HeadWatch): S & { stalled: boolean } => ({ ...status, stalled: heads.stalled(status.chain, status.head) });

/** A copy of bytes read from the store (valid only until the next read there). */
const copyOf = (bytes: Uint8Array | undefined): Uint8Array | undefined => (bytes === undefined ? undefined : Uint8Array.prototype.slice.call(bytes));

/** A /health entry with the chain's node, its scheme and host alone. */
function withNode<S extends FollowerStatus>(status: S, nodeUrls: ReadonlyMap<string, string>): S & { node?: string } {
  const node = nodeUrls.get(status.chain);
  return node === undefined ? status : { ...status, node };
}
