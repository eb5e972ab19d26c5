import { blockKey } from '../ingest/chain-store.js';
import type { ChainEvents } from '../ingest/follow.js';
import type { Kv } from '../ports.js';

/**
 * The follower's announcements as a durable log the matcher drains: written in
 * the follower's own transaction, removed in the transaction that enqueues the
 * block's webhooks, so a crash anywhere between repeats nothing and loses
 * nothing. Keyed by block number then kind, so a block seen again on another
 * branch replaces the one that left the canonical chain.
 */
export const enum EventKind {
  Seen = 0,
  Confirmed = 1,
}

export interface BlockEvent {
  key: string;
  chain: string;
  number: number;
  kind: EventKind;
  hash: string;
}

const eventKey = (chain: string, number: number, kind: EventKind): string => `${blockKey(chain, number)}/${kind}`;

export function blockEventLog(kv: Kv, wake: (chain: string) => void): ChainEvents {
  return {
    seen(chain, number, hash) {
      kv.put('blockEvents', eventKey(chain, number, EventKind.Seen), { hash });
    },
    // Once the follower's transaction is durable: the drain reads what it wrote.
    committed: (chain) => wake(chain),
    confirmed(chain, number, hash) {
      kv.put('blockEvents', eventKey(chain, number, EventKind.Confirmed), { hash });
    },
    reorged(chain, from, to) {
      // Unconfirmed blocks that left the canonical chain are not delivered (their branch's blocks come as seen again).
      for (let n = from; n <= to; n++) kv.remove('blockEvents', eventKey(chain, n, EventKind.Seen));
    },
    // A matcher behind by more than the retention window must still find the records it matches.
    oldestUnread: (chain) => pendingEvents(kv, chain, 1)[0]?.number,
  };
}

/** The oldest waiting events of a chain, in block order (seen before confirmed). */
export function pendingEvents(kv: Kv, chain: string, limit: number): BlockEvent[] {
  return kv.range<{ hash: string }>('blockEvents', { start: `${chain}/`, end: `${chain}/\uffff`, limit }).map(({ key, value }) => {
    const [, num, kind] = key.split('/');
    return { key, chain, number: parseInt(num!, 16), kind: Number(kind) as EventKind, hash: value.hash };
  });
}
