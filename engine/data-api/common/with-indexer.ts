import type { ChainEvents } from '../../ingest/follow.js';
import type { DataIndexer } from './indexer.js';

/** A follower's listeners with the indexer's: both woken by a commit, pruning held back to the lower of their needs. */
export function withIndexer(events: ChainEvents, indexer: DataIndexer): ChainEvents {
  const mine = indexer.events();
  return {
    ...events,
    committed(chain) {
      events.committed?.(chain);
      mine.committed?.(chain);
    },
    pace(chain, head) {
      const a = events.pace?.(chain, head);
      const b = mine.pace?.(chain, head);
      return a === undefined ? b : b === undefined ? a : Promise.all([a, b]).then(() => {});
    },
    oldestUnread(chain) {
      const a = events.oldestUnread?.(chain);
      const b = mine.oldestUnread?.(chain);
      return a === undefined ? b : b === undefined ? a : Math.min(a, b);
    },
  };
}
