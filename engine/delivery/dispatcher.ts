import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Kv, Mailer, Sender } from '../ports.js';
import type { Metrics } from '../metrics.js';
import { Alerts } from './alerts.js';
import { AttemptRecorder } from './attempt-recorder.js';
import { RecordRows } from './attempt-records.js';
import { bodyAt, webhookBody } from './body.js';
import { DeliveryCounters } from './counters.js';
import type { EnqueueItem, EnqueueResult, Prepared, Staged } from './enqueue.js';
import { uuidV7 } from './ids.js';
import { KvDeliveryQueue } from './kv-queue.js';
import { DELIVERY_TIMEOUT_MS, HISTORY_RETENTION_MS } from './limits.js';
import { webhookIdOf, type DeliveryQueue, type Taken } from './queue.js';
import { kvRates, type RateStore } from './rate-store.js';
import { markDelivered, type ReplayedRecord } from './records.js';
import { purgeExpired, type Retention } from './retention.js';
import { RetryScheduler } from './retry-scheduler.js';
import { DEFAULT_ORIGIN_SLOTS, DEFAULT_TENANT_SLOTS, DEFAULT_UNANSWERED_SLOTS, MAX_IN_FLIGHT, Slots, heard } from './slots.js';
import { STAGE_CHUNK, stageInChunks } from './stage-chunks.js';
import { StreamHealth } from './stream-health.js';
import { StreamReads, onNewWebhook, sends, type DeliveryStream, type DeliveryStreams } from './stream-port.js';
import { TurnBudget } from './turn-budget.js';
import { PartitionTurns, type DeliveryGate } from './partition-turns.js';
import { Units, type StreamPartition, type UnitCapture } from './unit.js';
import { refusal, summarize, webhookHeaders } from './webhook.js';

export type { EnqueueItem, EnqueueResult, Prepared, Staged } from './enqueue.js';
export type { StreamPartition, UnitCapture } from './unit.js';
export { streamKey } from './stream-port.js';
export { emptyStats, statsOf, type LastError, type Stats } from './attempt-records.js';
export type { DeliveryGate } from './partition-turns.js';

export interface DispatcherOptions {
  alertEmail: string | undefined;
  /** How long history and delivery logs are kept (defaults: the interface's week, success logs a day, 1,000,000 of them per tenant). */
  retention?: Partial<Retention>;
  /** Webhooks staged per write transaction by enqueueBatch (default STAGE_CHUNK, engine/delivery/stage-chunks.ts). */
  stageChunk?: number;
  /** Deliveries in flight at once, across all streams (default MAX_IN_FLIGHT). */
  maxInFlight?: number;
  /** Deliveries in flight at once to one receiver origin: the sender's connections to it (default 64). */
  maxInFlightPerOrigin?: number;
  /** Deliveries in flight at once for one tenant (default DEFAULT_TENANT_SLOTS). */
  maxInFlightPerTenant?: number;
  /** Deliveries in flight at once for one tenant to the receiver origins that have not answered it (Slots; default DEFAULT_UNANSWERED_SLOTS). */
  maxInFlightUnanswered?: number;
  /**
   * Under the test clock a wake-up waits for the deliveries it started, so a jump sees each failure's next retry at
   * its own instant. In real time it does not: one slow receiver must not hold other timers back.
   */
  awaitDeliveriesOnWake?: boolean;
}

/** What delivery is built from (createDelivery). */
export interface DeliveryParts extends DispatcherOptions {
  /** The store history, logs, stats and the default queue and rates live in. */
  kv: Kv;
  clock: Clock;
  sender: Sender;
  mailer?: Mailer | undefined;
  log: Logger;
  /** What delivery reads of streams and tenants, and the stream state it writes. */
  streams: DeliveryStreams;
  /** Default: the queue in `kv`. */
  queue?: DeliveryQueue;
  /** Default: the `rates` table of `kv`. */
  rates?: RateStore;
  /** A stream's delivery partition (app/ makes it with xxhash32). Absent: every stream is in partition 0. */
  partitionOf?: StreamPartition;
  /**
   * Captures each unit's writes to the delivery tables per partition, with before-images, handed on once committed
   * in commit order (engine/cluster/delivery-capture.ts): what a cluster node publishes on each partition's log.
   * Absent (one process): nothing is captured. Only writes through `kv` (the default queue's and rates') are.
   */
  capture?: UnitCapture;
  /**
   * Which partitions this node delivers (a cluster node: those it owns; absent: all). Nothing of a stream (attempts,
   * retries' timers, 24-hour rule, alerts) runs here until its partition is adopted, attempts only while writable.
   */
  gate?: DeliveryGate;
}

/** The server's delivery, from named parts. */
export function createDelivery(parts: DeliveryParts): Dispatcher {
  return new Dispatcher(parts);
}

/** Defaults of the retention rules (engine/config/config.ts reads the variables). */
export const DEFAULT_RETENTION: Retention = { historyMs: HISTORY_RETENTION_MS, successLogMs: 86_400_000, successLogMax: 1_000_000 };

/** Deliveries started per event-loop turn (TurnBudget): each signs its body and opens its request, ~0.1 ms. */
const STARTS_PER_TURN = 32;

/** Webhooks serialized per event-loop turn by prepare(): ~2 ms of work. */
const PREPARE_CHUNK = 100;

/** Called once the transaction that made a change committed. */
export type AfterCommit = () => void;

/**
 * Delivers what is enqueued, with the interface's rules: the queue of each stream (DeliveryQueue) in order within a
 * stream and concurrently across streams within the fair slots (Slots), retries woken on time (RetryScheduler),
 * outcomes recorded (AttemptRecorder) and streams' health kept (StreamHealth).
 *
 * The control plane tells it of each applied stream change in two halves (`saved`, `recordWritten`, `statusSet`,
 * `deleting`; engine/streams/change-effects.ts): the first inside the change's write transaction, answering the
 * second, called once it committed.
 */
export class Dispatcher {
  private readonly kv: Kv;

  /**
   * The store delivery writes through: on a cluster node, the capture's, which notes each delivery row a unit writes.
   * The matcher stages through it too, so the marks of what a partition staged ride in the unit of its webhooks.
   */
  get store(): Kv {
    return this.kv;
  }
  private readonly clock: Clock;
  private readonly queue: DeliveryQueue;
  private readonly reads: StreamReads;
  private readonly units: Units;
  private readonly health: StreamHealth;
  private readonly recorder: AttemptRecorder;
  private readonly retries: RetryScheduler;
  private readonly slots: Slots;
  private readonly budget = new TurnBudget(
    STARTS_PER_TURN,
    (id) => this.kick(id),
    () => this.pullLine(),
    () => this.notifyIfIdle(),
  );
  /** Receiver origins by webhook URL (the slots are per origin). */
  private readonly origins = new Map<string, string>();
  /** Each stream's origin when it was last read: a stream whose receiver has no free slot waits without reading the store. */
  private readonly streamOrigins = new Map<string, string>();
  private readonly retention: Retention;
  private purging: Promise<number> | undefined;
  /** Set by stop(): no delivery starts any more. */
  private stopping = false;
  private idle: Array<() => void> = [];
  /** Outcomes since the start, for /metrics. */
  private readonly counters = new DeliveryCounters();
  private readonly partitionOf: StreamPartition;
  private readonly turns = new PartitionTurns();

  constructor(private readonly parts: DeliveryParts) {
    const { clock, log } = parts;
    // Captured, every write of delivery goes through the capture; else straight to the store (a branch per unit).
    const kv = (this.kv = parts.capture?.kv ?? parts.kv);
    this.clock = clock;
    this.partitionOf = parts.partitionOf ?? (() => 0);
    this.retention = { ...DEFAULT_RETENTION, ...parts.retention };
    this.queue = parts.queue ?? new KvDeliveryQueue(kv);
    this.reads = new StreamReads(parts.streams);
    const rates = parts.rates ?? kvRates(kv);
    this.units = new Units(
      kv,
      this.queue,
      new RecordRows(kv, this.retention.successLogMax),
      rates,
      this.reads,
      parts.partitionOf,
      parts.capture,
    );
    const alerts = new Alerts(this.units, clock, parts.mailer, log, parts.alertEmail, (p) => parts.gate?.owns(p) ?? true);
    this.health = new StreamHealth(this.units, clock, alerts, this.queue.cap);
    this.recorder = new AttemptRecorder(this.units, this.health, clock, log);
    this.retries = new RetryScheduler(clock, (id) => this.kick(id), parts.awaitDeliveriesOnWake === true);
    this.slots = new Slots({
      max: parts.maxInFlight ?? MAX_IN_FLIGHT,
      perOrigin: parts.maxInFlightPerOrigin ?? DEFAULT_ORIGIN_SLOTS,
      perTenant: parts.maxInFlightPerTenant ?? DEFAULT_TENANT_SLOTS,
      unanswered: parts.maxInFlightUnanswered ?? DEFAULT_UNANSWERED_SLOTS,
    });
  }

  /**
   * Rebuilds timers from the store (after a restart nothing is lost) and resumes delivery. With a gate, only of the
   * partitions owned (none yet at a cluster node's start: each is adopted as it is taken).
   */
  start(): void {
    for (const s of this.parts.streams.all()) {
      this.track(s);
      this.health.usesUrl(s);
      if (this.parts.gate === undefined || this.parts.gate.owns(this.streamPartition(s))) this.resumeStream(s);
    }
    void this.health.alerts.flush(); // decided before a crash, not e-mailed
  }

  /**
   * This node took partition `p` and applied its log (a cluster node): what it kept in memory of the partition's
   * streams is read again from the store (another node changed them meanwhile), their retries and 24-hour rules
   * are scheduled at their instants, and they resume, as `start` does at a restart.
   */
  adopt(p: number): void {
    this.turns.reset(p, false);
    // Statistics rows are cached by key across partitions: read again, all of them (cheap, once per takeover).
    this.units.records.stats.clear();
    for (const s of this.partitionStreams(p)) {
      this.queue.forget(s.id);
      this.resumeStream(s);
    }
    void this.health.alerts.flush(); // its last owner's, not e-mailed
  }

  /** Partition `p` is no longer this node's: its streams' timers stop here at once (attempts in flight finish). */
  drop(p: number): void {
    this.turns.reset(p, true);
    for (const s of this.partitionStreams(p)) {
      this.retries.cancel(s.id);
      this.health.cancelTermination(s.id);
      this.queue.forget(s.id);
    }
  }

  /**
   * Partition `p` is being handed over: no attempt of it starts any more; resolves once those under way ended with
   * their outcomes committed (the caller bounds the wait).
   */
  handOver(p: number): Promise<void> {
    return this.turns.handOver(p);
  }

  /** Partition `p`'s log is writable again (the bus back): its streams held meanwhile start. */
  resume(p: number): void {
    for (const id of this.turns.resume(p)) this.kick(id);
  }

  /** Undelivered webhooks per partition, those of the partitions `wanted` (/health's cluster.partitions). */
  queuedIn(wanted: ReadonlySet<number>): Map<number, number> {
    const out = new Map<number, number>();
    for (const s of this.parts.streams.all()) {
      const p = this.queue.stagedIn(s.id);
      if (p !== undefined && wanted.has(p)) out.set(p, (out.get(p) ?? 0) + this.queue.size(s.id));
    }
    return out;
  }

  /** The partition whose owner carries out the stream's work, as the store holds it (undefined: an unknown stream). */
  partitionOfStream(streamId: string): number | undefined {
    const s = this.reads.read(streamId);
    return s === undefined ? undefined : this.streamPartition(s, true);
  }

  /** A stream's timers and its next attempt, from the store. */
  private resumeStream(s: DeliveryStream): void {
    this.retries.cancel(s.id);
    this.health.started(s);
    if (sends(s.status) && this.queue.size(s.id) > 0) this.kick(s.id);
  }

  /** The partition a stream's delivery is in: its waiting webhooks', else its tenant's and URL's. */
  private streamPartition(s: Pick<DeliveryStream, 'id' | 'tenantId' | 'webhookUrl'>, stored = false): number {
    return this.queue.stagedIn(s.id, stored) ?? this.partitionOf(s.tenantId, s.webhookUrl);
  }

  /** The streams of partition `p` as the store holds them (another node's rows were applied under what is kept). */
  private partitionStreams(p: number): DeliveryStream[] {
    return [...this.parts.streams.all()].filter((s) => this.streamPartition(s, true) === p);
  }

  // ---- what the streams side tells ------------------------------------------

  /** A stream written with its webhookUrl (created, updated): inside that write's transaction. */
  saved(s: DeliveryStream): AfterCommit {
    this.health.usesUrl(s);
    return () => {
      this.track(s);
      this.reads.changed(s.id);
    };
  }

  /** A stream's record written otherwise (its addresses): inside that write's transaction. */
  recordWritten(id: string): AfterCommit {
    return () => this.reads.changed(id);
  }

  /** The owner set a stream's status (`s` as read in the transaction, `was` its status before): inside that transaction. */
  statusSet(s: DeliveryStream, status: 'active' | 'paused', was: DeliveryStream['status']): AfterCommit {
    // From error, its URL's rate restarts at 100: a unit of the URL's partition, in the change's transaction.
    const unit = status === 'active' && was === 'error' ? this.units.begin() : undefined;
    if (unit !== undefined) {
      this.health.restartRate(unit, s);
      unit.close(this.clock.now());
    }
    return () => {
      unit?.committed();
      this.reads.changed(s.id);
      if (status !== 'active' || was === 'active') return;
      this.health.resumed(s.id, was);
      this.kick(s.id);
    };
  }

  /** The health rules set a stream in error or terminated, on this node or another (`s` as applied): inside that change's transaction. */
  healthSet(s: DeliveryStream): AfterCommit {
    return () => {
      this.reads.changed(s.id);
      // The 24-hour rule of a stream in error runs on its partition's owner only.
      if (this.parts.gate === undefined || this.parts.gate.owns(this.streamPartition(s))) this.health.stateApplied(s);
      else this.health.cancelTermination(s.id);
    };
  }

  /** A stream deleted: its queue goes in the delete's transaction; once that committed its timers go (its history stays). */
  deleting(id: string): AfterCommit {
    // A unit of the stream's partition, in the delete's transaction.
    const unit = this.units.begin();
    const dropped = this.queue.drop(id);
    unit.close(this.clock.now());
    return () => {
      unit.committed();
      dropped();
      this.retries.cancel(id);
      this.health.forget(id);
      this.reads.forget(id);
      this.streamOrigins.delete(id);
      this.counters.forget(id);
    };
  }

  private track(s: DeliveryStream): void {
    this.reads.track(s);
    this.counters.track(s.id);
  }

  // ---- enqueue ---------------------------------------------------------------

  /**
   * Webhooks for streams, committed in transactions of their own (`stageChunk` webhooks each, in order); resolves
   * once all are on disk. The commits and their fsync happen off the event loop: a block's thousand webhooks never
   * hold requests (docs/reliability.md, Soak).
   */
  async enqueueBatch(items: ReadonlyArray<EnqueueItem>): Promise<EnqueueResult[]> {
    return stageInChunks(this.kv, this, await this.prepare(items), this.parts.stageChunk ?? STAGE_CHUNK);
  }

  /**
   * Serializes the webhooks' bodies before the transaction that stages them, PREPARE_CHUNK to an event-loop turn:
   * a block's thousand webhooks are never serialized in one stretch, nor inside the write transaction. A body
   * carries the stream's tag as it is now; a stream whose tag changes before the transaction is serialized again there.
   */
  async prepare<I extends EnqueueItem>(items: readonly I[]): Promise<Array<I & Prepared>> {
    const out: Array<I & Prepared> = [];
    for (let i = 0; i < items.length; i++) {
      if (i > 0 && i % PREPARE_CHUNK === 0) await new Promise((resolve) => setImmediate(resolve));
      const item = items[i]!;
      const s = this.reads.read(item.streamId);
      out.push(
        s === undefined
          ? { ...item }
          : {
              ...item,
              ready: {
                tag: s.tag,
                body: webhookBody({ ...item.payload, streamId: item.streamId, tag: s.tag }),
                summary: summarize(item.payload),
              },
            },
      );
    }
    return out;
  }

  /**
   * Inside the caller's write transaction, committed with its own writes: an active stream queues its webhook, a
   * stream in error keeps it in history, paused and terminated streams drop it. The caller calls `settle()` once
   * that transaction committed: a webhook leaves only once on disk.
   */
  stage(items: ReadonlyArray<EnqueueItem & Prepared>): Staged {
    const now = this.clock.now();
    const wentToError: DeliveryStream[] = [];
    const touched = new Set<string>();
    const unit = this.units.begin();
    const partitions: Array<number | undefined> = [];
    const results = items.map(({ streamId, payload, ready }, i): EnqueueResult => {
      const tenant = this.reads.tenantOf(streamId);
      if (tenant === undefined) return 'dropped';
      const s = unit.stream(tenant, streamId);
      if (s === undefined) return 'dropped';
      const fate = onNewWebhook(s.status);
      if (fate === 'drop') return 'dropped';
      const summary = ready?.summary ?? summarize(payload);
      const partition = (partitions[i] = unit.partition(s));
      unit.records.bump(tenant, streamId, partition, {
        totalLogsProcessed: summary.logs,
        totalTxsProcessed: summary.txs,
        totalTxsInternalProcessed: summary.txsInternal,
      });
      // Serialized once: the queue, the POSTs, history and replay keep these bytes.
      const body = ready !== undefined && ready.tag === s.tag ? ready.body : webhookBody({ ...payload, streamId, tag: s.tag });
      if (fate === 'history') {
        unit.records.history(tenant, partition, s, body.bytes, summary, 0, `not sent: the stream is in error (${s.statusMessage})`, now);
        return 'history';
      }
      const queued = unit.queue.enqueue(streamId, partition, { ...body, summary, failures: 0, nextAt: now });
      if (this.health.queued(unit, s, queued, now)) wentToError.push(s);
      touched.add(streamId);
      return 'queued';
    });
    unit.close(now);
    let durable: Promise<void> | undefined;
    return {
      results,
      partitions,
      failed: () => unit.failed(),
      settle: () => {
        // The enqueue is answered once durable; the sends do not wait for it (docs/decisions/cluster.md, Part 2).
        durable = unit.committed();
        this.health.afterError(wentToError);
        for (const id of touched) this.kick(id);
        this.notifyIfIdle();
      },
      durable: () => durable,
    };
  }

  /** Webhooks of the stream waiting undelivered (the x-queue-size header). */
  queueSize(streamId: string): number {
    return this.queue.size(streamId);
  }

  // ---- replay and test webhooks -----------------------------------------------

  /**
   * A replay of history record `h` was answered 200: the record says so and the pending retry of its webhook, if
   * any, leaves the stream's queue and its count, in one transaction (a crash before its commit leaves both, and the
   * retry is sent at its time). Failed webhooks wait apart from the fresh queue, so this never moves the queue's
   * head. A retry in flight completes: its outcome finds the record delivered and schedules no other. A unit of the
   * record's partition. Answers its deliveredAt (undefined: gone) and, on a cluster node, when the unit is durable.
   */
  replayDelivered(tenant: string, h: ReplayedRecord): { deliveredAt: string | undefined; durable: Promise<void> | undefined } {
    const now = this.clock.now();
    let durable: Promise<void> | undefined;
    const deliveredAt = this.units.alone(
      (body: () => string | undefined) => this.kv.transact(body),
      (unit) => {
        const at = markDelivered(this.kv, tenant, h.partition, h.id, now);
        if (h.seq !== undefined) unit.queue.dropRetry(h.streamId, h.seq);
        return at;
      },
      now,
      (d) => (durable = d),
    );
    return { deliveredAt, durable };
  }

  /** Posts one signed webhook for a tenant now (test webhooks, replays: a new webhook-id unless given). `timedOut`: no answer in time. */
  async post(
    tenant: string,
    url: string,
    body: Uint8Array,
    queueSize: number,
    webhookId = uuidV7(this.clock.now()),
  ): Promise<{ delivered: boolean; status?: number; error?: string; timedOut?: true }> {
    let secret: string;
    try {
      secret = await this.reads.secret(tenant);
    } catch (err) {
      // Its first use writes it (a cluster's log may be unreachable): a failed attempt, retried on the schedule.
      return { delivered: false, error: `the webhook could not be signed: ${err instanceof Error ? err.message : String(err)}` };
    }
    const headers = webhookHeaders(body, secret, queueSize, webhookId, Math.floor(this.clock.now() / 1000));
    const res = await this.parts.sender.post(url, body, headers, DELIVERY_TIMEOUT_MS);
    if ('error' in res)
      return res.timedOut === true ? { delivered: false, error: res.error, timedOut: true } : { delivered: false, error: res.error };
    return res.status === 200
      ? { delivered: true, status: 200 }
      : { delivered: false, status: res.status, error: refusal(res.status, res.answer) };
  }

  // ---- running -----------------------------------------------------------------

  /** Delivered, failed and retried counters and queue sizes in all (with `perStream` per stream too), and the slots in use and waited for, on /metrics. */
  exportMetrics(metrics: Metrics, perStream: boolean): void {
    this.counters.export(metrics, (id) => this.queueSize(id), perStream);
    metrics.gauge('chainpost_webhooks_in_flight', 'Webhook POSTs under way (delivery slots held), all tenants.', () => [
      { labels: {}, value: this.slots.inFlight },
    ]);
    metrics.gauge(
      'chainpost_webhook_streams_waiting',
      'Streams waiting for a delivery slot, or for their turn to start one, all tenants.',
      () => [{ labels: {}, value: this.slots.inLine + this.budget.waiting }],
    );
  }

  /** Resolves once nothing is in flight (tests and shutdown). */
  settled(): Promise<void> {
    if (this.idleNow()) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /**
   * A clean stop: no delivery starts any more. Resolves once those in flight were answered (each within the delivery
   * timeout) and their outcomes committed, and a retention purge under way is done; the queue keeps the rest for the
   * next start.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.slots.clear();
    this.retries.stop();
    this.health.stop();
    await Promise.all([this.settled(), this.purging]);
  }

  /** Removes the history and delivery logs whose retention ended (every minute of service time); one purge at a time. */
  purge(): Promise<number> {
    const now = this.clock.now();
    this.purging ??= purgeExpired(this.kv, now, this.retention, undefined, (fn) =>
      this.units.alone((body: () => number) => this.kv.transactAsync(body), fn, now),
    )
      .catch((err: unknown) => {
        this.parts.log.error('retention purge failed; the next one goes on', { err });
        return 0;
      })
      .finally(() => (this.purging = undefined));
    return this.purging;
  }

  /** Nothing in flight, nothing waiting for a slot or a turn (unless stopping). */
  private idleNow(): boolean {
    return this.queue.held === 0 && ((this.slots.inLine === 0 && this.budget.waiting === 0) || this.stopping);
  }

  private notifyIfIdle(): void {
    if (this.idleNow()) for (const f of this.idle.splice(0)) f();
  }

  private originOf(url: string): string {
    let o = this.origins.get(url);
    if (o === undefined) this.origins.set(url, (o = new URL(url).origin));
    return o;
  }

  /** Sends the stream's next webhook if one is due; returns the delivery it started, if any. */
  private kick(streamId: string): Promise<void> | undefined {
    if (this.queue.holding(streamId) || this.stopping) return undefined;
    const tenant = this.reads.tenantOf(streamId);
    const known = this.streamOrigins.get(streamId);
    if (tenant !== undefined && known !== undefined && !this.slots.free(tenant, known)) {
      this.slots.wait(tenant, known, streamId);
      return undefined;
    }
    const s = this.reads.read(streamId);
    if (s === undefined || !sends(s.status)) return undefined;
    const gate = this.parts.gate;
    const p = gate === undefined ? 0 : this.streamPartition(s);
    if (gate !== undefined && !this.turns.mayStart(gate, p, streamId)) return undefined;
    // Counted from here: what follows reads the queue's head, signs the body and opens the request.
    if (!this.budget.take()) return this.budget.defer(streamId);
    const { taken, retryAt } = this.queue.next(streamId, this.clock.now());
    if (retryAt !== undefined) this.retries.at(streamId, retryAt);
    if (taken === undefined) return undefined;
    const origin = this.originOf(s.webhookUrl);
    this.streamOrigins.set(streamId, origin);
    if (!this.slots.take(s.tenantId, origin, streamId)) return undefined;
    this.queue.hold(taken);
    this.turns.started(p);
    return this.deliver(s, taken, origin)
      .catch((err: unknown) => this.parts.log.error('delivery failed', { streamId, err }))
      .finally(() => {
        this.turns.ended(p);
        this.queue.release(streamId);
        this.kick(streamId);
        this.notifyIfIdle();
      });
  }

  /**
   * Streams in line take the free slots, while the turn has room (the next turn goes on); one with nothing to send
   * leaves its line. Taken out of line only to start: a deferred start would leave the slot free for the next.
   */
  private pullLine(): void {
    while (this.slots.inLine > 0 && this.budget.hasRoom()) {
      const id = this.slots.next();
      if (id === undefined) return;
      this.kick(id);
    }
  }

  /**
   * The slot is freed once the receiver answered, for the streams in line; the stream itself sends its next webhook
   * once this outcome is committed.
   */
  private async deliver(s: DeliveryStream, taken: Taken, origin: string): Promise<void> {
    const url = s.webhookUrl;
    const { item } = taken;
    let res: Awaited<ReturnType<Dispatcher['post']>> | undefined;
    try {
      res = await this.post(s.tenantId, url, bodyAt(item, item.failures), this.queueSize(s.id), webhookIdOf(s.id, item));
    } finally {
      this.slots.release(s.tenantId, origin, heard(res));
      this.pullLine();
    }
    this.counters.outcome(s.id, res.delivered, item, this.clock.now());
    await this.recorder.record({ s, taken, url, res, now: this.clock.now() });
  }
}
