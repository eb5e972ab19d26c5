import { DeliverPolicy, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import { retryWaitMs } from './waits.js';

/**
 * Applies a stream's messages in order, from the one after the last applied: an ordered consumer, made again from
 * the position reached after a failure (the bus down, the consumer lost), after a backoff of up to 5 s. The control
 * log and each chain's blocks are applied with it.
 */
/** How often a consumer that applied nothing since the last look is checked, ms. */
const STALL_CHECK_MS = 2_000;

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
      /** Applies a message; false: stop for good. */
      apply(m: JsMsg): Promise<boolean>;
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
    },
  ) {
    const until = opts.until ?? (() => false);
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
          try {
            for await (const m of messages) {
              failures = 0;
              const go = await opts.apply(m);
              if (!go) this.stopped = true;
              if (!go || until()) {
                messages.stop();
                break;
              }
            }
          } finally {
            clearInterval(watchdog);
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

  /** Stops applying (a message being applied is finished first: await `done`). */
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
