import type { WebhookBody } from './body.js';
import type { summarize } from './webhook.js';

/**
 * What the matcher, the mempool watcher and the replay routes hand to delivery, and what delivery answers: the
 * staging contract, apart from the dispatcher so that what stages (stage-chunks, the lanes) depends on it alone.
 */

/** Queued for the stream; kept in history only (the stream is in error); dropped (paused, terminated, gone). */
export type EnqueueResult = 'queued' | 'history' | 'dropped';

/** A webhook for a stream, as the matcher builds it. */
export interface EnqueueItem {
  streamId: string;
  payload: Record<string, unknown>;
}

/** A webhook's body serialized ahead of its transaction (prepare), with the tag it was serialized with. */
export interface Prepared {
  ready?: { tag: string; body: WebhookBody; summary: ReturnType<typeof summarize> };
}

/** Webhooks written in a transaction not yet committed: `settle()` once it is, and they leave; `failed()` if it failed. */
export interface Staged {
  results: EnqueueResult[];
  /** The delivery partition each webhook was staged in (undefined: dropped), as its transaction wrote it. */
  partitions: Array<number | undefined>;
  settle(): void;
  /** After `settle`, on a cluster node: settled once the staged webhooks are durable in their partitions' logs (the enqueue waits for it). */
  durable?(): Promise<void> | undefined;
  failed(): void;
}

/**
 * Awaits the transaction in which `staged()` was staged: settles it once committed, or tells it that it failed (the
 * unit of work it was is never told committed), and rejects; on a cluster node, answers once what it staged is
 * durable in the partitions' logs, or rejects (UnitsTakenBack).
 */
export async function settleAfter(commit: Promise<unknown>, staged: () => Staged | undefined): Promise<void> {
  try {
    await commit;
  } catch (err) {
    staged()?.failed();
    throw err;
  }
  staged()?.settle();
  await staged()?.durable?.();
}

/** Stages webhooks inside the caller's write transaction; the caller settles them once it committed. */
export interface Stager {
  stage(items: ReadonlyArray<EnqueueItem & Prepared>): Staged;
}
