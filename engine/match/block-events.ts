import { blockKey } from '../ingest/chain-store.js';
import type { ChainEvents } from '../ingest/follow.js';
import { PARTITIONS } from '../cluster/partitions.js';
import { partitionTag } from '../delivery/records.js';
import type { Kv } from '../ports.js';

/**
 * The follower's announcements as a durable log the matcher drains: written in
 * the follower's own transaction (on a cluster node, also as it applies another
 * node's blocks, so every node holds the same log), so a crash anywhere between
 * repeats nothing and loses nothing. Keyed by block number then kind, so a block
 * seen again on another branch replaces the one that left the canonical chain.
 *
 * Matching is per delivery partition (docs/decisions/cluster.md, Part 2): an
 * event's webhooks are built and staged stream by stream (engine/match/lanes.ts),
 * and each transaction that stages some marks their streams in the partition's
 * row of `matchMarks` (a delivery row: published with the webhooks it marks), so
 * whichever node owns the partition next skips them. The event itself keeps the
 * partitions this node finished it for (`done`), and goes once every partition
 * did, or, kept for a cluster's other owners, once its block fell `retain` blocks
 * behind the chain's newest seen.
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
  /** The partitions this node finished the event for (every stream's webhook staged or none built). */
  done: ReadonlySet<number>;
  /** Streams marked staged in the event itself, by a version that kept them there (a store written before partitions). */
  staged: ReadonlySet<string>;
}

/** An event as stored: the block's hash, and the partitions finished (absent until one is). */
interface StoredEvent {
  hash: string;
  done?: number[];
  /** Written by versions before partitions: the streams staged. */
  staged?: string[];
  /** The write's token, when its writer asked for one: read back, that write is committed (StreamMatcher's scans). */
  w?: number;
}

/**
 * A partition's marks on a chain's events: `key@hash` of an event → the streams whose webhook for it is staged, or 0
 * once the partition finished it (a cluster node's, which keeps its events for other owners: the next owner of the
 * partition passes it over).
 */
type Marks = Record<string, string[] | 0>;

export const eventKey = (chain: string, number: number, kind: EventKind): string => `${blockKey(chain, number)}/${kind}`;

const eventId = (e: Pick<BlockEvent, 'key' | 'hash'>): string => `${e.key}@${e.hash}`;
const marksKey = (chain: string, partition: number): string => `${chain}/${partitionTag(partition)}`;

/**
 * `retain`: blocks an event is kept for behind the newest seen when not every partition finished it (a cluster
 * node, whose other partitions are matched elsewhere); undefined: until every partition did (one process).
 * `token`: a number stored with each event written (`w`), for `writtenWith`.
 */
export function blockEventLog(
  kv: Kv,
  wake: (chain: string) => void,
  retain?: number,
  token?: (chain: string, key: string) => number,
): ChainEvents {
  const put = (chain: string, key: string, hash: string): void =>
    kv.put('blockEvents', key, token === undefined ? { hash } : ({ hash, w: token(chain, key) } satisfies StoredEvent));
  return {
    seen(chain, number, hash) {
      put(chain, eventKey(chain, number, EventKind.Seen), hash);
      if (retain !== undefined && number > retain)
        kv.removeRange('blockEvents', { start: `${chain}/`, end: blockKey(chain, number - retain), limit: Infinity });
    },
    // Once the follower's transaction is durable: the drain reads what it wrote.
    committed: (chain) => wake(chain),
    confirmed(chain, number, hash) {
      put(chain, eventKey(chain, number, EventKind.Confirmed), hash);
    },
    reorged(chain, from, to) {
      // Unconfirmed blocks that left the canonical chain are not delivered (their branch's blocks come as seen again).
      for (let n = from; n <= to; n++) kv.remove('blockEvents', eventKey(chain, n, EventKind.Seen));
    },
    // A matcher behind by more than the retention window must still find the records it matches.
    oldestUnread: (chain) => pendingEvents(kv, chain, 1)[0]?.number,
  };
}

/**
 * The oldest waiting events of a chain, in block order (seen before confirmed): with `owns`, those some partition it
 * owns has not finished.
 */
export function pendingEvents(kv: Kv, chain: string, limit: number, owns?: (partition: number) => boolean): BlockEvent[] {
  return scanEvents(kv, chain, limit, owns).events;
}

/**
 * pendingEvents from the key `from` on (the chain's first by default), and where a scan may start next: the first
 * event answered, or past the last one read when none is (each one read is finished for `owns`).
 */
export function scanEvents(
  kv: Kv,
  chain: string,
  limit: number,
  owns?: (partition: number) => boolean,
  from = `${chain}/`,
): { events: BlockEvent[]; next: string } {
  const events: BlockEvent[] = [];
  const end = `${chain}/\uffff`;
  let start = from;
  let next = from;
  // Events other partitions wait for are passed over, a page at a time.
  for (;;) {
    const page = kv.range<StoredEvent>('blockEvents', { start, end, limit });
    for (const { key, value } of page) {
      next = `${key}\u0000`;
      const [, num, kind] = key.split('/');
      const done = new Set(value.done);
      if (owns !== undefined && !ownsUnfinished(owns, done)) continue;
      events.push({
        key,
        chain,
        number: parseInt(num!, 16),
        kind: Number(kind) as EventKind,
        hash: value.hash,
        done,
        staged: new Set(value.staged),
      });
      if (events.length === limit) return { events, next: events[0]!.key };
    }
    if (page.length < limit) return { events, next: events[0]?.key ?? next };
    start = `${page.at(-1)!.key}\u0000`;
  }
}

/** Whether the store holds the event `key` as the write of token `w` left it (that write is committed). */
export const writtenWith = (kv: Kv, key: string, w: number): boolean => kv.get<StoredEvent>('blockEvents', key)?.w === w;

function ownsUnfinished(owns: (partition: number) => boolean, done: ReadonlySet<number>): boolean {
  for (let p = 0; p < PARTITIONS; p++) if (owns(p) && !done.has(p)) return true;
  return false;
}

/** Whether a stream of `partition` has its webhook for the event staged (by this node or the partition's owner before). */
export function stagedIn(kv: Kv, event: BlockEvent, partition: number): (streamId: string) => boolean {
  const marked = kv.get<Marks>('matchMarks', marksKey(event.chain, partition))?.[eventId(event)];
  if (marked === 0) return () => true;
  const ids = marked === undefined ? event.staged : new Set([...event.staged, ...marked]);
  return (id) => ids.has(id);
}

/**
 * Inside the transaction that staged them: marks each webhook's stream as staged in its event, in the row of the
 * stream's partition, and `finished` events as finished in their partitions' rows, unless the event is gone or is
 * now another block's (a reorg's; that block's webhooks were not staged, its own come in turn). Marks of events no
 * longer in the log are dropped as a row is written.
 */
export function markStaged(
  kv: Kv,
  staged: ReadonlyArray<{ streamId: string; event: BlockEvent; partition: number }>,
  finished: ReadonlyArray<{ event: BlockEvent; partitions: Iterable<number> }> = [],
): void {
  const byRow = new Map<string, Array<{ streamId?: string; event: BlockEvent }>>();
  const add = (partition: number, mark: { streamId?: string; event: BlockEvent }): void => {
    const key = marksKey(mark.event.chain, partition);
    const list = byRow.get(key);
    if (list === undefined) byRow.set(key, [mark]);
    else list.push(mark);
  };
  for (const s of staged) add(s.partition, s);
  for (const { event, partitions } of finished) for (const p of partitions) add(p, { event });
  for (const [key, list] of byRow) {
    const marks: Marks = {};
    for (const [id, streams] of Object.entries(kv.get<Marks>('matchMarks', key) ?? {})) if (inLog(kv, id)) marks[id] = streams;
    for (const { streamId, event } of list) {
      if (kv.get<StoredEvent>('blockEvents', event.key)?.hash !== event.hash) continue;
      const id = eventId(event);
      const marked = marks[id];
      if (streamId === undefined) marks[id] = 0;
      else if (marked !== 0) marks[id] = [...(marked ?? []), streamId];
    }
    if (Object.keys(marks).length > 0) kv.put('matchMarks', key, marks);
    else kv.remove('matchMarks', key);
  }
}

function inLog(kv: Kv, id: string): boolean {
  const at = id.lastIndexOf('@');
  return kv.get<StoredEvent>('blockEvents', id.slice(0, at))?.hash === id.slice(at + 1);
}

/**
 * Inside the transaction that staged events' last webhooks of some partitions: marks those partitions finished in
 * each event, unless it is now another block's; an event every partition finished goes (unless `keep`: a cluster's,
 * kept for its retention: another node may own a partition next that this one finished).
 */
export function finishEvents(kv: Kv, finished: ReadonlyArray<{ event: BlockEvent; partitions: Iterable<number> }>, keep = false): void {
  for (const { event, partitions } of finished) {
    const stored = kv.get<StoredEvent>('blockEvents', event.key);
    if (stored?.hash !== event.hash) continue;
    const done = new Set([...(stored.done ?? []), ...partitions]);
    if (done.size === PARTITIONS && !keep) kv.remove('blockEvents', event.key);
    else kv.put('blockEvents', event.key, { ...stored, done: [...done].sort((a, b) => a - b) } satisfies StoredEvent);
  }
}

/**
 * A partition adopted (again, a cluster node): this node forgets having finished its events. Its own `done` is no
 * delivery row: a unit of the partition taken back (its lease lost before the unit was published), or committed and
 * never published (a crash), took its marks away but left `done`. Like any new owner, it goes by the partition's
 * marks alone, which the log and this store agree on: what was staged is passed over, what was not is staged.
 */
export function forgetFinished(kv: Kv, partition: number): void {
  for (const { key, value } of kv.range<StoredEvent>('blockEvents'))
    if (value.done?.includes(partition) === true)
      kv.put('blockEvents', key, { ...value, done: value.done.filter((p) => p !== partition) } satisfies StoredEvent);
}
