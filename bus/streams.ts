import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/** The control plane's log: every configuration change of the cluster, in the one order every node applies. */
export const CONTROL_STREAM = 'CHAINPOST_CONTROL';
export const CONTROL_SUBJECT = 'chainpost.control';

/**
 * The largest message a node publishes: a block as stored (record, probe column, index rows), which is over NATS's
 * default max_payload of 1 MB on busy chains. The documented server config sets `max_payload: 8MB`.
 */
export const BLOCKS_MAX_PAYLOAD = 8 * 1024 * 1024;

export interface ControlStreamOptions {
  /** Copies of the log JetStream keeps on as many servers (1 on a single server). */
  replicas?: number;
  /** How long a change stays in the log, ms; none (the default): as long as the server keeps it. */
  maxAgeMs?: number;
}

/**
 * Creates CHAINPOST_CONTROL if it is missing, or brings its replicas and age to these; the other nodes, started
 * at the same time, may do the same (the server answers the same config twice alike).
 */
export async function ensureControlStream(jsm: JetStreamManager, options: ControlStreamOptions = {}): Promise<void> {
  const wanted = {
    num_replicas: options.replicas ?? 1,
    // Nanoseconds; 0: no limit.
    max_age: (options.maxAgeMs ?? 0) * 1_000_000,
  };
  const config: Partial<StreamConfig> & { name: string } = {
    name: CONTROL_STREAM,
    subjects: [CONTROL_SUBJECT],
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    ...wanted,
  };
  let found: StreamConfig;
  try {
    found = (await jsm.streams.info(CONTROL_STREAM)).config;
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
    await jsm.streams.add(config);
    return;
  }
  if (found.num_replicas !== wanted.num_replicas || found.max_age !== wanted.max_age)
    await jsm.streams.update(CONTROL_STREAM, { ...found, ...wanted });
}

/** Refuses a server whose max_payload is under what a block needs, naming the setting and the value to give it. */
export function checkMaxPayload(nc: NatsConnection): void {
  const max = nc.info?.max_payload;
  if (max === undefined || max >= BLOCKS_MAX_PAYLOAD) return;
  throw new Error(
    `the NATS server's max_payload is ${max} bytes; chainpost publishes blocks of up to ${BLOCKS_MAX_PAYLOAD} bytes: set max_payload: 8MB in its configuration`,
  );
}
