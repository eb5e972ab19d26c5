/**
 * What a cluster node (CHAINPOST_NATS set) needs of this machine, checked at start before anything opens: engine/
 * parses the configuration and reads no file.
 */
import { chainpostVersion } from './version.js';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import { connectBus, redactedServers, type BusConnection } from '../bus/connect.js';
import { BusControlPlane } from '../bus/control-log.js';
import { ClusterChains, type DropPublish } from '../bus/chains.js';
import { openChainLeases } from '../bus/leases.js';
import { registryTtl, startNodeRegistry } from '../bus/nodes.js';
import { startPartitionOwners, type PartitionOwners } from '../bus/owners.js';
import { ClusterPartitions } from '../bus/partitions.js';
import { BusPartitionRequests } from '../bus/requests.js';
import type { PartitionLog } from '../engine/cluster/partition-log.js';
import { within } from '../bus/waits.js';
import type { Dispatcher } from '../engine/delivery/dispatcher.js';
import type { PartitionLink } from './delivery.js';
import { BLOCKS_MAX_PAYLOAD, checkMaxPayload, ensureBlocksStream, ensureControlStream, ensurePartitionsStream } from '../bus/streams.js';
import type { ClusterView, ConsumerLag, NodeEntry } from '../engine/cluster/node.js';
import { ownsPartitions } from '../engine/cluster/owners.js';
import type { Hash32 } from '../engine/cluster/partitions.js';
import { ConfigError, type Config } from '../engine/config/config.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import { leaseTimings, type ChainLeases } from '../engine/ingest/leases.js';
import type { Logger } from '../engine/log.js';
import type { Kv } from '../engine/ports.js';
import { randomAlphanumeric } from '../engine/random.js';
import type { ChangeApplier } from '../engine/streams/control-plane.js';
import { BLOCK_STORES } from './families.js';

/**
 * CHAINPOST_NATS_CREDS names a file this process can read. Refused here, the start stops with its path and why;
 * left to the bus, it would show only as sign-ins failing again and again.
 */
export function checkClusterFiles(config: Pick<Config, 'nats'>): void {
  const creds = config.nats?.creds;
  if (creds === undefined) return;
  try {
    // Read, not stat'ed: only a read says whether this process may (root passes every permission check).
    readFileSync(creds);
  } catch (err) {
    // The code alone (ENOENT, EACCES, EISDIR): node's message names the path only for some of them.
    throw new ConfigError(
      'CHAINPOST_NATS_CREDS',
      `cannot read the creds file ${creds} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

/** A connection to the cluster's NATS servers (CHAINPOST_NATS, CHAINPOST_NATS_CREDS). */
export async function connectNats(
  nats: NonNullable<Config['nats']>,
  log: Logger | undefined,
  onceWithinMs?: number,
  name?: string,
): Promise<BusConnection> {
  const servers = nats.servers.join(',');
  try {
    // connectBus logs the servers with their credentials masked.
    return await connectBus({
      servers,
      ...(nats.creds === undefined ? {} : { credsFile: nats.creds }),
      ...(onceWithinMs === undefined ? {} : { onceWithinMs }),
      ...(log === undefined ? {} : { log }),
      ...(name === undefined ? {} : { name }),
    });
  } catch (err) {
    if (onceWithinMs === undefined) throw err;
    throw new ConfigError(
      'CHAINPOST_NATS',
      `cannot connect to ${redactedServers(servers)}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

/**
 * A Bitcoin block as stored (record, probe column, index rows) is some four times the node's raw block (5.0 MB for
 * mainnet block 574200's 1.2 MB: npm run bench:block-messages), and a block may weigh up to 4 MB raw: 32 MB holds it.
 */
const BITCOIN_MAX_PAYLOAD = 32 * 1024 * 1024;

/** The largest block message this node may publish: a Bitcoin block, when it follows Bitcoin (CHAINPOST_BITCOIN_RPC). */
export const blockPayload = (config: Pick<Config, 'bitcoin'>): number =>
  config.bitcoin.url === undefined ? BLOCKS_MAX_PAYLOAD : BITCOIN_MAX_PAYLOAD;

/** How long a CLI command waits for NATS to answer, ms. */
export const NATS_WAIT_MS = 5_000;

/** How long a node starting waits to apply the changes the log holds before it writes its own (its API key, its token signing key). */
const CATCH_UP_MS = 30_000;

/** A cluster node's control plane: the log it writes every change to and applies everyone's from. */
export interface ClusterControl {
  readonly plane: BusControlPlane;
  /** The node's one connection to NATS. */
  readonly bus: BusConnection;
  /** Resolves true once this node has applied the log as far as it went at the call, false after `ms`. */
  caughtUp(ms: number): Promise<boolean>;
  /** The chains' figures of this node, once its chains run (ingest fills it in): what its registry entry shows. */
  readonly chains: { leases?: Pick<ChainLeases, 'held'>; lags?: () => readonly ConsumerLag[] };
  /** Stops applying the log and closes the connection to NATS. */
  stop(): Promise<void>;
}

/**
 * Connects to NATS, makes sure the control log exists and that the server takes blocks, then applies the log to this
 * node's store with `applier` (the single process's own): every change goes through the log from now on.
 */
export async function startControlLog({
  nats,
  replicas,
  kv,
  applier,
  log,
  hold,
  onceWithinMs,
  maxPayload,
}: {
  nats: NonNullable<Config['nats']>;
  /** CHAINPOST_NATS_REPLICAS: the control log's replicas. */
  replicas: number;
  kv: Kv;
  applier: ChangeApplier;
  log: Logger;
  /** Awaited before each change is applied (a test holds this node behind the others). */
  hold?: (step: 'control change') => Promise<void>;
  /** A CLI command's short visit: one attempt at each server within this many ms, refused if none answers. */
  onceWithinMs?: number;
  /** The largest block message this node may publish (blockPayload): the servers' max_payload must take it. */
  maxPayload?: number;
}): Promise<ClusterControl> {
  const bus = await connectNats(nats, log, onceWithinMs);
  try {
    checkMaxPayload(bus.nc, maxPayload);
    const jsm = await jetstreamManager(bus.nc);
    await ensureControlStream(jsm, { replicas });
    await ensureBlocksStream(jsm, { replicas });
    await ensurePartitionsStream(jsm, { replicas });
  } catch (err) {
    await bus.close();
    // A single nats-server (or a cluster smaller than asked) refuses the replicas: named, with the server's words.
    if (err instanceof JetStreamApiError && /replica/i.test(err.message))
      throw new ConfigError('CHAINPOST_NATS_REPLICAS', `${replicas} refused by the NATS servers: ${err.message}`);
    throw err;
  }
  const plane = new BusControlPlane(bus, kv, applier, log, hold === undefined ? {} : { beforeApply: () => hold('control change') });
  plane.start();
  // What the others wrote first (the same CHAINPOST_API_KEY, a signing key) is applied here before this node writes.
  if (!(await plane.caughtUp(CATCH_UP_MS)))
    log.warn('control log: not caught up at start; serving what this node has applied', { applied: plane.applied() });
  return {
    plane,
    bus,
    caughtUp: (ms) => plane.caughtUp(ms),
    chains: {},
    stop: async () => {
      await plane.stop();
      await bus.close();
    },
  };
}

/** `meta` key: this node's id in the cluster, made at its first start. */
const NODE_ID = 'nodeId';

/**
 * This node's id, stable across its restarts (kept in its store): the host's name, for the operator reading
 * `status --cluster`, and a random part, so two nodes on one host differ.
 */
export function nodeId(kv: Kv): string {
  const kept = kv.get<string>('meta', NODE_ID);
  if (kept !== undefined) return kept;
  const host = hostname()
    .replace(/[^-A-Za-z0-9]/g, '-')
    .slice(0, 40);
  const id = `${host === '' ? 'node' : host}-${randomAlphanumeric(6).toLowerCase()}`;
  kv.transact(() => kv.put('meta', NODE_ID, id));
  return id;
}

/**
 * Leaves the node's id out of a copy of its store (`chainpost backup`): a node started on the copy makes its own, so
 * a copy seeding a new node never runs beside its source under one id (each would count the other's leases its own).
 */
export function forgetNodeId(kv: Kv): void {
  if (kv.get<string>('meta', NODE_ID) !== undefined) kv.transact(() => kv.remove('meta', NODE_ID));
}

/** What a cluster node shows of itself: its /health and /metrics figures and its entry in the node registry. */
export interface ClusterNode {
  readonly id: string;
  /** Its entry now (/health's `cluster`, the cluster gauges). */
  entry(): NodeEntry;
  /** Its delivery partitions' owners loop, on a node that matches and delivers. */
  readonly owners: PartitionOwners | undefined;
  /** The partition log: every node applies it; the owners publish their units on it. */
  readonly partitions: ClusterPartitions;
  /** Its HTTP listener answers at `address` (host:port): written to the registry at once. */
  listening(address: string): Promise<void>;
  /** Releases its partitions and leaves the registry (before the bus closes). */
  stop(): Promise<void>;
}

/**
 * Starts writing this node's entry to the node registry. Where a figure comes from is given here: the control log's
 * position and the bus from `control`; the leases this node holds and its block consumers' lags from
 * `control.chains`, once the node's chains run (none before, none on a node without `ingest` for the leases); its
 * partitions from the owners loop it starts once its entry is written, on a node with `match` and `deliver`.
 */
export async function startClusterNode({
  config,
  kv,
  control,
  hash,
  log,
  delivery,
}: {
  config: Pick<Config, 'roles' | 'leaseTtlMs' | 'natsReplicas'>;
  kv: Kv;
  control: ClusterControl;
  /** xxhash32, the partitions' and their owners' hash. */
  hash: Hash32;
  log: Logger;
  /** This node's dispatcher and its link to the partitions, on a node that owns partitions (match and deliver). */
  delivery?: { dispatcher: Dispatcher; link: PartitionLink } | undefined;
}): Promise<ClusterNode> {
  let http: string | undefined;
  let owners: PartitionOwners | undefined;
  const owning = ownsPartitions(config.roles) && delivery !== undefined;
  const node = nodeId(kv);
  // Every node applies every partition's log (history, logs, stats for its API), owner or not.
  const partitions = new ClusterPartitions({
    bus: control.bus,
    kv,
    node,
    log,
    requestTimeoutMs: leaseTimings(config.leaseTtlMs).requestTimeoutMs,
    // Kept at a lapsed lease until taken again: an election or a bus outage of that long (docs/decisions/cluster.md).
    parkedMs: Math.max(30_000, 2 * config.leaseTtlMs),
  });
  partitions.start();
  let queued = new Map<number, number>();
  let countedAt = -Infinity;
  /** Undelivered webhooks of the partitions owned and adopted, counted at most once a second (a pass over the streams). */
  const queuedOf = (p: number): number | null => {
    if (delivery === undefined || !delivery.link.owns(p)) return null;
    if (performance.now() - countedAt > 1_000) {
      queued = delivery.dispatcher.queuedIn(delivery.link.ready);
      countedAt = performance.now();
    }
    return queued.get(p) ?? 0;
  };
  const view: ClusterView = {
    node,
    roles: config.roles,
    version: chainpostVersion(),
    startedAt: Date.now(),
    http: () => http,
    bus: () => ({ up: control.bus.up(), servers: control.bus.servers }),
    applied: () => control.plane.applied(),
    leases: () => control.chains.leases?.held() ?? [],
    consumers: async () => control.chains.lags?.() ?? [],
    ...(owning
      ? {
          partitions: () =>
            [...(owners?.owned() ?? [])].map(([partition, revision]) => ({ partition, revision, queued: queuedOf(partition) })),
        }
      : {}),
  };
  let registry: Awaited<ReturnType<typeof startNodeRegistry>> | undefined;
  let unwire = (): void => {};
  try {
    registry = await startNodeRegistry(control.bus, view, {
      ttlMs: registryTtl(config.leaseTtlMs),
      replicas: config.natsReplicas,
      log,
    });
    if (owning) {
      owners = await startPartitionOwners(control.bus, {
        node: view.node,
        ttlMs: config.leaseTtlMs,
        replicas: config.natsReplicas,
        hash,
        log,
      });
      unwire = wireDeliveryPartitions({ owners, log: partitions, ...delivery, ttlMs: config.leaseTtlMs, logger: log });
    }
  } catch (err) {
    await registry?.stop();
    await partitions.stop();
    throw err;
  }
  const entered = registry;
  return {
    id: view.node,
    owners,
    partitions,
    entry: () => entered.entry(),
    listening: (address) => {
      http = address;
      return entered.beat();
    },
    stop: async () => {
      // The owners release every partition (each lost: the dispatcher drops it, its log takes back what is left).
      await owners?.stop();
      unwire();
      await partitions.stop();
      await entered.stop();
    },
  };
}

/**
 * A cluster node's partition requests (bus/requests.ts): it asks each partition's owner to carry out the partition's
 * work asked here, and answers the others' requests for the partitions it adopted (`link`: on a node owning partitions).
 */
export function partitionRequests({
  control,
  node,
  link,
  ttlMs,
  log,
}: {
  control: ClusterControl;
  node: ClusterNode;
  link: PartitionLink | undefined;
  ttlMs: number;
  log: Logger;
}): BusPartitionRequests {
  const requests = new BusPartitionRequests({
    bus: control.bus,
    log,
    here: (p) => link?.owns(p) ?? false,
    position: (p) => node.partitions.applied().positions[p] ?? 0,
    reached: (p, seq, withinMs) => node.partitions.holds(p, seq, withinMs),
    // A partition between owners has its next one within 2 lease TTLs.
    retryAfterSeconds: Math.max(1, Math.ceil((2 * ttlMs) / 1000)),
  });
  link?.follow({ adopt: (p) => requests.open(p), drop: (p) => requests.close(p) });
  return requests;
}

/** How often a partition whose log was not writable (the bus down) is looked at again, ms. */
const WRITABLE_EVERY_MS = 500;

/**
 * Delivery on the partitions this node owns (docs/decisions/cluster.md, Part 2): a lease held → the partition's log
 * taken (applied to its last message) → `ready`, the dispatcher adopts the partition. A lease lost → the dispatcher
 * drops it at once and the log releases it. A hand-over → no attempt of it starts, those in flight end, its units
 * are published, then the owners release the lease. The log losing it (refused, superseded, behind) → the
 * dispatcher drops it and the owners release the lease. Answers how to stop.
 */
export function wireDeliveryPartitions({
  owners,
  log,
  dispatcher,
  link,
  ttlMs,
  logger,
}: {
  owners: Pick<PartitionOwners, 'onEvent' | 'setHandOver' | 'giveUp'>;
  log: PartitionLog;
  dispatcher: Pick<Dispatcher, 'adopt' | 'drop' | 'handOver' | 'resume'>;
  link: PartitionLink;
  ttlMs: number;
  logger: Logger;
}): () => void {
  link.log = log;
  const lose = (partition: number): void => {
    link.ready.delete(partition);
    dispatcher.drop(partition);
    link.dropped(partition);
  };
  const unlog = log.onEvent((event) => {
    if (event.kind === 'ready') {
      link.ready.add(event.partition);
      dispatcher.adopt(event.partition);
      link.adopted(event.partition);
      return;
    }
    lose(event.partition);
    if (event.reason !== 'released') void owners.giveUp(event.partition);
  });
  const unown = owners.onEvent((event) => {
    if (event.kind === 'held') {
      void log.take(event.partition, event.revision).catch((err: unknown) => {
        logger.warn('partition log: a takeover failed; the partition is given up', { partition: event.partition, err });
        void owners.giveUp(event.partition);
      });
      return;
    }
    lose(event.partition);
    // Lapsed while the bus was unreachable: this node most likely takes it again, and publishes what it kept.
    void log.release(event.partition, event.reason === 'unrenewed');
  });
  // Within a lease TTL: the attempts in flight end within the delivery timeout at worst, then the units are published.
  owners.setHandOver(async (partition) => {
    await within(dispatcher.handOver(partition), ttlMs);
    await log.drained(partition, ttlMs);
  });
  const writable = setInterval(() => {
    for (const p of link.ready) if (link.writable(p)) dispatcher.resume(p);
  }, WRITABLE_EVERY_MS);
  writable.unref();
  return () => {
    clearInterval(writable);
    unlog();
    unown();
    link.log = undefined;
  };
}

/** This node's leases of the chains: none without the `ingest` role (it never follows a chain). */
export async function openNodeLeases(
  config: Pick<Config, 'roles' | 'leaseTtlMs' | 'natsReplicas'>,
  cluster: ClusterControl,
  kv: Kv,
  log: Logger,
): Promise<ChainLeases | undefined> {
  if (!config.roles.has('ingest')) return undefined;
  return openChainLeases(cluster.bus, { node: nodeId(kv), ttlMs: config.leaseTtlMs, replicas: config.natsReplicas, log });
}

/**
 * A cluster node's chains: it follows those whose lease it holds, publishing what it stores, and applies the others'
 * blocks (`applied`: what they tell, the Data API's indexer; `followed`: what the follower's blocks tell).
 */
export function clusterChains({
  cluster,
  kv,
  leases,
  applied,
  followed,
  log,
  drop,
  leaseTtlMs,
}: {
  cluster: ClusterControl;
  kv: Kv;
  leases: ChainLeases | undefined;
  /** CHAINPOST_LEASE_TTL_MS: a takeover's requests wait a lease poll at most. */
  leaseTtlMs: number;
  applied: ChainEvents;
  followed: ChainEvents;
  log: Logger;
  drop?: DropPublish | undefined;
}): ClusterChains {
  return new ClusterChains({
    bus: cluster.bus,
    kv,
    leases,
    controlSeq: () => cluster.plane.applied(),
    stores: BLOCK_STORES,
    applied,
    followed,
    log,
    requestTimeoutMs: leaseTimings(leaseTtlMs).requestTimeoutMs,
    ...(drop === undefined ? {} : { drop }),
  });
}

/** How long a node matching blocks waits, before a round, to apply the control log as far as it reaches. */
const MATCH_CAUGHT_UP_MS = 1_000;

/**
 * The matcher's wait before each round on a cluster node: the control log applied as far as its consumer has told it
 * the log reaches (no request to the server per round: bus/control-log.ts caughtUpAsTold), so a change acknowledged
 * on any node before a block was stored applies to it. Bounded: past it, matched as applied.
 */
export function matchAfterControl(cluster: Pick<ClusterControl, 'plane'>, log: Logger): () => Promise<void> {
  return async () => {
    if (!(await cluster.plane.caughtUpAsTold(MATCH_CAUGHT_UP_MS)))
      log.warn('control log: not caught up before matching; matching with what this node has applied', {
        applied: cluster.plane.applied(),
      });
  };
}
