import { blockKey } from '../ingest/chain-store.js';
import type { ChainEvents } from '../ingest/follow.js';
import type { Kv } from '../ports.js';

/**
 * The follower's announcements as a durable log the matcher drains: written in
 * the follower's own transaction, removed in the transaction that enqueues the
 * block's webhooks, so a crash anywhere between repeats nothing and loses
 * nothing. Keyed by block number then kind, so a block seen again on another
 * branch replaces the one that left the canonical chain. A round's webhooks are
 * staged in several transactions (engine/delivery/stage-chunks.ts), and each
 * event is removed in the one that staged its last (RoundProgress).
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
 * A round's events while its webhooks, in event order as the round built them, are staged chunk by chunk (issue 19).
 * In each chunk's transaction, `staged` removes the events whose webhooks have all gone by: a stream's webhook for
 * a later event is never on disk while an earlier event of the round, which a round after a crash would build again,
 * is left. An event going on into the next chunk gets the chunk's streams marked instead. So does an event of which
 * a webhook was dropped because its block had left the canonical chain: it stays, and if the block comes back with
 * the same hash (a node flipping between branches), the next round sends the streams it lacks.
 */
export class RoundProgress {
  /** Per event, the index of its last webhook in the round. */
  private readonly last = new Map<string, number>();
  /** Events not yet removed or left for the next round. */
  private open: BlockEvent[];
  private readonly dropped = new Set<string>();
  private passed = 0;

  constructor(
    private readonly kv: Kv,
    events: readonly BlockEvent[],
    webhooks: ReadonlyArray<{ event: BlockEvent }>,
  ) {
    webhooks.forEach((w, i) => this.last.set(w.event.key, i));
    this.open = [...events];
  }

  /** Inside a chunk's transaction: `chunk` the round's next webhooks, `picked` those staged (the others' blocks left the canonical chain). */
  staged<T extends { streamId: string; event: BlockEvent }>(chunk: readonly T[], picked: readonly T[]): void {
    const kept = new Set(picked);
    for (const w of chunk) if (!kept.has(w)) this.dropped.add(w.event.key);
    this.passed += chunk.length;
    const finished = this.open.filter((e) => (this.last.get(e.key) ?? -1) < this.passed);
    this.open = this.open.filter((e) => !finished.includes(e));
    removeEvents(this.kv, finished.filter((e) => !this.dropped.has(e.key)));
    const gone = new Set(finished.map((e) => e.key));
    markStaged(this.kv, picked.filter((w) => !gone.has(w.event.key) || this.dropped.has(w.event.key)));
  }
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
    if (stored?.hash === event.hash) kv.put('blockEvents', event.key, { hash: stored.hash, staged: [...(stored.staged ?? []), ...streams] } satisfies StoredEvent);
  }
}

/** Inside the transaction that staged events' last webhooks: removes them, unless one is now another block's. */
export function removeEvents(kv: Kv, events: readonly BlockEvent[]): void {
  for (const e of events) if (kv.get<StoredEvent>('blockEvents', e.key)?.hash === e.hash) kv.remove('blockEvents', e.key);
}
