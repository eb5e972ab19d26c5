import { blockKey } from '../ingest/chain-store.js';
import type { ChainEvents } from '../ingest/follow.js';
import { PARTITIONS } from '../cluster/partitions.js';
import { partitionTag, taggedPartition } from '../delivery/records.js';
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
 * row of `matchMarks` for that event (a delivery row: published with the webhooks
 * it marks), so whichever node owns the partition next skips them. The event itself keeps the
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
 * A partition's marks on one event (`matchMarks`, key `<event key>/#NN`): the block's hash, and the streams whose
 * webhook for it is staged, or 0 once the partition finished it (a cluster node's, which keeps its events for other
 * owners: the next owner of the partition passes it over). A row of another hash is another block's (a reorg's).
 */
type Marks = [hash: string, staged: string[] | 0];

export const eventKey = (chain: string, number: number, kind: EventKind): string => `${blockKey(chain, number)}/${kind}`;

/** Keyed by the event's key first, so the log's cut and an event's removal take its marks by range. */
const marksKey = (event: string, partition: number): string => `${event}/${partitionTag(partition)}`;
const marksOf = (event: string): { start: string; end: string; limit: number } => ({
  start: `${event}/`,
  end: `${event}/\uffff`,
  limit: Infinity,
});

/**
 * `retain`: blocks an event is kept for behind the newest seen when not every partition finished it (a cluster
 * node, whose other partitions are matched elsewhere), its marks with it; undefined: until every partition did (one
 * process). `token`: a number stored with each event written (`w`), for `writtenWith`. The marks the cut removes
 * are this node's own business (every node cuts its log alike): `kv` is the store as is, not delivery's capture.
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
      if (retain !== undefined && number > retain) {
        const cut = { start: `${chain}/`, end: blockKey(chain, number - retain), limit: Infinity };
        kv.removeRange('blockEvents', cut);
        kv.removeRange('matchMarks', cut);
      }
    },
    // Once the follower's transaction is durable: the drain reads what it wrote.
    committed: (chain) => wake(chain),
    confirmed(chain, number, hash) {
      put(chain, eventKey(chain, number, EventKind.Confirmed), hash);
    },
    reorged(chain, from, to) {
      // Unconfirmed blocks that left the canonical chain are not delivered (their branch's blocks come as seen again).
      // Their marks stay, naming their block: one taken back and seen again (a cluster's new chain holder takes back
      // what the old one stored unpublished, and applies the same blocks) is not staged again for the streams marked.
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
  const row = kv.get<Marks>('matchMarks', marksKey(event.key, partition));
  const marked = row?.[0] === event.hash ? row[1] : undefined;
  if (marked === 0) return () => true;
  const ids = marked === undefined ? event.staged : new Set([...event.staged, ...marked]);
  return (id) => ids.has(id);
}

/**
 * Inside the transaction that staged them: marks each webhook's stream as staged in its event, in the event's row of
 * the stream's partition, and `finished` events as finished in their partitions' rows, unless the event is gone or is
 * now another block's (a reorg's; that block's webhooks were not staged, its own come in turn). Only the rows of the
 * events given are read and written.
 */
export function markStaged(
  kv: Kv,
  staged: ReadonlyArray<{ streamId: string; event: BlockEvent; partition: number }>,
  finished: ReadonlyArray<{ event: BlockEvent; partitions: Iterable<number> }> = [],
): void {
  const inLog = new Map<string, boolean>();
  const rows = new Map<string, Marks>();
  const mark = (event: BlockEvent, partition: number, streamId?: string): void => {
    let there = inLog.get(event.key);
    if (there === undefined) inLog.set(event.key, (there = kv.get<StoredEvent>('blockEvents', event.key)?.hash === event.hash));
    if (!there) return;
    const key = marksKey(event.key, partition);
    let row = rows.get(key);
    if (row === undefined) {
      const stored = kv.get<Marks>('matchMarks', key);
      rows.set(key, (row = stored?.[0] === event.hash ? stored : [event.hash, []]));
    }
    if (streamId === undefined) row[1] = 0;
    else if (row[1] !== 0) row[1] = [...row[1], streamId];
  };
  for (const s of staged) mark(s.event, s.partition, s.streamId);
  for (const { event, partitions } of finished) for (const p of partitions) mark(event, p);
  for (const [key, row] of rows) kv.put('matchMarks', key, row);
}

/**
 * A `matchMarks` row as layout 8 kept it (`chain/#NN`: `{"<event key>@<hash>": streams | 0}`, every event's marks of
 * the partition in one row) as this layout's rows, one per event still in the log (storage/env.ts's migration);
 * undefined for a row of this layout.
 */
export function marksPerEvent(kv: Kv, key: string, value: unknown): Array<[key: string, marks: Marks]> | undefined {
  if (value === undefined || Array.isArray(value)) return undefined;
  const partition = taggedPartition(key) ?? 0;
  const rows: Array<[string, Marks]> = [];
  for (const [id, staged] of Object.entries(value as Record<string, string[] | 0>)) {
    const at = id.lastIndexOf('@');
    const [event, hash] = [id.slice(0, at), id.slice(at + 1)];
    if (kv.get<StoredEvent>('blockEvents', event)?.hash === hash) rows.push([marksKey(event, partition), [hash, staged]]);
  }
  return rows;
}

/** Rewrites the `matchMarks` row `key` as this layout's rows when it is in layout 8's form (a format-1 partition message's). */
export function splitMarks(kv: Kv, key: string): void {
  const rows = marksPerEvent(kv, key, kv.get('matchMarks', key));
  if (rows === undefined) return;
  kv.remove('matchMarks', key);
  for (const [k, marks] of rows) kv.put('matchMarks', k, marks);
}

/**
 * Inside the transaction that staged events' last webhooks of some partitions: marks those partitions finished in
 * each event, unless it is now another block's; an event every partition finished goes, with its marks (unless `keep`: a cluster's,
 * kept for its retention: another node may own a partition next that this one finished).
 */
export function finishEvents(kv: Kv, finished: ReadonlyArray<{ event: BlockEvent; partitions: Iterable<number> }>, keep = false): void {
  for (const { event, partitions } of finished) {
    const stored = kv.get<StoredEvent>('blockEvents', event.key);
    if (stored?.hash !== event.hash) continue;
    const done = new Set([...(stored.done ?? []), ...partitions]);
    if (done.size === PARTITIONS && !keep) {
      kv.remove('blockEvents', event.key);
      kv.removeRange('matchMarks', marksOf(event.key));
    } else kv.put('blockEvents', event.key, { ...stored, done: [...done].sort((a, b) => a - b) } satisfies StoredEvent);
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
