/**
 * Leases on a cluster: one node at a time holds each, the chains' (a chain's holder follows its upstream node) and
 * the delivery partitions' (a partition's holder matches and delivers its streams). It lives with ingest, where the
 * chains' came first; the bus (bus/leases.ts, a JetStream KV bucket) keeps both kinds, and a single process needs none.
 */

/** Why a node stopped holding a lease. */
export type LeaseLoss =
  /** The bucket refused a renew: the lease's revision moved or the lease is gone (another writer, an operator). */
  | 'refused'
  /** No renew got through for long enough that the lease may have expired (the bus unreachable, the node stalled). */
  | 'unrenewed'
  /** This node gave it up (release, stop). */
  | 'released';

/** What a lease is held on, under its kind's field: `{ chain: '0x1' }`, `{ partition: 7 }`. */
export type Named<F extends string, N> = { [K in F]: N };

export type LeaseEvent<F extends string = 'chain', N = string> =
  | (Named<F, N> & { kind: 'held'; revision: number })
  | (Named<F, N> & { kind: 'lost'; reason: LeaseLoss });

/** A lease as the bucket has it: the node holding it and the revision of its last take or renew. */
export type LeaseHolder<F extends string = 'chain', N = string> = Named<F, N> & { node: string; revision: number };

/**
 * The port: this node's leases of one kind. `take` contends for a lease (taking it now if free, else as soon as it
 * is), the lease is renewed while held, and each change is an event: `held` (act on it from now on), `lost` (stop at
 * once: another node may take it). No two nodes hold a lease at once as long as each stops at its `lost`, which comes
 * before the lease can have expired.
 */
export interface Leases<F extends string, N> {
  /** This node's id (stable across its restarts). */
  readonly node: string;
  /** Contends for the lease until `release`; `held` once it is taken. */
  take(name: N): void;
  /** Stops contending for the lease; one held is given up at once (`lost`, `released`) so another node takes it. */
  release(name: N): Promise<void>;
  /** Whether this node holds the lease now. */
  holds(name: N): boolean;
  /** Who holds each lease of this kind, and at which revision. */
  holders(): Promise<Array<LeaseHolder<F, N>>>;
  /** The leases this node holds now, each at the revision of its last take or renew (/health, the node registry). */
  held(): Array<Omit<LeaseHolder<F, N>, 'node'>>;
  /** Calls `listener` with each event of this node's leases; returns how to stop. */
  onEvent(listener: (event: LeaseEvent<F, N>) => void): () => void;
  /** Releases every lease and stops. */
  stop(): Promise<void>;
}

/** The chains' leases: the holder of a chain's follows it. */
export type ChainLeases = Leases<'chain', string>;

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
  /**
   * How long a request to the bus waits on a lease's behalf (a take, a renew, a takeover's read, the registry): a
   * poll, 100 ms at least, so a lost answer never holds up the lease's next turn.
   */
  requestTimeoutMs: number;
}

export function leaseTimings(ttlMs: number): LeaseTimings {
  const pollEveryMs = ttlMs / 4;
  return { renewEveryMs: ttlMs / 3, pollEveryMs, lostAfterMs: ttlMs - ttlMs / 6, requestTimeoutMs: Math.max(100, Math.floor(pollEveryMs)) };
}
