import type { Kv, Upstream } from '../ports.js';
import { nodeOrigin } from '../redact.js';
import type { StartState } from './chain-start.js';
import type { StoredListener } from './commit.js';
import type { ChainFollower, FollowerStatus } from './follow.js';

/**
 * Makes a chain's follower, not started, from the store's state as it is now; `stored` is told what it stores once
 * durable (on a cluster, the chain's lease holder publishes it). A family whose follower takes no listener ignores it.
 */
export type MakeFollower = (stored: StoredListener | undefined) => ChainFollower;

/**
 * The options every family's follower takes alike: its confirmations (CHAINPOST_CONFIRMATIONS, else the chain's),
 * the blocks it keeps, and the listener of what it stores.
 */
export function followerOptions(
  config: { confirmations: ReadonlyMap<string, number>; retentionBlocks: number },
  chain: { key: string; confirmations: number },
  stored: StoredListener | undefined,
): { confirmations: number; retention: number; stored?: StoredListener } {
  return {
    confirmations: config.confirmations.get(chain.key) ?? chain.confirmations,
    retention: config.retentionBlocks,
    ...(stored === undefined ? {} : { stored }),
  };
}

/** Who runs a chain's follower: this process at once (one process), or a cluster node while it holds the chain's lease. */
export interface FollowGate {
  /** The chain's follower as the rest of the server sees it (its status); `make` makes the one that follows. */
  follower(chain: string, make: MakeFollower): ChainFollower;
}

/** One process follows every chain it is configured with, from its start. */
export const FOLLOW_AT_ONCE: FollowGate = {
  follower(_chain, make) {
    const follower = make(undefined);
    follower.start();
    return follower;
  },
};

/**
 * A chain's follower on a cluster node: a follower made from the store's state each time the node is to follow the
 * chain (its lease taken, and the blocks the others published applied), stopped when it is not. Meanwhile its status
 * is the store's, which the blocks applied from the others move.
 */
export class LeasedFollower implements ChainFollower {
  private current: ChainFollower;
  private following = false;

  constructor(
    readonly chain: string,
    private readonly kv: Kv,
    private readonly make: MakeFollower,
  ) {
    // Never started: what it reports beyond the store's state (its family's fields), until this node follows.
    this.current = make(undefined);
  }

  /** Whether this node follows the chain now. */
  get active(): boolean {
    return this.following;
  }

  /** Follows the chain from what the store holds now, telling `stored` what it stores. */
  follow(stored: StoredListener): void {
    this.unfollow();
    this.current = this.make(stored);
    this.current.start();
    this.following = true;
  }

  /** Stops following at once (the lease lost, or the node stopping). */
  unfollow(): void {
    if (!this.following) return;
    this.following = false;
    this.current.stop();
  }

  start(): void {}

  stop(): void {
    this.unfollow();
  }

  status(): FollowerStatus {
    const status = this.current.status();
    if (this.following) return status;
    const state = this.kv.get<StartState>('chainState', this.chain);
    return state === undefined ? status : { ...status, head: state.head, confirmed: state.confirmed, oldest: state.pruned + 1 };
  }

  reorgs(): number {
    return this.current.reorgs();
  }
}

/**
 * The chains this server follows, filled in when it starts ingesting (each family's follower factory adds its
 * own): their followers, and each one's node (the follower's connections, and its origin as /health shows it).
 * The routes read it from the start.
 */
export class Following {
  readonly followers: ChainFollower[] = [];
  /** The followers by chain key: a Data API request looks its chain's up, a page of rows once per row. */
  private readonly byChain = new Map<string, ChainFollower>();
  /** Each followed chain's node as /health shows it (its scheme and host: no user, password or path, which may hold a key), by chain key. */
  readonly nodeUrls = new Map<string, string>();
  /** Each followed chain's node, by chain key. */
  readonly upstreams = new Map<string, Upstream & { close(): Promise<void> }>();
  /** A chain's block time, ms, where its family says other than the chain registry (the embedded devnet mines at its own pace). */
  readonly blockTimes = new Map<string, number>();
  /** The followed chains whose blocks feed the Data API's indexes (/health shows their position). */
  readonly indexed = new Set<string>();
  /** Who runs the followers the families add: set by a cluster node before they do (app/ingest.ts). */
  gate: FollowGate = FOLLOW_AT_ONCE;

  /** A chain followed from now on: its node (`url` as /health shows it: scheme and host), and its follower, which the gate starts. */
  add(chain: string, url: string, upstream: Upstream & { close(): Promise<void> }, make: MakeFollower): void {
    this.upstreams.set(chain, upstream);
    this.nodeUrls.set(chain, nodeOrigin(url));
    const follower = this.gate.follower(chain, make);
    this.followers.push(follower);
    this.byChain.set(chain, follower);
  }

  /** The chain's follower, if it is followed. */
  follower(chain: string): ChainFollower | undefined {
    return this.byChain.get(chain);
  }

  chains(): string[] {
    return [...this.byChain.keys()];
  }
}
