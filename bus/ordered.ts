import { DeliverPolicy, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import { retryWaitMs } from './waits.js';

/** How often a consumer that applied nothing since the last look is checked, ms. */
const STALL_CHECK_MS = 2_000;

/** How many messages, and bytes of their bodies, one call of `applyBatch` is given at most (always one at least). */
export interface BatchBound {
  messages: number;
  bytes: number;
}

/** One message a call: the control log and the chains' blocks. */
const ONE: BatchBound = { messages: 1, bytes: Number.POSITIVE_INFINITY };

/** How the messages are applied: one a call, or those already delivered together (up to a bound). */
export type Applier =
  | {
      /** Applies a message; false: stop for good. */
      apply(m: JsMsg): Promise<boolean>;
    }
  | {
      batch: BatchBound;
      /** Applies the messages delivered and not applied yet, in order (up to `batch`); false: stop for good. */
      applyBatch(ms: readonly JsMsg[]): Promise<boolean>;
    };

/**
 * Applies a stream's messages in order, from the one after the last applied: an ordered consumer, made again from
 * the position reached after a failure (the bus down, the consumer lost), after a backoff of up to 5 s. The control
 * log and each chain's blocks are applied with it one message at a time; the partitions' log a batch at a time.
 */

export class OrderedApply {
  /** Settles once the consumer stopped for good (stop, `apply` false, `until`). */
  readonly done: Promise<void>;
  private stopped = false;
  private stopMessages: (() => void) | undefined;
  private wake: (() => void) | undefined;

  constructor(
    js: JetStreamClient,
    stream: string,
    opts: {
      /** Messages of this subject alone; every subject of the stream when undefined. */
      subject?: string;
      /** The last sequence applied: the consumer starts after it. */
      applied(): number;
      /** Stops once this holds (checked before the first message and after each). */
      until?(): boolean;
      /** Told of a failure before the consumer is made again. */
      failed(err: unknown): void;
      /**
       * Checked every `everyMs` (2 s by default) while nothing was applied since the last check, after the consumer's
       * own check (does the server still know it?): true makes the consumer again from the position reached (a
       * consumer whose server died delivers nothing, and its client is not told).
       */
      stalled?: { everyMs: number; check(): Promise<boolean> };
    } & Applier,
  ) {
    const until = opts.until ?? (() => false);
    const bound = 'batch' in opts ? opts.batch : ONE;
    const applyBatch = 'batch' in opts ? (ms: readonly JsMsg[]) => opts.applyBatch(ms) : ([m]: readonly JsMsg[]) => opts.apply(m!);
    this.done = (async () => {
      for (let failures = 0; !this.stopped && !until(); ) {
        try {
          const consumer = await js.consumers.get(stream, {
            ...(opts.subject === undefined ? {} : { filter_subjects: opts.subject }),
            deliver_policy: DeliverPolicy.StartSequence,
            opt_start_seq: opts.applied() + 1,
          });
          const messages = await consumer.consume();
          this.stopMessages = () => messages.stop();
          if (this.stopped) messages.stop();
          // A consumer the server no longer knows (the server restarted, or the one holding it died) is made again;
          // so is one `stalled` says is stuck.
          const gone = (): Promise<boolean> =>
            consumer.info(false).then(
              () => false,
              () => !this.stopped,
            );
          const check = async (): Promise<boolean> => (await gone()) || ((await opts.stalled?.check()) ?? false);
          const watchdog = watch({ everyMs: opts.stalled?.everyMs ?? STALL_CHECK_MS, check }, opts.applied, () => messages.stop());
          // Read off the consumer as they come, so the applier finds what was delivered while it applied.
          const inbox = new Inbox(bound);
          const reading = (async () => {
            try {
              for await (const m of messages) if (!(await inbox.put(m))) break;
              inbox.close();
            } catch (err) {
              inbox.close({ failure: { err } });
            }
          })();
          try {
            for (let batch = await inbox.take(); batch !== undefined; batch = await inbox.take()) {
              failures = 0;
              const go = await applyBatch(batch);
              if (!go) this.stopped = true;
              if (!go || until() || this.stopped) break;
            }
          } finally {
            clearInterval(watchdog);
            messages.stop();
            inbox.close();
            await reading;
          }
        } catch (err) {
          if (this.stopped) break;
          failures++;
          opts.failed(err);
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, retryWaitMs(failures));
            this.wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        }
      }
    })();
  }

  /** Stops applying (the message or batch being applied is finished first, nothing after it: await `done`). */
  stop(): void {
    this.stopped = true;
    this.stopMessages?.();
    this.wake?.();
  }
}

/** Calls `restart` when `stalled.check` says so at a check with nothing applied since the one before. */
function watch(stalled: { everyMs: number; check(): Promise<boolean> }, applied: () => number, restart: () => void): NodeJS.Timeout {
  let seen = applied();
  let checking = false;
  return setInterval(() => {
    if (applied() !== seen || checking) {
      seen = applied();
      return;
    }
    checking = true;
    void stalled.check().then((stuck) => {
      checking = false;
      if (stuck && applied() === seen) restart();
    });
  }, stalled.everyMs);
}

/**
 * The messages a consumer delivered and not applied yet, read off it by one task and taken by the applier: a batch's
 * worth at most, so what the client library received stays in its own queue until there is room.
 */
class Inbox {
  private readonly held: JsMsg[] = [];
  private bytes = 0;
  /** Set once the consumer ended (with its failure, if it failed) or the applier is gone. */
  private ended: { failure?: { err: unknown } } | undefined;
  private wakeReader: (() => void) | undefined;
  private wakeApplier: (() => void) | undefined;

  constructor(private readonly bound: BatchBound) {}

  /** Holds a message once there is room; false once closed (the message is dropped: the next consumer starts after the applied). */
  async put(m: JsMsg): Promise<boolean> {
    while (this.ended === undefined && (this.held.length >= this.bound.messages || this.bytes >= this.bound.bytes))
      await new Promise<void>((resolve) => (this.wakeReader = resolve));
    if (this.ended !== undefined) return false;
    this.held.push(m);
    this.bytes += m.data.length;
    this.wake();
    return true;
  }

  close(end: { failure?: { err: unknown } } = {}): void {
    this.ended ??= end;
    this.wake();
  }

  /**
   * The messages held, up to the bound, once there is one; undefined once the consumer ended and all were taken. A
   * batch waits one turn of the event loop after its first message, for those that came in the same read of the
   * socket. Throws the consumer's failure.
   */
  async take(): Promise<JsMsg[] | undefined> {
    if (this.held.length === 0) {
      while (this.held.length === 0 && this.ended === undefined) await new Promise<void>((resolve) => (this.wakeApplier = resolve));
      if (this.bound.messages > 1 && this.ended === undefined) await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (this.ended?.failure !== undefined) throw this.ended.failure.err;
    if (this.held.length === 0) return undefined;
    let n = 1;
    let bytes = this.held[0]!.data.length;
    while (n < this.held.length && n < this.bound.messages && bytes + this.held[n]!.data.length <= this.bound.bytes)
      bytes += this.held[n++]!.data.length;
    this.bytes -= bytes;
    const batch = this.held.splice(0, n);
    this.wake();
    return batch;
  }

  private wake(): void {
    const [reader, applier] = [this.wakeReader, this.wakeApplier];
    this.wakeReader = this.wakeApplier = undefined;
    reader?.();
    applier?.();
  }
}
