import type { Kv } from '../ports.js';
import { settleAfter, type EnqueueItem, type EnqueueResult, type Prepared, type Staged, type Stager } from './enqueue.js';

/**
 * Webhooks staged per write transaction (CHAINPOST_STAGE_CHUNK). A transaction's callback runs on the event loop
 * in one stretch; 1,000 webhooks in one took ~23 ms there (the soak's profile, docs/reliability.md), 200 take about a fifth.
 */
export const STAGE_CHUNK = 200;

/**
 * Stages prepared webhooks in write transactions of at most `size` each, and lets each chunk's webhooks leave once
 * its transaction committed; on a cluster node, the next chunk is staged once the one before is durable in the
 * partition log. A failed chunk leaves those before it staged and stages none after it. Results are in the order of
 * the webhooks staged.
 */
export async function stageInChunks<I extends EnqueueItem & Prepared>(
  kv: Kv,
  stager: Stager,
  items: readonly I[],
  size: number,
): Promise<EnqueueResult[]> {
  const results: EnqueueResult[] = [];
  for (let from = 0; from < items.length; from += size) {
    const chunk = items.slice(from, from + size);
    let staged: Staged | undefined;
    // On a cluster node, once durable in the partition log: a chunk is staged once the one before is.
    await settleAfter(
      kv.transactAsync(() => {
        staged = stager.stage(chunk);
      }),
      () => staged,
    );
    results.push(...staged!.results);
  }
  return results;
}
