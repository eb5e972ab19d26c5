import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { nodeEntry, type BusFigures, type ClusterView, type NodeEntry } from '../engine/cluster/node.js';
import type { LeaseHolder } from '../engine/ingest/leases.js';
import type { Logger } from '../engine/log.js';
import { bucketEntries, bucketStream } from './buckets.js';
import type { BusConnection } from './connect.js';
import { CHAIN_LEASES, LEASES_BUCKET, leaseHolders, leaseKey, PARTITION_LEASES } from './leases.js';
import { BLOCKS_STREAM, CONTROL_STREAM, PARTITIONS_STREAM } from './streams.js';

/**
 * The node registry: the JetStream KV bucket `chainpost-nodes`, a key per node, its value the node's entry
 * (engine/cluster/node.ts, JSON), written by the node every sixth of the bucket's TTL. A node that stops writing
 * (killed, cut off from NATS) is removed by the TTL; one that stops cleanly deletes its key.
 */
export const NODES_BUCKET = 'chainpost-nodes';

/** The registry's TTL for a lease TTL (CHAINPOST_LEASE_TTL_MS): a node is listed until it missed a few beats. */
export const registryTtl = (leaseTtlMs: number): number => 3 * leaseTtlMs;

/** Beats per TTL: five may be lost (a slow bus, a paused node) before the node drops out of the registry. */
const BEATS_PER_TTL = 6;

export interface NodeRegistryOptions {
  /** The bucket's TTL when this node creates it (registryTtl); a bucket made by another node keeps its own. */
  ttlMs: number;
  /** Copies of the bucket JetStream keeps (1 on a single server). */
  replicas?: number;
  log?: Logger;
}

/** Opens (or creates) the bucket and starts writing `view`'s entry into it, the first one before it resolves. */
export async function startNodeRegistry(bus: BusConnection, view: ClusterView, options: NodeRegistryOptions): Promise<NodeRegistry> {
  const every = Math.max(100, Math.floor(options.ttlMs / BEATS_PER_TTL));
  // A request gives up before the next beat is due.
  const js = jetstream(bus.nc, { timeout: every });
  const kv = await new Kvm(js).create(NODES_BUCKET, { ttl: options.ttlMs, history: 1, replicas: options.replicas ?? 1 });
  const ttl = (await kv.status()).ttl;
  const registry = new NodeRegistry(
    kv,
    await jetstreamManager(bus.nc, { timeout: every }),
    view,
    ttl > 0 ? ttl : options.ttlMs,
    options.log,
  );
  await registry.beat();
  return registry;
}

export class NodeRegistry {
  private figures: BusFigures = { controlLast: undefined, consumers: undefined };
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private stopped = false;
  private readonly key: string;
  readonly everyMs: number;

  constructor(
    private readonly kv: KV,
    private readonly jsm: JetStreamManager,
    private readonly view: ClusterView,
    readonly ttlMs: number,
    private readonly log?: Logger,
  ) {
    this.key = leaseKey(view.node);
    this.everyMs = Math.max(100, Math.floor(ttlMs / BEATS_PER_TTL));
  }

  /** The node's entry now: its own figures live, the bus's as the last beat read them. */
  entry(): NodeEntry {
    return nodeEntry(this.view, this.figures, Date.now());
  }

  /** Reads the bus's figures and writes the entry now (the next beat follows a period later). */
  beat(): Promise<void> {
    clearTimeout(this.timer);
    const run = (this.beating ?? Promise.resolve())
      .then(() => this.write())
      .catch((err: unknown) => this.log?.warn('node registry: a beat failed', { error: message(err) }));
    this.beating = run;
    void run.then(() => {
      if (this.beating !== run || this.stopped) return;
      this.beating = undefined;
      this.timer = setTimeout(() => void this.beat(), this.everyMs);
    });
    return run;
  }

  /** Stops writing and deletes the entry: the node leaves the registry at once rather than at its TTL. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.beating;
    await this.kv.delete(this.key).catch((err: unknown) => {
      this.log?.warn('node registry: the entry could not be deleted; it expires by its TTL', { error: message(err) });
    });
  }

  private async write(): Promise<void> {
    if (this.stopped) return;
    const [controlLast, consumers] = await Promise.all([
      this.jsm.streams.info(CONTROL_STREAM).then(
        (info) => info.state.last_seq,
        () => undefined,
      ),
      this.view.consumers?.().catch(() => undefined),
    ]);
    this.figures = { controlLast, consumers };
    try {
      await this.kv.put(this.key, JSON.stringify(this.entry()));
    } catch (err) {
      // The bus down is logged by the connection; the entry expires if it stays down.
      this.log?.debug('node registry: the entry could not be written', { error: message(err) });
    }
  }
}

/** A stream's size, or absent (no node created it yet). */
export type StreamFigures = { name: string; messages: number; bytes: number; lastSeq: number } | { name: string; absent: true };

/** What `chainpost status --cluster` shows: the registry's nodes, the leases' holders and the streams' sizes. */
export interface ClusterState {
  nodes: NodeEntry[];
  /** The chains' leases. */
  leases: LeaseHolder[];
  /** The delivery partitions' leases: their owners (a partition absent is unowned). */
  partitions: Array<LeaseHolder<'partition', number>>;
  streams: StreamFigures[];
}

/** The streams and buckets of a cluster, in the order `status --cluster` lists them. */
const STREAMS = [CONTROL_STREAM, BLOCKS_STREAM, PARTITIONS_STREAM, bucketStream(LEASES_BUCKET), bucketStream(NODES_BUCKET)];

/** Reads the whole cluster from the bus; creates nothing. */
export async function readCluster(bus: BusConnection, timeoutMs = 5_000): Promise<ClusterState> {
  const js = jetstream(bus.nc, { timeout: timeoutMs });
  const jsm = await jetstreamManager(bus.nc, { timeout: timeoutMs });
  const streams = await Promise.all(STREAMS.map((name) => streamFigures(jsm, name)));
  const present = (bucket: string): boolean => streams.some((s) => s.name === bucketStream(bucket) && !('absent' in s));
  const kvm = new Kvm(js);
  const nodes = present(NODES_BUCKET) ? (await registryEntries(await kvm.open(NODES_BUCKET), jsm)).map((n) => n.entry) : [];
  const bucket = present(LEASES_BUCKET) ? await kvm.open(LEASES_BUCKET) : undefined;
  const leases = bucket === undefined ? [] : await leaseHolders(CHAIN_LEASES, bucket, jsm);
  const partitions = bucket === undefined ? [] : await leaseHolders(PARTITION_LEASES, bucket, jsm);
  return { nodes: nodes.sort((a, b) => a.node.localeCompare(b.node)), leases, partitions, streams };
}

/** The registry's entries, each with its revision (it moves at each beat of the node's). */
export async function registryEntries(
  kv: KV,
  jsm: JetStreamManager,
): Promise<Array<{ entry: NodeEntry; revision: number; writtenAt: number }>> {
  return (await bucketEntries(kv, jsm, NODES_BUCKET)).flatMap(({ entry }) => {
    const parsed = parseEntry(entry.string());
    return parsed === undefined ? [] : [{ entry: parsed, revision: entry.revision, writtenAt: entry.created.getTime() }];
  });
}

/**
 * A node of the registry as the partition owners read it: its id, its entry's revision and when the bus wrote it
 * (ms, the stream leader's clock), whether it owns partitions.
 */
export interface RegistryNode {
  node: string;
  revision: number;
  writtenAt: number;
  owns: boolean;
}

/** Reads the registry's nodes for the partition owners: a node owns partitions when its entry lists them. */
export async function registryNodes(bus: BusConnection, timeoutMs: number): Promise<() => Promise<RegistryNode[]>> {
  const js = jetstream(bus.nc, { timeout: timeoutMs });
  const [kv, jsm] = await Promise.all([new Kvm(js).open(NODES_BUCKET), jetstreamManager(bus.nc, { timeout: timeoutMs, checkAPI: false })]);
  return async () =>
    (await registryEntries(kv, jsm)).map(({ entry, revision, writtenAt }) => ({
      node: entry.node,
      revision,
      writtenAt,
      owns: Array.isArray(entry.partitions),
    }));
}

async function streamFigures(jsm: JetStreamManager, name: string): Promise<StreamFigures> {
  try {
    const { state } = await jsm.streams.info(name);
    return { name, messages: state.messages, bytes: state.bytes, lastSeq: state.last_seq };
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return { name, absent: true };
    throw err;
  }
}

/** An entry as a node wrote it, or undefined for a value that is no entry. */
function parseEntry(text: string): NodeEntry | undefined {
  try {
    const value = JSON.parse(text) as Partial<NodeEntry> | null;
    return typeof value === 'object' && value !== null && typeof value.node === 'string' ? (value as NodeEntry) : undefined;
  } catch {
    return undefined;
  }
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));
