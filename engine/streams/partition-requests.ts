/**
 * Work of a delivery partition asked on any node and carried out by the partition's owner (docs/decisions/cluster.md,
 * Part 2): a history replay (its POST, its record's mark and its pending retry dropped), and webhooks staged on
 * demand (a block replay, the test hooks). Only the owner writes a partition's rows and publishes them on its log;
 * another node asks it over the bus (bus/requests.ts) and answers its client what the owner answered. A single
 * process owns every partition and has none of this.
 */
import type { EnqueueItem } from '../delivery/enqueue.js';

/** What one node asks a partition's owner to carry out: plain data (JSON on the bus). */
export type PartitionRequest =
  | { kind: 'replay'; tenant: string; historyId: string; streamId?: string }
  | { kind: 'enqueue'; items: EnqueueItem[] };

export interface PartitionRequests {
  /** Whether this node carries out the partition's work now: it owns the partition and adopted it. */
  here(partition: number): boolean;
  /**
   * Has the partition's owner carry out `request`: answers what the owner answered, once this node applied what it
   * wrote (a short wait at most), and throws the owner's ApiError as it was. 503 with Retry-After when no owner
   * answers: the partition between owners, the bus down.
   */
  ask(partition: number, request: PartitionRequest): Promise<unknown>;
}

/** What the owner runs for another node's request (StreamsService.carryOut); throws NotHere once the partition is not its own. */
export type PartitionRequestHandler = (partition: number, request: PartitionRequest) => Promise<unknown>;

/** The partition asked about is not (or no longer) this node's: the asker tries its owner again. */
export class NotHere extends Error {
  constructor(readonly partition: number) {
    super(`partition ${partition} is not this node's`);
  }
}
