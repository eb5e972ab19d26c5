import type { Upstream } from '../ports.js';
import type { ChainFollower } from './follow.js';

/**
 * The chains this server follows, filled in when it starts ingesting (each family's follower factory adds its
 * own): their followers, and each one's node (the follower's connections, and its origin as /health shows it).
 * The routes read it from the start.
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
