import type { KeyRange } from '../../ingest/chain-store.js';
import type { Kv } from '../../ports.js';

/** The indexes' next block has no record: pruned before they read it (DataIndexer.beginAgain). */
export class PrunedBeforeIndexed extends Error {
  constructor(
    readonly chain: string,
    readonly number: number,
  ) {
    super(`block ${number} of ${chain} was pruned before the Data API indexed it`);
  }
}

/** Keys removed per transaction while a chain's indexes are dropped. */
const DROP_BATCH = 10_000;

/**
 * Removes a chain's Data API rows, the key ranges given in order (engine/data-api/tables.ts dataChainRanges: the
 * indexes' position last, so a run cut short leaves the chain to be dropped again), DROP_BATCH keys a transaction,
 * `between` awaited after each (a turn of the event loop). Answers how many keys went.
 */
export async function dropChainIndexes(kv: Kv, ranges: readonly KeyRange[], between: () => Promise<void>): Promise<number> {
  let dropped = 0;
  for (const r of ranges) {
    for (;;) {
      const n = await kv.transactAsync(() => kv.removeRange(r.table, { start: r.start, end: r.end, limit: DROP_BATCH }));
      dropped += n;
      await between();
      if (n < DROP_BATCH) break;
    }
  }
  return dropped;
}
