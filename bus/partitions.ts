import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type PubAck,
} from '@nats-io/jetstream';
import { PartitionLost, type PartitionLog, type PartitionLogEvent, type PartitionLoss } from '../engine/cluster/partition-log.js';
import { applyPartitionChange, PARTITIONS, takeBack, type PartitionChange, type PendingUnit } from '../engine/cluster/partitions.js';
import type { Logger } from '../engine/log.js';
import type { Kv } from '../engine/ports.js';
import { splitMarks } from '../engine/match/block-events.js';
import { isStale } from './blocks.js';
import type { BusConnection } from './connect.js';
import { MSG_ID, PARTITIONS_FORMAT, partitionMessage, partitionSubject, readPartitionMessage } from './partition-messages.js';
import { type BatchBound, OrderedApply } from './ordered.js';
import { PARTITIONS_STREAM } from './streams.js';
import { retryLeftMs, retryWaitMs, within } from './waits.js';

/**
 * The partition log of a cluster node (docs/decisions/cluster.md, Part 2). The owner of a partition publishes each
 * unit of delivery it committed (its rows) on the partition's subject, fenced by the subject's last sequence it knows;
 * every node applies every partition's subject in order, the rows and its position in one transaction. A unit not
 * acknowledged when the partition is lost is taken back from the owner's store, so every store holds the log's state.
 *
 * Positions, in `meta`: the stream's sequence the applier reached (`partitionsSeq`: it starts after it), and per
 * partition the last sequence of its subject this store holds (`partitionSeq/<n>`: moved by the applier and by the
 * owner's acknowledged publishes). A message at or below its partition's position is not applied again, so a restart,
 * a consumer started over, or the owner meeting its own messages applies nothing twice.
 */

/** `meta` keys: the stream sequence the applier reached, and each partition's last sequence this store holds. */
export const PARTITIONS_SEQ = 'partitionsSeq';
export const partitionPosition = (partition: number): string => `partitionSeq/${partition}`;
/** `meta` key: the messages this node missed (gone from the stream before it applied them), once it did. */
export const PARTITIONS_GAP = 'partitionsGap';

/** How long units kept at a lapsed lease wait for the partition to be taken again by default, ms. */
const PARKED_MS = 30_000;
/** How long a takeover waits for the applier to reach the partition's last message by default, ms. */
const TAKEOVER_WITHIN_MS = 10_000;
/** How often the applier, having applied nothing since the last look, asks whether the stream holds more, ms. */
const STALL_CHECK_MS = 2_000;
/**
 * The messages one transaction applies at most: those already delivered, up to 256 or 4 MiB of bodies (a commit a
 * message left nodes behind the log under load; docs/decisions/cluster.md, "The partition log, as built").
 */
export const APPLY_BATCH: BatchBound = { messages: 256, bytes: 4 * 1024 * 1024 };

export interface ClusterPartitionsParts {
  bus: BusConnection;
  kv: Kv;
  /** This node's id: its messages' header, and part of their ids. */
  node: string;
  log: Logger;
  /** How long a publish waits for JetStream's acknowledgement before it is sent again (same message id), ms. */
  publishTimeoutMs?: number;
  /**
   * How long a takeover's read of the partition's last message waits before it is asked again, and the longest wait
   * between a failed publish and its next try, ms (5 s by default; a node gives its lease poll, TTL / 4). A stream
   * whose leader died answers none of the requests sent before its new leader is elected: each one awaited 5 s, or a
   * backoff grown to seconds, put that much after the election (docs/decisions/cluster.md, "Tested across kills").
   */
  requestTimeoutMs?: number;
  /** How long a takeover waits for the partition's log to be applied, ms (10 s by default). */
  takeoverWithinMs?: number;
  /** How many messages (and bytes) one transaction applies at most; APPLY_BATCH by default (bench: 1 message). */
  batch?: BatchBound;
  /**
   * How long units kept at a lease that lapsed unrenewed (`release(p, true)`) wait for this node to take the partition
   * again before they are taken back, ms (PARKED_MS by default; app/ gives max(30 s, 2 TTLs)).
   */
  parkedMs?: number;
  /** Told of each change applied from the log to this store, once durable (not of those skipped). */
  applied?(change: PartitionChange, seq: number): void;
  /**
   * Asked before each message is applied: a promise holds it (and what follows) until it settles, the messages before
   * it committed first (a test holds a node behind the others).
   */
  beforeApply?(seq: number): Promise<void> | undefined;
}

/** A message read off the consumer, to be applied with those delivered with it. */
interface Delivered {
  seq: number;
  /** Its message id (an owner finds its own units by it). */
  id: string;
  /** The messages of the stream after it, as the consumer said. */
  pending: number;
  change: PartitionChange | undefined;
  /** Its format (a format-1 message's marks rows are split as applied). */
  format: number;
}

/** A unit submitted and not acknowledged yet, with its message id (the same for each retry of its publish). */
interface Unacknowledged {
  unit: PendingUnit;
  id: string;
  resolve(): void;
  reject(err: PartitionLost): void;
}

/** A partition this node took: catching up with its log, then owning it, until lost. */
interface Owned {
  readonly partition: number;
  readonly revision: number;
  state: 'catching up' | 'ready' | 'lost';
  /** The sequence of the subject's last message as this node knows it: its publishes expect it. */
  fence: number;
  /** Submitted, not acknowledged yet, in order. */
  queue: Unacknowledged[];
  /** The next unit's number in this ownership (its message id). */
  next: number;
  pumping: Promise<void> | undefined;
  /** Failed publishes in a row (the bus down): the partition is not writable meanwhile. */
  failures: number;
  /** Settled when the queue empties. */
  drainedWaiters: Array<() => void>;
  /** Its loss under way (units being taken back), settled once `lost` was said. */
  losing?: Promise<void>;
  /** Lost at a lapsed lease, its units to be kept: those submitted meanwhile (attempts ending) join them. */
  keeping?: boolean;
}

/**
 * Units of a partition whose lease lapsed unrenewed (the bus unreachable past the TTL), kept in this store and not
 * published: this node taking the partition again with no other message after `fence` publishes them then (the
 * webhooks they record as delivered are not sent again); another node's message, a takeover finding the log moved,
 * `parkedMs` passing or the node stopping takes them back.
 */
interface Parked {
  units: Unacknowledged[];
  /** The subject's last sequence this node knew (moved by its own units found in the log meanwhile). */
  fence: number;
  timer: ReturnType<typeof setTimeout>;
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class ClusterPartitions implements PartitionLog {
  private readonly js: JetStreamClient;
  private readonly managers = new Map<number, Promise<JetStreamManager>>();
  private readonly owned = new Map<number, Owned>();
  private readonly parked = new Map<number, Parked>();
  private readonly listeners = new Set<(event: PartitionLogEvent) => void>();
  /** The stream sequence the applier reached. */
  private seq: number;
  /** Per partition, the last sequence of its subject this store holds. */
  private readonly positions: number[];
  private readonly waiters = new Set<() => void>();
  private running: OrderedApply | undefined;
  private stopped = false;
  /** Why this node stopped applying the log (a newer format, its store failing). */
  private halted: string | undefined;
  /** The messages this node missed, if it did: it owns no partition. */
  private gap: { from: number; to: number } | undefined;
  /** Messages of the stream after the last applied, as the consumer last said. */
  private pending = 0;
  private readonly publishTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  private readonly takeoverWithinMs: number;

  constructor(private readonly parts: ClusterPartitionsParts) {
    this.js = jetstream(parts.bus.nc);
    const { kv } = parts;
    this.seq = kv.get<number>('meta', PARTITIONS_SEQ) ?? 0;
    this.positions = Array.from({ length: PARTITIONS }, (_, n) => kv.get<number>('meta', partitionPosition(n)) ?? 0);
    this.gap = kv.get<{ from: number; to: number }>('meta', PARTITIONS_GAP);
    this.publishTimeoutMs = parts.publishTimeoutMs ?? 5_000;
    this.requestTimeoutMs = parts.requestTimeoutMs ?? 5_000;
    this.takeoverWithinMs = parts.takeoverWithinMs ?? TAKEOVER_WITHIN_MS;
  }

  /** The stream sequence this node applied up to, and each partition's position (tests, /health next). */
  applied(): { seq: number; positions: readonly number[] } {
    return { seq: this.seq, positions: this.positions };
  }

  /** Resolves true once this store holds the partition's log up to stream sequence `seq`, false after `withinMs`. */
  holds(partition: number, seq: number, withinMs: number): Promise<boolean> {
    return this.reached({ partition, state: 'catching up' }, seq, performance.now() + withinMs);
  }

  /** How many messages of the log this node has not applied yet, as its consumer last said. */
  lag(): number {
    return this.pending;
  }

  /** Why this node may own no partition (it missed messages, or stopped applying), if so. */
  unable(): string | undefined {
    if (this.halted !== undefined) return `it stopped applying the partition log: ${this.halted}`;
    if (this.gap !== undefined)
      return `it missed messages ${this.gap.from} to ${this.gap.to} of the partition log (gone from the stream before it applied them)`;
    return undefined;
  }

  /** Starts applying every partition's subject from the sequence after the one reached. */
  start(): void {
    if (this.running !== undefined) return;
    void this.checkStart().catch((err: unknown) =>
      this.parts.log.warn('partition log: its start could not be checked', { error: message(err) }),
    );
    this.running = new OrderedApply(this.js, PARTITIONS_STREAM, {
      applied: () => this.seq,
      batch: this.parts.batch ?? APPLY_BATCH,
      applyBatch: (ms) => this.apply(ms),
      stalled: { everyMs: STALL_CHECK_MS, check: () => this.behind() },
      failed: (err) => this.parts.log.warn('partition log: applying it failed; trying again', { error: message(err), applied: this.seq }),
    });
  }

  /**
   * Stops: each owned partition's units are published first (a few seconds at most), what is left is taken back,
   * then the applier stops.
   */
  async stop(): Promise<void> {
    await Promise.all([...this.owned.keys()].map((n) => this.drained(n, 5_000)));
    await Promise.all([...this.owned.values()].map((o) => this.lose(o, 'released')));
    await Promise.all([...this.parked.keys()].map((p) => this.unpark(p)));
    this.stopped = true;
    this.running?.stop();
    await this.running?.done;
    this.wakeWaiters();
  }

  onEvent(listener: (event: PartitionLogEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  writable(partition: number): boolean {
    const o = this.owned.get(partition);
    return o?.state === 'ready' && o.failures === 0 && this.parts.bus.up();
  }

  async take(partition: number, revision: number): Promise<boolean> {
    const { log } = this.parts;
    const before = this.owned.get(partition);
    // Its last loss finished first (units kept or taken back), so what this take finds is settled.
    if (before !== undefined) await (before.state !== 'lost' ? this.lose(before, 'released') : before.losing);
    const o: Owned = {
      partition,
      revision,
      state: 'catching up',
      fence: 0,
      queue: [],
      next: 0,
      pumping: undefined,
      failures: 0,
      drainedWaiters: [],
    };
    this.owned.set(partition, o);
    const startedAt = performance.now();
    const deadline = startedAt + this.takeoverWithinMs;
    const last = await this.lastOf(partition, deadline);
    const caughtUp = last !== undefined && (await this.reached(o, last, deadline));
    // Lost meanwhile (released, or the node halted): answered once its `lost` was said.
    if (o.state !== 'catching up') {
      await o.losing;
      return false;
    }
    const unable = this.unable();
    if (unable !== undefined || !caughtUp) {
      // Said once as an error when it happened; each refused takeover is a debug line.
      if (unable !== undefined) log.debug(`partition log: this node owns no partition: ${unable}`, { partition });
      else
        log.warn('partition log: a partition taken over was not caught up with within the wait; given up', {
          partition,
          withinMs: this.takeoverWithinMs,
          position: this.positions[partition],
          last,
        });
      await this.lose(o, 'behind');
      return false;
    }
    o.fence = Math.max(last, this.positions[partition]!);
    const parked = this.parked.get(partition);
    if (parked !== undefined && parked.fence === o.fence) {
      // Nobody published it since: what this node kept is the log's next units, published first, under this lease.
      this.parked.delete(partition);
      clearTimeout(parked.timer);
      o.queue = parked.units.map((u) => ({ ...u, id: `${this.parts.node}.${partition}.${revision}.${o.next++}` }));
      log.info('partition log: units kept since the lease lapsed are published under the lease taken again', {
        partition,
        units: o.queue.length,
      });
    } else if (parked !== undefined) await this.unpark(partition);
    if (o.state !== 'catching up') {
      await o.losing;
      return false;
    }
    o.state = 'ready';
    log.info('partition log: a partition taken over, its log applied', {
      partition,
      revision,
      last,
      ms: Math.round(performance.now() - startedAt),
    });
    this.emit({ kind: 'ready', partition, revision });
    this.pump(o);
    return true;
  }

  /**
   * `keep`: the lease lapsed unrenewed (the bus unreachable): the units not acknowledged are kept apart (Parked), for
   * this node to publish if it takes the partition again before anyone else publishes it.
   */
  async release(partition: number, keep = false): Promise<void> {
    const o = this.owned.get(partition);
    if (o !== undefined) await this.lose(o, 'released', keep);
  }

  keeps(partition: number): boolean {
    return this.parked.has(partition) || this.owned.get(partition)?.keeping === true;
  }

  /** Takes back the units kept of the partition, newest first, and tells their submitters. */
  private async unpark(partition: number): Promise<void> {
    const parked = this.parked.get(partition);
    if (parked === undefined) return;
    this.parked.delete(partition);
    clearTimeout(parked.timer);
    try {
      await this.parts.kv.transactAsync(() => {
        for (const u of [...parked.units].reverse()) takeBack(this.parts.kv, u.unit);
      });
    } catch (err) {
      return void this.halt('its store could not be written', { error: message(err) });
    }
    this.parts.log.warn('partition log: units kept since the lease lapsed taken back', { partition, units: parked.units.length });
    for (const u of parked.units) u.reject(new PartitionLost(partition, 'released'));
  }

  submit(units: readonly PendingUnit[]): Array<Promise<void>> {
    const refused: Unacknowledged[] = [];
    const promises = units.map((unit) => {
      const o = this.owned.get(unit.change.partition);
      return new Promise<void>((resolve, reject) => {
        if (o?.state === 'ready' || o?.keeping === true) {
          o.queue.push({ unit, id: `${this.parts.node}.${o.partition}.${o.revision}.${o.next++}`, resolve, reject });
          this.pump(o);
        } else {
          // Committed after its lease lapsed (an attempt ending): kept after the others, published or taken back with them.
          const parked = this.parked.get(unit.change.partition);
          if (parked !== undefined) parked.units.push({ unit, id: '', resolve, reject });
          else refused.push({ unit, id: '', resolve, reject });
        }
      });
    });
    // Committed for a partition this node does not own (a race with its loss): taken back at once, newest first.
    if (refused.length > 0)
      void this.parts.kv
        .transactAsync(() => {
          for (const u of [...refused].reverse()) takeBack(this.parts.kv, u.unit);
        })
        .then(
          () => {
            for (const u of refused) u.reject(new PartitionLost(u.unit.change.partition, 'unowned'));
          },
          (err: unknown) => this.halt('its store could not be written', { error: message(err) }),
        );
    return promises;
  }

  async drained(partition: number, withinMs: number): Promise<boolean> {
    const o = this.owned.get(partition);
    if (o === undefined || o.queue.length === 0) return true;
    return (await within(new Promise<true>((resolve) => o.drainedWaiters.push(() => resolve(true))), withinMs)) ?? false;
  }

  private emit(event: PartitionLogEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.parts.log.error('partition log: a listener failed', { partition: event.partition, error: message(err) });
      }
    }
  }

  /**
   * Stops owning the partition: after the publish in flight settles (its acknowledgement or refusal), the units not
   * acknowledged are taken back in one transaction, newest first, and their submitters told.
   */
  private lose(o: Owned, reason: PartitionLoss, keep = false): Promise<void> {
    if (o.losing !== undefined) return o.losing;
    if (o.state === 'lost') return Promise.resolve();
    const wasReady = o.state === 'ready';
    o.state = 'lost';
    o.keeping = keep && wasReady && !this.parked.has(o.partition);
    o.losing = (async () => {
      await within(o.pumping ?? Promise.resolve(), this.publishTimeoutMs);
      if (o.keeping === true) {
        o.keeping = false;
        const units = o.queue.splice(0);
        const timer = setTimeout(() => void this.unpark(o.partition), this.parts.parkedMs ?? PARKED_MS);
        timer.unref?.();
        this.parked.set(o.partition, { units, fence: o.fence, timer });
        if (units.length > 0)
          this.parts.log.warn('partition log: the lease lapsed; units not acknowledged kept for this node taking it again', {
            partition: o.partition,
            units: units.length,
          });
      }
      let taken: Unacknowledged[] = [];
      await this.parts.kv.transactAsync(() => {
        // Inside the transaction: the applier may have found some in the log meanwhile (acknowledged, not taken back).
        taken = o.queue.splice(0);
        for (const u of [...taken].reverse()) takeBack(this.parts.kv, u.unit);
      });
      this.settleLost(o, taken, reason, wasReady);
    })();
    return o.losing;
  }

  /** After units were taken back: their submitters told, the partition forgotten, `lost` said. */
  private settleLost(o: Owned, taken: Unacknowledged[], reason: PartitionLoss, wasReady: boolean): void {
    if (taken.length > 0)
      this.parts.log.warn('partition log: units not acknowledged taken back', { partition: o.partition, units: taken.length, reason });
    for (const u of taken) u.reject(new PartitionLost(o.partition, reason));
    for (const wake of o.drainedWaiters.splice(0)) wake();
    if (this.owned.get(o.partition) === o) this.owned.delete(o.partition);
    this.wakeWaiters();
    if (wasReady || reason === 'behind') this.emit({ kind: 'lost', partition: o.partition, reason });
  }

  /** Publishes the partition's queue in order; a publish that fails (the bus down) is tried again, before anything after it. */
  private pump(o: Owned): void {
    if (o.pumping !== undefined || o.queue.length === 0 || o.state !== 'ready') return;
    o.pumping = this.publishQueued(o).finally(() => {
      o.pumping = undefined;
      this.pump(o);
    });
  }

  private async publishQueued(o: Owned): Promise<void> {
    const { log } = this.parts;
    while (o.state === 'ready' && o.queue.length > 0) {
      const u = o.queue[0]!;
      let ack: PubAck;
      try {
        ack = await this.publish(o, u);
      } catch (err) {
        if (isStale(err)) {
          log.error('partition log: another node published this partition after what this node knows; it stops owning it', {
            partition: o.partition,
            fence: o.fence,
          });
          void this.lose(o, 'refused');
          return;
        }
        o.failures++;
        log.warn('partition log: publishing a unit failed; trying again', { partition: o.partition, error: message(err) });
        await pause(retryWaitMs(o.failures, this.requestTimeoutMs));
        continue;
      }
      o.failures = 0;
      o.fence = Math.max(o.fence, ack.seq);
      // Taken off unless the applier met it in the log first (or it was taken back).
      if (o.queue[0] === u) {
        o.queue.shift();
        this.hold(o.partition, ack.seq);
        u.resolve();
      }
      if (o.queue.length === 0) for (const wake of o.drainedWaiters.splice(0)) wake();
    }
  }

  /** This store holds the partition's log up to `seq` (its own publish): its position moves, written soon after. */
  private hold(partition: number, seq: number): void {
    if (seq <= this.positions[partition]!) return;
    this.positions[partition] = seq;
    const { kv, log } = this.parts;
    // Not awaited: a position written late only has the applier meet messages this store holds, skipped by the
    // in-memory position until a restart, then applied again in the log's order (the same rows).
    kv.transactAsync(() => kv.put('meta', partitionPosition(partition), this.positions[partition])).catch((err: unknown) =>
      log.warn('partition log: the position of a published unit was not written', { partition, error: message(err) }),
    );
    this.wakeWaiters();
  }

  /** One publish of a unit, expecting the subject's last sequence this node knows; sent again on a lost acknowledgement. */
  private async publish(o: Owned, u: Unacknowledged): Promise<PubAck> {
    const { data, headers } = partitionMessage(u.unit.change, o.revision, this.parts.node);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.js.publish(partitionSubject(o.partition), data, {
          msgID: u.id,
          headers,
          timeout: this.publishTimeoutMs,
          expect: { lastSubjectSequence: o.fence },
        });
      } catch (err) {
        if (attempt >= 3 || !this.parts.bus.up() || isStale(err)) throw err;
      }
    }
  }

  /** The sequence of the partition's last message (0: none), or undefined when the bus did not say by `deadline`. */
  private async lastOf(partition: number, deadline: number): Promise<number | undefined> {
    for (let failures = 0; performance.now() < deadline; failures++) {
      const sentAt = performance.now();
      try {
        const jsm = await this.manager(this.requestTimeoutMs);
        const stored = await jsm.streams.getMessage(PARTITIONS_STREAM, { last_by_subj: partitionSubject(partition) });
        return stored?.seq ?? 0;
      } catch (err) {
        if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return 0;
        this.parts.log.warn('partition log: reading a partition’s last message failed; trying again', { partition, error: message(err) });
        await pause(Math.min(retryLeftMs(failures, sentAt, this.requestTimeoutMs), Math.max(0, deadline - performance.now())));
      }
    }
    return undefined;
  }

  /** A manager whose requests give up after `timeout` ms (JetStream's default, 5 s, unless given). */
  private manager(timeout = 5_000): Promise<JetStreamManager> {
    let jsm = this.managers.get(timeout);
    if (jsm === undefined) this.managers.set(timeout, (jsm = jetstreamManager(this.parts.bus.nc, { checkAPI: false, timeout })));
    return jsm;
  }

  /**
   * Resolves true once this store holds the partition's log up to `seq`; false at `deadline`, when the node cannot
   * apply it, or when the takeover ended (released, stopped).
   */
  private reached(o: Pick<Owned, 'partition' | 'state'>, seq: number, deadline: number): Promise<boolean> {
    return new Promise((resolve) => {
      // `expired`: the timer's own call (a timer may fire a fraction of a millisecond before performance.now() says
      // the deadline came, and then nothing would call this again).
      const check = (expired = false): void => {
        const done = this.seq >= seq || this.positions[o.partition]! >= seq;
        const over = expired || o.state !== 'catching up' || this.unable() !== undefined || this.stopped || performance.now() >= deadline;
        if (!done && !over) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(done);
      };
      const timer = setTimeout(() => check(true), Math.max(0, deadline - performance.now()));
      this.waiters.add(check);
      check();
    });
  }

  private wakeWaiters(): void {
    for (const check of [...this.waiters]) check();
  }

  /** Says, once, when the stream no longer holds messages after the sequence this node reached (it was away too long). */
  private async checkStart(): Promise<void> {
    const { state } = await (await this.manager()).streams.info(PARTITIONS_STREAM);
    if (state.first_seq > this.seq + 1 && state.last_seq > this.seq) await this.missed(this.seq + 1, state.first_seq - 1);
  }

  /** Whether the stream holds messages this node has not applied (its consumer delivering nothing meanwhile). */
  private async behind(): Promise<boolean> {
    const seen = this.seq;
    const info = await within((async () => (await (await this.manager()).streams.info(PARTITIONS_STREAM)).state)(), STALL_CHECK_MS);
    if (info === undefined || info.last_seq <= this.seq || this.seq !== seen) return false;
    this.parts.log.warn('partition log: its consumer delivers nothing while the stream holds more; starting another', {
      applied: this.seq,
      last: info.last_seq,
    });
    return true;
  }

  /** Records the messages this node missed (once) and gives up every partition it owns. */
  private async missed(from: number, to: number): Promise<void> {
    if (this.gap !== undefined) return;
    this.gap = { from, to };
    const gap = this.gap;
    this.parts.log.error(
      'partition log: this node missed messages of the partition log, gone from the stream before it applied them: it owns no partition (restore a current node’s backup into its data directory)',
      { from, to },
    );
    await this.parts.kv.transactAsync(() => this.parts.kv.put('meta', PARTITIONS_GAP, gap));
    await this.loseAll();
  }

  private async loseAll(): Promise<void> {
    await Promise.all([...this.owned.values()].map((o) => this.lose(o, 'behind')));
    // Kept units too: this node takes no partition again.
    await Promise.all([...this.parked.keys()].map((p) => this.unpark(p)));
    this.wakeWaiters();
  }

  /** Stops applying, with one error line saying why; this node gives up its partitions and takes none. */
  private halt(why: string, fields: Record<string, unknown>): false {
    if (this.halted !== undefined) return false;
    this.halted = why;
    this.parts.log.error(`partition log: this node stops applying it and owns no partition: ${why}`, { applied: this.seq, ...fields });
    void this.loseAll();
    return false;
  }

  /**
   * Applies the messages delivered together, in order: each run of them in one transaction, cut where a test holds a
   * message, where sequences skip (messages missed, recorded first), and before a message of a newer format (the
   * applier stops there). Messages met again (a consumer made again) are passed over.
   */
  private async apply(ms: readonly JsMsg[]): Promise<boolean> {
    let run: Delivered[] = [];
    let last = this.seq;
    const commit = async (): Promise<boolean> => {
      const done = run.length === 0 || (await this.commit(run));
      run = [];
      return done;
    };
    for (const m of ms) {
      const seq = m.seq;
      if (seq <= last) continue;
      const held = this.parts.beforeApply?.(seq);
      if (held !== undefined) {
        if (!(await commit())) return false;
        await held;
      }
      if (seq > last + 1) {
        if (!(await commit())) return false;
        await this.missed(last + 1, seq - 1);
      }
      const read = readPartitionMessage(m);
      if ('newer' in read) {
        if (!(await commit())) return false;
        return this.halt(`message ${seq} is in format ${read.newer}, this node reads format ${PARTITIONS_FORMAT}: upgrade it`, {
          seq,
          format: read.newer,
          reads: PARTITIONS_FORMAT,
        });
      }
      if ('malformed' in read)
        this.parts.log.error('partition log: a message that is no partition change skipped', { seq, error: read.malformed });
      run.push({
        seq,
        id: m.headers?.get(MSG_ID) ?? '',
        pending: m.info.pending,
        change: 'change' in read ? read.change : undefined,
        format: 'format' in read ? read.format : PARTITIONS_FORMAT,
      });
      last = seq;
    }
    return commit();
  }

  /**
   * Applies a run of messages in one transaction: their rows and the positions (the stream's, each partition's). A
   * message this store holds (at or below its partition's position) moves the stream's position alone. For a
   * partition this node owns, its own units found in the log are acknowledged once the transaction committed, not
   * applied again (its store holds them, perhaps under newer rows); another node's message means this node is stale:
   * its unacknowledged units are taken back first, in the same transaction.
   */
  private async commit(run: readonly Delivered[]): Promise<boolean> {
    const { kv, log } = this.parts;
    // Set inside the transaction's callback, acted on once it committed.
    const found: Unacknowledged[] = [];
    const drained = new Set<Owned>();
    const superseded: Array<{ o: Owned; taken: Unacknowledged[]; wasReady: boolean; seq: number }> = [];
    const wrote: Delivered[] = [];
    /** Kept units found in the log (acknowledged), and those another node's message took back. */
    const parkedFound: Unacknowledged[] = [];
    /** Partitions whose kept units were all found or taken back here: kept no more. */
    const emptied = new Set<number>();
    const unparked: Array<{ partition: number; units: Unacknowledged[] }> = [];
    // Moved once the transaction committed: a takeover waiting for a position reads the store right after.
    const moved = new Map<number, number>();
    const lastSeq = run.at(-1)!.seq;
    try {
      await kv.transactAsync(() => {
        for (const d of run) {
          if (d.change === undefined) continue;
          const { partition } = d.change;
          if (d.seq <= this.positions[partition]!) continue;
          const o = this.owned.get(partition);
          const mine = o?.queue.findIndex((u) => u.id === d.id) ?? -1;
          const parked = this.parked.get(partition);
          const kept = parked?.units.findIndex((u) => u.id === d.id) ?? -1;
          if (parked !== undefined && kept >= 0) {
            // Kept at a lapsed lease, yet durable (its acknowledgement lost): this store holds it.
            parkedFound.push(...parked.units.splice(0, kept + 1));
            parked.fence = Math.max(parked.fence, d.seq);
            emptied.add(partition);
          } else if (o !== undefined && mine >= 0) {
            // This node's own units, durable in the log (their acknowledgement not read yet): its store holds them.
            found.push(...o.queue.splice(0, mine + 1));
            o.fence = Math.max(o.fence, d.seq);
            drained.add(o);
          } else {
            if (parked !== undefined) {
              // Another node published the partition: what this node kept is taken back before its rows go on, and
              // nothing more is kept for it.
              for (const u of [...parked.units].reverse()) takeBack(kv, u.unit);
              if (parked.units.length > 0) unparked.push({ partition, units: parked.units.splice(0) });
              emptied.add(partition);
            }
            if (o !== undefined && (o.state === 'ready' || o.queue.length > 0)) {
              // Another node published the partition: this node's units after it will be refused; taken back first.
              const taken = o.queue.splice(0);
              for (const u of [...taken].reverse()) takeBack(kv, u.unit);
              superseded.push({ o, taken, wasReady: o.state === 'ready', seq: d.seq });
              o.state = 'lost';
            }
            applyPartitionChange(kv, d.change);
            if (d.format < 2) for (const [table, key] of d.change.rows) if (table === 'matchMarks') splitMarks(kv, key);
            wrote.push(d);
          }
          moved.set(partition, d.seq);
          kv.put('meta', partitionPosition(partition), d.seq);
        }
        kv.put('meta', PARTITIONS_SEQ, lastSeq);
      });
    } catch (err) {
      return this.halt('its store could not be written', { seq: run[0]!.seq, to: lastSeq, error: message(err) });
    }
    for (const [partition, seq] of moved) this.positions[partition] = Math.max(this.positions[partition]!, seq);
    this.seq = lastSeq;
    this.pending = run.at(-1)!.pending;
    for (const u of [...found, ...parkedFound]) u.resolve();
    for (const partition of emptied) {
      const parked = this.parked.get(partition);
      if (parked !== undefined && parked.units.length === 0) {
        clearTimeout(parked.timer);
        this.parked.delete(partition);
      }
    }
    for (const { partition, units } of unparked) {
      log.warn('partition log: another node published a partition whose units this node kept; taken back', {
        partition,
        units: units.length,
      });
      for (const u of units) u.reject(new PartitionLost(partition, 'superseded'));
    }
    for (const o of drained) if (o.queue.length === 0) for (const wake of o.drainedWaiters.splice(0)) wake();
    for (const { o, taken, wasReady, seq } of superseded) {
      log.error('partition log: another node published a partition this node owned; it stops owning it', { partition: o.partition, seq });
      this.settleLost(o, taken, 'superseded', wasReady);
    }
    for (const d of wrote) this.parts.applied?.(d.change!, d.seq);
    this.wakeWaiters();
    return true;
  }
}
