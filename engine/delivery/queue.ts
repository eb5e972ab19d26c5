import type { WebhookBody } from './body.js';
import type { WebhookSummary } from './webhook.js';

/**
 * The delivery queue: per stream, the webhooks waiting to be sent, durable, in staging order; a failed one waits
 * aside for its retry while fresh ones go on. The dispatcher takes a stream's next webhook, one at a time per
 * stream, and settles it with its outcome.
 *
 * Writes come in a unit of work (`begin()`): its changes are made together with the caller's other writes (history,
 * stream state), closed with `close()` at the end of that unit, and `committed()` once it is durable, the
 * acknowledgement: only then do the counts (x-queue-size) and the order the queue keeps in memory move on.
 */
export interface DeliveryQueue {
  /** A stream whose undelivered webhooks reach this many goes to error (the interface's cap). */
  readonly cap: number;
  /** The stream's undelivered webhooks (fresh, or waiting for a retry) as last acknowledged: its x-queue-size. */
  size(streamId: string): number;
  /**
   * The webhook the stream sends next at `now`: a failed one whose retry is due, else the first fresh one in
   * staging order. `retryAt`: a failed one waits for a retry due later (the caller wakes the stream then).
   */
  next(streamId: string, now: number): { taken?: Taken; retryAt?: number };
  /** The webhook is out for an attempt until `release` (one per stream): a replay leaves its retry alone meanwhile. */
  hold(taken: Taken): void;
  release(streamId: string): void;
  holding(streamId: string): boolean;
  /** Webhooks out for an attempt, all streams. */
  readonly held: number;
  begin(): QueueWrite;
  /**
   * The partition the stream's waiting webhooks were staged in, as last committed (`stored`: as the store holds it,
   * another node's rows applied under what is kept in memory); undefined when none waits.
   */
  stagedIn(streamId: string, stored?: boolean): number | undefined;
  /** Forgets what is kept in memory of the stream (counts, head, retry index): read from the store again. */
  forget(streamId: string): void;
  /**
   * A deleted stream: its webhooks and counts go in the unit of work that deletes it; answers what to call once
   * that committed (the queue then forgets the stream), so neither half can be left out.
   */
  drop(streamId: string): () => void;
}

/** Changes of a unit of work; every method but `committed` is called inside it. */
export interface QueueWrite {
  /**
   * Appends a fresh webhook (its `seq` is the queue's) in `partition`, unless webhooks wait already: those keep theirs
   * (a stream moves to its new URL's partition once its queue drained). Answers the stream's undelivered count with it.
   */
  enqueue(streamId: string, partition: number, webhook: Omit<QueueItem, 'seq'>): number;
  /** The partition the stream's waiting webhooks were staged in, as this unit leaves it; undefined when none waits. */
  stagedIn(streamId: string): number | undefined;
  /** Whether the taken webhook is still queued (its stream was not deleted or terminated meanwhile). */
  holds(taken: Taken): boolean;
  /** Ends an attempt: the webhook leaves (delivered, or given up to history), or waits aside for a retry at an instant. */
  settle(taken: Taken, outcome: Settlement): void;
  /** A replay delivered webhook `seq`: its retry leaves unless it is out for an attempt; answers whether one left. */
  dropRetry(streamId: string, seq: number): boolean;
  /** Takes every webhook of the stream out (those waiting for a retry first): the stream was terminated. */
  drain(streamId: string): QueueItem[];
  /** The end of the unit of work, inside it: the counts are written. */
  close(): void;
  /** The unit of work is durable: counts and order move on. */
  committed(): void;
}

/** A webhook as it waits in its stream's queue: its body's bytes, what history and logs tell of it, its attempts. */
export interface QueueItem extends WebhookBody {
  /** Its place in its stream's staging order. */
  seq: number;
  summary: WebhookSummary;
  /** Failed attempts so far; the body's `retries`. */
  failures: number;
  firstFailedAt?: number;
  /** When it is due (service time, ms). */
  nextAt: number;
  /** Its failed-delivery record, once it failed. */
  historyId?: string;
  /**
   * Its id, sent as the `webhook-id` header (Standard Webhooks): minted when it is staged and kept with it, so every
   * attempt, on whichever node owns its partition then, carries the same. Absent on a webhook staged before it was.
   */
  webhookId?: string;
}

/**
 * The `webhook-id` a queued webhook's attempts, its history record and so its replays carry: its own; one staged
 * before webhooks had ids gets its stream and place, the same each time.
 */
export const webhookIdOf = (streamId: string, item: Pick<QueueItem, 'seq' | 'webhookId'>): string =>
  item.webhookId ?? `${streamId}-${item.seq}`;

/** A webhook taken for an attempt; `ticket` names it to the queue that answered it, and means nothing else. */
export interface Taken {
  readonly streamId: string;
  readonly item: QueueItem;
  readonly ticket: string;
}

/** How an attempt ends for its webhook. */
export type Settlement = { leaves: true } | { retryAt: number; item: QueueItem };
