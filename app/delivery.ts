import { CONNECTIONS_PER_ORIGIN, undiciSender } from '../http/clients/webhook.js';
import { smtpMailer } from '../http/clients/mailer.js';
import { tracedSender, type Mark } from './block-trace.js';
import type { ServiceClock, Ticker } from '../engine/clock.js';
import type { Config } from '../engine/config/config.js';
import { createDelivery, type Dispatcher } from '../engine/delivery/dispatcher.js';
import { deliveryStreams } from '../engine/streams/delivery-streams.js';
import type { Logger } from '../engine/log.js';
import type { Metrics } from '../engine/metrics.js';
import type { TargetPolicy } from '../engine/net/targets.js';
import type { Kv } from '../engine/ports.js';
import type { ControlPlane } from '../engine/streams/control-plane.js';
import { partitionOf, type Hash32, type PendingUnit } from '../engine/cluster/partitions.js';
import { DeliveryCapture } from '../engine/cluster/delivery-capture.js';
import type { PartitionLog } from '../engine/cluster/partition-log.js';
import type { DeliveryGate } from '../engine/delivery/dispatcher.js';

/**
 * What ties a cluster node's delivery to its partitions: the partitions whose log this node caught up with and
 * owns (the dispatcher's gate), and where its units go. The log is given once it runs (wireDeliveryPartitions).
 */
export class PartitionLink implements DeliveryGate {
  log: PartitionLog | undefined;
  /** Owned and adopted: the log said `ready`, and neither it nor the owners said `lost` since. */
  readonly ready = new Set<number>();

  owns(partition: number): boolean {
    return this.ready.has(partition);
  }

  writable(partition: number): boolean {
    return this.ready.has(partition) && this.log?.writable(partition) === true;
  }

  /**
   * A committed unit's changes: those of partitions this node owns are published on their logs. The others stay in
   * this store alone: the units a control change makes on every node (only the owner publishes them).
   */
  /** What follows the partitions adopted besides the dispatcher: the matcher (each partition's blocks). */
  private readonly followers: Array<{ adopt(partition: number): void; drop(partition: number): unknown }> = [];

  /** `follower` follows the partitions adopted from now on, and adopts those adopted already. */
  follow(follower: { adopt(partition: number): void; drop(partition: number): unknown }): void {
    this.followers.push(follower);
    for (const p of this.ready) follower.adopt(p);
  }

  /** The dispatcher adopted the partition: its followers too. */
  adopted(partition: number): void {
    for (const f of this.followers) f.adopt(partition);
  }

  /** The partition is no longer this node's: its followers drop it. */
  dropped(partition: number): void {
    for (const f of this.followers) void f.drop(partition);
  }

  submit(units: readonly PendingUnit[]): ReadonlyArray<Promise<void>> {
    // Those of a partition whose lease lapsed go too: the log keeps them with the partition's kept units.
    const mine = units.filter((u) => this.ready.has(u.change.partition) || this.log?.keeps?.(u.change.partition) === true);
    return mine.length === 0 || this.log === undefined ? [] : this.log.submit(mine);
  }
}

/**
 * The gate of a cluster node that owns no partition (without match or deliver): its store holds the other nodes'
 * queues, applied from their partitions' logs, and none of them is its to send.
 */
const OWNS_NONE: DeliveryGate = { owns: () => false, writable: () => false };

/** Expired challenges, bind messages, history and delivery logs go once a minute of service time. */
const PURGE_EVERY_MS = 60_000;

/**
 * Webhook delivery: the dispatcher over the store, sending with undici to the targets the policy allows (each POST's
 * timeout on `ticker`, the real time the service clock runs on), alerts by SMTP.
 */
export function buildDelivery({
  config,
  store,
  clock,
  ticker,
  log,
  metrics,
  targets,
  mark,
  plane,
  hash,
  partitions,
}: {
  config: Config;
  store: Kv;
  clock: ServiceClock;
  ticker: Ticker;
  log: Logger;
  metrics: Metrics;
  targets: TargetPolicy;
  mark: Mark | undefined;
  /** Where a tenant's first settings (its signing secret) are written. */
  plane: ControlPlane;
  /** xxhash-wasm's h32: a stream's delivery partition. */
  hash: Hash32;
  /** A cluster node owning partitions: its units are captured and published, its attempts gated by ownership. */
  partitions?: PartitionLink | undefined;
}): Dispatcher {
  const sender = mark === undefined ? undiciSender({ targets, ticker }) : tracedSender(undiciSender({ targets, ticker }), mark);
  const mailer = config.smtpUrl === undefined ? undefined : smtpMailer(config.smtpUrl);
  const partition = (tenant: string, url: string): number => partitionOf(hash, tenant, url);
  const dispatcher = createDelivery({
    kv: store,
    clock,
    sender,
    mailer,
    log,
    partitionOf: partition,
    ...(partitions === undefined
      ? config.nats === undefined
        ? {}
        : { gate: OWNS_NONE }
      : { gate: partitions, capture: new DeliveryCapture(store, partition, (units) => partitions.submit(units)) }),
    // On a cluster, the stream states its health rules write here are written to the log for the other nodes too.
    streams: deliveryStreams(store, { plane, ...(config.nats === undefined ? {} : { sharedStates: { log, clock } }) }),
    alertEmail: config.alertEmail,
    stageChunk: config.stageChunk,
    maxInFlightPerOrigin: CONNECTIONS_PER_ORIGIN,
    maxInFlightPerTenant: config.tenantSlots,
    maxInFlightUnanswered: config.unansweredSlots,
    retention: {
      historyMs: config.historyDays * 86_400_000,
      successLogMs: config.deliveryLogDays * 86_400_000,
      successLogMax: config.deliveryLogMax,
    },
    awaitDeliveriesOnWake: config.testClock,
  });
  dispatcher.exportMetrics(metrics, config.metricsStreams);
  return dispatcher;
}

/**
 * Starts delivery (on a node with the deliver role) and the purge of what expired (`expire`: the Auth API's
 * challenges and bind messages, AuthService.expire).
 */
export function startDelivery({
  dispatcher,
  deliver,
  expire,
  clock,
}: {
  dispatcher: Dispatcher;
  deliver: boolean;
  expire: () => Promise<void>;
  clock: ServiceClock;
}): void {
  // A cluster node without deliver serves no API and follows no chain (engine/config/roles.ts): nothing is queued on it to send.
  if (deliver) dispatcher.start();
  // The clock waits for the purge (its batches commit off the event loop), so a clock jump sees what expired within it gone.
  const tick = async (): Promise<void> => {
    await expire();
    await dispatcher.purge();
    clock.at(clock.now() + PURGE_EVERY_MS, tick);
  };
  void tick();
}
