import { ChainRuns } from '../ingest/chain-runs.js';
import type { Clock } from '../clock.js';
import { findChain, type ChainFamily } from '../chains/registry.js';
import { chainRemoval } from '../chains/removals.js';
import { streamKey, type Dispatcher } from '../delivery/dispatcher.js';
import { STAGE_CHUNK, stageInChunks } from '../delivery/stage-chunks.js';
import type { ChainEvents } from '../ingest/follow.js';
import { blockKey } from '../ingest/chain-store.js';
import type { Logger } from '../log.js';
import type { Kv, MatchPool } from '../ports.js';
import type { StoredStream } from '../streams/model.js';
import { onNewWebhook } from '../streams/transitions.js';
import { hasMatching } from './families.js';
import { EventKind, RoundProgress, blockEventLog, pendingEvents, type BlockEvent } from './block-events.js';
import type { Watchlist } from './watchlist.js';

/**
 * Blocks become webhooks: the matcher drains each chain's block events in
 * order, has the pool test their probe columns against the chain's filter set,
 * builds one body per matched stream from the block record, and enqueues the
 * bodies in transactions that remove the events they finish (RoundProgress).
 */
export interface MatchedBlock {
  chain: string;
  number: number;
  /** The stored block record, in its family's format, read in place: a stream's body decodes only the items it matched. */
  bytes: Uint8Array;
  confirmed: boolean;
}

/** Builds a stream's webhook body (a stream of its family: S) for a block from the probe refs that matched it; null when nothing is left to send. */
export type BuildWebhook<S extends StoredStream = StoredStream> = (block: MatchedBlock, stream: S, refs: readonly number[]) => Promise<Record<string, unknown> | null>;

/** A builder that could not reach a node it needs (token metadata, say): the round fails and is tried again. */
export class NodeUnavailable extends Error {
  override name = 'NodeUnavailable';
}

/**
 * One builder over every family: each block goes to its chain family's, which takes that family's streams
 * (a chain's filter set holds only streams of its family, so the stream is one).
 */
export function byFamily(builders: Partial<Record<ChainFamily, BuildWebhook<never>>>): BuildWebhook {
  return (block, stream, refs) => {
    const build = builders[findChain(block.chain)?.family ?? 'evm'] as BuildWebhook | undefined;
    if (build === undefined) throw new Error(`no webhook builder for chain ${block.chain}`);
    return build(block, stream, refs);
  };
}

/** A webhook built for a block, with the event it came from (checked again when it is enqueued). */
interface Built {
  streamId: string;
  payload: Record<string, unknown>;
  event: BlockEvent;
}

/** Events taken per round: a few blocks' worth, so one slow stream build does not hold a long backlog in memory. */
const EVENTS_PER_ROUND = 32;
/** A round that failed (the node did not answer a metadata read, say) is tried again after this. */
const RETRY_MS = 1_000;

export class StreamMatcher {
  private readonly runs: ChainRuns;

  constructor(
    private readonly kv: Kv,
    private readonly clock: Clock,
    private readonly watchlist: Watchlist,
    private readonly pool: MatchPool,
    private readonly dispatcher: Pick<Dispatcher, 'prepare' | 'stage'>,
    private readonly build: BuildWebhook,
    private readonly log: Logger,
    private readonly stageChunk = STAGE_CHUNK,
  ) {
    this.runs = new ChainRuns((chain) => this.drain(chain), clock, RETRY_MS, (chain, err) => this.log.warn('matching failed; trying again', { chain, err }));
  }

  /** The follower's listeners: the durable event log, and a wake-up of this chain's drain. */
  events(): ChainEvents {
    return blockEventLog(this.kv, (chain) => this.wake(chain));
  }

  /** Drains what a previous run left (after a restart). */
  start(chains: readonly string[]): void {
    for (const c of chains) this.wake(c);
  }

  wake(chain: string): void {
    this.runs.wake(chain);
  }

  /** Resolves once every chain's drain is idle (tests, shutdown). */
  settled(): Promise<void> {
    return this.runs.settled();
  }

  async stop(): Promise<void> {
    this.runs.stop();
    await this.settled();
  }

  private get stopped(): boolean {
    return this.runs.stopped;
  }

  private async drain(chain: string): Promise<void> {
    while (!this.stopped) {
      const events = pendingEvents(this.kv, chain, EVENTS_PER_ROUND);
      if (events.length === 0) return;
      const built = this.emits(chain) ? await this.round(chain, events) : [];
      // Bodies are serialized before the transactions, a chunk per turn. They are staged `stageChunk` to a
      // transaction, in event order, each removing the events it finished and marking its streams in the others
      // (a crash between two repeats none and reorders none). Commits and their fsync happen on LMDB's write
      // thread: a synchronous one would wait there for the follower's commits, holding requests (issues 13 and 19).
      const ready = await this.dispatcher.prepare(built);
      const progress = new RoundProgress(this.kv, events, ready);
      await stageInChunks(this.kv, this.dispatcher, ready, this.stageChunk, (chunk) => {
        // The awaits above let the follower go on: a block that left the canonical chain meanwhile is not
        // delivered, and an event its replacement wrote under the same key stays for the next round.
        const items = chunk.filter((b) => this.kv.get<string>('canon', blockKey(chain, b.event.number)) === b.event.hash);
        progress.staged(chunk, items);
        return newsFirst(items);
      });
    }
  }

  /** Streams on a chain that stopped producing blocks, or that was removed from streams, or of a family without matching, emit nothing. */
  private emits(chain: string): boolean {
    const c = findChain(chain);
    const now = this.clock.now();
    return c !== undefined && hasMatching(c.family) && chainRemoval(c, 'blocks', now) === undefined && chainRemoval(c, 'streams', now) === undefined;
  }

  private async round(chain: string, events: readonly BlockEvent[]): Promise<Built[]> {
    // The set of this chain's streams as they are now; the events wait in the store while it compiles (at start, say).
    const compiled = await this.watchlist.compile(chain);
    if (compiled.streams.length === 0) return [];
    const numbers = [...new Set(events.map((e) => e.number))];
    const matches = await this.pool.match(chain, numbers, compiled.filter);
    if (this.log.enabled('debug')) this.log.debug('matched', { chain, numbers, version: compiled.filter.version, streams: compiled.streams.length, matched: matches.map((m) => m.size) });
    const items: Built[] = [];
    for (const e of events) {
      const matched = matches[numbers.indexOf(e.number)]!;
      if (matched.size === 0) continue;
      const key = blockKey(chain, e.number);
      // A block that left the canonical chain since it was announced is not delivered.
      if (this.kv.get<string>('canon', key) !== e.hash) continue;
      const stored = this.kv.getRaw('blocks', key);
      if (stored === undefined) continue;
      // A copy: a read from the store is valid only until the next one, and the builds below await.
      const block: MatchedBlock = { chain, number: e.number, bytes: Uint8Array.prototype.slice.call(stored), confirmed: e.kind === EventKind.Confirmed };
      for (const [index, refs] of matched) {
        const { id, tenantId } = compiled.streams[index]!;
        const stream = this.kv.get<StoredStream>('streams', streamKey(tenantId, id));
        // Streams that drop new blocks (paused, terminated) need nothing built; nor those a round cut short staged.
        if (e.staged.has(id) || stream === undefined || onNewWebhook(stream.status) === 'drop') continue;
        const payload = await this.buildFor(block, stream, refs, e.number);
        if (payload !== null) items.push({ streamId: id, payload, event: e });
      }
    }
    return items;
  }

  /**
   * One stream's body. A node that cannot be reached fails the round (it is tried again); any other
   * failure is this stream's alone: logged, and the block goes on for the others.
   */
  private async buildFor(block: MatchedBlock, stream: StoredStream, refs: readonly number[], number: number): Promise<Record<string, unknown> | null> {
    try {
      return await this.build(block, stream, refs);
    } catch (err) {
      if (err instanceof NodeUnavailable) throw err;
      this.log.error('a webhook could not be built; the stream gets nothing for this block', { chain: block.chain, block: number, streamId: stream.id, err });
      return null;
    }
  }
}

/**
 * The round's webhooks with the streams whose first one is a new block's (unconfirmed) ahead of those
 * confirming an older block: the dispatcher starts sending in this order, and a new block is the news
 * waited for. Each stream keeps its own webhooks in block order.
 */
export function newsFirst<T extends { streamId: string; event: { kind: EventKind } }>(items: readonly T[]): T[] {
  const byStream = new Map<string, T[]>();
  for (const item of items) {
    const list = byStream.get(item.streamId);
    if (list === undefined) byStream.set(item.streamId, [item]);
    else list.push(item);
  }
  const streams = [...byStream.values()];
  return [...streams.filter((l) => l[0]!.event.kind === EventKind.Seen), ...streams.filter((l) => l[0]!.event.kind !== EventKind.Seen)].flat();
}
