import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Kv } from '../ports.js';
import { BackfillProgress, logBackfill, type BackfillRange, type BackfillStatus } from './backfill.js';

/**
 * Where a chain new to the store starts, whatever its family (EVM, Bitcoin):
 * at its start block (CHAINPOST_START_BLOCKS), backfilled up to the node's head
 * at the first sync, or at that head alone. The range is saved in the chain's
 * state before any block, so a restart goes on towards the same `to`. Blocks up
 * to `to` are history: stored and indexed, announced to no listener. Nothing
 * below `from` is stored, so a reorg walk ends there. Also the backfill's
 * progress, for /health and the log.
 */

/** What every family's chain state holds of where it started. */
export interface StartState {
  /** Last block written (−1 before the first). */
  head: number;
  /** Last block announced as confirmed (−1 before the first). */
  confirmed: number;
  /** Last block whose record and probe column were pruned (−1 before the first). */
  pruned: number;
  /**
   * The backfill set at the first start: blocks `from` (the start block) to `to` (the node's head then) are
   * stored without block events. Absent: the chain was followed from block 0 with every block announced (a
   * store from before start blocks).
   */
  backfill?: BackfillRange;
}

/** Where a chain new to the store starts: a block, or `head` (the node's head at the first sync, alone). */
export type StartBlock = number | 'head';

/** The last block of the chain's history (stored, announced to no listener); −1 when it has none. */
export const historyEnd = (s: StartState): number => s.backfill?.to ?? -1;

/** The lowest block the chain stores: a reorg walk ends there (the block itself may be replaced). */
export const floorOf = (s: StartState): number => s.backfill?.from ?? 0;

export class ChainStart {
  /** The store holds no state of the chain to resume: its first sync decides where it starts (begin()). */
  fresh: boolean;
  private progress: BackfillProgress | undefined;
  private progressLog: { stop(): void } | undefined;

  constructor(
    private readonly chain: string,
    private readonly kv: Kv,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Undefined: the chain is followed from block 0, every block announced (no backfill). */
    private readonly startBlock: StartBlock | undefined,
    /** The follower's durable state (what /health shows and the log line reads). */
    private readonly durable: () => StartState,
  ) {
    const stored = kv.get<StartState>('chainState', chain);
    // A state that never got a block (written before start blocks existed, stuck below its first) is not resumed.
    this.fresh = startBlock !== undefined && (stored === undefined || (stored.head < 0 && stored.backfill === undefined));
    if (!this.fresh && stored !== undefined && typeof startBlock === 'number' && startBlock !== floorOf(stored)) {
      log.warn('a start block is set for a chain already in the store: its stored state is kept', {
        chain,
        startBlock,
        followedFrom: floorOf(stored),
        head: stored.head,
      });
    }
  }

  /**
   * The first sync of a fresh chain: where it starts (the start block, or the node's head) and its backfill up
   * to the node's head now, saved before any block; `rest` is the family's own part of the state. The
   * follower takes the state answered, then calls watch().
   */
  async begin<S extends StartState>(nodeHead: number, rest: Omit<S, keyof StartState>): Promise<S> {
    const asked = this.startBlock ?? 0;
    const from = asked === 'head' ? nodeHead : asked;
    // A start block the node has not reached yet: nothing to backfill, following begins there.
    const backfill = { from, to: Math.max(from - 1, nodeHead) };
    const state = { ...rest, head: from - 1, confirmed: from - 1, pruned: from - 1, backfill } as S;
    await this.kv.transactAsync(() => this.kv.put('chainState', this.chain, state));
    this.fresh = false;
    this.log.info('following a new chain', { chain: this.chain, from, backfillTo: backfill.to, nodeHead });
    return state;
  }

  /** While the durable state's backfill is not done: its rate measured from here on, and a progress line in the log. */
  watch(): void {
    const { backfill: range, head } = this.durable();
    if (range === undefined || head >= range.to || this.progress !== undefined) return;
    this.progress = new BackfillProgress(range, () => this.clock.now());
    this.progress.note(head);
    this.progressLog = logBackfill(this.clock, this.log, this.chain, () => ({ ...this.status()!, head: this.durable().head }));
  }

  /** A durable head: the backfill's rate, and once it is done its last log line. */
  note(head: number): void {
    if (this.progress === undefined) return;
    this.progress.note(head);
    const { from, to } = this.progress.range;
    if (head < to || this.progressLog === undefined) return;
    this.progressLog.stop();
    this.progressLog = undefined;
    this.log.info('backfill done', { chain: this.chain, from, to });
  }

  /** The backfill's progress as of the durable state; null when the chain has none (see StartState.backfill). */
  status(): BackfillStatus | null {
    const durable = this.durable();
    const range = durable.backfill;
    if (range === undefined) return null;
    if (this.progress === undefined)
      return { ...range, done: durable.head >= range.to, blocksPerSec: 0, etaSeconds: durable.head >= range.to ? 0 : null };
    return this.progress.status(durable.head);
  }

  stop(): void {
    this.progressLog?.stop();
  }
}
