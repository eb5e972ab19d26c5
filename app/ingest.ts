import { DEVNET_CHAIN, DEVNET_CHAIN_ID, accountsBanner, devnetFiles, startDevnet, type Devnet } from '../http/clients/devnet.js';
import { clearForNewDevnet } from '../http/clients/devnet-reset.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { slotSubscription } from '../http/clients/solana-slots.js';
import { pack } from '../storage/codec.js';
import type { Store } from '../storage/env.js';
import { FAMILIES } from './families.js';
import { workerPool } from './worker-pool.js';
import { tracedEnqueue, tracedEvents, tracedPool, tracedUpstream, type Mark } from './block-trace.js';
import { findChain } from '../engine/chains/registry.js';
import { chainRemoval, effectiveAt } from '../engine/chains/removals.js';
import type { ServiceClock } from '../engine/clock.js';
import type { Config } from '../engine/config/config.js';
import type { Dispatcher } from '../engine/delivery/dispatcher.js';
import { withIndexer, type DataIndexer } from '../engine/data-api/common/indexer.js';
import type { ChainFollower } from '../engine/ingest/follow.js';
import type { Logger } from '../engine/log.js';
import { inlineSmallCompiles } from '../engine/match/compile.js';
import { inlineSmallRounds } from '../engine/match/match-blocks.js';
import { FilterSets } from '../engine/match/match-blocks.js';
import { StreamMatcher, byFamily, type BuildWebhook } from '../engine/match/matcher.js';
import type { Watchlist } from '../engine/match/watchlist.js';
import type { Upstream } from '../engine/ports.js';
import type { Readiness } from '../engine/readiness.js';
import { nodeOrigin } from '../engine/redact.js';
import type { NodeAccess } from '../engine/rpc/service.js';
import { BitcoinFollower } from '../engine/bitcoin/follower.js';
import { BitcoinMempool } from '../engine/bitcoin/mempool.js';
import { BITCOIN_CHAIN, type BitcoinStreamRecord } from '../engine/bitcoin/stream.js';
import type { BitcoinWallets } from '../engine/bitcoin/wallets.js';
import { chainReads, type ChainReads } from '../engine/evm/chain-reads.js';
import { Follower } from '../engine/evm/follower.js';
import { inlineSmallBlocks } from '../engine/evm/prepared.js';
import type { TokenMetadata } from '../engine/evm/token-metadata.js';
import { webhookBuilder } from '../engine/evm/webhook-builder.js';
import { SolanaFollower } from '../engine/solana/follower.js';
import { SOLANA_CHAIN } from '../engine/solana/stream.js';
import { solanaWebhookBuilder } from '../engine/solana/webhook.js';
import type { Part } from '../engine/readiness.js';

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

/** Test seam: awaited before each part of the server starts, so a test can hold the start at that point. */
export type BeforePart = (part: Part) => Promise<void>;

export const noWait: BeforePart = () => Promise.resolve();

/**
 * The chains this server follows, filled in when it starts ingesting: their followers, and each one's node
 * (the follower's connections, and its origin as /health shows it). The routes read it from the start.
 */
export class Following {
  readonly followers: ChainFollower[] = [];
  /** Each followed chain's node as /health shows it (its scheme and host: no user, password or path, which may hold a key), by chain key. */
  readonly nodeUrls = new Map<string, string>();
  /** Each followed chain's node, by chain key. */
  readonly upstreams = new Map<string, Upstream & { close(): Promise<void> }>();
  /** The followed chains whose blocks feed the Data API's indexes (/health shows their position). */
  readonly indexed = new Set<string>();

  /** The chain's follower, if it is followed. */
  follower(chain: string): ChainFollower | undefined {
    return this.followers.find((f) => f.status().chain === chain);
  }

  chains(): string[] {
    return this.followers.map((f) => f.status().chain);
  }
}

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
  bitcoinWebhooks: BuildWebhook<BitcoinStreamRecord>;
  dispatcher: Dispatcher;
  nodes: NodeAccess;
  reads: ChainReads;
  tokenMetadata: TokenMetadata;
  dataIndexer: DataIndexer;
  before?: BeforePart;
}

/**
 * One follower per configured chain, or the embedded anvil devnet as 0x539 when
 * CHAINPOST_CHAINS is unset. Chains that stopped producing blocks or were
 * removed (by the service date) are not followed.
 */
export async function startIngest({ config, log, clock, store, readiness, notice, mark, following, watchlist, wallets, bitcoinWebhooks, dispatcher, nodes, reads, tokenMetadata, dataIndexer, before = noWait }: IngestParts): Promise<{ stop(): Promise<void> }> {
  const { upstreams, nodeUrls, followers } = following;
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
  watchlist.compileWith(inlineSmallCompiles(pool.compile, INLINE_COMPILE_KEYS, log, FAMILIES.matching));
  wallets.deriveWith(pool.xpubs);
  const match = inlineSmallRounds(pool.match, store, INLINE_MATCH_BLOCKS, FAMILIES.matching);
  const prepare = inlineSmallBlocks(pool.ingest, pack, INLINE_PREPARE_BYTES);
  // Trigger calls have their own connections to each node: however many hang, the follower's reads never queue behind them.
  const triggerNodes = new Map<string, Upstream>();
  const triggerCalls = chainReads((chain) => triggerNodes.get(chain)).call;
  const builder = byFamily({
    evm: webhookBuilder({ tokens: tokenMetadata, call: triggerCalls, gasCap: (chain) => nodes.callGasLimit(chain), triggerGas: BigInt(config.triggerGas), balance: reads.balance, watched: (id) => watchlist.watched(id) }),
    bitcoin: bitcoinWebhooks,
    solana: solanaWebhookBuilder(),
  });
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
  for (const [key, url] of chains) {
    const chain = findChain(key)!;
    const node = jsonRpcUpstream(url, { connections: NODE_ACCESS_CONNECTIONS });
    access.push(node);
    let follower: Follower | undefined;
    // Until its node-access removal (the chainFor check), a chain that stopped producing blocks keeps its archive reads.
    nodes.attach(chain.key, { upstream: node, nodeLatest: () => follower?.nodeLatest(), reorgs: () => follower?.reorgs() ?? 0 });
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
    nodeUrls.set(chain.key, nodeOrigin(url));
    const events = withIndexer(mark === undefined ? matcher.events() : tracedEvents(matcher.events(), mark), dataIndexer);
    follower = new Follower(key, upstream, store, clock, events, log, {
      confirmations: config.confirmations.get(key) ?? chain.confirmations,
      pollMs: config.pollMs,
      retention: config.retentionBlocks,
      pool: prepare,
      // A chain not in the store yet: from its start block, backfilled to the node's head, else from that head.
      startBlock: config.startBlocks.get(key) ?? 'head',
      ...(ahead === undefined ? {} : { until: effectiveAt(ahead.date) }),
    });
    followers.push(follower);
    following.indexed.add(chain.key);
    follower.start();
  }
  if (config.bitcoin.url !== undefined) {
    const upstream = jsonRpcUpstream(config.bitcoin.url);
    upstreams.set(BITCOIN_CHAIN, upstream);
    nodeUrls.set(BITCOIN_CHAIN, nodeOrigin(config.bitcoin.url));
    const mempool = new BitcoinMempool({ chain: BITCOIN_CHAIN, upstream, kv: store, clock, log, watchlist, sets: new FilterSets(FAMILIES.matching), windows: wallets.windows, grown: (id) => wallets.grown(id), dispatcher });
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
    followers.push(follower);
    follower.start();
  }
  let slots: ReturnType<typeof slotSubscription> | undefined;
  if (config.solana.url !== undefined) {
    const upstream = jsonRpcUpstream(config.solana.url);
    upstreams.set(SOLANA_CHAIN, upstream);
    nodeUrls.set(SOLANA_CHAIN, nodeOrigin(config.solana.url));
    slots = config.solana.wsUrl === undefined ? undefined : slotSubscription(config.solana.wsUrl);
    const follower = new SolanaFollower(SOLANA_CHAIN, upstream, store, clock, matcher.events(), log, {
      confirmations: config.confirmations.get(SOLANA_CHAIN) ?? findChain(SOLANA_CHAIN)!.confirmations,
      pollMs: config.solana.pollMs,
      retention: config.retentionBlocks,
      pool: pool.solana,
      ...(slots === undefined ? {} : { slots }),
    });
    followers.push(follower);
    follower.start();
  }
  // What a previous run announced but did not match yet.
  matcher.start([...upstreams.keys()]);
  for (const chain of following.indexed) dataIndexer.wake(chain);
  return {
    async stop() {
      for (const f of followers) f.stop();
      dataIndexer.stop();
      await dataIndexer.settled();
      slots?.close();
      await matcher.stop();
      await pool.close();
      await Promise.all([...upstreams.values(), ...access].map((u) => u.close()));
      await devnet?.stop();
    },
  };
}
