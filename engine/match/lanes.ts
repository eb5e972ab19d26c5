import type { Clock, Timer } from '../clock.js';
import { PARTITIONS } from '../cluster/partitions.js';
import type { Dispatcher, Staged } from '../delivery/dispatcher.js';
import { settleAfter, type EnqueueItem } from '../delivery/enqueue.js';
import { blockKey } from '../ingest/chain-store.js';
import type { Logger } from '../log.js';
import type { Kv } from '../ports.js';
import type { StoredStream } from '../streams/model.js';
import { EventKind, finishEvents, markStaged, stagedIn, type BlockEvent } from './block-events.js';
import { NodeUnavailable, type BuildWebhook, type CallBudget, type MatchedBlock } from './build.js';
import { NodeShare, OVER_BUDGET } from './node-share.js';

/**
 * A chain's block events on their way from the matcher to the delivery queue, built stream by stream.
 *
 * Each stream has a lane: its webhooks are built one block event after another, in the order the events were
 * handed (block number, then seen before confirmed), and lanes run side by side, so a stream slow to build (its
 * triggers' calls, say) holds no other stream's webhooks, of the same block or of the next. What the lanes build
 * goes to the chain's one writer, which stages it as it comes, up to `stageChunk` webhooks to a write transaction,
 * in the order it was handed over: each stream's webhooks stay in event order. An event stays in the store until
 * every stream it was handed to has had its webhook staged or built none: the transaction that stages a stream's
 * webhook marks the stream in its partition's marks (a round after a crash, or the partition's next owner, skips
 * it), and the one that finishes the event marks its partitions finished in it (engine/match/block-events.ts). So a crash anywhere repeats no webhook and reorders none of a stream's.
 */
export interface LaneOptions {
  /** Webhooks staged per write transaction (CHAINPOST_STAGE_CHUNK). */
  stageChunk: number;
  /** How long a stream's trigger calls for one block may take (CHAINPOST_TRIGGER_BUDGET_MS). */
  triggerBudgetMs: number;
  /** Node-ms per second a tenant's trigger calls on the chain may take on average (CHAINPOST_TRIGGER_SHARE_MS). */
  triggerShareMs: number;
  /** A build whose node could not be reached, or a transaction that failed, is tried again after this. */
  retryMs: number;
  /** Events every partition finished stay in the log (a cluster node's: kept for its retention). */
  keepEvents?: boolean;
  /** A cluster node's streams whose webhooks another node stages (a stream moving partitions). */
  elsewhere?: StagedElsewhere;
  /**
   * Whether this node owns a partition now (a cluster node's): a webhook built for a partition lost meanwhile is not
   * staged, its event staying for the partition's next owner, as a block that left the chain. One process: all.
   */
  owns?: (partition: number) => boolean;
}

/**
 * Where a stream's webhooks are staged when not here: a stream whose URL changed while webhooks waited keeps its
 * queue in its old partition until it drained (the order rule holds across the move), and on a cluster another node
 * may own that partition: its owner stages them, after those waiting (docs/decisions/cluster.md, Part 2).
 */
export interface StagedElsewhere {
  /** The partition whose owner stages the stream's webhooks when that is another node; undefined: staged here. */
  partitionOf(streamId: string): number | undefined;
  /** Has the partition's owner stage the webhooks; rejects when it could not (the batch is tried again). */
  stage(partition: number, items: EnqueueItem[]): Promise<unknown>;
}

/**
 * A lane that starts a block later than this many budgets after it was handed gives its triggers no time: a stream
 * whose calls take their whole budget on every block of a chain faster than that catches up instead of falling
 * further behind (and keeping the chain's events, and their blocks, in memory).
 */
export const LAG_BUDGETS = 10;

/** A block event handed to its streams' lanes, until the outcome of each is committed. */
interface OpenEvent {
  event: BlockEvent;
  /** The block the lanes build from (undefined for an event handed to no stream). */
  block: MatchedBlock | undefined;
  /** The partitions it was handed for (this node's, not finished yet): finished together once every stream's outcome is in. */
  partitions: readonly number[];
  /** Each stream's partition, which its staged webhook is marked in. */
  partitionOf: ReadonlyMap<string, number>;
  /** Service time it was handed. */
  handedAt: number;
  /** Streams it was handed to whose outcome is not committed yet. */
  waiting: number;
  /** A webhook of it was not staged (its block left the canonical chain, or its partition was lost): the event stays for the next round. */
  dropped: boolean;
}

/** A lane's outcome for one event: the stream's webhook, or null for none; no stream for an event handed to none. */
interface Outcome {
  open: OpenEvent;
  streamId?: string;
  payload: Record<string, unknown> | null;
  /** Not built: the block had left the canonical chain. */
  dropped?: boolean;
  /**
   * Set by a transaction that staged its webhook, read if its batch is tried again: whether a take-back that leaves its
   * mark leaves the webhook too (the mark and the webhook in one partition's unit, or the webhook staged by another
   * node's answer before).
   */
  markHolds?: boolean;
  /** Staged by the owner of the partition its stream's queue waits in, at its answer to an earlier try: never asked again. */
  forwarded?: boolean;
}

/** An event as handed: its key with the block it names (a reorg writes another block's event under the same key). */
const idOf = (e: BlockEvent): string => `${e.key}@${e.hash}`;

export class ChainLanes {
  private readonly open = new Map<string, OpenEvent>();
  /** Each stream's last build handed, which the next one waits for. */
  private readonly lanes = new Map<string, Promise<void>>();
  private readonly outcomes: Outcome[] = [];
  private writer: Promise<void> | undefined;
  private progressed: Array<() => void> = [];
  private readonly pauses = new Set<() => void>();
  /** The tenants' shares of the chain's node time for trigger calls. */
  private readonly share: NodeShare;

  constructor(
    private readonly chain: string,
    private readonly kv: Kv,
    private readonly clock: Clock,
    private readonly dispatcher: Pick<Dispatcher, 'prepare' | 'stage'>,
    private readonly build: BuildWebhook,
    private readonly log: Logger,
    private readonly opts: LaneOptions,
    private readonly stopped: () => boolean,
  ) {
    this.share = new NodeShare(clock, { msPerSecond: opts.triggerShareMs, burstMs: opts.triggerBudgetMs });
  }

  /** Events handed and not finished. */
  get size(): number {
    return this.open.size;
  }

  /** Whether this event (this block under its key) was handed and is not finished. */
  has(e: BlockEvent): boolean {
    return this.open.has(idOf(e));
  }

  /**
   * The partitions `owns` says that some of `events`, open here, waits for and was not handed for (adopted since it
   * was handed): it is to be handed again for them once its lanes finished it.
   */
  lacking(events: readonly BlockEvent[], owns: (partition: number) => boolean): Set<number> {
    const out = new Set<number>();
    for (const e of events) {
      const open = this.open.get(idOf(e));
      if (open === undefined) continue;
      for (let p = 0; p < PARTITIONS; p++) if (owns(p) && !e.done.has(p) && !open.partitions.includes(p)) out.add(p);
    }
    return out;
  }

  /**
   * Hands an event to the lanes of the streams to build it for, for `partitions` (the streams' and those that matched
   * none); with no stream, it is finished in the writer's next transaction.
   */
  hand(
    event: BlockEvent,
    block: MatchedBlock | undefined,
    streams: ReadonlyArray<{ stream: StoredStream; refs: readonly number[]; partition: number }>,
    partitions: readonly number[],
  ): void {
    const open: OpenEvent = {
      event,
      block,
      partitions,
      partitionOf: new Map(streams.map((s) => [s.stream.id, s.partition])),
      handedAt: this.clock.now(),
      waiting: streams.length,
      dropped: false,
    };
    this.open.set(idOf(event), open);
    if (streams.length === 0) return this.outcome({ open, payload: null });
    for (const { stream, refs } of streams) {
      const next = (this.lanes.get(stream.id) ?? Promise.resolve()).then(() => this.buildIn(open, stream, refs));
      this.lanes.set(stream.id, next);
      void next.then(() => {
        if (this.lanes.get(stream.id) === next) this.lanes.delete(stream.id);
      });
    }
  }

  /** Resolves once an event is finished (or the lanes halt). */
  progress(): Promise<void> {
    return new Promise((resolve) => this.progressed.push(resolve));
  }

  /** Resolves once every lane and the writer are idle. */
  async settled(): Promise<void> {
    while (this.lanes.size > 0 || this.writer !== undefined) await Promise.all([...this.lanes.values(), this.writer]);
  }

  /** The matcher stops: waits end, lanes build nothing more; what is not staged stays in the store's events. */
  halt(): void {
    for (const wake of [...this.pauses, ...this.progressed.splice(0)]) wake();
  }

  /** One stream's webhook for one event, once the stream's webhooks for the events before it are handed to the writer. Never throws. */
  private async buildIn(open: OpenEvent, stream: StoredStream, refs: readonly number[]): Promise<void> {
    const { event } = open;
    while (!this.stopped()) {
      try {
        // A block that left the canonical chain while its event waited here is not built (nor staged).
        if (this.kv.get<string>('canon', blockKey(this.chain, event.number)) !== event.hash)
          return this.outcome({ open, streamId: stream.id, payload: null, dropped: true });
        const payload = await this.withBudget(open, stream, (budget) => this.build(open.block!, stream, refs, budget));
        return this.outcome({ open, streamId: stream.id, payload });
      } catch (err) {
        // Any failure but a node out of reach is this stream's alone: logged, and the block goes on without it.
        if (!(err instanceof NodeUnavailable)) {
          this.log.error('a webhook could not be built; the stream gets nothing for this block', {
            chain: this.chain,
            block: event.number,
            streamId: stream.id,
            err,
          });
          return this.outcome({ open, streamId: stream.id, payload: null });
        }
        this.log.warn('a webhook could not be built: a node read failed; trying again', {
          chain: this.chain,
          block: event.number,
          streamId: stream.id,
          err,
        });
        await this.pause(this.opts.retryMs);
      }
    }
  }

  /**
   * Runs a build with the stream's call budget for this block: from now, and never past LAG_BUDGETS budgets after
   * the event was handed; each call within it waits for the tenant's share of the node's time.
   */
  private async withBudget<T>(open: OpenEvent, stream: StoredStream, run: (budget: CallBudget) => Promise<T>): Promise<T> {
    const ms = this.opts.triggerBudgetMs;
    const deadline = Math.min(this.clock.now() + ms, open.handedAt + LAG_BUDGETS * ms);
    let timer: Timer | undefined;
    const over = new Promise<void>((resolve) => (timer = this.clock.at(deadline, resolve)));
    const expired = (): boolean => this.clock.now() >= deadline;
    try {
      return await run({
        ms,
        over,
        expired,
        call: (c) => (expired() ? Promise.resolve(OVER_BUDGET) : this.share.run(stream.tenantId, c, over)),
      });
    } finally {
      timer!.cancel();
    }
  }

  private outcome(o: Outcome): void {
    this.outcomes.push(o);
    this.startWriter();
  }

  private startWriter(): void {
    if (this.writer !== undefined) return;
    this.writer = this.write().finally(() => {
      this.writer = undefined;
      if (this.outcomes.length > 0 && !this.stopped()) this.startWriter();
    });
  }

  private async write(): Promise<void> {
    while (this.outcomes.length > 0) {
      // A turn first: the lanes whose builds read no node finish meanwhile and share the transaction.
      await new Promise((resolve) => setImmediate(resolve));
      const batch = this.take();
      try {
        await this.commit(batch);
        this.outcomes.splice(0, batch.length);
      } catch (err) {
        // Tried again, and nothing handed after it goes first. Its transaction may have committed, a partition's unit
        // of it taken back after (its lease lost before the publish): what it staged for the others stays, marked.
        this.log.error('staging webhooks failed; trying again', { chain: this.chain, err });
        if (this.stopped()) return;
        await this.pause(this.opts.retryMs);
        if (this.stopped()) return;
      }
    }
  }

  /** The outcomes at the head, up to `stageChunk` webhooks (outcomes without one ride along). */
  private take(): Outcome[] {
    let webhooks = 0;
    let n = 0;
    for (; n < this.outcomes.length; n++) {
      if (this.outcomes[n]!.payload === null) continue;
      if (webhooks === this.opts.stageChunk) break;
      webhooks++;
    }
    return this.outcomes.slice(0, n);
  }

  /**
   * One write transaction: stages the batch's webhooks whose block is still canonical, removes the events the batch
   * finishes (all their streams' outcomes in) unless one of their webhooks was dropped, and marks the staged
   * webhooks' streams in the events that stay. Bodies are serialized before it (Dispatcher.prepare); the commit and
   * its fsync happen on LMDB's write thread.
   */
  private async commit(batch: readonly Outcome[]): Promise<void> {
    const marked = this.markedStaged();
    const built = batch.flatMap((o) =>
      o.payload === null || marked(o) ? [] : [{ streamId: o.streamId!, payload: o.payload, event: o.open.event, open: o.open, outcome: o }],
    );
    const ready = await this.dispatcher.prepare(built);
    const away = await this.stageElsewhere(ready);
    const dropped = new Set(batch.filter((o) => o.dropped === true).map((o) => o.open));
    let finished: OpenEvent[] = [];
    let staged: Staged | undefined;
    const commit = this.kv.transactAsync(() => {
      // The awaits before let the follower go on: a block that left the canonical chain meanwhile is not delivered;
      // nor, here, a webhook of a partition lost meanwhile (its units would stay in this store alone).
      const owns = this.opts.owns ?? (() => true);
      const kept = ready.filter(
        (w) =>
          this.kv.get<string>('canon', blockKey(this.chain, w.event.number)) === w.event.hash && owns(w.open.partitionOf.get(w.streamId)!),
      );
      const keptSet = new Set(kept);
      for (const w of ready) if (!keptSet.has(w)) dropped.add(w.open);
      const left = new Map<OpenEvent, number>();
      for (const o of batch) left.set(o.open, (left.get(o.open) ?? o.open.waiting) - (o.streamId === undefined ? 0 : 1));
      finished = [...left].filter(([, n]) => n === 0).map(([open]) => open);
      const removed = new Set(finished.filter((o) => !o.dropped && !dropped.has(o)));
      const keep = this.opts.keepEvents === true;
      finishEvents(
        this.kv,
        [...removed].map((o) => ({ event: o.event, partitions: o.partitions })),
        keep,
      );
      // An event kept for other owners is marked finished in the rows of the partitions it was built for, with the
      // webhooks (their next owner passes it over); one that goes needs no marks. Only with webhooks: the marks are
      // delivery rows, captured in the unit that stages them (an event finished with none is matched again by the
      // next owner, finding what it found here).
      if (kept.length > 0)
        markStaged(
          this.kv,
          kept.filter((w) => !removed.has(w.open)).map((w) => ({ ...w, partition: w.open.partitionOf.get(w.streamId)! })),
          keep ? [...removed].map((o) => ({ event: o.event, partitions: new Set(o.partitionOf.values()) })) : [],
        );
      const here = away.size === 0 ? kept : kept.filter((w) => !away.has(w));
      for (const w of away) w.outcome.markHolds = true;
      if (here.length > 0) {
        const order = newsFirst(here);
        const s = (staged = this.dispatcher.stage(order));
        // As staged: a retry reading the stream's partition later may find its queue moved on (its old one drained).
        order.forEach((w, i) => (w.outcome.markHolds = s.partitions[i] === w.open.partitionOf.get(w.streamId)));
      }
    });
    await settleAfter(commit, () => staged);
    for (const o of batch) if (o.streamId !== undefined) o.open.waiting--;
    for (const o of dropped) o.dropped = true;
    for (const o of finished) this.open.delete(idOf(o.event));
    if (finished.length > 0) for (const wake of this.progressed.splice(0)) wake();
  }

  /**
   * Whether an outcome's webhook is marked staged in its event (its stream's partition's row) by a try of its batch
   * that may have committed before it failed (sent, maybe, already); no read for an outcome no transaction staged.
   */
  private markedStaged(): (o: Outcome) => boolean {
    const rows = new Map<string, (streamId: string) => boolean>();
    return (o) => {
      // The mark is in the stream's partition's unit, its webhook in its queue's: in another partition (a stream
      // moving), that unit may have been taken back alone. Staged again then: sent twice at worst, never lost.
      if (o.markHolds !== true) return false;
      const partition = o.open.partitionOf.get(o.streamId!)!;
      const key = `${idOf(o.open.event)}#${partition}`;
      let marked = rows.get(key);
      if (marked === undefined) rows.set(key, (marked = stagedIn(this.kv, o.open.event, partition)));
      return marked(o.streamId!);
    };
  }

  /**
   * The webhooks of streams whose queue waits in a partition another node owns, staged by that owner before the batch
   * commits here (where they are marked staged with the others); answers them. A failure throws: the batch is tried
   * again, and what an owner answered staged then (`forwarded`) is neither asked again nor staged here.
   */
  private async stageElsewhere<
    W extends { streamId: string; payload: Record<string, unknown>; event: BlockEvent; open: OpenEvent; outcome: Outcome },
  >(ready: readonly W[]): Promise<Set<W>> {
    const away = new Set<W>();
    const elsewhere = this.opts.elsewhere;
    if (elsewhere === undefined) return away;
    const owns = this.opts.owns ?? (() => true);
    const byPartition = new Map<number, W[]>();
    for (const w of ready) {
      // Wherever its stream's queue is now (back here, say), its webhook is in the one it was forwarded to.
      if (w.outcome.forwarded === true) {
        away.add(w);
        continue;
      }
      const p = elsewhere.partitionOf(w.streamId);
      // A block that left the canonical chain is not delivered (checked again in the transaction); nor a webhook built
      // for a partition lost meanwhile: its stream's queue is not owned here either, but no other node stages it for
      // this one (the transaction drops it, the partition's next owner matches it: forwarded, it would not be marked
      // staged, and that owner would stage it a second time).
      if (
        p === undefined ||
        !owns(w.open.partitionOf.get(w.streamId)!) ||
        this.kv.get<string>('canon', blockKey(this.chain, w.event.number)) !== w.event.hash
      )
        continue;
      away.add(w);
      const list = byPartition.get(p);
      if (list === undefined) byPartition.set(p, [w]);
      else list.push(w);
    }
    // Every ask settled before a failure throws: a retry must not ask again an owner whose answer was still coming.
    const asked = await Promise.allSettled(
      [...byPartition].map(([p, ws]) =>
        elsewhere
          .stage(
            p,
            newsFirst(ws).map(({ streamId, payload }) => ({ streamId, payload })),
          )
          .then(() => {
            for (const w of ws) w.outcome.forwarded = true;
          }),
      ),
    );
    const failed = asked.find((a): a is PromiseRejectedResult => a.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    return away;
  }

  /** Waits `ms` of service time, or until the lanes halt. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        timer.cancel();
        this.pauses.delete(wake);
        resolve();
      };
      const timer = this.clock.at(this.clock.now() + ms, wake);
      this.pauses.add(wake);
    });
  }
}

/**
 * Webhooks staged together with the streams whose first one is a new block's (unconfirmed) ahead of those
 * confirming an older block: the dispatcher starts sending in this order, and a new block is the news waited
 * for. Each stream keeps its own webhooks in block order.
 */
export function newsFirst<T extends { streamId: string; event: { kind: EventKind } }>(items: readonly T[]): T[] {
  const byStream = new Map<string, T[]>();
  for (const item of items) {
    const list = byStream.get(item.streamId);
    if (list === undefined) byStream.set(item.streamId, [item]);
    else list.push(item);
  }
  const streams = [...byStream.values()];
  return [
    ...streams.filter((l) => l[0]!.event.kind === EventKind.Seen),
    ...streams.filter((l) => l[0]!.event.kind !== EventKind.Seen),
  ].flat();
}
