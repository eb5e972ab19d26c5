import { encode } from '@msgpack/msgpack';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type JsMsg, type PubAck } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import { unavailable } from '../engine/errors.js';
import type { Logger } from '../engine/log.js';
import type { Kv } from '../engine/ports.js';
import { randomAlphanumeric } from '../engine/random.js';
import type { Applied, Change, ChangeApplier, Committed, ControlPlane } from '../engine/streams/control-plane.js';
import type { BusConnection } from './connect.js';
import { FORMAT_HEADER, formatHeaders, readFormatted } from './format.js';
import { OrderedApply } from './ordered.js';
import { within } from './waits.js';
import { CONTROL_STREAM, CONTROL_SUBJECT } from './streams.js';

/**
 * The control plane of a cluster: every change is published to the JetStream stream CHAINPOST_CONTROL, and every
 * node applies the log in its order to its own store (docs/architecture.md). The order decides between racing
 * changes the same way on every node, so the checks made where a change is applied (a limit, a unique name) give one
 * answer cluster-wide.
 */

/** The format of the messages this version writes and reads; a node meeting a newer major one stops applying. */
export const CONTROL_FORMAT = 1;
export { FORMAT_HEADER };
/** The header JetStream de-duplicates by (the publish's msgID). */
const MSG_ID = 'Nats-Msg-Id';
/** How often the applier checks that its consumer still delivers, ms (and how long the check's request may take). */
const STALL_CHECK_MS = 2_000;
/** `meta` key: the last sequence of the log applied to this store, written in the transaction that applied it. */
export const CONTROL_SEQ = 'controlSeq';

/** A message of the log: the change, with its format in the body and a header (read before the body is decoded). */
export function controlMessage(change: Change): { data: Uint8Array; headers: MsgHdrs } {
  // Absent fields stay absent (msgpack would write undefined as nil, read back as null).
  return { data: encode({ v: CONTROL_FORMAT, change }, { ignoreUndefined: true }), headers: formatHeaders(CONTROL_FORMAT) };
}

/** Publishes the change; a publish whose acknowledgement was lost is sent again with the same id, which JetStream appends once. */
async function publishChange(js: JetStreamClient, bus: BusConnection, change: Change, id: string, timeout: number): Promise<PubAck> {
  const { data, headers: h } = controlMessage(change);
  for (let attempt = 1; ; attempt++) {
    try {
      return await js.publish(CONTROL_SUBJECT, data, { msgID: id, headers: h, timeout });
    } catch (err) {
      if (attempt >= 3 || !bus.up()) throw err;
    }
  }
}

/** How often a process beside the one applying the log to a store looks whether it got to a change, ms. */
const APPLIED_POLL_MS = 20;

/**
 * Publishes a change for the process that applies the log to `kv` (the node's running server, beside which a CLI
 * command runs) and resolves true once that store has applied it, false if it has not within `timeoutMs`.
 */
export async function publishForStore(
  bus: BusConnection,
  kv: Kv,
  change: Change,
  { timeoutMs = 10_000, publishTimeoutMs = 5_000 }: { timeoutMs?: number; publishTimeoutMs?: number } = {},
): Promise<boolean> {
  const { seq } = await publishChange(jetstream(bus.nc), bus, change, randomAlphanumeric(22), publishTimeoutMs);
  const deadline = performance.now() + timeoutMs;
  while ((kv.get<number>('meta', CONTROL_SEQ) ?? 0) < seq) {
    if (performance.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, APPLIED_POLL_MS));
  }
  return true;
}

/** What applying a change gave on this node, for the write that published it. */
type Outcome = { applied: unknown } | { refused: unknown };

interface Pending {
  settle(outcome: Outcome): void;
}

export interface BusControlPlaneOptions {
  /** Retry-After of a write refused while the bus is down, seconds. */
  retryAfterSeconds?: number;
  /** How long a publish waits for JetStream's acknowledgement before it is sent again (same message id), ms. */
  publishTimeoutMs?: number;
  /** Awaited before each message is applied (a test holds a node behind the others). */
  beforeApply?: () => Promise<void>;
}

export class BusControlPlane implements ControlPlane {
  private readonly js: JetStreamClient;
  private jsm: Promise<JetStreamManager> | undefined;
  /** The last sequence applied to this store. */
  private seq: number;
  /**
   * The log's last sequence as this node was last told: the greatest sequence + pending of the messages its consumer
   * delivered (JetStream says with each how many follow it), or a request's answer.
   */
  private told = 0;
  /** This node's writes waiting for their change to be applied here, by message id. */
  private readonly pending = new Map<string, Pending>();
  private readonly waiters = new Set<{ seq: number; done: (reached: boolean) => void }>();
  private running: OrderedApply | undefined;
  private stopped = false;
  /** Why this node stopped applying the log, when it did. */
  private halted: string | undefined;
  private readonly retryAfter: number;
  private readonly publishTimeoutMs: number;
  private readonly beforeApply: (() => Promise<void>) | undefined;

  constructor(
    private readonly bus: BusConnection,
    private readonly kv: Kv,
    private readonly applier: ChangeApplier,
    private readonly log: Logger,
    options: BusControlPlaneOptions = {},
  ) {
    this.js = jetstream(bus.nc);
    this.seq = kv.get<number>('meta', CONTROL_SEQ) ?? 0;
    this.retryAfter = options.retryAfterSeconds ?? 5;
    this.publishTimeoutMs = options.publishTimeoutMs ?? 5_000;
    this.beforeApply = options.beforeApply;
  }

  /** The last sequence of the log this node has applied. */
  applied(): number {
    return this.seq;
  }

  /** Starts applying the log from the sequence after the last one applied here. */
  start(): void {
    // An ordered consumer from the sequence after the last applied, started again after a failure.
    this.running ??= new OrderedApply(this.js, CONTROL_STREAM, {
      applied: () => this.seq,
      apply: async (m) => {
        // Told before it is applied: a change delivered and still being applied (or held) is waited for.
        this.told = Math.max(this.told, m.seq + m.info.pending);
        await this.beforeApply?.();
        return this.apply(m);
      },
      stalled: { everyMs: STALL_CHECK_MS, check: () => this.behind() },
      failed: (err) =>
        this.log.warn('control log: following it failed; trying again', {
          error: err instanceof Error ? err.message : String(err),
          applied: this.seq,
        }),
    });
  }

  /** Stops applying; writes still waiting are refused (503). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.running?.stop();
    await this.running?.done;
    this.refuseWaiting(unavailable('this node is stopping: the change may be applied by the cluster', this.retryAfter));
  }

  async write<C extends Change>(change: C): Promise<Applied<C>> {
    const why = this.unwritable();
    if (why !== undefined) throw unavailable(why, this.retryAfter);
    const id = randomAlphanumeric(22);
    const outcome = new Promise<Outcome>((settle) => this.pending.set(id, { settle }));
    try {
      await this.publish(change, id);
    } catch (err) {
      this.pending.delete(id);
      this.log.warn('control log: a change could not be published', { error: err instanceof Error ? err.message : String(err) });
      // Without an acknowledgement it is not known whether the log took the change.
      throw unavailable('the cluster did not acknowledge the change: it may not have been written', this.retryAfter);
    }
    // Settled once this node has applied the sequence the acknowledgement gave (found by the message id, which the
    // applier may meet before the acknowledgement arrives): the client then reads its write here.
    const settled = await outcome;
    if ('refused' in settled) throw settled.refused;
    return settled.applied as Applied<C>;
  }

  /**
   * Resolves true once this node has applied the log up to its last sequence as of the call, false if that takes
   * more than `timeoutMs` (or the bus does not answer within it).
   */
  async caughtUp(timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    const last = await this.lastSeq(timeoutMs);
    if (last === undefined) return false;
    return this.reached(last, deadline - performance.now());
  }

  /**
   * Resolves true once this node has applied the log as far as its consumer has told it the log reaches (each
   * message delivered says how many follow it), false after `timeoutMs`; asks the server nothing. JetStream pushes a
   * change to every consumer as it stores it, when it acknowledges its writer, whose answer waits for its own
   * consumer's delivery: a change acknowledged to a client before this call is known here unless this node's
   * delivery lags behind that whole exchange (its consumer stalled: the stall check below). The matcher's wait before
   * each round (docs/decisions/cluster.md).
   */
  caughtUpAsTold(timeoutMs: number): Promise<boolean> {
    return this.reached(this.told, timeoutMs);
  }

  /** The log's last sequence now, or undefined when the bus does not say within `timeoutMs`. */
  private async lastSeq(timeoutMs: number): Promise<number | undefined> {
    this.jsm ??= jetstreamManager(this.bus.nc, { checkAPI: false });
    const jsm = this.jsm;
    const last = await within((async () => (await (await jsm).streams.info(CONTROL_STREAM)).state.last_seq)(), timeoutMs);
    if (last !== undefined) this.told = Math.max(this.told, last);
    return last;
  }

  /**
   * Whether the log holds changes this node has not applied (its consumer delivering nothing meanwhile: OrderedApply
   * then starts another). On a NATS cluster the client's ordered consumer lives on one server: killed, the client
   * (connected to another) is not told, and its consumer waited over a minute (test/system/cluster-replicas).
   */
  private async behind(): Promise<boolean> {
    const seen = this.seq;
    const last = await this.lastSeq(STALL_CHECK_MS);
    if (last === undefined || last <= this.seq || this.seq !== seen) return false;
    this.log.warn('control log: its consumer delivers nothing while the log holds more; starting another', { applied: this.seq, last });
    return true;
  }

  /** Resolves true once `seq` is applied here, false after `ms`. */
  private reached(seq: number, ms: number): Promise<boolean> {
    if (this.seq >= seq) return Promise.resolve(true);
    if (ms <= 0 || this.halted !== undefined) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = {
        seq,
        done: (reached: boolean) => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(reached);
        },
      };
      const timer = setTimeout(() => waiter.done(false), ms);
      this.waiters.add(waiter);
    });
  }

  private unwritable(): string | undefined {
    if (this.running === undefined || this.stopped) return 'this node does not apply the control log (not started, or stopping)';
    if (this.halted !== undefined) return `this node stopped applying the control log: ${this.halted}`;
    if (!this.bus.up()) return "the cluster's message bus (NATS) is unreachable: configuration changes cannot be written now";
    return undefined;
  }

  private publish(change: Change, id: string): Promise<PubAck> {
    return publishChange(this.js, this.bus, change, id, this.publishTimeoutMs);
  }

  /**
   * Applies one message of the log: its change and the sequence in one transaction; a change its checks refuse,
   * the sequence alone after the refused transaction rolled back. False: this node stops applying.
   */
  private async apply(m: JsMsg): Promise<boolean> {
    const seq = m.seq;
    // A consumer started again may deliver what was applied already.
    if (seq <= this.seq) return true;
    if (seq > this.seq + 1)
      return this.halt(`the log no longer holds changes ${this.seq + 1} to ${seq - 1}, which this node has not applied`, {});
    const read = readMessage(m);
    if ('newer' in read) {
      return this.halt(`change ${seq} is in format ${read.newer}, this node reads format ${CONTROL_FORMAT}: upgrade it`, {
        seq,
        format: read.newer,
        reads: CONTROL_FORMAT,
      });
    }
    // MsgHdrs answers '' for a header the message lacks.
    const id = m.headers?.get(MSG_ID) ?? '';
    const mine = this.pending.get(id);
    let outcome: Outcome;
    let committed: Committed | undefined;
    try {
      if ('malformed' in read) {
        // Not a change of ours (nothing else publishes here): every node skips it alike.
        this.log.error('control log: a message that is no change skipped', { seq, error: read.malformed });
        outcome = { refused: new Error(`control log message ${seq} is no change: ${read.malformed}`) };
        await this.kv.transactAsync(() => this.passed(seq));
      } else {
        ({ outcome, committed } = await this.applyChange(read.change, seq));
      }
    } catch (err) {
      return this.halt('its store could not be written', { seq, error: err instanceof Error ? err.message : String(err) });
    }
    this.seq = seq;
    try {
      // What this node does once the change is applied (its watchlist, dispatcher...), before its writer's answer.
      await committed?.();
    } catch (err) {
      this.log.error('control log: what follows an applied change failed', {
        seq,
        error: err instanceof Error ? err.message : String(err),
      });
    }
    if (mine !== undefined) {
      this.pending.delete(id);
      mine.settle(outcome);
    }
    for (const w of this.waiters) if (w.seq <= seq) w.done(true);
    return true;
  }

  /**
   * Records inside a write transaction that the log was applied to this store up to `seq`; false when the store is
   * there already: another process applying the log to it (a CLI command beside a server starting) was first.
   */
  private passed(seq: number): boolean {
    if ((this.kv.get<number>('meta', CONTROL_SEQ) ?? 0) >= seq) return false;
    this.kv.put('meta', CONTROL_SEQ, seq);
    return true;
  }

  /** The change and the sequence in one transaction; refused by its checks, the sequence alone. Rejects if the store fails. */
  private async applyChange(change: Change, seq: number): Promise<{ outcome: Outcome; committed?: Committed }> {
    // Set inside the transaction's callback (typed by assertion so the checks below are not narrowed away).
    let refused = undefined as { error: unknown } | undefined;
    let committed = undefined as Committed | undefined;
    let elsewhere = false as boolean;
    try {
      const applied = await this.kv.transactAsync(() => {
        // Checked in the transaction that would apply it: two processes on one store never apply a change twice.
        if (!this.passed(seq)) {
          elsewhere = true;
          return undefined;
        }
        try {
          const done = this.applier.applyInside(change);
          committed = done.committed;
          return done.applied;
        } catch (error) {
          refused = { error };
          throw error;
        }
      });
      if (elsewhere) {
        // Its reactions ran in that process, not here.
        this.log.warn('control log: a change was applied to this store by another process', { seq, kind: change.kind });
        return { outcome: { refused: new Error(`change ${seq} was applied to this store by another process`) } };
      }
      return { outcome: { applied }, ...(committed === undefined ? {} : { committed }) };
    } catch (err) {
      if (refused === undefined) throw err;
      // The refused transaction rolled back; the sequence is recorded on its own, so the change is not met again.
      await this.kv.transactAsync(() => this.passed(seq));
      return { outcome: { refused: refused.error } };
    }
  }

  /** Stops applying, with one error line saying why; this node's writes are refused from now on. */
  private halt(why: string, fields: Record<string, unknown>): false {
    this.halted = why;
    this.log.error(`control log: this node stops applying changes: ${why}`, { applied: this.seq, ...fields });
    this.refuseWaiting(unavailable(`this node stopped applying the control log: ${why}`, this.retryAfter));
    return false;
  }

  private refuseWaiting(error: Error): void {
    for (const p of this.pending.values()) p.settle({ refused: error });
    this.pending.clear();
    for (const w of this.waiters) w.done(false);
  }
}

/** A message's change, or its format when newer than this version's, or why it is no change. */
function readMessage(m: JsMsg): { change: Change } | { newer: number } | { malformed: string } {
  const read = readFormatted(m, CONTROL_FORMAT);
  if (!('body' in read)) return read;
  const change = read.body['change'];
  if (typeof change !== 'object' || change === null || typeof (change as { kind?: unknown }).kind !== 'string')
    return { malformed: 'no change' };
  return { change: change as Change };
}
