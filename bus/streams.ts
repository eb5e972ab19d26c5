import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { retryWaitMs } from './waits.js';

/** The control plane's log: every configuration change of the cluster, in the one order every node applies. */
export const CONTROL_STREAM = 'CHAINPOST_CONTROL';
export const CONTROL_SUBJECT = 'chainpost.control';

/**
 * The largest message a node publishes: a block as stored (record, probe column, index rows), which is over NATS's
 * default max_payload of 1 MB on busy chains. The documented server config sets `max_payload: 8MB`.
 */
export const BLOCKS_MAX_PAYLOAD = 8 * 1024 * 1024;

/** The JetStream stream of the blocks the chains' followers stored, one subject per chain (bus/blocks.ts). */
export const BLOCKS_STREAM = 'CHAINPOST_BLOCKS';
export const BLOCKS_SUBJECTS = 'chainpost.blocks.>';

export interface StreamOptions {
  /** Copies of the stream JetStream keeps on as many servers (CHAINPOST_NATS_REPLICAS; 1 on a single server). */
  replicas?: number;
  /** How long a message stays in the stream, ms; 0: as long as the server keeps it. */
  maxAgeMs?: number;
}

/**
 * Creates CHAINPOST_CONTROL if it is missing, or brings its replicas and age to these (default: no age limit); the
 * other nodes, started at the same time, may do the same (the server answers the same config twice alike).
 */
export function ensureControlStream(jsm: JetStreamManager, options: StreamOptions = {}): Promise<void> {
  return ensureStream(jsm, CONTROL_STREAM, [CONTROL_SUBJECT], options);
}

/** A block stays this long in CHAINPOST_BLOCKS by default: a node away longer finds the blocks it missed gone. */
export const BLOCKS_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/** Creates CHAINPOST_BLOCKS if it is missing, or brings its replicas and age to these (default: a day). */
export function ensureBlocksStream(jsm: JetStreamManager, options: StreamOptions = {}): Promise<void> {
  return ensureStream(jsm, BLOCKS_STREAM, [BLOCKS_SUBJECTS], { maxAgeMs: BLOCKS_MAX_AGE_MS, ...options });
}

/**
 * The partition log (bus/partitions.ts): what each unit of delivery wrote, one subject per partition, published by
 * the partition's owner and applied by every node.
 */
export const PARTITIONS_STREAM = 'CHAINPOST_PARTITIONS';
export const PARTITIONS_SUBJECTS = 'chainpost.partitions.>';

/**
 * A unit stays this long in CHAINPOST_PARTITIONS by default. Every node applies every message as it comes, so the
 * log only has to cover a node's absence: a week (a node down over a long weekend catches up). A node whose position
 * fell off the stream's start says so and owns no partition (docs/decisions/cluster.md).
 */
export const PARTITIONS_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;

/** Creates CHAINPOST_PARTITIONS if it is missing, or brings its replicas and age to these (default: a week). */
export function ensurePartitionsStream(jsm: JetStreamManager, options: StreamOptions = {}): Promise<void> {
  return ensureStream(jsm, PARTITIONS_STREAM, [PARTITIONS_SUBJECTS], { maxAgeMs: PARTITIONS_MAX_AGE_MS, ...options });
}

/** nats-server's answer to a create of a stream that exists with another config (checked; @nats-io/jetstream names no constant). */
const STREAM_NAME_IN_USE = 10058;

/** Creates a file-stored stream if it is missing, or brings its replicas and age to these. */
async function ensureStream(jsm: JetStreamManager, name: string, subjects: string[], options: StreamOptions): Promise<void> {
  const wanted = {
    num_replicas: options.replicas ?? 1,
    // Nanoseconds; 0: no limit.
    max_age: (options.maxAgeMs ?? 0) * 1_000_000,
  };
  const config: Partial<StreamConfig> & { name: string } = {
    name,
    subjects,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    ...wanted,
  };
  let found: StreamConfig;
  try {
    found = (await jsm.streams.info(name)).config;
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
    try {
      await jsm.streams.add(config);
      return;
    } catch (refused) {
      // Made meanwhile with another config (another node starting with other replicas), or answered "not found" while
      // its replicas moved on a NATS cluster: read again, and brought to this node's below.
      if (!(refused instanceof JetStreamApiError && refused.code === STREAM_NAME_IN_USE)) throw refused;
      found = (await onceAssigned(() => jsm.streams.info(name))).config;
    }
  }
  if (found.num_replicas !== wanted.num_replicas || found.max_age !== wanted.max_age)
    await jsm.streams.update(name, { ...found, ...wanted });
}

/**
 * `read`, asked again while JetStream answers that the stream is not found, for `withinMs` at most: on a NATS cluster
 * a stream just created, or given other replicas, is assigned to its servers a moment after that answer, and a read
 * meanwhile can be told it is not found (a CI run: the lease bucket's status read right after its create, on three
 * servers).
 */
export async function onceAssigned<T>(read: () => Promise<T>, withinMs = 10_000, time: WaitClock = WALL): Promise<T> {
  const until = time.now() + withinMs;
  for (let failures = 0; ; failures++) {
    try {
      return await read();
    } catch (err) {
      const left = until - time.now();
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) || left <= 0) throw err;
      await time.sleep(Math.min(retryWaitMs(failures, 500), left));
    }
  }
}

/** What a wait reads the time from and sleeps on: the wall clock, or a test's. */
export interface WaitClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}
const WALL: WaitClock = { now: () => performance.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };

/**
 * Refuses a server whose max_payload is under `needed` (what this node's blocks need as stored), naming the setting
 * and the value to give it.
 */
export function checkMaxPayload(nc: NatsConnection, needed = BLOCKS_MAX_PAYLOAD): void {
  const max = nc.info?.max_payload;
  if (max === undefined || max >= needed) return;
  const mb = Math.ceil(needed / (1024 * 1024));
  throw new Error(
    `the NATS server's max_payload is ${max} bytes; this node publishes blocks of up to ${needed} bytes: set max_payload: ${mb}MB in its configuration`,
  );
}
