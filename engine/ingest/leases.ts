/**
 * The leases of the chains: on a cluster, one node at a time follows a chain's upstream node, the one holding its
 * lease. It lives with ingest because following is what it rules; the bus (bus/leases.ts, a JetStream KV bucket)
 * keeps it, and a single process needs none.
 */

/** Why a node stopped holding a chain's lease. */
export type LeaseLoss =
  /** The bucket refused a renew: the lease's revision moved or the lease is gone (another writer, an operator). */
  | 'refused'
  /** No renew got through for long enough that the lease may have expired (the bus unreachable, the node stalled). */
  | 'unrenewed'
  /** This node gave it up (release, stop). */
  | 'released';

export type LeaseEvent = { kind: 'held'; chain: string; revision: number } | { kind: 'lost'; chain: string; reason: LeaseLoss };

/** A chain's lease as the bucket has it: the node holding it and the revision of its last take or renew. */
export interface LeaseHolder {
  chain: string;
  node: string;
  revision: number;
}

/**
 * The port: this node's leases. `take` contends for a chain (taking its lease now if free, else as soon as it is),
 * the lease is renewed while held, and each change is an event: `held` (follow the chain from now on), `lost` (stop
 * following it at once: another node may take it). No two nodes hold a chain's lease at once as long as each stops
 * at its `lost`, which comes before the lease can have expired.
 */
export interface ChainLeases {
  /** This node's id (stable across its restarts). */
  readonly node: string;
  /** Contends for the chain's lease until `release`; `held` once it is taken. */
  take(chain: string): void;
  /** Stops contending for the chain; a lease held is given up at once (`lost`, `released`) so another node takes it. */
  release(chain: string): Promise<void>;
  /** Whether this node holds the chain's lease now. */
  holds(chain: string): boolean;
  /** Who holds each chain's lease, and at which revision, by chain. */
  holders(): Promise<LeaseHolder[]>;
  /** The leases this node holds now, each at the revision of its last take or renew (/health, the node registry). */
  held(): Array<Omit<LeaseHolder, 'node'>>;
  /** Calls `listener` with each event of this node's leases; returns how to stop. */
  onEvent(listener: (event: LeaseEvent) => void): () => void;
  /** Releases every chain and stops. */
  stop(): Promise<void>;
}

/** When a lease of `ttlMs` is renewed, polled for, and given up as unrenewed. */
export interface LeaseTimings {
  /** A holder renews this long after its last renew (three chances within a TTL). */
  renewEveryMs: number;
  /** A contender tries to take the lease this often. */
  pollEveryMs: number;
  /**
   * A holder whose last successful renew was sent this long ago counts the lease lost: a margin before the TTL, so
   * its `lost` comes before the lease can expire and another node take it (the margin covers a late timer).
   */
  lostAfterMs: number;
}

export function leaseTimings(ttlMs: number): LeaseTimings {
  return { renewEveryMs: ttlMs / 3, pollEveryMs: ttlMs / 4, lostAfterMs: ttlMs - ttlMs / 6 };
}
