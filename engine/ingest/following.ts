import type { Upstream } from '../ports.js';
import { nodeOrigin } from '../redact.js';
import type { ChainFollower } from './follow.js';

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

  /** A chain followed from now on: its node (`url` as /health shows it: scheme and host) and its follower, not started yet. */
  add(chain: string, url: string, upstream: Upstream & { close(): Promise<void> }, follower: ChainFollower): void {
    this.upstreams.set(chain, upstream);
    this.nodeUrls.set(chain, nodeOrigin(url));
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
