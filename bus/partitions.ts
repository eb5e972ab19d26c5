import { encode } from '@msgpack/msgpack';
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
import type { MsgHdrs } from '@nats-io/transport-node';
import { PartitionLost, type PartitionLog, type PartitionLogEvent, type PartitionLoss } from '../engine/cluster/partition-log.js';
import {
  applyPartitionChange,
  PARTITIONS,
  takeBack,
  type PartitionChange,
  type PendingUnit,
  type RowWrite,
} from '../engine/cluster/partitions.js';
import type { Logger } from '../engine/log.js';
import type { Kv } from '../engine/ports.js';
import { isStale } from './blocks.js';
import type { BusConnection } from './connect.js';
import { formatHeaders, readFormatted } from './format.js';
import { OrderedApply } from './ordered.js';
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

/** The format of the partition messages this version writes and reads; a node meeting a newer major one stops applying. */
export const PARTITIONS_FORMAT = 1;
/** The header carrying the publishing owner's lease revision, and the one naming its node. */
export const LEASE_REVISION_HEADER = 'Chainpost-Lease-Revision';
export const NODE_HEADER = 'Chainpost-Node';
/** The header JetStream de-duplicates by (the publish's msgID). */
const MSG_ID = 'Nats-Msg-Id';

/** `meta` keys: the stream sequence the applier reached, and each partition's last sequence this store holds. */
export const PARTITIONS_SEQ = 'partitionsSeq';
export const partitionPosition = (partition: number): string => `partitionSeq/${partition}`;
/** `meta` key: the messages this node missed (gone from the stream before it applied them), once it did. */
export const PARTITIONS_GAP = 'partitionsGap';

export const partitionSubject = (partition: number): string => `chainpost.partitions.${partition}`;

/** How long a takeover waits for the applier to reach the partition's last message by default, ms. */
const TAKEOVER_WITHIN_MS = 10_000;
/** How often the applier, having applied nothing since the last look, asks whether the stream holds more, ms. */
const STALL_CHECK_MS = 2_000;

/** A partition message: its body (format, partition, rows) and headers (format, lease revision, node). */
export function partitionMessage(change: PartitionChange, revision: number, node: string): { data: Uint8Array; headers: MsgHdrs } {
  const h = formatHeaders(PARTITIONS_FORMAT);
  h.set(LEASE_REVISION_HEADER, String(revision));
  h.set(NODE_HEADER, node);
  return { data: encode({ v: PARTITIONS_FORMAT, partition: change.partition, rows: change.rows }), headers: h };
}

/** A message's change, or its format when newer than this version's, or why it is none of ours. */
export function readPartitionMessage(m: {
  data: Uint8Array;
  headers?: MsgHdrs | undefined;
}): { change: PartitionChange } | { newer: number } | { malformed: string } {
  const read = readFormatted(m, PARTITIONS_FORMAT);
  if (!('body' in read)) return read;
  const { partition, rows } = read.body;
  if (typeof partition !== 'number' || !Number.isInteger(partition) || partition < 0 || partition >= PARTITIONS)
    return { malformed: `partition ${String(partition)}` };
  if (!Array.isArray(rows)) return { malformed: 'no rows' };
  for (const row of rows as unknown[])
    if (
      !Array.isArray(row) ||
      row.length !== 3 ||
      typeof row[0] !== 'string' ||
      typeof row[1] !== 'string' ||
      !(row[2] === null || row[2] instanceof Uint8Array)
    )
      return { malformed: 'a row is no [table, key, bytes or null]' };
  return { change: { partition, rows: rows as RowWrite[] } };
}

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
  /** Told of each change applied from the log to this store, once durable (not of those skipped). */
  applied?(change: PartitionChange, seq: number): void;
  /** Awaited before each message is applied (a test holds a node behind the others). */
  beforeApply?(seq: number): Promise<void>;
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
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class ClusterPartitions implements PartitionLog {
  private readonly js: JetStreamClient;
  private readonly managers = new Map<number, Promise<JetStreamManager>>();
  private readonly owned = new Map<number, Owned>();
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
      apply: async (m) => {
        await this.parts.beforeApply?.(m.seq);
        return this.apply(m);
      },
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
    if (before !== undefined && before.state !== 'lost') await this.lose(before, 'released');
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
    const deadline = performance.now() + this.takeoverWithinMs;
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
    o.state = 'ready';
    this.emit({ kind: 'ready', partition, revision });
    return true;
  }

  async release(partition: number): Promise<void> {
    const o = this.owned.get(partition);
    if (o !== undefined) await this.lose(o, 'released');
  }

  submit(units: readonly PendingUnit[]): Array<Promise<void>> {
    const refused: Unacknowledged[] = [];
    const promises = units.map((unit) => {
      const o = this.owned.get(unit.change.partition);
      return new Promise<void>((resolve, reject) => {
        if (o?.state === 'ready') {
          o.queue.push({ unit, id: `${this.parts.node}.${o.partition}.${o.revision}.${o.next++}`, resolve, reject });
          this.pump(o);
        } else refused.push({ unit, id: '', resolve, reject });
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
  private lose(o: Owned, reason: PartitionLoss): Promise<void> {
    if (o.losing !== undefined) return o.losing;
    if (o.state === 'lost') return Promise.resolve();
    const wasReady = o.state === 'ready';
    o.state = 'lost';
    o.losing = (async () => {
      await within(o.pumping ?? Promise.resolve(), this.publishTimeoutMs);
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
   * Applies one message: its rows and the positions in one transaction. A message this store holds (at or below its
   * partition's position) moves the stream's position alone. For a partition this node owns, its own units found in
   * the log are acknowledged, not applied again (its store holds them, perhaps under newer rows); another node's
   * message means this node is stale: its unacknowledged units are taken back first, in the same transaction.
   */
  private async apply(m: JsMsg): Promise<boolean> {
    const seq = m.seq;
    if (seq <= this.seq) return true;
    if (seq > this.seq + 1) await this.missed(this.seq + 1, seq - 1);
    const read = readPartitionMessage(m);
    if ('newer' in read)
      return this.halt(`message ${seq} is in format ${read.newer}, this node reads format ${PARTITIONS_FORMAT}: upgrade it`, {
        seq,
        format: read.newer,
        reads: PARTITIONS_FORMAT,
      });
    const { kv, log } = this.parts;
    if ('malformed' in read) log.error('partition log: a message that is no partition change skipped', { seq, error: read.malformed });
    const id = m.headers?.get(MSG_ID) ?? '';
    // Set inside the transaction's callback (typed by assertion so the checks after it are not narrowed away).
    let found: Unacknowledged[] = [];
    let superseded = undefined as { o: Owned; taken: Unacknowledged[]; wasReady: boolean } | undefined;
    let wrote = false as boolean;
    // Moved once the transaction committed: a takeover waiting for this position reads the store right after.
    let moved = undefined as number | undefined;
    try {
      await kv.transactAsync(() => {
        kv.put('meta', PARTITIONS_SEQ, seq);
        if (!('change' in read)) return;
        const { partition } = read.change;
        if (seq <= this.positions[partition]!) return;
        const o = this.owned.get(partition);
        const mine = o?.queue.findIndex((u) => u.id === id) ?? -1;
        if (o !== undefined && mine >= 0) {
          // This node's own units, durable in the log (their acknowledgement not read yet): its store holds them.
          found = o.queue.splice(0, mine + 1);
          o.fence = Math.max(o.fence, seq);
        } else {
          if (o !== undefined && (o.state === 'ready' || o.queue.length > 0)) {
            // Another node published the partition: this node's units after it will be refused; taken back first.
            const taken = o.queue.splice(0);
            for (const u of [...taken].reverse()) takeBack(kv, u.unit);
            superseded = { o, taken, wasReady: o.state === 'ready' };
            o.state = 'lost';
          }
          applyPartitionChange(kv, read.change);
          wrote = true;
        }
        moved = partition;
        kv.put('meta', partitionPosition(partition), seq);
      });
    } catch (err) {
      return this.halt('its store could not be written', { seq, error: message(err) });
    }
    if (moved !== undefined) this.positions[moved] = seq;
    this.seq = seq;
    this.pending = m.info.pending;
    for (const u of found) u.resolve();
    const o = found.length > 0 && 'change' in read ? this.owned.get(read.change.partition) : undefined;
    if (o?.queue.length === 0) for (const wake of o.drainedWaiters.splice(0)) wake();
    if (superseded !== undefined) {
      const { o, taken, wasReady } = superseded;
      log.error('partition log: another node published a partition this node owned; it stops owning it', {
        partition: o.partition,
        seq,
      });
      this.settleLost(o, taken, 'superseded', wasReady);
    }
    if (wrote && 'change' in read) this.parts.applied?.(read.change, seq);
    this.wakeWaiters();
    return true;
  }
}
