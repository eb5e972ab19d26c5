/**
 * What a cluster node (CHAINPOST_NATS set) needs of this machine, checked at start before anything opens: engine/
 * parses the configuration and reads no file.
 */
import { readFileSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectBus } from '../bus/connect.js';
import { BusControlPlane } from '../bus/control-log.js';
import { BLOCK_STORES } from '../bus/blocks.js';
import { ClusterChains, type DropPublish } from '../bus/chains.js';
import type { BusConnection } from '../bus/connect.js';
import { openChainLeases } from '../bus/leases.js';
import { checkMaxPayload, ensureBlocksStream, ensureControlStream } from '../bus/streams.js';
import { ConfigError, type Config } from '../engine/config/config.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import type { ChainLeases } from '../engine/ingest/leases.js';
import type { Logger } from '../engine/log.js';
import type { Kv } from '../engine/ports.js';
import { randomAlphanumeric } from '../engine/random.js';
import type { ChangeApplier } from '../engine/streams/control-plane.js';

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

/** How long a node starting waits to apply the changes the log holds before it writes its own (its API key, its token signing key). */
const CATCH_UP_MS = 30_000;

/** A cluster node's control plane: the log it writes every change to and applies everyone's from. */
export interface ClusterControl {
  readonly plane: BusControlPlane;
  readonly bus: BusConnection;
  /** Stops applying the log and closes the connection to NATS. */
  stop(): Promise<void>;
}

/**
 * Connects to NATS, makes sure the control log exists and that the server takes blocks, then applies the log to this
 * node's store with `applier` (the single process's own): every change goes through the log from now on.
 */
export async function startControlLog({
  nats,
  kv,
  applier,
  log,
}: {
  nats: NonNullable<Config['nats']>;
  kv: Kv;
  applier: ChangeApplier;
  log: Logger;
}): Promise<ClusterControl> {
  // connectBus logs the servers with their credentials masked.
  const bus = await connectBus({ servers: nats.servers.join(','), ...(nats.creds === undefined ? {} : { credsFile: nats.creds }), log });
  try {
    checkMaxPayload(bus.nc);
    const jsm = await jetstreamManager(bus.nc);
    await ensureControlStream(jsm);
    await ensureBlocksStream(jsm);
  } catch (err) {
    await bus.close();
    throw err;
  }
  const plane = new BusControlPlane(bus, kv, applier, log);
  plane.start();
  // What the others wrote first (the same CHAINPOST_API_KEY, a signing key) is applied here before this node writes.
  if (!(await plane.caughtUp(CATCH_UP_MS)))
    log.warn('control log: not caught up at start; serving what this node has applied', { applied: plane.applied() });
  return {
    plane,
    bus,
    stop: async () => {
      await plane.stop();
      await bus.close();
    },
  };
}

/** `meta` key: this node's id in the cluster (its leases' holder), made at its first start as a cluster node. */
const NODE_ID = 'nodeId';

/** This node's id: kept in its store, so it is the same across restarts (a copy of the data directory takes it along). */
export async function nodeId(kv: Kv): Promise<string> {
  const kept = kv.get<string>('meta', NODE_ID);
  if (kept !== undefined) return kept;
  const made = `node-${randomAlphanumeric(12)}`;
  await kv.transactAsync(() => kv.put('meta', NODE_ID, made));
  return made;
}

/** This node's leases of the chains: none without the `ingest` role (it never follows a chain). */
export async function openNodeLeases(
  config: Pick<Config, 'roles' | 'leaseTtlMs'>,
  cluster: ClusterControl,
  kv: Kv,
  log: Logger,
): Promise<ChainLeases | undefined> {
  if (!config.roles.has('ingest')) return undefined;
  return openChainLeases(cluster.bus, { node: await nodeId(kv), ttlMs: config.leaseTtlMs, log });
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
}: {
  cluster: ClusterControl;
  kv: Kv;
  leases: ChainLeases | undefined;
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
    ...(drop === undefined ? {} : { drop }),
  });
}

/** How long the node holding a chain waits, before it matches blocks, to apply the control log as far as it reaches. */
const MATCH_CAUGHT_UP_MS = 1_000;

/**
 * The matcher's wait before each round on a cluster node: the control log applied as far as it reaches now, so a
 * change acknowledged on any node before a block was stored applies to it. Bounded: past it, matched as applied.
 */
export function matchAfterControl(cluster: ClusterControl, log: Logger): () => Promise<void> {
  return async () => {
    if (!(await cluster.plane.caughtUp(MATCH_CAUGHT_UP_MS)))
      log.warn('control log: not caught up before matching; matching with what this node has applied', {
        applied: cluster.plane.applied(),
      });
  };
}
