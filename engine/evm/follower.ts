import type { Clock, Timer } from '../clock.js';
import type { Logger } from '../log.js';
import { NodeError, type Kv, type Upstream } from '../ports.js';
import { evmBlockStore, isNullResult, type EvmIngestPool, type PreparedBlock } from './prepared.js';
import { blockKey, pruneBlock } from '../ingest/chain-store.js';
import { publishedBlocks, rollBackUnit, statesAfter, storeUnit, type StoredListener } from '../ingest/commit.js';
import { SyncLoop, prunable, rawCall, type ChainEvents, type ChainFollower, type FollowerStatus } from '../ingest/follow.js';
import type { BackfillStatus } from '../ingest/backfill.js';
import { ChainStart, floorOf, type StartBlock, type StartState } from '../ingest/chain-start.js';

/**
 * Follows one EVM chain block by block into the store: each block with its
 * receipts and call traces, written in one transaction with its probe column and
 * transfer indexes. This thread fetches the node's answers and commits; the
 * worker pool parses and encodes them (engine/evm/prepared.ts), and commits
 * happen on LMDB's write thread, so neither holds up a request. Parent hashes
 * catch reorgs: the store rolls back to the fork point and ingests the new branch. Blocks are announced as seen, then as
 * confirmed once `confirmations` deep, in order and only while canonical. State
 * is kept in the store, so a restart resumes after the last committed block.
 * Given a start block, a chain followed for the first time is backfilled from
 * there to the node's head then: those blocks are stored (and indexed) but
 * announced to no listener, as history no stream asked for.
 */

/** The shared head, confirmed, pruned and backfill (engine/ingest/chain-start.ts), and the tracer. */
export interface ChainState extends StartState {
  /** Whether the node answers debug_traceBlockByNumber with the callTracer. */
  tracer: boolean | null;
}

/** An EVM chain's status: the shared fields, and whether internal transactions and the newHeads subscription work. */
export interface EvmFollowerStatus extends FollowerStatus {
  internalTransactions: boolean | null;
  subscription: boolean;
  /** The backfill's progress; null when the chain has none (see ChainState.backfill) or is not started yet. */
  backfill: BackfillStatus | null;
}

/** Blocks fetched and prepared at once while catching up (one at a time at the head). */
export const CATCH_UP_BATCH = 16;
/**
 * Blocks per atomic unit of writes while catching up: each is handed to LMDB's write thread whole (some
 * 500 index rows and 300 KB of record per mainnet block), and the follower moves on to the next before
 * the last is durable, up to COMMITS_IN_FLIGHT of them.
 */
export const COMMIT_BLOCKS = 4;
/**
 * Units of writes handed to the write thread and not yet durable. A commit and its fsync took ~40 ms for 4
 * mainnet blocks here: waiting for each before the next held the catch-up to ~100 blocks/s while the
 * cores idled. lmdb-js commits what was queued meanwhile in its next transaction.
 */
const COMMITS_IN_FLIGHT = 4;

export class EvmFollower implements ChainFollower {
  /** As of the writes handed to the store (what the next block builds on); `durable` lags it while commits are in flight. */
  private state: ChainState;
  /** As of the last durable commit: what /health reports and listeners may read. */
  private durable: ChainState;
  /** Hashes of the blocks handed to the store whose commit is not yet durable (not readable there yet), by number. */
  private unreadable = new Map<number, string>();
  /** Commits handed to the write thread, not yet durable, oldest first. */
  private inFlight: Array<Promise<void>> = [];
  /** Units of writes handed to the write thread so far, and the latest of them known durable. */
  private handedOver = 0;
  private durableSeq = 0;
  private readonly loop: SyncLoop;
  private resubscribe: Timer | undefined;
  private unsubscribe: (() => void) | undefined;
  /** Whether the node accepted the newHeads subscription (and it is still open). */
  private subscribed = false;
  /** The highest block the node announced (newHeads or eth_blockNumber); −1 before the first. */
  private announced = -1;
  private rolledBack = 0;
  /** The highest block newHeads announced since the last sync took it (−1: none). */
  private hinted = -1;
  /** The head when the listeners were last told what is durable. */
  private woken = -1;
  /** Where the chain starts if it is new to the store, and its backfill's progress. */
  private readonly chainStart: ChainStart;

  constructor(
    private readonly chain: string,
    private readonly upstream: Upstream,
    private readonly kv: Kv,
    private readonly clock: Clock,
    private readonly events: ChainEvents,
    private readonly log: Logger,
    private readonly opts: {
      confirmations: number;
      pollMs: number;
      /** Full blocks kept (default all). */
      retention?: number;
      /** Service time at which the chain stops producing blocks (a registry removal): following ends there. */
      until?: number;
      /** Where the node's answers are parsed and encoded (the server's worker pool). */
      pool: EvmIngestPool;
      /**
       * Where a chain not in the store yet starts: this block, backfilled up to the node's head at the
       * first sync ('head': that head alone). A chain in the store keeps its state whatever this says.
       * Undefined: block 0, every block announced (no backfill).
       */
      startBlock?: StartBlock;
      /** Told what was stored once it is durable (a cluster's node publishes it). */
      stored?: StoredListener;
    },
  ) {
    this.chainStart = new ChainStart(chain, kv, clock, log, opts.startBlock, () => this.durable);
    this.state = this.durable = this.stored();
    const until = opts.until;
    this.loop = new SyncLoop(
      chain,
      log,
      clock,
      opts.pollMs,
      () => this.round(),
      () => this.prune(),
      until === undefined
        ? undefined
        : {
            at: until,
            end: () => {
              this.log.warn('the chain no longer produces blocks: stopped following it', {
                chain: this.chain,
                head: this.state.head,
                since: new Date(until).toISOString(),
              });
              this.stop();
            },
          },
    );
  }

  /** The chain's state as the store holds it (a new chain's before its first block). */
  private stored(): ChainState {
    return this.kv.get<ChainState>('chainState', this.chain) ?? { head: -1, confirmed: -1, tracer: null, pruned: -1 };
  }

  start(): void {
    this.chainStart.watch();
    if (this.upstream.subscribeHeads !== undefined) this.subscribe();
    this.loop.start();
  }

  stop(): void {
    this.loop.stop();
    this.chainStart.stop();
    this.resubscribe?.cancel();
    this.unsubscribe?.();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  status(): EvmFollowerStatus {
    return {
      chain: this.chain,
      head: this.durable.head,
      confirmed: this.durable.confirmed,
      nodeHead: this.announced,
      oldest: this.durable.pruned + 1,
      internalTransactions: this.state.tracer,
      ...this.loop.health.status(),
      subscription: this.subscribed,
      backfill: this.chainStart.status(),
    };
  }

  /** A fresh chain's first sync: its start, saved before any block (engine/ingest/chain-start.ts). */
  private async begin(nodeHead: number): Promise<void> {
    this.state = this.durable = await this.chainStart.begin<ChainState>(nodeHead, { tracer: this.state.tracer });
    this.chainStart.watch();
  }

  /**
   * The node's latest block, when it is known to be current: while the newHeads subscription is open, a
   * new block is announced as it comes. Undefined otherwise (polling alone may be a poll interval late).
   */
  nodeLatest(): number | undefined {
    return this.subscribed && !this.stopped && this.announced >= 0 ? this.announced : undefined;
  }

  /** How many times the store rolled back (a reorg) since the start: what was read of its blocks before the last one may be stale. */
  reorgs(): number {
    return this.rolledBack;
  }

  /**
   * Catches up to the node's head now; resolves when done (tests, and each wake-up). `announced`: a
   * block newHeads just announced, read at once without asking the node for its head and re-checking
   * ours (two round trips on the way to its webhook): step() checks the new block links to our head.
   */
  sync(announced?: number): Promise<void> {
    if (announced !== undefined && announced > this.hinted) this.hinted = announced;
    return this.loop.sync();
  }

  /** One round: to the block newHeads announced, or else to the node's head (back to the fork point first on a reorg). */
  private async round(): Promise<void> {
    const hinted = this.hinted;
    this.hinted = -1;
    let target = hinted;
    if (hinted <= this.state.head || this.chainStart.fresh) {
      target = parseInt(await this.upstream.call<string>('eth_blockNumber', []), 16);
      this.announce(target);
      // A reorg may replace blocks without adding any: check our head is still the node's.
      if (this.chainStart.fresh) await this.begin(target);
      else await this.rollBack();
    }
    await this.catchUp(target);
  }

  /** The highest announcement wins: an eth_blockNumber answer sent before a newHeads push must not move it back. */
  private announce(n: number): void {
    if (Number.isSafeInteger(n) && n > this.announced) this.announced = n;
  }

  private subscribe(): void {
    if (this.stopped) return;
    this.unsubscribe = this.upstream.subscribeHeads!({
      onHead: (n) => {
        this.announce(n);
        void this.sync(n);
      },
      onOpen: () => void (this.subscribed = true),
      onClose: () => {
        this.unsubscribe = undefined;
        this.subscribed = false;
        // Polling goes on meanwhile; try the subscription again after a while.
        if (!this.stopped) this.resubscribe = this.clock.at(this.clock.now() + 5_000, () => this.subscribe());
      },
    });
  }

  /**
   * Steps up to `target`, COMMIT_BLOCKS at a time, with the next CATCH_UP_BATCH blocks fetched and
   * prepared meanwhile: the pool has blocks to work on while this thread commits. What was fetched ahead
   * is dropped when a step comes up short (a block the node does not have yet, a reorg).
   */
  private async catchUp(target: number): Promise<void> {
    const ahead = new Map<number, Promise<PreparedBlock | null>>();
    try {
      await this.catchUpFrom(ahead, target);
    } finally {
      await this.drain();
      this.wake();
    }
  }

  private async catchUpFrom(ahead: Map<number, Promise<PreparedBlock | null>>, target: number): Promise<void> {
    while (!this.stopped && this.state.head < target) {
      const first = this.state.head + 1;
      // The blocks of this step and CATCH_UP_BATCH more: as many are in flight while it commits.
      for (let n = first; n <= Math.min(target, first + COMMIT_BLOCKS + CATCH_UP_BATCH - 1); n++)
        if (!ahead.has(n)) ahead.set(n, this.fetchAhead(n));
      const numbers = Array.from({ length: Math.min(COMMIT_BLOCKS, target - first + 1) }, (_, i) => first + i);
      const fetched = await Promise.all(numbers.map((n) => ahead.get(n)!));
      for (const n of numbers) ahead.delete(n);
      // Listeners that keep pace with a catch-up (the Data API's indexes) come within a batch of it first.
      const paced = this.events.pace?.(this.chain, first - 1);
      if (paced !== undefined) await paced;
      // Stopped meanwhile (a shutdown): nothing more is written.
      if (this.stopped) break;
      const moved = await this.step(first, fetched);
      if (this.state.head !== numbers.at(-1)) ahead.clear();
      if (this.durable.head - this.woken >= CATCH_UP_BATCH) this.wake();
      // A node may announce a block it cannot serve yet (behind a load balancer): then wait for the next wake-up.
      if (!moved) break;
    }
  }

  /** A block fetched ahead may be dropped unread: its failure, if it is needed, comes again when it is fetched anew. */
  private fetchAhead(n: number): Promise<PreparedBlock | null> {
    const block = this.fetch(n);
    block.catch(() => {});
    return block;
  }

  /**
   * Ingests fetched blocks from `first` on in one transaction, as far as they link up from our head, or
   * rolls back when the node's chain no longer extends ours. False when nothing moved.
   */
  private async step(first: number, fetched: ReadonlyArray<PreparedBlock | null>): Promise<boolean> {
    // Keep the prefix that links up, parent by parent, from our head.
    const batch: PreparedBlock[] = [];
    let parent = first === 0 ? undefined : this.hashOf(first - 1);
    for (const [i, f] of fetched.entries()) {
      if (f === null) break;
      if (f.number !== first + i) throw new Error(`asked for block ${first + i}, the node sent block ${f.number}`);
      if (parent !== undefined && f.parentHash !== parent) {
        if (i === 0) {
          await this.drain();
          return this.rollBack();
        }
        break;
      }
      parent = f.hash;
      batch.push(f);
    }
    if (batch.length === 0) return false;
    this.commitBlocks(batch);
    // Bounded: the oldest commit must be durable before more are handed over.
    if (this.inFlight.length >= COMMITS_IN_FLIGHT) await this.inFlight[0];
    return true;
  }

  /**
   * Writes linked blocks and their announcements, and moves the head to the last, as one atomic unit that
   * LMDB's write thread applies and commits (this thread only hands it the bytes the pool prepared); the
   * follower goes on from there at once, and the commit joins `inFlight` until it is durable.
   */
  private commitBlocks(blocks: readonly PreparedBlock[]): void {
    for (const b of blocks) this.unreadable.set(b.number, b.hash);
    const before = this.state;
    const after = statesAfter(before, blocks, this.opts.confirmations);
    const next = after.at(-1)!;
    // Listeners act in the same unit (a matcher's log of the blocks to read), and each block's confirmations
    // follow it as they would one block at a time: a restart neither repeats nor loses one.
    const written = this.kv.writeBehind(() =>
      storeUnit(this.kv, this.chain, evmBlockStore, blocks, before, after, this.events, (n) => this.hashOf(n)),
    );
    this.state = next;
    // LMDB applies the units in the order handed over, so once one is durable all before it are. Their
    // promises settled in order where measured; the sequence number keeps a late settlement from moving durable back.
    const seq = ++this.handedOver;
    const done: Promise<void> = written.then(() => {
      this.opts.stored?.blocks(publishedBlocks(this.chain, blocks, before, after));
      if (seq > this.durableSeq) {
        this.durableSeq = seq;
        for (const n of this.unreadable.keys()) if (n <= next.head) this.unreadable.delete(n);
        this.durable = { ...next, tracer: this.state.tracer };
        this.chainStart.note(next.head);
        // Listeners the catch-up waits for (pace) read what is durable: told of it as it comes, not after the wait.
        if (this.durable.head - this.woken >= CATCH_UP_BATCH) this.wake();
      }
    });
    const settle = (): void => void this.inFlight.splice(this.inFlight.indexOf(done), 1);
    done.then(settle, settle); // seen by drain() or by the step that waits for it
    this.inFlight.push(done);
  }

  /**
   * Waits until every commit handed over is durable. When one failed, what was handed after it is not
   * known to be written: the follower starts again from what the store holds.
   */
  private async drain(): Promise<void> {
    const pending = this.inFlight.slice();
    const results = await Promise.allSettled(pending);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed === undefined) return;
    this.state = this.durable = this.stored();
    this.unreadable.clear();
    throw (failed as PromiseRejectedResult).reason;
  }

  /**
   * Runs `write` and saves `next` in one transaction, committed on LMDB's write thread; the follower moves
   * to `next` only once that is durable. A throw in `write` takes back everything it wrote. (Pruning: it
   * reads what it removes.)
   */
  private async commit(next: ChainState, write: () => void): Promise<void> {
    await this.kv.transactAsync(() => {
      write();
      this.kv.put('chainState', this.chain, next);
    });
    this.state = this.durable = next;
  }

  /** A canonical block's hash: from memory while the commit holding it is in flight (not readable in the store yet), else from the store. */
  private hashOf(n: number): string | undefined {
    return this.unreadable.get(n) ?? this.kv.get<string>('canon', blockKey(this.chain, n));
  }

  /**
   * Tells the listeners that the blocks announced so far are durable. While catching up, once per
   * CATCH_UP_BATCH blocks and at the end, not at every commit: a listener's own synchronous transaction (the
   * matcher's) would wait for the write thread and fsync on this thread at every commit.
   */
  private wake(): void {
    if (this.woken === this.durable.head) return;
    this.woken = this.durable.head;
    this.events.committed?.(this.chain);
  }

  /** A block ready to write, made in the pool from the node's answers as they came; null while the node does not have it. */
  private async fetch(n: number): Promise<PreparedBlock | null> {
    const tag = `0x${n.toString(16)}`;
    const [block, receipts, traces] = await Promise.allSettled([
      rawCall(this.upstream, 'eth_getBlockByNumber', [tag, true]),
      rawCall(this.upstream, 'eth_getBlockReceipts', [tag]),
      this.state.tracer === false ? null : rawCall(this.upstream, 'debug_traceBlockByNumber', [tag, { tracer: 'callTracer' }]),
    ]);
    // A block the node does not have yet: its receipts and traces may have failed for that reason alone.
    if (block.status === 'fulfilled' && isNullResult(block.value)) return null;
    const b = settled(block);
    const r = settled(receipts);
    if (isNullResult(r)) return null;
    return this.opts.pool.prepare(this.chain, {
      block: b,
      receipts: r,
      traces: traces.status === 'fulfilled' ? this.tracesFound(traces.value) : this.noTraces(traces.reason),
    });
  }

  /** Traces came: the tracer works (said at once, so a later failure of another block's traces is taken as passing). */
  private tracesFound(body: Uint8Array | null): Uint8Array | null {
    if (body !== null && this.state.tracer !== true && !isNullResult(body)) this.state = { ...this.state, tracer: true };
    return body;
  }

  /** Internal transactions go off for the chain only when the node itself says no to the call tracer (method not found, tracer unknown). */
  private noTraces(err: unknown): null {
    // A failure to reach the node, or one after the tracer worked, is passing: the block is tried again.
    if (!(err instanceof NodeError) || this.state.tracer === true) throw err;
    if (this.state.tracer === false) return null; // another block of the batch found out already
    this.log.warn('the node has no call tracer: internal transactions are off for this chain', { chain: this.chain, err: err.message });
    this.state = { ...this.state, tracer: false };
    return null;
  }

  /**
   * Walks back from our head to the last block the node still has, removes ours above it, and says which
   * became non-canonical. True when something was rolled back.
   */
  private async rollBack(): Promise<boolean> {
    let k = this.state.head;
    // Nothing below the start block is stored: the walk ends there (the start block itself may be replaced).
    const floor = floorOf(this.state);
    while (k >= floor) {
      const ours = this.kv.get<string>('canon', blockKey(this.chain, k));
      const theirs = await this.upstream.call<{ hash: string } | null>('eth_getBlockByNumber', [`0x${k.toString(16)}`, false]);
      if (ours !== undefined && theirs !== null && theirs.hash === ours) break;
      k--;
    }
    if (k === this.state.head) return false;
    const from = k + 1;
    const to = this.state.head;
    // A reorg under the pruned blocks: what comes back in is pruned again in its turn.
    const next = { ...this.state, head: k, confirmed: Math.min(this.state.confirmed, k), pruned: Math.min(this.state.pruned, k) };
    await rollBackUnit(this.kv, evmBlockStore, { chain: this.chain, from, to, after: next }, this.events, this.opts.stored);
    this.state = this.durable = next;
    this.rolledBack++;
    this.log.info('reorg', { chain: this.chain, from, to });
    return true;
  }

  /** Drops the records and probe columns that fell out of the retention window, a batch at a time. */
  private async prune(): Promise<void> {
    const range = prunable(this.state, this.opts.retention, this.events.oldestUnread?.(this.chain));
    if (range === undefined) return;
    await this.commit({ ...this.state, pruned: range.to }, () => {
      for (let n = range.from; n <= range.to; n++) pruneBlock(this.kv, this.chain, n);
    });
  }
}

/** The value of a settled promise, or its error thrown. */
function settled<T>(r: PromiseSettledResult<T>): T {
  if (r.status === 'rejected') throw r.reason;
  return r.value;
}
