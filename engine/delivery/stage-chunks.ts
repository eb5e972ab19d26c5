import type { Kv } from '../ports.js';
import type { Dispatcher, EnqueueItem, EnqueueResult, Prepared, Staged } from './dispatcher.js';

/**
 * Webhooks staged per write transaction (CHAINPOST_STAGE_CHUNK). A transaction's callback runs on the event loop
 * in one stretch; 1,000 webhooks in one took ~23 ms there (issue 19's soak profile), 200 take about a fifth.
 */
export const STAGE_CHUNK = 200;

/**
 * Stages prepared webhooks in write transactions of at most `size` each, and lets each chunk's webhooks leave once
 * its transaction committed. `inEach` runs inside each chunk's transaction and returns the chunk's webhooks to
 * stage (all of them, or those still wanted, in the order to stage them); the caller writes there what the chunk
 * completes, so that a crash between two chunks repeats none. With no webhooks,
 * one transaction runs `inEach([])`. Results are in the order of the webhooks staged.
 */
export async function stageInChunks<I extends EnqueueItem & Prepared>(
  kv: Kv,
  dispatcher: Pick<Dispatcher, 'stage'>,
  items: readonly I[],
  size: number,
  inEach: (chunk: readonly I[]) => readonly I[] = (chunk) => chunk,
): Promise<EnqueueResult[]> {
  const results: EnqueueResult[] = [];
  for (let from = 0; from === 0 || from < items.length; from += size) {
    const chunk = items.slice(from, from + size);
    let staged: Staged | undefined;
    await kv.transactAsync(() => {
      const picked = inEach(chunk);
      if (picked.length > 0) staged = dispatcher.stage(picked);
    });
    if (staged !== undefined) {
      staged.settle();
      results.push(...staged.results);
    }
  }
  return results;
}
