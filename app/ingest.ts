import { DEVNET_CHAIN, DEVNET_CHAIN_ID, accountsBanner, devnetFiles, startDevnet, type Devnet } from '../http/clients/devnet.js';
import { clearForNewDevnet } from '../http/clients/devnet-reset.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { slotSubscription } from '../http/clients/solana-slots.js';
import { pack } from '../storage/codec.js';
import type { Store } from '../storage/env.js';
import { FAMILIES, type FamilyWebhooks } from './families.js';
import { workerPool } from './worker-pool.js';
import { tracedEnqueue, tracedEvents, tracedPool, tracedUpstream, type Mark } from './block-trace.js';
import { findChain } from '../engine/chains/registry.js';
import type { ServiceClock } from '../engine/clock.js';
import type { Config } from '../engine/config/config.js';
import type { Dispatcher } from '../engine/delivery/dispatcher.js';
import { withIndexer, type DataIndexer } from '../engine/data-api/common/indexer.js';
import type { Logger } from '../engine/log.js';
import { inlineSmallCompiles } from '../engine/match/compile.js';
import { inlineSmallRounds } from '../engine/match/match-blocks.js';
import { StreamMatcher, byFamily } from '../engine/match/matcher.js';
import type { Watchlist } from '../engine/match/watchlist.js';
import type { Upstream } from '../engine/ports.js';
import type { Readiness } from '../engine/readiness.js';
import type { NodeAccess } from '../engine/rpc/service.js';
import type { BitcoinWallets } from '../engine/bitcoin/wallets.js';
import type { Part } from '../engine/readiness.js';

/** Match rounds of up to this many blocks (a new head and a confirmation) run on the main thread, larger ones in the pool. */
const INLINE_MATCH_BLOCKS = 4;

/** Filter sets of up to this many watched keys (a few ms of compiling) are compiled on the main thread, larger ones in the pool. */
const INLINE_COMPILE_KEYS = 2_000;


/** Test seam: awaited before each part of the server starts, so a test can hold the start at that point. */
export type BeforePart = (part: Part) => Promise<void>;

export const noWait: BeforePart = () => Promise.resolve();

import type { Following } from '../engine/ingest/following.js';


/** What ingestion is started with: the parts of the server it feeds and reads. */
export interface IngestParts {
  config: Config;
  log: Logger;
  clock: ServiceClock;
  store: Store;
  readiness: Readiness;
  /** Text for the person at the terminal (the devnet's banner). */
  notice: (text: string) => void;
  mark: Mark | undefined;
  following: Following;
  watchlist: Watchlist;
  wallets: BitcoinWallets;
  /** Each family's webhook builder. */
  webhooks: FamilyWebhooks;
  /** The trigger calls' connections to each EVM chain's node, opened by its follower. */
  triggerNodes: Map<string, Upstream>;
  dispatcher: Dispatcher;
  nodes: NodeAccess;
  dataIndexer: DataIndexer;
  before?: BeforePart;
}

/**
 * One follower per configured chain, or the embedded anvil devnet as 0x539 when
 * CHAINPOST_CHAINS is unset. Chains that stopped producing blocks or were
 * removed (by the service date) are not followed.
 */
export async function startIngest({ config, log, clock, store, readiness, notice, mark, following, watchlist, wallets, webhooks, triggerNodes, dispatcher, nodes, dataIndexer, before = noWait }: IngestParts): Promise<{ stop(): Promise<void> }> {
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
    notice(
      `chainpost: devnet ${DEVNET_CHAIN} (chain id ${DEVNET_CHAIN_ID}) at ${devnet.url}: a block every ${blockTime} s and one per transaction, confirmed at ${confirmations} blocks, kept in ${devnet.stateFile}\n` +
        `funded accounts (anvil's test mnemonic "test test test test test test test test test test test junk"; these keys are public: never use them on a real chain):\n${accountsBanner(devnet.accounts)}`,
    );
    readiness.up('devnet');
  }
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
  watchlist.compileWith(inlineSmallCompiles(pool.compile, INLINE_COMPILE_KEYS, log, FAMILIES.matching));
  const match = inlineSmallRounds(pool.match, store, INLINE_MATCH_BLOCKS, FAMILIES.matching);
  const builder = byFamily(webhooks);
  const matcher = new StreamMatcher({
    kv: store,
    clock,
    watchlist,
    pool: mark === undefined ? match : tracedPool(match, mark),
    dispatcher: mark === undefined ? dispatcher : tracedEnqueue(dispatcher, mark),
    build: builder,
    log,
    opts: { stageChunk: config.stageChunk, triggerBudgetMs: config.triggerBudgetMs, triggerShareMs: config.triggerShareMs },
  });
  const opened: Array<{ close(): Promise<void> }> = [];
  const started = FAMILIES.follow({
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
    trace: mark === undefined ? { upstream: (_chain, upstream) => upstream, events: (events) => events } : { upstream: (chain, upstream) => tracedUpstream(chain, upstream, mark), events: (events) => tracedEvents(events, mark) },
    evmChains: chains,
    nodes,
    triggerNodes,
    indexed: (events) => withIndexer(events, dataIndexer),
    watchlist,
    matching: FAMILIES.matching,
    wallets,
    dispatcher,
    slotSubscription,
    pool,
    pack,
  });
  // What a previous run announced but did not match yet.
  matcher.start([...following.upstreams.keys()]);
  for (const chain of following.indexed) dataIndexer.wake(chain);
  return {
    async stop() {
      for (const f of following.followers) f.stop();
      dataIndexer.stop();
      await dataIndexer.settled();
      for (const s of started) s.close();
      await matcher.stop();
      await pool.close();
      await Promise.all(opened.map((u) => u.close()));
      await devnet?.stop();
    },
  };
}
