import type { Clock } from '../../clock.js';
import { ChainRuns } from '../../ingest/chain-runs.js';
import { decodeRecord } from '../../evm/record.js';
import type { ChainState } from '../../evm/follower.js';
import { blockKey, clearRanges, type KeyRange } from '../../ingest/chain-store.js';
import type { ChainEvents } from '../../ingest/follow.js';
import type { Logger } from '../../log.js';
import type { Kv, KvOverlay, Table } from '../../ports.js';
import { IndexedBlocks } from './indexed-blocks.js';
import { IndexWriter, takeBack, type Undo } from './index-writer.js';
import { indexedBlock, type DataIndex, type IndexedBlock } from './data-index.js';

export { IndexWriter } from './index-writer.js';
export { indexedBlock, type DataIndex, type IndexedBlock } from './data-index.js';

/**
 * The Data API's indexes of an EVM chain, built just behind the follower's head
 * from the block records it stored (Ponder's ingest → store → build): a batch of
 * blocks per atomic unit, each index writing its rows through an IndexWriter
 * that keeps what every key held before (`indexUndo`), so a reorg takes back
 * exactly what the blocks that left the chain wrote, in every index, stateful
 * ones (balances, owners) included. `indexState` is how far the indexes reached;
 * a read that needs a block waits for it (`reached`).
 *
 * The indexes write into the chain's overlay of the store (Kv.overlay), outside any transaction, one index of
 * one block between two turns of the event loop (a request waits for that much at most), and each batch is
 * sealed into one unit LMDB's write thread writes and commits; the next batch is built meanwhile, reading
 * the unit's writes from the overlay. One unit is in flight at a time: a unit built on one whose commit
 * failed is dropped, never written.
 */

/** The indexes' next block has no record: pruned before they read it (DataIndexer.beginAgain). */
class PrunedBeforeIndexed extends Error {
  constructor(
    chain: string,
    readonly number: number,
  ) {
    super(`block ${number} of ${chain} was pruned before the Data API indexed it`);
  }
}

/** `indexState` row: the last block every index holds, and its hash. */
export interface IndexState {
  number: number;
  hash: string;
  /** The first block the indexes hold (a chain's indexes may begin after block 0: a start block, pruned records). */
  start: number;
}

/** The first block the chain's indexes hold; undefined before their first batch. */
export const indexStart = (kv: Pick<Kv, 'get'>, chain: string): number | undefined => kv.get<IndexState>('indexState', chain)?.start;

/** `indexUndo` row: the block's hash as indexed, and what its writes replaced. */
interface UndoRow {
  hash: string;
  /**
   * The hash of the block below as indexed (this block's parent), null when this block was the first the
   * indexes took: what the indexes' position goes back to when this block is taken back. (Absent in rows
   * written before it was kept.)
   */
  parent?: string | null;
  undo: Undo;
}

/**
 * Keys a store migration added for an indexed block (rows of an index that did not exist when the block was
 * indexed): the block's undo row, while it has one, takes them back with the block's own writes.
 */
export function addedInBlock(kv: Kv, chain: string, number: number, keys: ReadonlyArray<readonly [Table, string]>): void {
  const key = blockKey(chain, number);
  const row = kv.get<UndoRow>('indexUndo', key);
  if (row === undefined) return;
  // The saved bytes view the store's read buffer: copied before the write.
  const undo: Undo = row.undo.map(([table, k, before]) => [table, k, before === null ? null : new Uint8Array(before)]);
  for (const [table, k] of keys) undo.push([table, k, null]);
  kv.put('indexUndo', key, { ...row, undo } satisfies UndoRow);
}

/** A follower catching up waits while it is more than this many blocks ahead of the indexes (DataIndexer.pace). */
export const PACE_LEAD = 32;
/** Keys written by a block are kept this many blocks behind the indexes' position (deeper reorgs are refused, logged). */
export const UNDO_BLOCKS = 256;
/** Blocks behind the follower past which the indexes count as catching up (a read then does not wait for them). */
export const INDEX_BATCH = 32;
/**
 * A batch is as many blocks as their records fit in BATCH_BYTES (one at least, BATCH_MAX at most): its rows are
 * written in one synchronous step on the event loop, so a busy mainnet block (~250 KB) is a batch alone and the
 * requests waiting behind it wait for one block's rows (bench:ingest: HTTP p99 during a catch-up 68 ms, was
 * 517 ms at 32 blocks a batch), while a catch-up over empty blocks (a devnet's) still costs a transaction per many.
 */
const BATCH_BYTES = 256 << 10;
const BATCH_MAX = 1024;
/** Keys removed per transaction while a chain's indexes are dropped to begin again. */
const DROP_BATCH = 10_000;
/** After a failed batch, the next try waits this long. */
const RETRY_MS = 2_000;

export interface DataIndexerOptions {
  batch?: number;
  /** The first block to index on a chain with no `indexState` yet (never below the lowest block stored); default: the lowest block stored. */
  startBlock?(chain: string): number | undefined;
  /**
   * The highest block the chain's node announced (−1 or undefined: not known). A block deeper than UNDO_BLOCKS
   * below it is indexed without an undo row, as one that deep below the stored head is: a catch-up far behind
   * its node saves a read and a saved key per write, which cost as much as the writes themselves.
   */
  nodeHead?(chain: string): number | undefined;
  /** Every key range the indexes hold of a chain (dataChainRanges), dropped when they begin again (beginAgain); none: never. */
  chainRanges?(chain: string): KeyRange[];
}

/** A chain's index writes not yet durable: the overlay they are built in, and the unit sealed last until durable. */
interface Lane {
  kv: KvOverlay;
  /** The blocks built into the overlay since the last seal (number and hash), oldest first. */
  built: Array<{ number: number; hash: string }>;
  /** The indexes' position those blocks were built on: what the store must hold when their unit is written. */
  builtOn: IndexState | undefined;
  /** Units sealed and not settled yet, oldest first. */
  inFlight: Array<Promise<void>>;
  /** Why a sealed unit was not written (an error, or `stale`), until the build sees it. */
  failed: unknown;
}

/** A unit not written: what it was built on changed meanwhile (a reorg's takeback, a unit before it not written). */
const stale = Symbol('stale');

/**
 * What a unit holds at most (blocks, writes), and how many are on their way at once. Larger units cost the disk
 * less (a B-tree page a unit rewrites is written once however many of its keys change: bench:ingest's catch-up
 * wrote 27 MB a block in units of two blocks, 9 MB in units of eight) and the event loop nothing more (the store's
 * writer thread writes them).
 */
const UNIT_BLOCKS = 64;
const UNIT_WRITES = 20_000;
const UNITS_IN_FLIGHT = 2;
/** More than a paced run leaves between follower and indexes as stored (PACE_LEAD, a step, units filling and in flight). */
const UNPACED_GAP = PACE_LEAD + (UNITS_IN_FLIGHT + 2) * UNIT_BLOCKS;

/** Waits until every unit the lane sealed so far is settled (written or refused). */
async function settle(lane: Lane): Promise<void> {
  while (lane.inFlight.length > 0) await Promise.all(lane.inFlight);
}

/** One turn of the event loop: requests waiting behind the indexes' work go first. */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class DataIndexer {
  /** The indexed blocks pages read, kept across requests; unwind drops a chain's once it took blocks back. */
  readonly blocks = new IndexedBlocks();
  private readonly runs: ChainRuns;
  private readonly lanes = new Map<string, Lane>();
  private readonly waiters = new Map<string, Array<{ number: number; done: () => void }>>();
  /** readUpTo's last walk per chain: the indexes' head and the stored chain's hash there it was made for. */
  private readonly unread = new Map<string, { seen: string; n: number; hash: string | undefined }>();

  constructor(
    private readonly kv: Kv,
    private readonly indexes: readonly DataIndex[],
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly opts: DataIndexerOptions = {},
  ) {
    this.runs = new ChainRuns(
      (chain) => this.build(chain),
      clock,
      RETRY_MS,
      (chain, err) => {
        this.log.warn('indexing failed; trying again', { chain, err });
        // A failing build holds no follower back: the streams' webhooks come first.
        this.failing.add(chain);
        this.unpace(chain, Infinity);
      },
    );
  }

  /** Followers waiting for the indexes to come within PACE_LEAD blocks of their head (pace), by chain. */
  private readonly pacers = new Map<string, Array<{ number: number; go: () => void }>>();
  /** Chains whose last build failed, until a batch is built again. */
  private readonly failing = new Set<string>();
  /** Chains whose indexes are being dropped (beginAgain): no position is read meanwhile, their rows half gone. */
  private readonly dropping = new Set<string>();
  /** Chains whose indexes began again, or were UNPACED_GAP behind at the first pace: not waited for until within PACE_LEAD. */
  private readonly unpaced = new Set<string>();
  /** Chains paced in this run with the indexes' position known. */
  private readonly pacedBefore = new Set<string>();

  /** The follower's listener: wakes the build once a commit is durable, holds pruning back to what is not indexed yet, and paces a catch-up. */
  events(): Pick<ChainEvents, 'committed' | 'oldestUnread' | 'pace'> {
    return {
      committed: (chain) => this.wake(chain),
      oldestUnread: (chain) => this.readUpTo(chain) + 1,
      pace: (chain, head) => this.pace(chain, head),
    };
  }

  /**
   * A follower about to write blocks above `head`: resolves once the indexes (as built, durable or not) are within
   * PACE_LEAD blocks of it; undefined when they are already, or are not built (before their first batch, failing,
   * stopped). A catch-up is done when its blocks are indexed too, and a follower running ahead of them only takes
   * the event loop from their build: paced, both end together, and the indexes stay within a batch of the head.
   */
  pace(chain: string, head: number): Promise<void> | undefined {
    if (this.stopped || this.failing.has(chain)) return undefined;
    const at = (this.lanes.get(chain)?.kv ?? this.kv).get<IndexState>('indexState', chain)?.number;
    if (at === undefined) return undefined;
    if (head - at > UNPACED_GAP && !this.pacedBefore.has(chain)) this.unpaced.add(chain);
    this.pacedBefore.add(chain);
    if (head - at <= PACE_LEAD) this.unpaced.delete(chain);
    if (head - at <= PACE_LEAD || this.unpaced.has(chain)) return undefined;
    return new Promise((go) => {
      const list = this.pacers.get(chain) ?? [];
      this.pacers.set(chain, list);
      list.push({ number: head - PACE_LEAD, go });
      this.wake(chain);
    });
  }

  /** Lets go the followers waiting for the indexes to reach `built` or less. */
  private unpace(chain: string, built: number): void {
    const list = this.pacers.get(chain);
    if (list === undefined) return;
    const waiting = list.filter((p) => p.number > built);
    for (const p of list) if (p.number <= built) p.go();
    if (waiting.length === 0) this.pacers.delete(chain);
    else this.pacers.set(chain, waiting);
  }

  /**
   * The last block the indexes hold that is still canonical: below a reorg the follower made and the build has
   * not taken back yet, the blocks that replaced the indexed ones are unread (pruning them would stop the
   * indexes for good). −1 when none; a branch that parts below the undo rows counts as read up to where they end
   * (the build refuses it, logged).
   */
  private readUpTo(chain: string): number {
    const state = this.kv.get<IndexState>('indexState', chain);
    if (state === undefined) return -1;
    const canon = this.kv.get<string>('canon', blockKey(chain, state.number));
    if (canon === state.hash) return state.number;
    // The walk decodes undo rows (each a block's overwritten values): done once per reorg, not at every prune.
    const seen = `${state.number}/${state.hash}/${canon}`;
    const known = this.unread.get(chain);
    // Still the same meeting point: the stored chain there unchanged (unknown below the undo rows: the build is stuck).
    if (known?.seen === seen && (known.hash === undefined || this.kv.get<string>('canon', blockKey(chain, known.n)) === known.hash))
      return known.n;
    let n = state.number;
    let hash: string | null | undefined = state.hash;
    while (n >= 0 && typeof hash === 'string' && this.kv.get<string>('canon', blockKey(chain, n)) !== hash) {
      const row = this.kv.get<UndoRow>('indexUndo', blockKey(chain, n));
      hash = row === undefined ? undefined : this.indexedParent(chain, n, row);
      n--;
    }
    this.unread.set(chain, { seen, n, hash: typeof hash === 'string' ? hash : undefined });
    return n;
  }

  /** The last block every index holds; undefined before the first batch. */
  position(chain: string): number | undefined {
    return this.dropping.has(chain) ? undefined : this.kv.get<IndexState>('indexState', chain)?.number;
  }

  /** Resolves true once the indexes hold `number` (a read about it then answers), false after `timeoutMs`. */
  reached(chain: string, number: number, timeoutMs: number): Promise<boolean> {
    if ((this.position(chain) ?? -1) >= number) return Promise.resolve(true);
    return new Promise((resolve) => {
      const list = this.waiters.get(chain) ?? [];
      this.waiters.set(chain, list);
      const timer = this.clock.at(this.clock.now() + timeoutMs, () => {
        const i = list.indexOf(waiter);
        if (i < 0) return;
        list.splice(i, 1);
        resolve(false);
      });
      const waiter = {
        number,
        done: () => {
          timer.cancel();
          resolve(true);
        },
      };
      list.push(waiter);
      this.wake(chain);
    });
  }

  wake(chain: string): void {
    this.runs.wake(chain);
  }

  /** Resolves once no chain is being indexed and what was indexed is settled (tests, shutdown). */
  async settled(): Promise<void> {
    await this.runs.settled();
    for (const lane of this.lanes.values()) await settle(lane);
  }

  stop(): void {
    this.runs.stop();
    for (const chain of this.pacers.keys()) this.unpace(chain, Infinity);
  }

  private get stopped(): boolean {
    return this.runs.stopped;
  }

  private lane(chain: string): Lane {
    let lane = this.lanes.get(chain);
    if (lane === undefined)
      this.lanes.set(
        chain,
        (lane = {
          // The store's overlay keeps none of the writes of the tables declared written only (WRITTEN_ONLY_TABLES).
          kv: this.kv.overlay(),
          built: [],
          builtOn: undefined,
          inFlight: [],
          failed: undefined,
        }),
      );
    return lane;
  }

  /**
   * Waits until every unit sealed is settled. One not written makes what was built on it void: what was built
   * since is dropped, and the build starts again from the store's position; an error is thrown. Resolves whether
   * every unit was written (false: one was refused, built on what the store no longer holds).
   */
  private async drain(lane: Lane): Promise<boolean> {
    await settle(lane);
    if (lane.failed === undefined) return true;
    const failed = lane.failed;
    lane.failed = undefined;
    this.dropBuilt(lane);
    if (failed !== stale) throw failed;
    return false;
  }

  /**
   * Writes what was built since the last seal as one unit, in a transaction that first checks the store still holds
   * what it was built on (the indexes' position, the blocks' canonical hashes): a unit built on one that was not
   * written, or over blocks the follower replaced meanwhile, is not written either. Does not wait for it; up to
   * UNITS_IN_FLIGHT are on their way.
   */
  private async seal(chain: string, lane: Lane): Promise<void> {
    if (lane.failed !== undefined) await this.drain(lane);
    if (lane.built.length === 0) return;
    if (lane.inFlight.length >= UNITS_IN_FLIGHT) await lane.inFlight[0];
    if (lane.failed !== undefined) {
      await this.drain(lane);
      return;
    }
    const expect: Array<readonly [Table, string, unknown]> = [
      ['indexState', chain, lane.builtOn],
      ...lane.built.map((b) => ['canon', blockKey(chain, b.number), b.hash] as const),
    ];
    lane.built = [];
    const unit: Promise<void> = lane.kv.seal(expect).then(
      (wrote) => {
        if (wrote) this.release(chain);
        else lane.failed ??= stale;
      },
      (err: unknown) => void (lane.failed ??= err ?? new Error('an index unit failed to commit')),
    );
    lane.inFlight.push(unit);
    void unit.then(() => lane.inFlight.splice(lane.inFlight.indexOf(unit), 1));
  }

  /**
   * Takes back blocks that left the chain, then indexes up to the follower's head, a batch at a time, sealed
   * into units as they grow.
   */
  private async build(chain: string): Promise<void> {
    const lane = this.lane(chain);
    try {
      for (;;) {
        if (this.stopped) return;
        if (lane.failed !== undefined) await this.drain(lane);
        await this.unwind(chain);
        let blocks: IndexedBlock[];
        try {
          blocks = await this.nextBatch(chain);
        } catch (err) {
          if (err instanceof PrunedBeforeIndexed && (await this.beginAgain(chain, lane, err.number))) continue;
          throw err;
        }
        if (blocks.length === 0) return;
        if (!(await this.write(chain, blocks))) continue;
        if (lane.built.length >= UNIT_BLOCKS || lane.kv.unsealed >= UNIT_WRITES) await this.seal(chain, lane);
      }
    } finally {
      await this.seal(chain, lane);
    }
  }

  /**
   * Indexes `blocks` (consecutive, the first right after the indexes' position) as one unit, after each index's
   * `prepare`, and resolves once it is durable; false when they no longer stand where the follower put them
   * (nothing is written). What bench:data loads its dataset with.
   */
  async index(chain: string, blocks: readonly IndexedBlock[]): Promise<boolean> {
    const lane = this.lane(chain);
    if (!(await this.write(chain, blocks))) return false;
    await this.seal(chain, lane);
    return this.drain(lane);
  }

  /** Whether `blocks` are still the canonical ones at their heights (the follower may replace them at any time). */
  private canonical(chain: string, blocks: readonly IndexedBlock[]): boolean {
    return blocks.every((b) => this.kv.get<string>('canon', blockKey(chain, b.number)) === b.hash);
  }

  /**
   * Builds `blocks` into the chain's overlay, one index of one block per turn of the event loop; false when they
   * no longer stand where the follower put them, and then what was built since the last seal is dropped.
   */
  private async write(chain: string, blocks: readonly IndexedBlock[]): Promise<boolean> {
    const lane = this.lane(chain);
    const kv = lane.kv;
    const prepared = await Promise.all(this.indexes.map((index) => index.prepare?.(blocks, kv)));
    const state = kv.get<IndexState>('indexState', chain);
    // The follower may have replaced a block while the batch was prepared: then nothing is written, and the loop starts over.
    if (!this.canonical(chain, blocks) || (state?.number ?? blocks[0]!.number - 1) !== blocks[0]!.number - 1) return false;
    // How far the chain goes: a backfill's end is far ahead of the stored head while it runs, the node's head during a catch-up.
    const chainState = this.kv.get<ChainState>('chainState', chain);
    const head = Math.max(chainState?.head ?? -1, chainState?.backfill?.to ?? -1, this.opts.nodeHead?.(chain) ?? -1);
    if (lane.built.length === 0) lane.builtOn = state;
    let parent = state === undefined ? null : state.hash;
    try {
      for (const block of blocks) {
        // Undo rows are kept for the last UNDO_BLOCKS blocks: one for a block already deeper would be dropped unread.
        const undo: Undo | null = block.number > head - UNDO_BLOCKS ? [] : null;
        const w = new IndexWriter(kv, undo);
        for (let i = 0; i < this.indexes.length; i++) {
          const index = this.indexes[i]!;
          if (index.steps === undefined) index.apply(w, block, prepared[i]);
          else for (const _ of index.steps(w, block, prepared[i])) await turn();
          await turn();
        }
        if (undo !== null) kv.put('indexUndo', blockKey(chain, block.number), { hash: block.hash, parent, undo } satisfies UndoRow);
        parent = block.hash;
        if (block.number >= UNDO_BLOCKS) kv.remove('indexUndo', blockKey(chain, block.number - UNDO_BLOCKS));
      }
    } catch (err) {
      this.dropBuilt(lane);
      throw err;
    }
    // Replaced while the batch was built (between its turns): nothing of what was built since the last seal is written.
    if (!this.canonical(chain, blocks)) {
      this.dropBuilt(lane);
      return false;
    }
    const last = blocks.at(-1)!;
    kv.put('indexState', chain, { number: last.number, hash: last.hash, start: state?.start ?? blocks[0]!.number } satisfies IndexState);
    for (const b of blocks) lane.built.push({ number: b.number, hash: b.hash });
    this.failing.delete(chain);
    this.unpace(chain, last.number);
    return true;
  }

  private dropBuilt(lane: Lane): void {
    lane.kv.discard();
    lane.built = [];
  }

  /**
   * Blocks after the indexes' position (as built, durable or not) whose records are stored, up to a batch, each
   * decoded in a turn of its own (a mainnet record takes a few ms).
   */
  private async nextBatch(chain: string): Promise<IndexedBlock[]> {
    const at = this.lane(chain).kv.get<IndexState>('indexState', chain)?.number;
    const first = at === undefined ? this.firstBlock(chain) : at + 1;
    if (first === undefined) return [];
    const blocks: IndexedBlock[] = [];
    // A batch size given (tests) is exact; by default as many blocks as fit BATCH_BYTES.
    const exact = this.opts.batch;
    const end = first + (exact ?? BATCH_MAX);
    let bytesRead = 0;
    for (const { key, value } of this.kv.range<unknown>('canon', { start: blockKey(chain, first), end: blockKey(chain, end) })) {
      const number = parseInt(key.slice(chain.length + 1), 16);
      if (number !== first + blocks.length) break;
      const bytes = this.kv.getRaw('blocks', key);
      if (bytes === undefined) {
        if (blocks.length === 0) throw new PrunedBeforeIndexed(chain, number);
        break;
      }
      bytesRead += bytes.byteLength;
      if (exact === undefined && blocks.length > 0 && bytesRead > BATCH_BYTES) break;
      blocks.push(indexedBlock(chain, number, String(value), decodeRecord(bytes)));
      // The next record is read after the turn (a read buffer's view does not outlive it); write() checks the blocks
      // are still canonical.
      await turn();
    }
    return blocks;
  }

  /**
   * Their next block pruned unread (the node ran without the api role past the retention window): the chain's rows are
   * dropped, its indexes begin again where a new node's would (the oldest record stored), logged. False when there is
   * nothing to drop or that is not above the missing block (the store lost a record it should hold), or no chainRanges.
   * Reads see no position while the rows go, and the chain's follower does not wait for the indexes built again.
   */
  private async beginAgain(chain: string, lane: Lane, missing: number): Promise<boolean> {
    const first = this.firstBlock(chain);
    const ranges = this.opts.chainRanges?.(chain);
    const indexed = this.position(chain);
    if (indexed === undefined || first === undefined || first <= missing || ranges === undefined) return false;
    this.log.warn("the Data API's indexes stop below the oldest block stored: dropped, and built again from it", { chain, indexed, first });
    this.dropping.add(chain);
    this.unpaced.add(chain);
    this.unpace(chain, Infinity);
    try {
      await settle(lane);
      lane.failed = undefined;
      this.dropBuilt(lane);
      // Cut short by a stop: the position goes last, so the next start drops the rest.
      await clearRanges(this.kv, ranges, DROP_BATCH, async () => {
        if (this.stopped) throw new Error(`stopped while dropping the Data API's indexes of ${chain}: dropped again at the next start`);
        await turn();
      });
    } finally {
      this.dropping.delete(chain);
    }
    this.blocks.forget(chain);
    this.unread.delete(chain);
    return true;
  }

  /** Where a chain's indexes begin: the start block asked, or the lowest block stored if that is higher (a start block below it would wait for ever). */
  private firstBlock(chain: string): number | undefined {
    const lowest = this.lowestRecord(chain);
    if (lowest === undefined) return undefined;
    return Math.max(lowest, this.opts.startBlock?.(chain) ?? lowest);
  }

  /** The lowest block whose record is stored (a pruned block keeps its `canon` row, not its record). */
  private lowestRecord(chain: string): number | undefined {
    const [first] = this.kv.keys('blocks', { start: `${chain}/`, end: `${chain}/\uffff`, limit: 1 });
    return first === undefined ? undefined : parseInt(first.slice(chain.length + 1), 16);
  }

  /** While the indexes' last block is no longer the canonical one at its height, takes it back. */
  private async unwind(chain: string): Promise<void> {
    const lane = this.lane(chain);
    for (;;) {
      const built = lane.kv.get<IndexState>('indexState', chain);
      if (built === undefined || this.kv.get<string>('canon', blockKey(chain, built.number)) === built.hash) return;
      // The undo rows are read from the store: what was built and not sealed is dropped, what was sealed made durable.
      this.dropBuilt(lane);
      await this.drain(lane);
      const state = this.kv.get<IndexState>('indexState', chain);
      if (state === undefined || this.kv.get<string>('canon', blockKey(chain, state.number)) === state.hash) return;
      await this.kv.transactAsync(() => {
        const key = blockKey(chain, state.number);
        const row = this.kv.get<UndoRow>('indexUndo', key);
        if (row === undefined)
          throw new Error(
            `block ${state.number} of ${chain} left the chain deeper than the Data API can take back (${UNDO_BLOCKS} blocks); rebuild the indexes`,
          );
        // The saved bytes view the store's read buffer (Kv.get): copied before the writes below read again.
        takeBack(
          this.kv,
          row.undo.map(([table, k, before]) => [table, k, before === null ? null : new Uint8Array(before)]),
        );
        this.kv.remove('indexUndo', key);
        // The block below as it was indexed (the parent this block was indexed on): if that left the chain too
        // and its undo row is gone (deeper than UNDO_BLOCKS), the next turn refuses to go on.
        const below = state.number - 1;
        const hash = this.indexedParent(chain, state.number, row);
        if (below < 0 || hash === null) this.kv.remove('indexState', chain);
        else this.kv.put('indexState', chain, { number: below, hash, start: state.start } satisfies IndexState);
      });
      // Committed: the block's row is gone (or, once indexed again, another block's).
      this.blocks.forget(chain);
    }
  }

  /**
   * The hash block `number - 1` had when block `number` (its undo row `row`) was indexed on it: null when block
   * `number` was the first the indexes took. A row written before parents were kept: the block below's own undo
   * row, or else the stored chain's block there.
   */
  private indexedParent(chain: string, number: number, row: UndoRow): string | null {
    if (row.parent !== undefined) return row.parent;
    const below = blockKey(chain, number - 1);
    return this.kv.get<UndoRow>('indexUndo', below)?.hash ?? this.kv.get<string>('canon', below) ?? null;
  }

  private release(chain: string): void {
    const list = this.waiters.get(chain);
    if (list === undefined) return;
    const at = this.position(chain) ?? -1;
    for (let i = list.length - 1; i >= 0; i--) {
      if (list[i]!.number <= at) {
        list[i]!.done();
        list.splice(i, 1);
      }
    }
  }
}
