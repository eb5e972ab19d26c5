/** The messages of the partitions' log (docs/decisions/cluster.md, Part 2): one per unit of delivery, on its partition's subject. */
import { encode } from '@msgpack/msgpack';
import type { MsgHdrs } from '@nats-io/transport-node';
import { PARTITIONS, type PartitionChange, type RowWrite } from '../engine/cluster/partitions.js';
import { formatHeaders, readFormatted } from './format.js';

/**
 * The format of the partition messages this version writes and reads; a node meeting a newer major one stops applying.
 * 2: `matchMarks` rows are one per (block event, partition) (layout 9); a format-1 message's, one per (chain,
 * partition), are split as they are applied (an older node stops at format 2 rather than miss the marks).
 * 3: `alerts` rows (an older node, which has no such table, stops at format 3 rather than fail to apply them).
 */
export const PARTITIONS_FORMAT = 3;
/** The header carrying the publishing owner's lease revision, and the one naming its node. */
export const LEASE_REVISION_HEADER = 'Chainpost-Lease-Revision';
export const NODE_HEADER = 'Chainpost-Node';
/** The header JetStream de-duplicates by (the publish's msgID). */
export const MSG_ID = 'Nats-Msg-Id';

export const partitionSubject = (partition: number): string => `chainpost.partitions.${partition}`;

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
}): { change: PartitionChange; format: number } | { newer: number } | { malformed: string } {
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
  return { change: { partition, rows: rows as RowWrite[] }, format: Math.floor(Number(read.body.v)) };
}
