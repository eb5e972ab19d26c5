import { findChain } from '../chains/registry.js';
import { chainRemoval, effectiveAt } from '../chains/removals.js';
import type { FollowParts } from '../families/family.js';
import type { ChainEvents } from '../ingest/follow.js';
import { followerOptions, type MakeFollower } from '../ingest/following.js';
import type { Upstream } from '../ports.js';
import { EvmFollower } from './follower.js';
import { inlineSmallBlocks, type EvmIngestPool } from './prepared.js';
import type { EvmState } from './devnet.js';

/** Connections from node access to each chain's node (callers beyond this many wait for one). */
const NODE_ACCESS_CONNECTIONS = 32;
/** Connections from the streams' trigger calls to each chain's node (calls beyond this many wait for one). */
const TRIGGER_CONNECTIONS = 8;
/** Blocks whose node answers total at most this many bytes (a devnet's) are prepared on the main thread, larger ones in the pool. */
const INLINE_PREPARE_BYTES = 32 * 1024;

/** What the EVM followers need beyond the shared parts. */
export interface EvmFollowParts {
  /** Node access (engine/rpc): each chain's node is attached to it, a chain no longer producing blocks included. */
  nodes: { attach(chain: string, node: { upstream: Upstream; nodeLatest(): number | undefined; reorgs(): number }): void };
  /**
   * The events with the Data API indexes listening too; absent on a node that serves no API (a cluster node without
   * `api`), which builds none of them.
   */
  indexed?: (events: ChainEvents) => ChainEvents;
  pool: { ingest: EvmIngestPool };
  /** The store's encoding of index values (blocks prepared on the main thread). */
  pack(value: unknown): Uint8Array;
}

/**
 * One follower per EVM chain. Node access and the trigger calls get their own connections to each node, so
 * callers never queue behind ingestion, nor it behind them. Chains that stopped producing blocks or were
 * removed (by the service date) are not followed.
 */
export function followEvm(
  { config, log, clock, kv, following, events, rpc, trace, nodes, indexed, pool, pack }: FollowParts & EvmFollowParts,
  { chains, triggerNodes }: EvmState,
): void {
  const prepare = inlineSmallBlocks(pool.ingest, pack, INLINE_PREPARE_BYTES);
  for (const [key, url] of chains) {
    const chain = findChain(key)!;
    const node = rpc(url, { connections: NODE_ACCESS_CONNECTIONS });
    let follower: EvmFollower | undefined;
    // Until its node-access removal (the chainFor check), a chain that stopped producing blocks keeps its archive reads.
    nodes.attach(chain.key, { upstream: node, nodeLatest: () => follower?.nodeLatest(), reorgs: () => follower?.reorgs() ?? 0 });
    const removal = chainRemoval(chain, 'blocks', clock.now());
    if (removal !== undefined) {
      log.warn('not following a chain that no longer produces blocks', { chain: key, since: removal.date });
      continue;
    }
    // A removal still ahead ends the following when its date comes.
    const ahead = chainRemoval(chain, 'blocks', Infinity);
    const upstream = trace.upstream(chain.key, rpc(url));
    triggerNodes.set(chain.key, rpc(url, { connections: TRIGGER_CONNECTIONS }));
    // Made again each time this node is to follow the chain (a cluster node, at each lease it takes): node access asks the last one made.
    const make: MakeFollower = (stored) =>
      (follower = new EvmFollower(key, upstream, kv, clock, (indexed ?? same)(trace.events(events())), log, {
        ...followerOptions(config, chain, stored),
        pollMs: config.pollMs,
        pool: prepare,
        // A chain not in the store yet: from its start block, backfilled to the node's head, else from that head.
        startBlock: config.startBlocks.get(key) ?? 'head',
        ...(ahead === undefined ? {} : { until: effectiveAt(ahead.date) }),
      }));
    following.add(chain.key, url, upstream, make);
    if (indexed !== undefined) following.indexed.add(chain.key);
  }
}

const same = (events: ChainEvents): ChainEvents => events;
