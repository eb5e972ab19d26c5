/**
 * The key commands on a cluster node's data directory (CHAINPOST_NATS set): a key change goes through the cluster's
 * control log, so every node has it. With no server running on the directory, this process holds its lock and
 * applies the log to the store as that server would; with one running, it publishes the change and answers once the
 * server applied it (what applying gives is previewed on the store first, with its checks).
 */
import { publishForStore } from '../../bus/control-log.js';
import type { Config } from '../../engine/config/config.js';
import { ApiError } from '../../engine/errors.js';
import { keyChangeShows, previewKeyChange, type KeyChange, type KeyChanges, type KeyStore } from '../../engine/keys.js';
import { jsonLogger } from '../../engine/log.js';
import { StoreControlPlane } from '../../engine/streams/control-plane.js';
import type { Store } from '../../storage/env.js';
import { DataDirLocked, lockDataDir, type DataDirLock } from '../../storage/lock.js';
import { connectNats, NATS_WAIT_MS, startControlLog } from '../cluster.js';

/** How long the node's running server may take to apply a change published here, ms. */
const SERVER_APPLIES_MS = 10_000;

export async function clusterKeyChanges({
  nats,
  dataDir,
  store,
  keys,
  err,
  replicas,
}: {
  nats: NonNullable<Config['nats']>;
  /** CHAINPOST_NATS_REPLICAS: the control log's replicas, should this command be the first to make it. */
  replicas: number;
  dataDir: string;
  store: Store;
  keys: KeyStore;
  /** Where warnings go (stderr): stdout carries the command's answer. */
  err: (text: string) => void;
}): Promise<{ changes: KeyChanges; close(): Promise<void> }> {
  const log = jsonLogger(err, Date.now, 'warn');
  let lock: DataDirLock | undefined;
  try {
    lock = lockDataDir(dataDir);
  } catch (e) {
    if (!(e instanceof DataDirLocked)) throw e;
  }
  if (lock !== undefined) {
    // No server runs here, and none starts while this holds the lock: this process applies the log to the store.
    const held = lock;
    try {
      const applier = new StoreControlPlane(store, keys).applier;
      const cluster = await startControlLog({ nats, replicas, kv: store, applier, log, onceWithinMs: NATS_WAIT_MS });
      return {
        changes: cluster.plane,
        close: async () => {
          await cluster.stop();
          held.release();
        },
      };
    } catch (e) {
      held.release();
      throw e;
    }
  }
  // The server applies the log to this store (two processes never apply a change twice: bus/control-log.ts).
  // A command answers at once when the cluster's NATS is unreachable, rather than waiting for it.
  const bus = await connectNats(nats, log, NATS_WAIT_MS);
  const changes: KeyChanges = {
    write: async <C extends KeyChange>(change: C) => {
      const applied = previewKeyChange(keys, change);
      if (!(await publishForStore(bus, store, change, { timeoutMs: SERVER_APPLIES_MS })))
        throw new Error(
          `the change is in the cluster's log, but the server running on ${dataDir} did not apply it within ${SERVER_APPLIES_MS / 1000} s: \`chainpost keys list\` shows when it has`,
        );
      // Another node's change to the keys may have come first in the log: its checks then refused this one there.
      if (!keyChangeShows(keys, change, applied))
        throw new ApiError(409, "another change to the keys came first in the cluster's log: see `chainpost keys list`");
      return applied;
    },
  };
  return { changes, close: () => bus.close() };
}
