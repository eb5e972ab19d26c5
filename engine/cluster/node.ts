/**
 * What a cluster node says of itself: its entry in the node registry (bus/nodes.ts writes it every few seconds to a
 * KV bucket whose TTL removes a node that stopped), the `cluster` object of its /health and its cluster gauges on
 * /metrics. One shape for the three, so `chainpost status --cluster` and /health agree.
 */
import { z } from 'zod';
import { ROLES, type Role } from '../config/roles.js';
import type { Metrics } from '../metrics.js';

/** The format of an entry; a reader shows an entry of a newer one as it can (every field is optional to it). */
export const NODE_ENTRY_FORMAT = 1;

/** A chain's lease this node holds, at the revision of its last take or renew. */
export interface HeldLease {
  chain: string;
  revision: number;
}

/**
 * A delivery partition this node owns, at its lease's revision. `queued`: its undelivered webhooks (null before its
 * dispatcher adopted it: its log not applied yet).
 */
export interface OwnedPartition {
  partition: number;
  revision: number;
  queued: number | null;
}

/** A consumer of blocks (one per chain, or one for every chain) and how many messages it has still to apply. */
export interface ConsumerLag {
  name: string;
  lag: number;
}

/**
 * What app/ gives the registry of its node: read at each beat and by /health and /metrics. The lease and consumer
 * figures are optional: a node without them (no lease taken, no block consumer wired) reports none.
 */
export interface ClusterView {
  /** This node's id (stable across its restarts). */
  readonly node: string;
  readonly roles: ReadonlySet<Role>;
  /** chainpost's version on this node. */
  readonly version: string;
  /** When this node started, ms since the epoch. */
  readonly startedAt: number;
  /** Where its HTTP listener answers (host:port), once it listens. */
  http(): string | undefined;
  /** Whether its NATS connection is up, and the servers as logs show them (credentials masked). */
  bus(): { up: boolean; servers: string };
  /** The control log's last sequence applied to this node's store. */
  applied(): number;
  /** The leases this node holds now, with their revisions (the chain leases, where a node takes any). */
  leases?(): readonly HeldLease[];
  /** Each block consumer's lag, in messages (where this node applies other nodes' blocks). */
  consumers?(): Promise<readonly ConsumerLag[]>;
  /**
   * The delivery partitions this node owns now, at their leases' revisions: given on a node that owns partitions
   * (match and deliver), whose entry then lists them (none yet: an empty list), which tells the other nodes it takes part.
   */
  partitions?(): readonly OwnedPartition[];
}

/** A node's entry: in the registry, in /health's `cluster`, in `status --cluster`. */
export interface NodeEntry {
  v: number;
  node: string;
  roles: Role[];
  version: string;
  startedAt: string;
  /** When the node wrote this entry. */
  seenAt: string;
  http: string | null;
  bus: { up: boolean; servers: string };
  leases: HeldLease[];
  /**
   * The control log: the last sequence applied here, the stream's last sequence as the node last read it (null
   * before it could), and the difference, the changes this node has still to apply.
   */
  control: { applied: number; last: number | null; lag: number | null };
  consumers: ConsumerLag[];
  /** The delivery partitions it owns; absent on a node that owns none (no match and deliver, or an older version). */
  partitions?: OwnedPartition[];
}

/** A node's entry as /health answers it (its `cluster`): the OpenAPI document's schema of it. */
export const nodeEntryAnswer = z.object({
  v: z.number(),
  node: z.string(),
  roles: z.array(z.enum(ROLES)),
  version: z.string(),
  startedAt: z.string(),
  seenAt: z.string(),
  http: z.string().nullable(),
  bus: z.object({ up: z.boolean(), servers: z.string() }),
  leases: z.array(z.object({ chain: z.string(), revision: z.number() })),
  control: z.object({ applied: z.number(), last: z.number().nullable(), lag: z.number().nullable() }),
  consumers: z.array(z.object({ name: z.string(), lag: z.number() })),
  partitions: z.array(z.object({ partition: z.number(), revision: z.number(), queued: z.number().nullable() })).optional(),
}) satisfies z.ZodType<NodeEntry>;

/** What a beat read from the bus: the control log's last sequence and the consumers' lags (each undefined when it could not). */
export interface BusFigures {
  controlLast: number | undefined;
  consumers: readonly ConsumerLag[] | undefined;
}

/** The entry of `view` as of `now`, with the figures the last beat read. */
export function nodeEntry(view: ClusterView, figures: BusFigures, now: number): NodeEntry {
  const applied = view.applied();
  const last = figures.controlLast;
  return {
    v: NODE_ENTRY_FORMAT,
    node: view.node,
    roles: [...view.roles],
    version: view.version,
    startedAt: new Date(view.startedAt).toISOString(),
    seenAt: new Date(now).toISOString(),
    http: view.http() ?? null,
    bus: view.bus(),
    leases: [...(view.leases?.() ?? [])],
    // The node may have applied beyond the last sequence read a beat ago.
    control: { applied, last: last ?? null, lag: last === undefined ? null : Math.max(0, last - applied) },
    consumers: [...(figures.consumers ?? [])],
    ...(view.partitions === undefined ? {} : { partitions: [...view.partitions()] }),
  };
}

/** A cluster node's gauges on /metrics, read from its entry when scraped (`entry`: live figures, the bus's as of the last beat). */
export function clusterGauges(metrics: Metrics, entry: () => NodeEntry): void {
  const one = (value: (e: NodeEntry) => number) => () => [{ labels: {}, value: value(entry()) }];
  metrics.gauge('chainpost_cluster_role', 'The roles this cluster node takes (serve --roles), 1 each.', () =>
    entry().roles.map((role) => ({ labels: { role }, value: 1 })),
  );
  metrics.gauge(
    'chainpost_cluster_bus_up',
    "1 while the node's NATS connection is up.",
    one((e) => (e.bus.up ? 1 : 0)),
  );
  metrics.gauge('chainpost_cluster_lease_revision', "The revision of each chain's lease this node holds (it follows those chains).", () =>
    entry().leases.map((l) => ({ labels: { chain: l.chain }, value: l.revision })),
  );
  metrics.gauge(
    'chainpost_cluster_control_applied',
    "The control log's last sequence applied to this node's store.",
    one((e) => e.control.applied),
  );
  metrics.gauge(
    'chainpost_cluster_control_lag',
    'Changes of the control log this node has still to apply (-1 before it could read the log).',
    one((e) => e.control.lag ?? -1),
  );
  metrics.gauge('chainpost_cluster_partition_revision', 'The lease revision of each delivery partition this node owns.', () =>
    (entry().partitions ?? []).map((p) => ({ labels: { partition: String(p.partition) }, value: p.revision })),
  );
  metrics.gauge('chainpost_cluster_partition_queued', 'The undelivered webhooks of each delivery partition this node owns.', () =>
    (entry().partitions ?? []).flatMap((p) => (p.queued === null ? [] : [{ labels: { partition: String(p.partition) }, value: p.queued }])),
  );
  metrics.gauge('chainpost_cluster_consumer_lag', 'Messages each block consumer of this node has still to apply.', () =>
    entry().consumers.map((c) => ({ labels: { consumer: c.name }, value: c.lag })),
  );
}
