import { followerOptions } from '../ingest/following.js';
import { findChain } from '../chains/registry.js';
import type { Dispatcher } from '../delivery/dispatcher.js';
import type { FollowParts } from '../families/family.js';
import { FilterSets } from '../match/match-blocks.js';
import type { StagedElsewhere } from '../match/lanes.js';
import type { Matchings } from '../match/ports.js';
import type { Watchlist } from '../match/watchlist.js';
import { BitcoinFollower } from './follower.js';
import { BitcoinMempool } from './mempool.js';
import type { BitcoinIngestPool } from './prepared.js';
import { BITCOIN_CHAIN } from './stream.js';
import type { BitcoinState } from './wallets.js';
import type { WindowDeriver } from './xpub-windows.js';

/** What the Bitcoin follower and its mempool watcher need beyond the shared parts. */
export interface BitcoinFollowParts {
  watchlist: Watchlist;
  /** Each family's match step (the mempool matches against the chain's filter set). */
  matching: Matchings;
  dispatcher: Dispatcher;
  /** A cluster node's streams whose mempool webhooks their partition's owner stages, another node. */
  elsewhere?: StagedElsewhere;
  pool: { bitcoin: BitcoinIngestPool; xpubs: WindowDeriver };
}

/**
 * Added xpubs' windows derived in the worker pool from now on; the Bitcoin follower and its mempool watcher,
 * when a Bitcoin Core node is configured (CHAINPOST_BITCOIN_RPC).
 */
export function followBitcoin(
  { config, log, clock, kv, following, events, rpc, watchlist, matching, dispatcher, elsewhere, pool }: FollowParts & BitcoinFollowParts,
  { wallets }: BitcoinState,
): void {
  wallets.deriveWith(pool.xpubs);
  if (config.bitcoin.url === undefined) return;
  const upstream = rpc(config.bitcoin.url);
  const mempool = new BitcoinMempool({
    chain: BITCOIN_CHAIN,
    upstream,
    kv,
    clock,
    log,
    watchlist,
    sets: new FilterSets(matching),
    windows: wallets.windows,
    grown: (id) => wallets.grown(id),
    dispatcher,
    ...(elsewhere === undefined ? {} : { elsewhere }),
  });
  following.add(
    BITCOIN_CHAIN,
    config.bitcoin.url,
    upstream,
    (stored) =>
      new BitcoinFollower(BITCOIN_CHAIN, upstream, kv, clock, events(), log, {
        ...followerOptions(config, findChain(BITCOIN_CHAIN)!, stored),
        pollMs: config.bitcoin.pollMs,
        pool: pool.bitcoin,
        // The mempool after the blocks: a transaction just mined is no longer there to be announced.
        afterSync: () => mempool.poll(),
        // New to the store: from its start block, backfilled to the node's best block, else from that block.
        startBlock: config.startBlocks.get(BITCOIN_CHAIN) ?? 'head',
      }),
  );
}
