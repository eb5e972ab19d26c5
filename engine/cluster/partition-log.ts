/**
 * The port of the partition log (docs/decisions/cluster.md, Part 2): how delivery, on the node owning a partition,
 * has the units it committed made durable cluster-wide, and learns that the partition is ready to adopt or lost. The
 * bus keeps it (bus/partitions.ts); a single process has none and acknowledges its units at commit, as today.
 */
import type { PendingUnit } from './partitions.js';

/** Why this node stopped owning a partition's log, or never started. */
export type PartitionLoss =
  /** Its publish was refused: another owner published the partition after what this node knows (fencing). */
  | 'refused'
  /** Its applier met another node's message of the partition while this node owned it. */
  | 'superseded'
  /** The lease is gone or handed over (the owners said so), or this node stops. */
  | 'released'
  /** At a takeover: the partition's log not applied within the bound, or this node cannot apply it (see the log). */
  | 'behind'
  /** A unit submitted for a partition this node does not own, or not yet. */
  | 'unowned';

export type PartitionLogEvent =
  /** Caught up with the partition's log at a takeover: its streams may be adopted, its units submitted. */
  | { kind: 'ready'; partition: number; revision: number }
  /** Stopped owning it: its unacknowledged units were taken back from this store. */
  | { kind: 'lost'; partition: number; reason: PartitionLoss };

/** A unit's publish did not happen: the unit was taken back from this store (its rows hold what they held before). */
export class PartitionLost extends Error {
  constructor(
    readonly partition: number,
    readonly reason: PartitionLoss,
  ) {
    super(`partition ${partition} is not this node's (${reason}): the unit was taken back`);
  }
}

/**
 * A transaction's units of which some were taken back (PartitionLost each), told once every unit of it settled: the
 * partitions whose units were taken back. The others' are durable in their logs: what they staged stays (and may be
 * sent already).
 */
export class UnitsTakenBack extends Error {
  constructor(
    readonly partitions: ReadonlySet<number>,
    first: unknown,
  ) {
    super(first instanceof Error ? first.message : String(first));
  }
}

export interface PartitionLog {
  /**
   * This node took the partition's lease at `revision`: resolves true once it has applied the partition's log up to
   * its last message (event `ready`), false when it did not within the bound or cannot (event `lost`, `behind`).
   */
  take(partition: number, revision: number): Promise<boolean>;
  /**
   * The lease is gone or handed over: no more publishes; the units not acknowledged once the one in flight settles
   * are taken back. Resolves once they are. `keep` (the lease lapsed unrenewed, the bus unreachable): they are kept
   * instead, published if this node takes the partition again before another node publishes it, else taken back.
   */
  release(partition: number, keep?: boolean): Promise<void>;
  /** Whether the partition's units are being kept (its lease lapsed): units committed for it now join them. */
  keeps?(partition: number): boolean;
  /** Whether a unit of the partition may be committed now: owned, caught up, and its publishes going through. */
  writable(partition: number): boolean;
  /**
   * Publishes each unit's change, in order, after its local commit: one promise per unit, resolved once it is
   * durable in the log, rejected with PartitionLost once it was taken back from this store.
   */
  submit(units: readonly PendingUnit[]): Array<Promise<void>>;
  /** Resolves true once every unit of the partition submitted so far is settled, false after `withinMs` (a hand-over). */
  drained(partition: number, withinMs: number): Promise<boolean>;
  /** Calls `listener` with each ready and lost; returns how to stop. */
  onEvent(listener: (event: PartitionLogEvent) => void): () => void;
}
