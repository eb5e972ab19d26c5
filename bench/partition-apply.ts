/**
 * bench:partition-apply — how many messages of the partitions' log (CHAINPOST_PARTITIONS) a node applies a second
 * from a backlog: a real nats-server, the cluster's own applier (bus/partitions.ts) and a real LMDB store on a fresh
 * directory, the backlog published before the node starts. Measured in batches (the messages already delivered in
 * one transaction, APPLY_BATCH) beside one message a transaction, in the same run, alternately, each twice (the best
 * of each kept: the machine is shared).
 *
 * The messages are synthetic units shaped as delivery's (docs/decisions/cluster.md, "The capture"): a staging chunk
 * or a flush of outcomes writes a stream's queue entry (a webhook's body, 1 KB), its queue meta, its history record
 * and the partition's stats, over 1,000 streams spread across the 64 partitions. A staging unit's marks row (up to
 * 190 KB) is not included: it costs both ways alike, in bytes.
 *
 * BENCH_MESSAGES: the backlog (5,000 by default).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connectBus } from '../bus/connect.js';
import type { BatchBound } from '../bus/ordered.js';
import { partitionMessage, partitionSubject } from '../bus/partition-messages.js';
import { APPLY_BATCH, ClusterPartitions } from '../bus/partitions.js';
import { ensurePartitionsStream } from '../bus/streams.js';
import { PARTITIONS, type PartitionChange, type RowWrite } from '../engine/cluster/partitions.js';
import { quietLog } from '../test/kit/quiet-log.js';
import { openStore } from '../storage/env.js';
import { startNatsServer } from '../test/kit/nats-server.js';
import { report, round, sized } from './report.js';

const MESSAGES = Number(process.env['BENCH_MESSAGES'] ?? sized(5_000, 200));
const STREAMS = 1_000;
/** Publishes in flight at once while the backlog is made. */
const PUBLISHING = 256;
/** How long one run may take before it is given up, ms. */
const RUN_WITHIN_MS = 600_000;

const bytes = (n: number, seed: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

/** Message k of the backlog: a unit of stream k mod 1,000, in that stream's partition. */
function unit(k: number): PartitionChange {
  const stream = k % STREAMS;
  const partition = stream % PARTITIONS;
  const rows: RowWrite[] = [
    ['queue', `s${stream}/${k}`, bytes(1_024, k)],
    ['queueMeta', `s${stream}`, bytes(96, k)],
    ['history', `#${String(partition).padStart(2, '0')}/s${stream}/${k}`, bytes(256, k)],
    ['stats', `#${String(partition).padStart(2, '0')}/t`, bytes(128, k)],
  ];
  return { partition, rows };
}

/** Applies the whole stream on a fresh store with `batch`: messages a second, from the applier's start to the last. */
async function applyAll(url: string, batch: BatchBound): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-partition-apply-'));
  const store = openStore(dir);
  const bus = await connectBus({ servers: url });
  const log = new ClusterPartitions({ bus, kv: store, node: 'bench', log: quietLog(Date.now), batch });
  try {
    const started = performance.now();
    log.start();
    while (log.applied().seq < MESSAGES) {
      if (performance.now() - started > RUN_WITHIN_MS)
        throw new Error(`applied ${log.applied().seq} of ${MESSAGES} within ${RUN_WITHIN_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return MESSAGES / ((performance.now() - started) / 1_000);
  } finally {
    await log.stop();
    await bus.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const nats = await startNatsServer();
  try {
    const bus = await connectBus({ servers: nats.url });
    await ensurePartitionsStream(await jetstreamManager(bus.nc));
    const js = jetstream(bus.nc);
    for (let k = 0; k < MESSAGES; k += PUBLISHING)
      await Promise.all(
        Array.from({ length: Math.min(PUBLISHING, MESSAGES - k) }, (_, i) => {
          const change = unit(k + i);
          const { data, headers } = partitionMessage(change, 1, 'owner');
          return js.publish(partitionSubject(change.partition), data, { headers });
        }),
      );
    await bus.close();
    const one: number[] = [];
    const batched: number[] = [];
    for (let round = 0; round < 2; round++) {
      one.push(await applyAll(nats.url, { messages: 1, bytes: Number.POSITIVE_INFINITY }));
      batched.push(await applyAll(nats.url, APPLY_BATCH));
      console.log(`round ${round + 1}: one a transaction ${one.at(-1)!.toFixed(0)}/s, batched ${batched.at(-1)!.toFixed(0)}/s`);
    }
    const oneBest = Math.max(...one);
    const batchedBest = Math.max(...batched);
    const figures = {
      messages: MESSAGES,
      partitionApplyMessagesPerSec: round(batchedBest, 0),
      partitionApplyOnePerTransactionMessagesPerSec: round(oneBest, 0),
      ratio: round(batchedBest / oneBest),
      runs: { batched: batched.map((x) => round(x, 0)).join(' / '), onePerTransaction: one.map((x) => round(x, 0)).join(' / ') },
    };
    console.log(JSON.stringify(figures, null, 2));
    // The worked example of docs/operations.md ("Sizing a cluster") has every node apply about 1,000 messages a second.
    const met = batchedBest >= 1_000;
    report('partition-apply', 'npm run bench:partition-apply', figures, { partitionApplyMessagesPerSec: '≥ 1,000' }, met, [
      `A backlog of ${MESSAGES} units (4 rows, 1.5 KB each) applied by a node on a fresh LMDB store, in batches of up to ${APPLY_BATCH.messages} messages (or ${APPLY_BATCH.bytes / 1024 / 1024} MiB) and one message a transaction, the best of two runs each.`,
    ]);
  } finally {
    await nats.close();
  }
}

await main();
