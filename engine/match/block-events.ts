import { blockKey } from '../ingest/chain-store.js';
import type { ChainEvents } from '../ingest/follow.js';
import type { Kv } from '../ports.js';

/**
 * The follower's announcements as a durable log the matcher drains: written in
 * the follower's own transaction, removed in the transaction that enqueues the
 * block's webhooks, so a crash anywhere between repeats nothing and loses
 * nothing. Keyed by block number then kind, so a block seen again on another
 * branch replaces the one that left the canonical chain. An event's webhooks are
 * built and staged stream by stream (engine/match/lanes.ts): each transaction
 * marks the streams it staged in the event, and the one that stages its last
 * removes it.
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
  /** Streams whose webhook for this event is already queued (or kept in history): a round after a crash skips them. */
  staged: ReadonlySet<string>;
}

/** An event as stored: the block's hash, and the streams staged so far (absent until a chunk is). */
interface StoredEvent {
  hash: string;
  staged?: string[];
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
  return kv.range<StoredEvent>('blockEvents', { start: `${chain}/`, end: `${chain}/\uffff`, limit }).map(({ key, value }) => {
    const [, num, kind] = key.split('/');
    return { key, chain, number: parseInt(num!, 16), kind: Number(kind) as EventKind, hash: value.hash, staged: new Set(value.staged) };
  });
}

/**
 * Inside the transaction that staged them: marks each webhook's stream as staged in its event, unless the event
 * is gone or is now another block's (a reorg's; that block's webhooks were not staged, its own come in turn).
 */
export function markStaged(kv: Kv, staged: ReadonlyArray<{ streamId: string; event: BlockEvent }>): void {
  const byEvent = new Map<string, { event: BlockEvent; streams: string[] }>();
  for (const { streamId, event } of staged) {
    const entry = byEvent.get(event.key);
    if (entry === undefined) byEvent.set(event.key, { event, streams: [streamId] });
    else entry.streams.push(streamId);
  }
  for (const { event, streams } of byEvent.values()) {
    const stored = kv.get<StoredEvent>('blockEvents', event.key);
    if (stored?.hash === event.hash)
      kv.put('blockEvents', event.key, { hash: stored.hash, staged: [...(stored.staged ?? []), ...streams] } satisfies StoredEvent);
  }
}

/** Inside the transaction that staged events' last webhooks: removes them, unless one is now another block's. */
export function removeEvents(kv: Kv, events: readonly BlockEvent[]): void {
  for (const e of events) if (kv.get<StoredEvent>('blockEvents', e.key)?.hash === e.hash) kv.remove('blockEvents', e.key);
}
