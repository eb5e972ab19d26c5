import { ChainRuns } from '../ingest/chain-runs.js';
import type { Clock } from '../clock.js';
import { findChain, type ChainFamily } from '../chains/registry.js';
import { chainRemoval } from '../chains/removals.js';
import { TRIGGER_BUDGET_MS, TRIGGER_SHARE_MS } from '../streams/limits.js';
import { streamKey, type Dispatcher } from '../delivery/dispatcher.js';
import { STAGE_CHUNK } from '../delivery/stage-chunks.js';
import type { ChainEvents } from '../ingest/follow.js';
import { PARTITIONS } from '../cluster/partitions.js';
import { blockKey } from '../ingest/chain-store.js';
import type { Logger } from '../log.js';
import type { Kv } from '../ports.js';
import type { MatchPool } from './ports.js';
import type { StoredStream } from '../streams/model.js';
import { onNewWebhook } from '../streams/transitions.js';
import { EventKind, blockEventLog, eventKey, forgetFinished, scanEvents, stagedIn, writtenWith, type BlockEvent } from './block-events.js';
import { ChainLanes, type StagedElsewhere } from './lanes.js';
import type { BuildWebhook, MatchedBlock } from './build.js';
import type { Watchlist } from './watchlist.js';

export { NodeUnavailable, type BuildWebhook, type CallBudget, type MatchedBlock } from './build.js';

/**
 * One builder over every family: each block goes to its chain family's, which takes that family's streams
 * (a chain's filter set holds only streams of its family, so the stream is one).
 */
export function byFamily(builders: Partial<Record<ChainFamily, BuildWebhook<never>>>): BuildWebhook {
  return (block, stream, refs, budget) => {
    const family = findChain(block.chain)?.family;
    const build = (family === undefined ? undefined : builders[family]) as BuildWebhook | undefined;
    if (build === undefined) throw new Error(`no webhook builder for chain ${block.chain}`);
    return build(block, stream, refs, budget);
  };
}

/** Events taken per round: a few blocks' worth. */
const EVENTS_PER_ROUND = 32;
/**
 * Events handed to the lanes and not finished, per chain, at most: each holds its block in memory until its
 * slowest stream's webhook is staged. Past it the drain waits for lanes to finish some (a lane lags at most
 * LAG_BUDGETS trigger budgets behind its chain, so this is reached only by builds slow for other reasons).
 */
const MAX_OPEN_EVENTS = 8 * EVENTS_PER_ROUND;
/** A round or a build that failed (the node did not answer a metadata read, say) is tried again after this. */
const RETRY_MS = 1_000;

export interface MatcherOptions {
  /** Webhooks staged per write transaction (CHAINPOST_STAGE_CHUNK). */
  stageChunk?: number;
  /** How long a stream's trigger calls for one block may take, ms (CHAINPOST_TRIGGER_BUDGET_MS). */
  triggerBudgetMs?: number;
  /** Node-ms per second a tenant's trigger calls on one chain may take on average (CHAINPOST_TRIGGER_SHARE_MS). */
  triggerShareMs?: number;
  /**
   * Awaited before each round (a cluster node: until it has applied the control log as far as the log reaches, a
   * bounded wait), so a change acknowledged on any node before a block was stored applies to that block. One process: none.
   */
  caughtUp?: () => Promise<unknown>;
  /**
   * Blocks a block event is kept for behind its chain's newest seen when not every partition finished it here (a
   * cluster node: the partitions it does not own are matched on other nodes, and one may come to own them). One
   * process: none, an event goes once every partition finished it.
   */
  retainEvents?: number;
}

/**
 * Blocks become webhooks: the matcher drains each chain's block events in
 * order, has the pool test their probe columns against the chain's filter set,
 * and hands each event to the lanes of the streams it matched (ChainLanes):
 * each stream's body is built from the block record in its own lane and
 * enqueued in a transaction that marks it in its event, or removes the events
 * it finishes.
 */
export class StreamMatcher {
  private readonly runs: ChainRuns;
  private readonly lanes = new Map<string, ChainLanes>();
  /** Every chain whose drain was woken: a partition adopted wakes them all. */
  private readonly chains = new Set<string>();
  /**
   * A node keeping events for other owners (retainEvents): per chain, where its drain starts reading them, and the
   * partitions it was read for. Every event before it was finished for those partitions (read again at every round,
   * the events kept, a thousand blocks' worth, would cost each block tens of milliseconds), not for others: a round
   * owning one more, a partition adopted, or a wake from outside this matcher's events() reads from the first again.
   */
  private readonly scanFrom = new Map<string, { key: string; owned: ReadonlySet<number> }>();
  /**
   * Per chain, the events written through events() whose write has not been read back committed, by key: its token.
   * Events do not come in key order (a block's confirmation comes below newer blocks), so a drain starts at the
   * lowest of them: one read before its write committed is read again after.
   */
  private readonly unread = new Map<string, Map<string, number>>();
  private writes = 0;
  private readonly owns: (partition: number) => boolean;
  private readonly partitionOf: (stream: StoredStream) => number;
  private readonly elsewhere: StagedElsewhere | undefined;
  /** The adoptions under way (what this node finished for each partition being forgotten). */
  private adopting: Promise<unknown> = Promise.resolve();
  /**
   * Partitions adopted whose forgetting is not committed yet (adoptions under way of each): not matched until it is,
   * or the events this node finished for them before would be matched after newer ones.
   */
  private readonly forgetting = new Map<number, number>();

  private readonly kv: Kv;
  private readonly store: Kv;
  private readonly clock: Clock;
  private readonly watchlist: Watchlist;
  private readonly pool: MatchPool;
  private readonly dispatcher: Pick<Dispatcher, 'prepare' | 'stage'>;
  private readonly build: BuildWebhook;
  private readonly log: Logger;
  private readonly opts: MatcherOptions;

  constructor(parts: {
    kv: Kv;
    /**
     * The store as is, when `kv` is delivery's capture (a cluster node's): the block-event log, and the marks its cut
     * removes, are this node's own (every node cuts its log alike), no partition's rows to publish.
     */
    store?: Kv;
    clock: Clock;
    watchlist: Watchlist;
    /** Where probe columns are tested against filter sets (the worker pool, or this thread for small rounds). */
    pool: MatchPool;
    /** Where the built webhooks are staged. */
    dispatcher: Pick<Dispatcher, 'prepare' | 'stage'>;
    build: BuildWebhook;
    log: Logger;
    opts?: MatcherOptions;
    /** Whether this node matches and delivers a partition now (its owner); one process: all. */
    owns?: (partition: number) => boolean;
    /** A stream's partition (partitionOf over its tenant and webhook URL); one process: any. */
    partitionOf?: (stream: StoredStream) => number;
    /** A cluster node's streams whose webhooks another node stages (a stream moving partitions). */
    elsewhere?: StagedElsewhere;
  }) {
    ({
      kv: this.kv,
      clock: this.clock,
      watchlist: this.watchlist,
      pool: this.pool,
      dispatcher: this.dispatcher,
      build: this.build,
      log: this.log,
    } = parts);
    this.store = parts.store ?? this.kv;
    this.opts = parts.opts ?? {};
    this.owns = parts.owns ?? (() => true);
    this.partitionOf = parts.partitionOf ?? (() => 0);
    this.elsewhere = parts.elsewhere;
    this.runs = new ChainRuns(
      (chain) => this.drain(chain),
      this.clock,
      RETRY_MS,
      (chain, err) => this.log.warn('matching failed; trying again', { chain, err }),
    );
  }

  /** The follower's listeners: the durable event log, and a wake-up of this chain's drain. */
  events(): ChainEvents {
    const retain = this.opts.retainEvents;
    if (retain === undefined) return blockEventLog(this.store, (chain) => this.wake(chain));
    const token = (chain: string, key: string): number => {
      let unread = this.unread.get(chain);
      if (unread === undefined) this.unread.set(chain, (unread = new Map()));
      unread.set(key, ++this.writes);
      return this.writes;
    };
    const log = blockEventLog(this.store, (chain) => this.woken(chain), retain, token);
    return {
      ...log,
      seen: (chain, number, hash) => {
        log.seen(chain, number, hash);
        // The log's cut: the events more than `retain` blocks behind go.
        const unread = this.unread.get(chain);
        if (unread === undefined || number <= retain) return;
        const cut = blockKey(chain, number - retain);
        for (const key of unread.keys()) if (key < cut) unread.delete(key);
      },
      reorged: (chain, from, to) => {
        log.reorged(chain, from, to);
        for (let n = from; n <= to; n++) this.unread.get(chain)?.delete(eventKey(chain, n, EventKind.Seen));
      },
    };
  }

  /**
   * A partition this node owns from now on: each chain's drain matches the events it has not finished, from where its
   * last owner left them (the partition's marks), this node's own earlier ownership included (forgetFinished).
   */
  adopt(partition: number): void {
    this.forgetting.set(partition, (this.forgetting.get(partition) ?? 0) + 1);
    const wakeAll = (): void => {
      const left = this.forgetting.get(partition)! - 1;
      if (left === 0) this.forgetting.delete(partition);
      else this.forgetting.set(partition, left);
      for (const c of this.chains) this.wake(c);
    };
    const forgot = this.kv
      .transactAsync(() => forgetFinished(this.kv, partition))
      .then(wakeAll, (err: unknown) => {
        this.log.error('matching: what this node finished for an adopted partition could not be forgotten', { partition, err });
        wakeAll();
      });
    this.adopting = Promise.all([this.adopting, forgot]);
  }

  /**
   * A partition this node no longer owns (owns(partition) already says so): no event is handed for it any more;
   * resolves once what was handed is staged or given up (the hand-over waits for it).
   */
  drop(_partition: number): Promise<void> {
    return this.settled();
  }

  /** Drains what a previous run left (after a restart). */
  start(chains: readonly string[]): void {
    for (const c of chains) this.wake(c);
  }

  /** Drains the chain's events from the first: what woke it may have written events elsewhere than through events(). */
  wake(chain: string): void {
    this.scanFrom.delete(chain);
    this.woken(chain);
  }

  /** Drains the chain's events from where the last drain stopped (events() wrote since). */
  private woken(chain: string): void {
    this.chains.add(chain);
    this.runs.wake(chain);
  }

  /**
   * Where the chain's drain for the partitions `owned` starts reading its events: where the last one stopped (if it
   * read them for these partitions, or more), or an event written since, below it.
   */
  private startOf(chain: string, owned: ReadonlySet<number>): string {
    const last = this.scanFrom.get(chain);
    let from = last !== undefined && [...owned].every((p) => last.owned.has(p)) ? last.key : `${chain}/`;
    const unread = this.unread.get(chain);
    for (const [key, w] of unread ?? []) {
      if (key < from) from = key;
      // Read back as written: committed, so read from here on by this scan.
      if (writtenWith(this.kv, key, w)) unread!.delete(key);
    }
    return from;
  }

  /** Resolves once every chain's drain and lanes are idle (tests, shutdown). */
  async settled(): Promise<void> {
    // A drain may start while the lanes settle (a block committed meanwhile): until neither runs.
    do {
      await this.adopting;
      await this.runs.settled();
      await Promise.all([...this.lanes.values()].map((l) => l.settled()));
    } while (this.runs.busy);
  }

  async stop(): Promise<void> {
    this.runs.stop();
    for (const l of this.lanes.values()) l.halt();
    await this.settled();
  }

  private get stopped(): boolean {
    return this.runs.stopped;
  }

  private async drain(chain: string): Promise<void> {
    const lanes = this.lanesOf(chain);
    while (!this.stopped) {
      if (lanes.size >= MAX_OPEN_EVENTS) {
        await lanes.progress();
        continue;
      }
      // The partitions owned (and adopted) as the round starts: one adopted while it runs (its awaits) waits for the next round.
      const owned = new Set<number>();
      for (let p = 0; p < PARTITIONS; p++) if (this.owns(p) && !this.forgetting.has(p)) owned.add(p);
      const owns = (p: number): boolean => owned.has(p) && this.owns(p);
      // The oldest events not handed yet (the lanes may still hold older ones, or a reorg's block under a handed key).
      const { events: pending, next } = scanEvents(this.kv, chain, lanes.size + EVENTS_PER_ROUND, owns, this.startOf(chain, owned));
      if (this.opts.retainEvents !== undefined) this.scanFrom.set(chain, { key: next, owned });
      // An event handed before a partition was adopted is handed again for it once its lanes finished it; till then
      // no newer event is handed for that partition, so each of its streams gets its webhooks in event order.
      const behind = lanes.lacking(pending, owns);
      const handable = (p: number): boolean => owns(p) && !behind.has(p);
      const events = pending.filter((e) => !lanes.has(e) && unfinished(e, handable)).slice(0, EVENTS_PER_ROUND);
      if (events.length === 0) {
        // Woken again once an event is finished, or by the next block's (not held up meanwhile).
        if (behind.size > 0) void lanes.progress().then(() => this.wake(chain));
        return;
      }
      await this.round(chain, events, lanes, handable);
    }
  }

  private lanesOf(chain: string): ChainLanes {
    let l = this.lanes.get(chain);
    if (l === undefined) {
      const opts = {
        stageChunk: this.opts.stageChunk ?? STAGE_CHUNK,
        triggerBudgetMs: this.opts.triggerBudgetMs ?? TRIGGER_BUDGET_MS,
        triggerShareMs: this.opts.triggerShareMs ?? TRIGGER_SHARE_MS,
        retryMs: RETRY_MS,
        keepEvents: this.opts.retainEvents !== undefined,
        ...(this.elsewhere === undefined ? {} : { elsewhere: this.elsewhere }),
        owns: this.owns,
      };
      this.lanes.set(
        chain,
        (l = new ChainLanes(chain, this.kv, this.clock, this.dispatcher, this.build, this.log, opts, () => this.stopped)),
      );
    }
    return l;
  }

  /** Streams on a chain that stopped producing blocks, or that was removed from streams, or of a family without matching, emit nothing. */
  private emits(chain: string): boolean {
    const c = findChain(chain);
    const now = this.clock.now();
    return (
      c !== undefined &&
      this.watchlist.hasMatching(c.family) &&
      chainRemoval(c, 'blocks', now) === undefined &&
      chainRemoval(c, 'streams', now) === undefined
    );
  }

  /** Hands each event to the lanes of the streams it matched, in event order; an event matching none is handed to none. */
  private async round(
    chain: string,
    events: readonly BlockEvent[],
    lanes: ChainLanes,
    handable: (partition: number) => boolean,
  ): Promise<void> {
    if (this.opts.caughtUp !== undefined) await this.opts.caughtUp();
    // The set of this chain's streams as they are now; the events wait in the store while it compiles (at start, say).
    const compiled = this.emits(chain) ? await this.watchlist.compile(chain) : undefined;
    const numbers = [...new Set(events.map((e) => e.number))];
    const matches = compiled === undefined || compiled.streams.length === 0 ? [] : await this.pool.match(chain, numbers, compiled.filter);
    if (compiled !== undefined && this.log.enabled('debug'))
      this.log.debug('matched', {
        chain,
        numbers,
        version: compiled.filter.version,
        streams: compiled.streams.length,
        matched: matches.map((m) => m.size),
      });
    for (const e of events) {
      // The partitions this node owns and has not finished the event for: only their streams' webhooks are built here.
      const partitions: number[] = [];
      for (let p = 0; p < PARTITIONS; p++) if (handable(p) && !e.done.has(p)) partitions.push(p);
      const mine = new Set(partitions);
      const matched = matches[numbers.indexOf(e.number)];
      const key = blockKey(chain, e.number);
      // A block that left the canonical chain since it was announced is not delivered.
      const stored =
        matched === undefined || matched.size === 0 || this.kv.get<string>('canon', key) !== e.hash
          ? undefined
          : this.kv.getRaw('blocks', key);
      if (stored === undefined) {
        lanes.hand(e, undefined, [], partitions);
        continue;
      }
      // A copy: a read from the store is valid only until the next one, and the builds await.
      const block: MatchedBlock = {
        chain,
        number: e.number,
        bytes: Uint8Array.prototype.slice.call(stored),
        confirmed: e.kind === EventKind.Confirmed,
      };
      const streams: Array<{ stream: StoredStream; refs: readonly number[]; partition: number }> = [];
      const staged = new Map<number, (streamId: string) => boolean>();
      for (const [index, refs] of matched!) {
        const listed = compiled!.streams[index];
        // An index a stored base keeps for a stream removed, or moved to other chains, since.
        if (listed === undefined) continue;
        const { id, tenantId } = listed;
        const stream = this.kv.get<StoredStream>('streams', streamKey(tenantId, id));
        // Streams that drop new blocks (paused, terminated) need nothing built; nor those of partitions owned elsewhere.
        if (stream === undefined || onNewWebhook(stream.status) === 'drop') continue;
        const partition = this.partitionOf(stream);
        if (!mine.has(partition)) continue;
        // Nor those staged before a crash, or by the partition's owner before this node.
        let marked = staged.get(partition);
        if (marked === undefined) staged.set(partition, (marked = stagedIn(this.kv, e, partition)));
        if (marked(id)) continue;
        streams.push({ stream, refs, partition });
      }
      lanes.hand(e, block, streams, partitions);
    }
  }
}

/** Whether some partition `handable` says the event was not finished for. */
function unfinished(e: BlockEvent, handable: (partition: number) => boolean): boolean {
  for (let p = 0; p < PARTITIONS; p++) if (handable(p) && !e.done.has(p)) return true;
  return false;
}
