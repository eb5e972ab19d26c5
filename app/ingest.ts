import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { pack } from '../storage/codec.js';
import type { Store } from '../storage/env.js';
import { FAMILIES, type FamilyStates, type FamilyWebhooks } from './families.js';
import { workerPool } from './worker-pool.js';
import { startWorkerThreads, type Threads } from './worker-threads.js';
import { tracedEnqueue, tracedEvents, tracedPool, tracedUpstream, type Mark } from './block-trace.js';
import type { ServiceClock } from '../engine/clock.js';
import type { Config } from '../engine/config/config.js';
import type { Dispatcher } from '../engine/delivery/dispatcher.js';
import type { DataIndexer } from '../engine/data-api/common/indexer.js';
import { withIndexer } from '../engine/data-api/common/with-indexer.js';
import type { Logger } from '../engine/log.js';
import { inlineSmallCompiles } from '../engine/match/compile.js';
import type { FilterCompiler } from '../engine/match/ports.js';
import { inlineSmallRounds } from '../engine/match/match-blocks.js';
import { StreamMatcher, byFamily } from '../engine/match/matcher.js';
import type { Watchlist } from '../engine/match/watchlist.js';
import { storedAddresses } from '../engine/match/watched-keys.js';
import type { Readiness } from '../engine/readiness.js';
import type { NodeAccess } from '../engine/rpc/service.js';
import type { Part } from '../engine/readiness.js';

/** Match rounds of up to this many blocks (a new head and a confirmation) run on the main thread, larger ones in the pool. */
const INLINE_MATCH_BLOCKS = 4;

/** Filter sets of up to this many watched keys (a few ms of compiling) are compiled on the main thread, larger ones in the pool. */
const INLINE_COMPILE_KEYS = 2_000;

/** Test seam: awaited before each part of the server starts, so a test can hold the start at that point. */
export type BeforePart = (part: Part) => Promise<void>;

export const noWait: BeforePart = () => Promise.resolve();

/**
 * Test seam: awaited before each page of the watchlist's read, and before a filter set compiled in the worker pool
 * is handed to matching, so a test can hold the server in that state and see what it answers meanwhile.
 */
export type Hold = (step: 'watchlist page' | 'pool compile' | 'control change') => Promise<void>;

import type { Following } from '../engine/ingest/following.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import type { DropPublish } from '../bus/chains.js';
import { clusterChains, matchAfterControl, openNodeLeases, type ClusterControl } from './cluster.js';
import type { PartitionLink } from './delivery.js';
import { partitionOf, type Hash32 } from '../engine/cluster/partitions.js';
import type { PartitionRequests } from '../engine/streams/partition-requests.js';
import type { StagedElsewhere } from '../engine/match/lanes.js';
import type { StoredStream } from '../engine/streams/model.js';

/** What ingestion is started with: the parts of the server it feeds and reads. */
export interface IngestParts {
  config: Config;
  log: Logger;
  clock: ServiceClock;
  store: Store;
  readiness: Readiness;
  /** Text for the person at the terminal (a family's banner). */
  notice: (text: string) => void;
  mark: Mark | undefined;
  following: Following;
  watchlist: Watchlist;
  /** Each family's state. */
  states: FamilyStates;
  /** Each family's webhook builder. */
  webhooks: FamilyWebhooks;
  dispatcher: Dispatcher;
  nodes: NodeAccess;
  dataIndexer: DataIndexer;
  before?: BeforePart;
  hold?: Hold;
  /** The worker pool's threads if already started (they load while the server starts); closed when the start fails. */
  threads?: Threads;
  /** A cluster node's control log (CHAINPOST_NATS): its chains are followed under leases and their blocks published. */
  cluster?: ClusterControl;
  /** Test seam: blocks it names are not published (a publish lost before a crash). */
  dropPublish?: DropPublish;
  /**
   * A cluster node owning delivery partitions: it matches every chain's blocks (followed or applied) for the streams
   * of the partitions it adopted, `hash` placing each stream in its partition.
   */
  partitions?: { link: PartitionLink; hash: Hash32 };
  /**
   * A cluster node's partition requests: webhooks this node makes for a stream whose partition another node carries
   * out (a stream moving partitions, the Bitcoin mempool's) are staged by that owner.
   */
  requests?: PartitionRequests;
}

/** The streams whose webhooks their partition's owner stages, another node: asked to it over the bus. */
function stagedElsewhere(dispatcher: Dispatcher, requests: PartitionRequests): StagedElsewhere {
  return {
    partitionOf: (id) => {
      const p = dispatcher.partitionOfStream(id);
      return p === undefined || requests.here(p) ? undefined : p;
    },
    stage: (p, items) => requests.ask(p, { kind: 'enqueue', items }),
  };
}

/**
 * Block events a cluster node keeps after every partition it owns finished them, blocks behind the newest seen: a
 * partition's next owner matches from where the last one left it (its marks), within this many blocks (Solana's
 * slots included, about 7 minutes of them; an owner comes back within 2 lease TTLs).
 */
const CLUSTER_RETAIN_EVENTS = 1024;

/** Ingestion started: how many threads its worker pool runs, and its stop. */
export interface Ingest {
  workerThreads: number;
  stop(): Promise<void>;
}

/** What each family starts before the worker pool (its `begin`), the worker pool, matching, and each family's followers. */
export async function startIngest({
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
  before = noWait,
  hold,
  threads,
  cluster,
  dropPublish,
  partitions,
  requests,
}: IngestParts): Promise<Ingest> {
  const elsewhere = requests === undefined ? undefined : stagedElsewhere(dispatcher, requests);
  let begun: Awaited<ReturnType<typeof FAMILIES.begin>>;
  let leases: Awaited<ReturnType<typeof openNodeLeases>>;
  try {
    leases = cluster === undefined ? undefined : await openNodeLeases(config, cluster, store, log);
  } catch (err) {
    await threads?.close();
    throw err;
  }
  try {
    begun = await FAMILIES.begin({ config, log, kv: store, following, readiness, notice, before }, states);
    await before('worker pool');
  } catch (err) {
    await leases?.stop();
    await threads?.close();
    throw err;
  }
  // One pool of worker threads for the server: matching and ingestion tasks share its workers, one per core
  // unless CHAINPOST_WORKER_THREADS says how many.
  const poolThreads = threads ?? startWorkerThreads(store.path, config.workerThreads);
  const workerThreads = poolThreads.count;
  const pool = workerPool(poolThreads);
  try {
    await pool.ready();
  } catch (err) {
    await pool.close();
    for (const b of begun) await b.stop();
    await leases?.stop();
    throw err;
  }
  readiness.up('worker pool');
  const poolCompile: FilterCompiler =
    hold === undefined
      ? pool.compile
      : {
          async compile(task) {
            const filter = await pool.compile.compile(task);
            await hold('pool compile');
            return filter;
          },
          ...(pool.compile.layer === undefined ? {} : { layer: pool.compile.layer }),
        };
  const addresses = storedAddresses((opts) => store.keys('streamAddresses', opts));
  watchlist.compileWith(inlineSmallCompiles(poolCompile, INLINE_COMPILE_KEYS, log, FAMILIES.matching, addresses));
  // Match tasks hold the stored bases their sets name (removed only once none runs).
  const match = inlineSmallRounds(watchlist.holding(pool.match), store, INLINE_MATCH_BLOCKS, FAMILIES.matching);
  const builder = byFamily(webhooks);
  // The partitions matched for: every one in one process; on a cluster node those it adopted, and none on a node owning
  // none (ingest without match and deliver): the partitions' owners match the blocks it follows, from the bus.
  const owned =
    partitions !== undefined
      ? {
          owns: (p: number) => partitions.link.owns(p),
          partitionOf: (s: StoredStream) => partitionOf(partitions.hash, s.tenantId, s.webhookUrl),
          ...(elsewhere === undefined ? {} : { elsewhere }),
        }
      : cluster === undefined
        ? {}
        : { owns: () => false };
  const matcher = new StreamMatcher({
    // On a node owning partitions, through delivery's capture: what a partition staged is published with its webhooks.
    kv: partitions === undefined ? store : dispatcher.store,
    store,
    clock,
    watchlist,
    pool: mark === undefined ? match : tracedPool(match, mark),
    dispatcher: mark === undefined ? dispatcher : tracedEnqueue(dispatcher, mark),
    build: builder,
    log,
    opts: {
      stageChunk: config.stageChunk,
      triggerBudgetMs: config.triggerBudgetMs,
      triggerShareMs: config.triggerShareMs,
      ...(cluster === undefined ? {} : { caughtUp: matchAfterControl(cluster, log) }),
      ...(cluster === undefined ? {} : { retainEvents: CLUSTER_RETAIN_EVENTS }),
    },
    ...owned,
  });
  partitions?.link.follow(matcher);
  // A cluster node follows a chain while it holds its lease; the others' blocks wake its Data API indexer, and, on a
  // node owning partitions, are matched for their streams as the follower's are.
  const wakeIndexer = (chain: string): void => {
    if (following.indexed.has(chain)) dataIndexer.wake(chain);
  };
  const matched = matcher.events();
  const applied: ChainEvents =
    partitions === undefined
      ? { seen: () => {}, confirmed: () => {}, reorged: () => {}, committed: wakeIndexer }
      : {
          ...matched,
          committed: (chain) => {
            matched.committed?.(chain);
            wakeIndexer(chain);
          },
        };
  const chains =
    cluster === undefined
      ? undefined
      : clusterChains({
          cluster,
          kv: store,
          leases,
          applied,
          followed: matcher.events(),
          log,
          drop: dropPublish,
          leaseTtlMs: config.leaseTtlMs,
        });
  if (chains !== undefined) {
    following.gate = chains;
    cluster!.chains.leases = leases;
    cluster!.chains.lags = () => chains.lags();
  }
  const opened: Array<{ close(): Promise<void> }> = [];
  const started = FAMILIES.follow(
    {
      config,
      log,
      clock,
      kv: store,
      following,
      events: () => matcher.events(),
      rpc: (url, opts) => {
        const node = jsonRpcUpstream(url, opts);
        opened.push(node);
        return node;
      },
      trace:
        mark === undefined
          ? { upstream: (_chain, upstream) => upstream, events: (events) => events }
          : { upstream: (chain, upstream) => tracedUpstream(chain, upstream, mark), events: (events) => tracedEvents(events, mark) },
      nodes,
      // The Data API's indexes are built where they are read: a node without `api` (a cluster's ingest node) spends
      // nothing on them, two thirds of a catch-up's CPU (docs/decisions/index-writes.md).
      ...(config.roles.has('api') ? { indexed: (events: ChainEvents) => withIndexer(events, dataIndexer) } : {}),
      watchlist,
      matching: FAMILIES.matching,
      dispatcher,
      ...(elsewhere === undefined ? {} : { elsewhere }),
      pool,
      pack,
    },
    states,
  );
  // What a previous run announced but did not match yet.
  matcher.start([...following.upstreams.keys()]);
  for (const chain of following.indexed) dataIndexer.wake(chain);
  return {
    workerThreads,
    async stop() {
      for (const f of following.followers) f.stop();
      await chains?.stop();
      dataIndexer.stop();
      await dataIndexer.settled();
      for (const s of started) s.close();
      await matcher.stop();
      await pool.close();
      await Promise.all(opened.map((u) => u.close()));
      for (const b of begun) await b.stop();
    },
  };
}
