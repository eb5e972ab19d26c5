import { RequestError, TimeoutError, type Msg, type Subscription } from '@nats-io/transport-node';
import {
  NotHere,
  type PartitionRequest,
  type PartitionRequestHandler,
  type PartitionRequests,
} from '../engine/streams/partition-requests.js';
import { ApiError, unavailable } from '../engine/errors.js';
import type { Logger } from '../engine/log.js';
import type { BusConnection } from './connect.js';

/**
 * A partition's work asked on any node, carried out by its owner (engine/streams/partition-requests.ts): NATS
 * request/reply on a subject per partition, which the owner subscribes to while it holds and adopted the partition
 * (in a queue group: during a hand-over two nodes may listen, one answers). The owner answers what it carried out
 * with its position in the partition's log once its writes were published there; the asker waits (a short while) to
 * have applied that far, so its client reads what the owner wrote on the node it asked.
 */

/** The format of the requests and answers this version writes and reads. */
export const REQUESTS_FORMAT = 1;

/** Not captured by any JetStream stream (theirs are chainpost.control, chainpost.blocks.>, chainpost.partitions.>). */
export const requestSubject = (partition: number): string => `chainpost.requests.${partition}`;

/** How long the asker waits for the owner's answer: a replay's POST may take the delivery timeout (10 s), and its publish. */
const ANSWER_WITHIN_MS = 20_000;
/** How long the asker keeps asking while no node answers for the partition (a hand-over's gap), ms. */
const NO_OWNER_WAIT_MS = 1_000;
/** How long the asker waits to have applied the owner's writes before it answers anyway, ms. */
const APPLIED_WITHIN_MS = 2_000;

/** An answer on the bus: the owner's, its ApiError, or that the partition is not its own. */
type Answer =
  | { v: number; ok: unknown; seq: number }
  | { v: number; error: { status: number; message: string; details?: unknown; headers?: Record<string, string> } }
  | { v: number; elsewhere: true };

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

export interface BusPartitionRequestsParts {
  bus: BusConnection;
  log: Logger;
  /** Whether this node carries out the partition's work now (owned and adopted). */
  here(partition: number): boolean;
  /** This node's position in the partition's log (the stream sequence of its last message this store holds). */
  position(partition: number): number;
  /** Resolves once this store holds the partition's log up to `seq`, or after `withinMs`. */
  reached(partition: number, seq: number, withinMs: number): Promise<unknown>;
  /** Retry-After of a request no owner answered, seconds (2 lease TTLs: a partition finds its next owner within them). */
  retryAfterSeconds: number;
  answerWithinMs?: number;
  noOwnerWaitMs?: number;
}

export class BusPartitionRequests implements PartitionRequests {
  private readonly subscriptions = new Map<number, Subscription>();
  private handler: PartitionRequestHandler | undefined;
  private readonly answering = new Set<Promise<void>>();

  constructor(private readonly parts: BusPartitionRequestsParts) {}

  here(partition: number): boolean {
    return this.parts.here(partition);
  }

  /** What this node runs for the others' requests, on the partitions it opens. */
  serve(handler: PartitionRequestHandler): void {
    this.handler = handler;
  }

  /** This node adopted the partition: it answers the partition's requests. */
  open(partition: number): void {
    if (this.subscriptions.has(partition)) return;
    const sub = this.parts.bus.nc.subscribe(requestSubject(partition), {
      queue: 'owner',
      callback: (err, msg) => {
        if (err !== null) return;
        const answered = this.answer(partition, msg).finally(() => this.answering.delete(answered));
        this.answering.add(answered);
      },
    });
    this.subscriptions.set(partition, sub);
  }

  /** The partition is no longer this node's: requests go to its next owner (those under way here are answered). */
  close(partition: number): void {
    this.subscriptions.get(partition)?.unsubscribe();
    this.subscriptions.delete(partition);
  }

  /** Stops answering; resolves once the answers under way were sent. */
  async stop(): Promise<void> {
    for (const p of [...this.subscriptions.keys()]) this.close(p);
    await Promise.all([...this.answering]);
  }

  async ask(partition: number, request: PartitionRequest): Promise<unknown> {
    const { bus, retryAfterSeconds } = this.parts;
    const deadline = performance.now() + (this.parts.noOwnerWaitMs ?? NO_OWNER_WAIT_MS);
    const answerWithin = this.parts.answerWithinMs ?? ANSWER_WITHIN_MS;
    for (;;) {
      if (!bus.up())
        throw unavailable(
          `the message bus is down: partition ${partition}'s owner, which carries this out, cannot be asked`,
          retryAfterSeconds,
        );
      let answer: Answer;
      try {
        const m = await bus.nc.request(requestSubject(partition), encode({ v: REQUESTS_FORMAT, request }), { timeout: answerWithin });
        answer = m.json<Answer>();
      } catch (err) {
        if (err instanceof RequestError && err.isNoResponders()) answer = { v: REQUESTS_FORMAT, elsewhere: true };
        else if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError))
          throw unavailable(
            `partition ${partition}'s owner did not answer within ${answerWithin / 1000} s: what was asked may have been carried out`,
            retryAfterSeconds,
          );
        else throw unavailable(`partition ${partition}'s owner could not be asked: ${message(err)}`, retryAfterSeconds);
      }
      if ('ok' in answer) {
        await this.parts.reached(partition, answer.seq, APPLIED_WITHIN_MS);
        return answer.ok;
      }
      if ('error' in answer) {
        const { status, message: text, details, headers } = answer.error;
        throw new ApiError(status, text, details, headers);
      }
      if (performance.now() >= deadline)
        throw unavailable(`no node owns partition ${partition} now (it is between owners): try again shortly`, retryAfterSeconds);
      await pause(100);
    }
  }

  /** Carries out a request of another node and answers it; never throws. */
  private async answer(partition: number, msg: Msg): Promise<void> {
    const reply = (answer: Answer): void => {
      try {
        msg.respond(encode(answer));
      } catch (err) {
        this.parts.log.warn('partition requests: an answer could not be sent', { partition, error: message(err) });
      }
    };
    let request: PartitionRequest;
    try {
      const body = msg.json<{ v: number; request: PartitionRequest }>();
      if (body.v > REQUESTS_FORMAT) throw new Error(`format ${body.v}, this node reads ${REQUESTS_FORMAT}`);
      request = body.request;
    } catch (err) {
      reply({ v: REQUESTS_FORMAT, error: { status: 500, message: `the owner could not read the request: ${message(err)}` } });
      return;
    }
    if (this.handler === undefined || !this.parts.here(partition)) return reply({ v: REQUESTS_FORMAT, elsewhere: true });
    try {
      const ok = await this.handler(partition, request);
      reply({ v: REQUESTS_FORMAT, ok: ok ?? null, seq: this.parts.position(partition) });
    } catch (err) {
      if (err instanceof NotHere) return reply({ v: REQUESTS_FORMAT, elsewhere: true });
      if (err instanceof ApiError)
        return reply({
          v: REQUESTS_FORMAT,
          error: {
            status: err.status,
            message: err.message,
            ...(err.details === undefined ? {} : { details: err.details }),
            ...(err.headers === undefined ? {} : { headers: err.headers }),
          },
        });
      this.parts.log.error('partition requests: carrying out a request failed', { partition, kind: request.kind, error: message(err) });
      reply({ v: REQUESTS_FORMAT, error: { status: 500, message: 'internal error on the partition’s owner' } });
    }
  }
}
