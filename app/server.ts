/**
 * The composition root: builds the server from its configuration (store, clock, delivery, the worker pool and
 * the chain families, HTTP) and the only place that knows every adapter (LMDB storage, the uWS front end, the
 * worker pool, the HTTP clients). The `chainpost` binary and its commands are app/cli/.
 */
import xxhash from 'xxhash-wasm';
import { systemResolver } from '../http/clients/dns.js';
import { nativeUwsLoaded, startServer, type Server } from '../http/server/app.js';
import { Pipeline } from '../http/server/pipeline.js';
import { rpcRoutes } from '../http/server/rpc.js';
import type { Route } from '../http/server/route.js';
import { unknownRoute } from '../http/server/system.js';
import { lmdbKeyStore } from '../storage/keys.js';
import { AuthService } from '../engine/auth/service.js';
import { TokenIssuer } from '../engine/auth/token.js';
import { ServiceClock, type Ticker } from '../engine/clock.js';
import { ConfigError, followedChains, type Config } from '../engine/config/config.js';
import type { Dispatcher } from '../engine/delivery/dispatcher.js';
import { DELIVERY_TIMEOUT_MS } from '../engine/delivery/limits.js';
import { findChain } from '../engine/chains/registry.js';
import type { FollowerStatus } from '../engine/ingest/follow.js';
import { HeadWatch, STALL_BLOCK_TIMES, STALL_MIN_MS } from '../engine/ingest/stall.js';
import { StreamsService } from '../engine/streams/service.js';
import { changeEffects } from '../engine/streams/change-effects.js';
import { StoreControlPlane, type ControlPlane } from '../engine/streams/control-plane.js';
import { FollowedChains } from '../engine/streams/unfollowed.js';
import { Watchlist } from '../engine/match/watchlist.js';
import { Bases } from '../engine/match/bases.js';
import type { Resolver } from '../engine/ports.js';
import { TargetPolicy } from '../engine/net/targets.js';
import { ApiKeys } from '../engine/keys.js';
import { DataIndexer } from '../engine/data-api/common/indexer.js';
import { dataIndexes } from '../engine/data-api/indexes.js';
import { dataChainRanges } from '../engine/data-api/tables.js';
import { jsonLogger, type Logger } from '../engine/log.js';
import { Metrics } from '../engine/metrics.js';
import { RateLimiter } from '../engine/ratelimit.js';
import { NodeAccess } from '../engine/rpc/service.js';
import { OperatorAccess } from '../engine/operator.js';
import { Readiness } from '../engine/readiness.js';
import { clusterGauges } from '../engine/cluster/node.js';
import { dataReads } from '../engine/data-api/common/chain-reads.js';
import {
  blockPayload,
  checkClusterFiles,
  partitionRequests,
  startClusterNode,
  startControlLog,
  type ClusterControl,
  type ClusterNode,
} from './cluster.js';
import type { BusPartitionRequests } from '../bus/requests.js';
import type { DropPublish } from '../bus/chains.js';
import { buildDelivery, PartitionLink, startDelivery } from './delivery.js';
import { ownsPartitions } from '../engine/cluster/owners.js';
import { FAMILIES } from './families.js';
import { buildRoutes } from './http.js';
import { noWait, startIngest, type BeforePart, type Hold, type Ingest } from './ingest.js';
import { Following } from '../engine/ingest/following.js';
import {
  nextTurn,
  servingHeap,
  stderrNotice,
  stdoutLines,
  systemTicker,
  traceLine,
  watchEventLoop,
  watchMemory,
  watchProcess,
} from './process.js';
import { openServerStore } from './store.js';
import { startWorkerThreads, type Threads } from './worker-threads.js';

export type { BeforePart, Hold } from './ingest.js';

/** How long a bind or unbind message waits for its signatures. */
const BIND_TTL_MS = 15 * 60_000;

/** Adapters a caller may put in place of the real ones (tests: a resolver answering chosen addresses). */
export interface Adapters {
  resolver?: Resolver;
  /**
   * Real time, which the service clock, the webhook timeout and the event-loop gauge's window run on: a test in the
   * same process may hold it still and move it.
   */
  ticker?: Ticker;
  /** Holds the watchlist's read and the pool's filter compiles (a test sees what is answered meanwhile). */
  hold?: Hold;
  /** On a cluster node, the blocks this names are stored and not published (as if the node crashed in between). */
  dropPublish?: DropPublish;
}

/** The server before it listens: its routes and what starting, serving and stopping it takes. */
export interface Core {
  readonly config: Config;
  readonly log: Logger;
  readonly clock: ServiceClock;
  readonly keys: ApiKeys;
  readonly pipeline: Pipeline;
  readonly routes: readonly Route[];
  /** Node access's routes, for its own port (CHAINPOST_RPC_PORT). */
  rpcRoutes(prefix: string): Route[];
  readonly dispatcher: Dispatcher;
  /** The parts still starting (GET /health answers 503 until none is). */
  readonly readiness: Readiness;
  /** Text for the person at the terminal (stderr): stdout carries JSON lines only. */
  readonly notice: (text: string) => void;
  /** A cluster node's own figures and registry entry (CHAINPOST_NATS set). */
  readonly cluster: ClusterNode | undefined;
  /**
   * Starts following the chains: what each family starts first, the worker pool (on `threads` if they are started
   * already), the families' followers, matching.
   */
  startIngest(before?: BeforePart, threads?: Threads): Promise<Ingest>;
  /** Closes the store and gives up the data directory. */
  close(): Promise<void>;
}

export interface Service extends Core {
  readonly server: Server;
  stop(): Promise<void>;
}

/**
 * Everything but the listening socket: clock, store, keys, pipeline and routes.
 * The uWS server runs on it, and so do the Fastify and node:http servers of the
 * HTTP benchmark, so all three serve the very same handlers.
 */
export async function createCore({
  config,
  out = stdoutLines,
  notice = stderrNotice,
  adapters = {},
}: {
  config: Config;
  out?: (line: string) => void;
  notice?: (text: string) => void;
  adapters?: Adapters;
}): Promise<Core> {
  servingHeap();
  const ticker = adapters.ticker ?? systemTicker;
  const clock = new ServiceClock(ticker, config.now ?? Date.now(), (err) => log.error('timer failed', { err }));
  const log = jsonLogger(out, () => clock.now(), config.logLevel);
  const readiness = new Readiness(['store', 'watchlist', 'worker pool', ...FAMILIES.readiness(config), 'listener']);
  const { store, close } = openServerStore({ dir: config.dataDir, log });
  readiness.up('store');
  let cluster: ClusterControl | undefined;
  let node: ClusterNode | undefined;
  let requests: BusPartitionRequests | undefined;
  try {
    const keyStore = lmdbKeyStore(store);
    const metrics = new Metrics();
    const following = new Following();
    const heads = chainGauges({ clock, metrics, following });
    // Each family's own state, which the watchlist (the keys a family derives) and the family's hooks read.
    const states = FAMILIES.prepare({ config, kv: store, metrics, following });
    // Stopped with the store: a test process runs one server after another (test/in-process.ts).
    const unwatchLoop = watchEventLoop(metrics, ticker);
    watchMemory(metrics);
    watchProcess(metrics);
    const mark = config.traceBlocks ? traceLine(out) : undefined;
    // Webhook targets, the test webhook's and NFT metadata URLs: one policy, checked where each connection opens.
    const targets = new TargetPolicy(config.privateTargets, adapters.resolver ?? systemResolver);
    // The dispatcher comes before the control plane (whose reactions tell it of changes) and writes through it once
    // delivery starts, after both are made: a tenant's first settings, which hold its signing secret.
    const plane: ControlPlane = { write: (change) => control.write(change) };
    // xxhash32: a stream's delivery partition (seed 0), and the seeds of the compiled filter sets.
    const { h32 } = await xxhash();
    // A cluster node that owns partitions delivers theirs only, and publishes its units on their logs.
    const partitions = config.nats !== undefined && ownsPartitions(config.roles) ? new PartitionLink() : undefined;
    const dispatcher = buildDelivery({ config, store, clock, ticker, log, metrics, targets, mark, plane, hash: h32, partitions });
    // Each compiled filter set gets its own seed, so no fixed set of keys collides in every version.
    // What a family derives from a stream (a Bitcoin stream's xpubs' addresses) is compiled with its own.
    // Large chains' address sets are kept in the store (read in place at the next start) with changes laid over them.
    const watchlist = new Watchlist({
      families: FAMILIES,
      seedOf: (chain, version) => h32(`${chain}/${version}`),
      derivedOf: FAMILIES.derivedOf(states),
      bases: new Bases({ kv: store, mapped: (key) => store.mapped('watchedSets', key) }),
      failed: (what, err) => log.warn(`the watched set: ${what} failed; tried again at a later change`, { err }),
    });
    // Read a page per turn of the event loop, after the listener is up: a million addresses take seconds, and
    // requests are answered meanwhile. Matching waits for it (the blocks' events wait in the store).
    const hold = adapters.hold;
    watchlist.load(store, hold === undefined ? nextTurn : () => nextTurn().then(() => hold('watchlist page'))).then(
      () => readiness.up('watchlist'),
      (err: unknown) => log.error('the watchlist could not be read; nothing is matched', { err }),
    );
    const follows = followedChains(config);
    const followed = new FollowedChains((chain) => follows.has(chain), log);
    // Key, stream, address, xpub, settings and auth changes are applied to this process's store as they are written,
    // and what this node does once one is applied (its dispatcher, watchlist, followed chains, xpub windows) with it.
    const effects = changeEffects(
      { dispatcher, watch: watchlist, followed, watched: (s) => FAMILIES.watched(s) },
      FAMILIES.effects({ watch: watchlist }, states),
    );
    const local = new StoreControlPlane(store, keyStore, effects);
    // A cluster node writes every change to the cluster's log and applies everyone's with this node's applier.
    cluster =
      config.nats === undefined
        ? undefined
        : await startControlLog({
            nats: config.nats,
            replicas: config.natsReplicas,
            maxPayload: blockPayload(config),
            kv: store,
            applier: local.applier,
            log,
            ...(hold === undefined ? {} : { hold }),
          });
    const control = cluster?.plane ?? local;
    node =
      cluster === undefined
        ? undefined
        : await startClusterNode({
            config,
            kv: store,
            control: cluster,
            hash: h32,
            log,
            delivery: partitions === undefined ? undefined : { dispatcher, link: partitions },
          });
    if (node !== undefined) clusterGauges(metrics, node.entry);
    // A partition's work asked here (a replay, a block replay) is carried out by its owner, this node or another.
    requests =
      cluster === undefined || node === undefined
        ? undefined
        : partitionRequests({ control: cluster, node, link: partitions, ttlMs: config.leaseTtlMs, log });
    const keys = new ApiKeys(keyStore, () => clock.now(), control);
    if (config.apiKey !== undefined && (await keys.ensure(config.apiKey))) log.info('created the API key given by CHAINPOST_API_KEY');
    const pipeline = new Pipeline(
      keys,
      new RateLimiter(config.rateLimit, () => clock.now()),
      metrics,
      log,
      config.accessLog,
      config.trustedProxies,
      new OperatorAccess(config.adminKey, () => keys.firstTenant()),
    );
    const tokens = await TokenIssuer.open(store, control);
    const auth = new AuthService(store, control, clock, tokens, {
      skewMs: config.authSkewSeconds * 1000,
      bindTtlMs: BIND_TTL_MS,
      maxPending: config.maxPendingChallenges,
      // A message issued through another node may reach its verify here before this node applied it.
      ...(cluster === undefined ? {} : { caughtUp: cluster.caughtUp }),
    });
    const streamParts = { kv: store, clock, dispatcher, limits: config.limits, targets, followed, plane: control };
    const streams = new StreamsService({ kv: store, clock, dispatcher, plane: control, requests });
    requests?.serve((partition, request) => streams.carryOut(partition, request));
    const familyStreams = FAMILIES.resources(streamParts, states);
    const nodes = new NodeAccess(store, metrics, () => clock.now(), { gasCap: config.rpcGasCap });
    const { reads, tokens: tokenMetadata } = dataReads(store, (chain) => following.upstreams.get(chain) ?? nodes.upstream(chain));
    const webhookParts = {
      kv: store,
      tokens: tokenMetadata,
      gasCap: (chain: string) => nodes.callGasLimit(chain),
      triggerGas: BigInt(config.triggerGas),
      balance: reads.balance,
      // The webhook builder's question about a matched log's address: one keyed read (no address is held in memory).
      watches: (id: string, address: string) => store.has('streamAddresses', `${id}/${address}`),
    };
    const webhooks = FAMILIES.webhooks(webhookParts, states);
    // A block replay's webhook is staged by its stream's partition's owner.
    const blocks = FAMILIES.replays({
      kv: store,
      dispatcher: { enqueueBatch: (items) => streams.enqueue(items) },
      webhooks,
      parts: webhookParts,
      states,
    });
    // A chain's indexes begin where its follower's stored blocks do (the start block, or above what was pruned).
    const dataIndexer = new DataIndexer(
      store,
      dataIndexes({ reads, tokens: tokenMetadata, pricing: (chain) => config.pricing.get(chain) }),
      clock,
      log,
      {
        startBlock: (chain) => following.follower(chain)?.status().oldest,
        nodeHead: (chain) => following.follower(chain)?.status().nodeHead,
        chainRanges: dataChainRanges,
      },
    );
    metrics.gauge(
      'chainpost_data_index_lag_blocks',
      "Blocks ingested beyond the last one the Data API's indexes hold, per chain they index (from their first batch).",
      () =>
        following.followers.flatMap((f) => {
          const { chain, head } = f.status();
          // A chain this node does not index (a node without api) has none, whatever an earlier run left in its store.
          const at = following.indexed.has(chain) ? dataIndexer.position(chain) : undefined;
          return at === undefined ? [] : [{ labels: { chain }, value: Math.max(0, head - at) }];
        }),
    );
    const routes = buildRoutes({
      config,
      log,
      store,
      clock,
      metrics,
      readiness,
      heads,
      following,
      dispatcher,
      streams,
      familyStreams,
      auth,
      keys,
      tokens,
      nodes,
      reads,
      tokenMetadata,
      dataIndexer,
      targets,
      blocks,
      cluster: node,
    });
    startDelivery({ dispatcher, deliver: config.roles.has('deliver'), expire: () => auth.expire(), clock });
    return {
      config,
      log,
      clock,
      keys,
      pipeline,
      routes,
      rpcRoutes: (prefix) => rpcRoutes(clock, nodes, prefix),
      dispatcher,
      readiness,
      notice,
      cluster: node,
      startIngest: (before, threads) =>
        startIngest({
          config,
          log,
          clock,
          store,
          readiness,
          notice,
          mark,
          following,
          watchlist,
          states,
          webhooks,
          dispatcher,
          nodes,
          dataIndexer,
          ...(before === undefined ? {} : { before }),
          ...(hold === undefined ? {} : { hold }),
          ...(threads === undefined ? {} : { threads }),
          ...(cluster === undefined ? {} : { cluster }),
          ...(adapters.dropPublish === undefined ? {} : { dropPublish: adapters.dropPublish }),
          ...(partitions === undefined ? {} : { partitions: { link: partitions, hash: h32 } }),
          ...(requests === undefined ? {} : { requests }),
        }),
      close: async () => {
        unwatchLoop();
        heads.stop();
        await requests?.stop();
        await node?.stop();
        await cluster?.stop();
        await close();
      },
    };
  } catch (err) {
    await requests?.stop();
    await node?.stop();
    await cluster?.stop();
    await close();
    throw err;
  }
}

/** The chains' gauges on /metrics, and the watch of their heads that tells a stalled one (for /health too). */
function chainGauges({ clock, metrics, following }: { clock: ServiceClock; metrics: Metrics; following: Following }): HeadWatch {
  const { followers } = following;
  const perChain = (value: (s: FollowerStatus) => number) => () =>
    followers.map((f) => {
      const s = f.status();
      return { labels: { chain: s.chain }, value: value(s) };
    });
  // A chain at its family's pace where the family says (the embedded devnet's), else at its registry's.
  const heads = new HeadWatch(clock, (chain) => following.blockTimes.get(chain) ?? findChain(chain)?.blockTimeMs ?? 0);
  heads.start(() => followers.map((f) => f.status()));
  metrics.gauge(
    'chainpost_chain_head',
    'Last block ingested, per chain.',
    perChain((s) => s.head),
  );
  metrics.gauge(
    'chainpost_chain_lag_blocks',
    "Blocks the chain's upstream node announced beyond the last one ingested (0 before its first announcement).",
    perChain((s) => (s.nodeHead < 0 ? 0 : Math.max(0, s.nodeHead - s.head))),
  );
  metrics.gauge(
    'chainpost_chain_confirmed',
    'Last block announced as confirmed, per chain.',
    perChain((s) => s.confirmed),
  );
  metrics.gauge(
    'chainpost_chain_upstream_failing',
    "1 while the chain's upstream node fails (retried with backoff).",
    perChain((s) => (s.upstream === 'failing' ? 1 : 0)),
  );
  metrics.gauge(
    'chainpost_chain_stalled',
    `1 while the chain's head has not moved for ${STALL_BLOCK_TIMES} of its block times (${STALL_MIN_MS / 1000} s at least), as /health's stalled.`,
    perChain((s) => (heads.stalled(s.chain, s.head) ? 1 : 0)),
  );
  metrics.gauge(
    'chainpost_chain_upstream_errors_total',
    'Failed attempts to read the chain from its upstream node.',
    perChain((s) => s.upstreamErrors),
    'counter',
  );
  return heads;
}

/** A listener's address as host:port (an IPv6 host in brackets). */
const hostPort = (host: string, port: number): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/** Builds and starts the whole service from a parsed configuration. */
export async function startService({
  config,
  out,
  notice,
  before = noWait,
  adapters = {},
}: {
  config: Config;
  out?: (line: string) => void;
  notice?: (text: string) => void;
  before?: BeforePart;
  adapters?: Adapters;
}): Promise<Service> {
  if (!nativeUwsLoaded()) {
    throw new Error(
      `the native uWebSockets.js build did not load on this Node.js (ABI ${process.versions.modules}); chainpost refuses to run on the slow fallback. Use Node 20 (.nvmrc).`,
    );
  }
  checkClusterFiles(config);
  // Started first: each thread loads its modules while the store opens and the listener starts. A server that follows
  // no chain matches no block: its threads start at the first task (an xpub's window, say), if one ever comes.
  const threads = startWorkerThreads(config.dataDir, config.workerThreads, followedChains(config).size === 0);
  // Until ingestion owns the threads, a failed start closes what it opened: listeners, threads, store.
  let core: Core | undefined;
  const listeners: Server[] = [];
  const abandon = async (err: unknown): Promise<never> => {
    for (const s of listeners) await s.close(0);
    await threads.close();
    await core?.close();
    throw err;
  };
  /** A listener on `port`, or a ConfigError naming `variable`. */
  const listen = async (c: Core, port: number, routes: readonly Route[], variable: string): Promise<Server> => {
    try {
      const server = await startServer({ host: config.host, port, routes, pipeline: c.pipeline, fallback: unknownRoute });
      listeners.push(server);
      return server;
    } catch (err) {
      throw new ConfigError(variable, `${(err as Error).message} (address in use, or not an address of this machine)`);
    }
  };
  let server: Server;
  let rpcServer: Server | undefined;
  try {
    core = await createCore({ config, ...(out === undefined ? {} : { out }), ...(notice === undefined ? {} : { notice }), adapters });
    await before('listener');
    server = await listen(core, config.port, core.routes, 'CHAINPOST_HOST/CHAINPOST_PORT');
    // Node access alone on its own port, at {rpc_url}/:chain/:apiKey: the same route without the /rpc prefix. A
    // cluster node without the api role serves no API, node access neither.
    rpcServer =
      config.rpcPort === undefined || !config.roles.has('api')
        ? undefined
        : await listen(core, config.rpcPort, core.rpcRoutes(''), 'CHAINPOST_RPC_PORT');
  } catch (err) {
    return abandon(err);
  }
  const { log } = core;
  core.readiness.up('listener');
  await core.cluster?.listening(hostPort(config.host, server.port));
  let ingest: Ingest;
  try {
    ingest = await core.startIngest(before, threads);
  } catch (err) {
    // No anvil build here, say: nothing stays open behind the error.
    await server.close(0);
    await rpcServer?.close(0);
    await core.close();
    throw err;
  }
  await firstKey(core);
  log.info('listening', {
    host: config.host,
    port: server.port,
    privateTargets: config.privateTargets,
    ...(rpcServer === undefined ? {} : { rpcPort: rpcServer.port }),
    data: config.dataDir,
    workerThreads: ingest.workerThreads,
    now: new Date(core.clock.now()).toISOString(),
    testClock: config.testClock,
  });
  const stop = async (): Promise<void> => {
    // No delivery starts from now on; those in flight get their answer (the 10 s rule) and a commit of their outcomes.
    const delivered = Promise.race([
      core.dispatcher.stop().then(() => true),
      new Promise<false>((resolve) => systemTicker.wake(DELIVERY_TIMEOUT_MS, () => resolve(false))),
    ]);
    const grace = config.shutdownGraceMs;
    const [cut, rpcCut] = await Promise.all([server.close(grace), rpcServer?.close(grace) ?? 0]);
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
async function firstKey({ config, keys, notice }: Pick<Core, 'config' | 'keys' | 'notice'>): Promise<void> {
  if (config.apiKey !== undefined || keys.count() > 0) return;
  const { key, record } = await keys.create({ name: 'default' });
  // On stderr: stdout carries JSON log lines only.
  notice(`chainpost: created the first API key (name "${record.name}"); it is shown only this once:\nAPI key: ${key}\n`);
}
