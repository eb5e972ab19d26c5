import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import {
  leaseTimings,
  type LeaseEvent,
  type LeaseHolder,
  type LeaseLoss,
  type Leases,
  type LeaseTimings,
  type Named,
} from '../engine/ingest/leases.js';
import type { Logger } from '../engine/log.js';
import { bucketEntries } from './buckets.js';
import type { BusConnection } from './connect.js';
import { onceAssigned } from './streams.js';

/**
 * The leases in the JetStream KV bucket `chainpost-leases`: a key per chain and per delivery partition, its value the
 * holding node's id, removed by the bucket's TTL (the stream's max_age) once its holder stops renewing it.
 *
 * What nats-server 2.9.10 does, checked against it (test/system/bus-leases.test.ts, "the bucket"):
 * - `create` is a publish expecting the key's last sequence 0: refused (10071, wrong last sequence) while the key
 *   holds a value. A delete leaves a delete marker, which is a message of the key: the publish is refused over it
 *   too, and the client then reads the marker and publishes again expecting the marker's revision, so `create` over a
 *   deleted key succeeds (two racing creates: one wins, the other gets 10071).
 * - max_age removes a key's last message TTL after it was written, so a key renewed (`update`, a new message) lives
 *   TTL from its last renew; a delete marker is removed the same way. An expired key is no message at all: `create`
 *   succeeds at once, `update` at the old revision is refused (10071) like one after another node's write.
 * - history 1 (max_msgs_per_subject): each renew or delete replaces the key's previous message.
 */
export const LEASES_BUCKET = 'chainpost-leases';

export interface BusLeasesOptions {
  /** This node's id: its leases' value (stable across restarts, unique in the cluster). */
  node: string;
  /** How long a lease lives unrenewed, ms (CHAINPOST_LEASE_TTL_MS): the bucket's TTL when this node creates it. */
  ttlMs: number;
  /** Copies of the bucket JetStream keeps (CHAINPOST_NATS_REPLICAS; 1 on a single server): an existing bucket is brought to it. */
  replicas?: number;
  log?: Logger;
}

/** What a kind of lease is held on, and how its names are written as the bucket's keys. */
export interface LeaseKind<F extends string, N> {
  /** The field its events and holders name it by, and the logs' noun: `chain`, `partition`. */
  readonly field: F;
  /** Its keys among the bucket's, as a subject pattern (`*`: keys of one token). */
  readonly keys: string;
  key(name: N): string;
  /** The name of a key `key` wrote. */
  nameOf(key: string): N;
  /** What its holder stops doing when it loses it (the log's words). */
  readonly stops: string;
}

/** A chain's key is one token (its dots are escaped), so the chains' keys are `*`. */
export const CHAIN_LEASES: LeaseKind<'chain', string> = {
  field: 'chain',
  keys: '*',
  key: (chain) => leaseKey(chain),
  nameOf: (key) => chainOfKey(key),
  stops: 'following it',
};

/** A delivery partition's key, `partition.<n>`: two tokens, apart from every chain's. */
export const PARTITION_LEASES: LeaseKind<'partition', number> = {
  field: 'partition',
  keys: 'partition.*',
  key: (partition) => `partition.${partition}`,
  nameOf: (key) => Number(key.slice('partition.'.length)),
  stops: 'owning it',
};

/** One lease this node contends for or holds. */
interface Lease<N> {
  readonly name: N;
  readonly key: string;
  /** The revision of this node's last take or renew, while it holds the lease. */
  revision: number | undefined;
  /** The attempt in flight (take or renew), if any. */
  attempt: Promise<void> | undefined;
  /** The next attempt. */
  next: NodeJS.Timeout | undefined;
  /** When the lease counts as unrenewed, while held. */
  deadline: NodeJS.Timeout | undefined;
  /** Bumped when the lease is taken or lost: an answer to an attempt of an older epoch is stale. */
  epoch: number;
  released: boolean;
}

/** Opens (or creates) the bucket and returns this node's leases of the chains over it. */
export const openChainLeases = (bus: BusConnection, options: BusLeasesOptions): Promise<BusChainLeases> =>
  openLeases(bus, CHAIN_LEASES, options);

/** Opens (or creates) the bucket and returns this node's leases of the delivery partitions over it. */
export const openPartitionLeases = (bus: BusConnection, options: BusLeasesOptions): Promise<BusLeases<'partition', number>> =>
  openLeases(bus, PARTITION_LEASES, options);

/** Opens (or creates) the bucket and returns this node's leases of `kind` over it. */
async function openLeases<F extends string, N>(
  bus: BusConnection,
  kind: LeaseKind<F, N>,
  options: BusLeasesOptions,
): Promise<BusLeases<F, N>> {
  // Each request gives up before the next renew is due, so a lost answer does not hold up the lease's turn.
  const timeout = leaseTimings(options.ttlMs).requestTimeoutMs;
  const bucket = { ttl: options.ttlMs, history: 1, replicas: options.replicas ?? 1 };
  // Making the bucket, or changing its copies, starts a group of replicas on a NATS cluster, which takes longer than
  // a lease's request may (over 500 ms on three servers): done first with JetStream's default timeout.
  const kv = await new Kvm(jetstream(bus.nc)).create(LEASES_BUCKET, bucket);
  // An existing bucket keeps the config it was created with: brought to this node's replicas, as the streams are
  // (bus/streams.ts), so raising CHAINPOST_NATS_REPLICAS on a grown NATS cluster copies the leases too.
  const setup = await jetstreamManager(bus.nc);
  const stream = `KV_${LEASES_BUCKET}`;
  if ((await onceAssigned(() => setup.streams.info(stream))).config.num_replicas !== bucket.replicas)
    await setup.streams.update(stream, { num_replicas: bucket.replicas });
  // The server expires the keys by the bucket's TTL, which the first node set: this node's timings follow it, or
  // it could count a lease held after the server removed it.
  const ttl = (await onceAssigned(() => kv.status())).ttl;
  if (ttl <= 0)
    throw new Error(
      `the NATS KV bucket ${LEASES_BUCKET} has no TTL, so a lease would outlive its node: delete the bucket (chainpost creates it again)`,
    );
  if (ttl !== options.ttlMs)
    options.log?.warn(`${kind.field} leases: the bucket keeps another TTL than this node is configured with; its TTL rules`, {
      bucket: LEASES_BUCKET,
      bucketTtlMs: ttl,
      configuredTtlMs: options.ttlMs,
    });
  // Takes and renews then give up within a poll; bound to the bucket found above, without asking for it again.
  const leases = await new Kvm(jetstream(bus.nc, { timeout })).open(LEASES_BUCKET, { bindOnly: true });
  return new BusLeases(kind, leases, await jetstreamManager(bus.nc, { timeout, checkAPI: false }), options.node, ttl, options.log);
}

export type BusChainLeases = BusLeases<'chain', string>;

export class BusLeases<F extends string, N> implements Leases<F, N> {
  private readonly leases = new Map<N, Lease<N>>();
  private readonly listeners = new Set<(event: LeaseEvent<F, N>) => void>();
  private readonly timings: LeaseTimings;
  private stopped = false;

  constructor(
    private readonly kind: LeaseKind<F, N>,
    private readonly kv: KV,
    /** Lists the bucket's keys in one request (kv.keys() is a consumer no request timeout bounds). */
    private readonly jsm: JetStreamManager,
    readonly node: string,
    readonly ttlMs: number,
    private readonly log?: Logger,
  ) {
    this.timings = leaseTimings(ttlMs);
  }

  take(name: N): void {
    if (this.stopped || this.leases.has(name)) return;
    const lease: Lease<N> = {
      name,
      key: this.kind.key(name),
      revision: undefined,
      attempt: undefined,
      next: undefined,
      deadline: undefined,
      epoch: 0,
      released: false,
    };
    this.leases.set(name, lease);
    this.attempt(lease);
  }

  async release(name: N): Promise<void> {
    const lease = this.leases.get(name);
    if (lease === undefined) return;
    this.leases.delete(name);
    lease.released = true;
    clearTimeout(lease.next);
    await lease.attempt;
    const revision = lease.revision;
    if (revision === undefined) return;
    this.lose(lease, 'released');
    try {
      // At the revision: a lease that moved on meanwhile is not this node's to delete.
      await this.kv.delete(lease.key, { previousSeq: revision });
    } catch (err) {
      this.log?.warn(`${this.kind.field} leases: a lease could not be released; it expires by its TTL`, {
        ...this.named(name),
        error: message(err),
      });
    }
  }

  holds(name: N): boolean {
    return this.leases.get(name)?.revision !== undefined;
  }

  holders(): Promise<Array<LeaseHolder<F, N>>> {
    return leaseHolders(this.kind, this.kv, this.jsm);
  }

  held(): Array<Omit<LeaseHolder<F, N>, 'node'>> {
    const held: Array<Omit<LeaseHolder<F, N>, 'node'>> = [];
    for (const { name, revision } of this.leases.values())
      if (revision !== undefined) held.push({ ...this.named(name), revision } as Omit<LeaseHolder<F, N>, 'node'>);
    return held;
  }

  onEvent(listener: (event: LeaseEvent<F, N>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.leases.keys()].map((name) => this.release(name)));
  }

  /** Takes the lease if this node does not hold it, renews it if it does; then schedules the next attempt. */
  private attempt(lease: Lease<N>): void {
    if (lease.released || lease.attempt !== undefined) return;
    const epoch = lease.epoch;
    const sentAt = performance.now();
    const held = lease.revision;
    const request = held === undefined ? this.kv.create(lease.key, this.node) : this.kv.update(lease.key, this.node, held);
    lease.attempt = request.then(
      async (revision) => {
        if (lease.epoch !== epoch) return;
        if (held !== undefined) {
          lease.revision = revision;
          this.armDeadline(lease, sentAt);
        } else if (!lease.released) this.hold(lease, revision, sentAt);
        // Released while the take was under way: the lease goes back at once.
        else await this.kv.delete(lease.key, { previousSeq: revision }).catch(() => {});
      },
      (err: unknown) => {
        if (lease.epoch !== epoch || held === undefined) return;
        // The revision moved or the key is gone: another node may hold it already, stop following at once.
        if (refused(err)) this.lose(lease, 'refused');
        // Otherwise (a timeout, the bus down) the lease may still be this node's: the deadline decides.
        else this.log?.debug(`${this.kind.field} leases: a renew failed`, { ...this.named(lease.name), error: message(err) });
      },
    );
    void lease.attempt.then(() => {
      lease.attempt = undefined;
      if (lease.released) return;
      // Counted from when this attempt was sent, so a slow answer does not push the renews toward the deadline.
      const every = lease.revision === undefined ? this.timings.pollEveryMs : this.timings.renewEveryMs;
      lease.next = setTimeout(() => this.attempt(lease), Math.max(0, sentAt + every - performance.now()));
    });
  }

  private hold(lease: Lease<N>, revision: number, sentAt: number): void {
    lease.revision = revision;
    lease.epoch++;
    this.armDeadline(lease, sentAt);
    this.emit({ ...this.named(lease.name), kind: 'held', revision } as LeaseEvent<F, N>);
  }

  /**
   * The lease was written at `sentAt` at the earliest, so the server keeps it until sentAt + TTL at the earliest:
   * unrenewed by sentAt + lostAfter, it counts as lost, before another node can take it.
   */
  private armDeadline(lease: Lease<N>, sentAt: number): void {
    clearTimeout(lease.deadline);
    const epoch = lease.epoch;
    lease.deadline = setTimeout(
      () => {
        if (lease.epoch === epoch && lease.revision !== undefined) this.lose(lease, 'unrenewed');
      },
      Math.max(0, sentAt + this.timings.lostAfterMs - performance.now()),
    );
  }

  private lose(lease: Lease<N>, reason: LeaseLoss): void {
    if (reason !== 'released') lease.revision = undefined;
    lease.epoch++;
    clearTimeout(lease.deadline);
    lease.deadline = undefined;
    const { field, stops } = this.kind;
    if (reason !== 'released')
      this.log?.warn(`${field} leases: lost the lease of a ${field}; this node stops ${stops}`, { ...this.named(lease.name), reason });
    this.emit({ ...this.named(lease.name), kind: 'lost', reason } as LeaseEvent<F, N>);
  }

  private emit(event: LeaseEvent<F, N>): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.log?.error(`${this.kind.field} leases: a listener failed`, { ...this.named(event[this.kind.field]), error: message(err) });
      }
    }
  }

  private named(name: N): Named<F, N> {
    return { [this.kind.field]: name } as Named<F, N>;
  }
}

/** Whether the bucket refused a write for its expected revision (another write came first, or the key is gone). */
function refused(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/** Who holds each lease of `kind` in the bucket, and at which revision (also read by `status --cluster`). */
export async function leaseHolders<F extends string, N>(
  kind: LeaseKind<F, N>,
  kv: KV,
  jsm: JetStreamManager,
): Promise<Array<LeaseHolder<F, N>>> {
  return (await bucketEntries(kv, jsm, LEASES_BUCKET, kind.keys)).map(
    ({ key, entry }) => ({ [kind.field]: kind.nameOf(key), node: entry.string(), revision: entry.revision }) as LeaseHolder<F, N>,
  );
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * A chain's key in the bucket. KV keys are `[-/_=.A-Za-z0-9]`, a dot separating tokens; a chain key may hold others
 * (`aptos:testnet`): every byte but `[-_A-Za-z0-9]` is written `=XX` (hex), which reads back unambiguously.
 */
export function leaseKey(chain: string): string {
  let key = '';
  for (const byte of new TextEncoder().encode(chain)) {
    const c = String.fromCharCode(byte);
    key += /[-_A-Za-z0-9]/.test(c) ? c : `=${byte.toString(16).padStart(2, '0')}`;
  }
  return key;
}

/** The chain of a key `leaseKey` wrote. */
export function chainOfKey(key: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < key.length; i++) {
    if (key[i] === '=') {
      bytes.push(Number.parseInt(key.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(key.charCodeAt(i));
  }
  return new TextDecoder().decode(Uint8Array.from(bytes));
}
