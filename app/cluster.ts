/**
 * What a cluster node (CHAINPOST_NATS set) needs of this machine, checked at start before anything opens: engine/
 * parses the configuration and reads no file.
 */
import { readFileSync } from 'node:fs';
import { JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import { connectBus } from '../bus/connect.js';
import { BusControlPlane } from '../bus/control-log.js';
import { checkMaxPayload, ensureControlStream } from '../bus/streams.js';
import { ConfigError, type Config } from '../engine/config/config.js';
import type { Logger } from '../engine/log.js';
import type { Kv } from '../engine/ports.js';
import type { ChangeApplier, ControlPlane } from '../engine/streams/control-plane.js';

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
  readonly plane: ControlPlane;
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
}: {
  nats: NonNullable<Config['nats']>;
  /** CHAINPOST_NATS_REPLICAS: the control log's replicas. */
  replicas: number;
  kv: Kv;
  applier: ChangeApplier;
  log: Logger;
}): Promise<ClusterControl> {
  // connectBus logs the servers with their credentials masked.
  const bus = await connectBus({ servers: nats.servers.join(','), ...(nats.creds === undefined ? {} : { credsFile: nats.creds }), log });
  try {
    checkMaxPayload(bus.nc);
    await ensureControlStream(await jetstreamManager(bus.nc), { replicas });
  } catch (err) {
    await bus.close();
    // A single nats-server (or a cluster smaller than asked) refuses the replicas: named, with the server's words.
    if (err instanceof JetStreamApiError && /replica/i.test(err.message))
      throw new ConfigError('CHAINPOST_NATS_REPLICAS', `${replicas} refused by the NATS servers: ${err.message}`);
    throw err;
  }
  const plane = new BusControlPlane(bus, kv, applier, log);
  plane.start();
  // What the others wrote first (the same CHAINPOST_API_KEY, a signing key) is applied here before this node writes.
  if (!(await plane.caughtUp(CATCH_UP_MS)))
    log.warn('control log: not caught up at start; serving what this node has applied', { applied: plane.applied() });
  return {
    plane,
    stop: async () => {
      await plane.stop();
      await bus.close();
    },
  };
}
