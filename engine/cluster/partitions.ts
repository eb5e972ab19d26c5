/**
 * The delivery partitions (docs/decisions/cluster.md, Part 2): matching and delivery are spread over the nodes by
 * (tenant, webhook URL), so every stream that delivers to one URL lives in one partition and the per-URL success
 * rate, which moves all of that URL's streams into error, stays one owner's decision. A single process owns them all.
 */
import type { Kv, Table } from '../ports.js';

/** How many partitions there are. Fixed: a stream's partition is part of what every node stores and publishes. */
export const PARTITIONS = 64;

/** A 32-bit hash of a string (xxhash-wasm's h32, seed 0, made in app/: the engine loads no WebAssembly). */
export type Hash32 = (text: string) => number;

/** The partition of a stream delivering to `webhookUrl` for `tenant`. */
export const partitionOf = (hash: Hash32, tenant: string, webhookUrl: string): number =>
  (hash(`${tenant}\n${webhookUrl}`) >>> 0) % PARTITIONS;

/** One row a unit of delivery wrote: its table, its key, and its bytes as stored (null: removed). */
export type RowWrite = readonly [table: Table, key: string, bytes: Uint8Array | null];

/**
 * What one unit of work of delivery in one partition changed (a staging chunk, a flush of outcomes, a replay's mark,
 * a termination), as its owner publishes it on the partition's subject and every node applies it: the rows it wrote,
 * in order. Applying it is a function of the store and the change alone.
 */
export interface PartitionChange {
  partition: number;
  rows: RowWrite[];
}

/**
 * A unit its owner committed but has not had acknowledged by the bus yet: its change, and the same rows as they were
 * before it (null: absent), so the owner can take it back when its publish is refused (another node owns the
 * partition now): restored newest unit first.
 */
export interface PendingUnit {
  change: PartitionChange;
  before: RowWrite[];
}

/** Writes a change's rows, in order: inside the caller's write transaction. */
export function applyPartitionChange(kv: Kv, change: PartitionChange): void {
  writeRows(kv, change.rows);
}

/** Takes a pending unit back (its before-images, last row first): inside the caller's write transaction. */
export function takeBack(kv: Kv, unit: PendingUnit): void {
  writeRows(kv, [...unit.before].reverse());
}

function writeRows(kv: Kv, rows: readonly RowWrite[]): void {
  for (const [table, key, bytes] of rows) {
    if (bytes === null) kv.remove(table, key);
    else kv.putRaw(table, key, bytes);
  }
}
