import type { Clock } from '../clock.js';
import type { BackfillStatus } from '../ingest/backfill.js';
import { ChainStart, floorOf, type StartBlock, type StartState } from '../ingest/chain-start.js';
import { blockKey } from '../ingest/chain-store.js';
import { publishedBlocks, rollBackUnit, statesAfter, storeUnit, type StoredListener } from '../ingest/commit.js';
import { SyncLoop, pruneChain, rawCall, type ChainEvents, type ChainFollower, type FollowerStatus } from '../ingest/follow.js';
import type { Logger } from '../log.js';
import { NodeError, type Kv, type Upstream } from '../ports.js';
import { prevoutOf, type CoreTransaction } from './core-json.js';
import { bitcoinBlockStore, outputKey, prevoutsOf, type BitcoinIngestPool, type PreparedBitcoinBlock, type Prevout } from './prepared.js';

/**
 * Follows Bitcoin Core block by block into the store (the same tables and
 * block events as every family: engine/ingest/chain-store.ts): getbestblockhash
 * at each poll, then getblockhash and getblock (verbosity 3, whose inputs carry
 * the output they spend) for each block above our head, parsed and encoded in
 * the worker pool. A block whose previousblockhash is not our block below it
 * is a reorg: the store rolls back to the fork point and takes the node's
 * branch. A node without verbosity 3 (Core before v23) gives no spent outputs:
 * they are found among the outputs this server stored, then by
 * getrawtransaction (which needs -txindex); /health says when they cannot be.
 * A chain new to the store starts at the node's best block, or at a start
 * block backfilled up to it (engine/ingest/chain-start.ts): backfilled blocks
 * are history, stored and indexed but announced to no listener.
 */
export type BitcoinChainState = StartState;

/** Where the spent outputs of inputs come from: the node's getblock, this server's stored outputs and getrawtransaction, or nowhere (no -txindex). */
export type InputSource = 'getblock' | 'resolved' | 'unresolved';

export interface BitcoinFollowerStatus extends FollowerStatus {
  inputs: InputSource | null;
  /** Inputs whose spent output could not be found since the start (their addresses and values are left out). */
  unresolvedInputs: number;
  /** The backfill's progress; null when the chain has none (see StartState.backfill). */
  backfill: BackfillStatus | null;
}

/** Blocks fetched and prepared ahead while catching up: the pool parses them while this thread commits. */
const AHEAD = 8;
/** Blocks written as one unit while catching up: one flush to disk for them all. */
const GROUP = 4;

/** How long a node without -txindex is taken at its word before getrawtransaction is tried again (it may have been restarted with it). */
const TXINDEX_RECHECK_MS = 10 * 60_000;

/** A txid: 64 hex digits, as Core writes it. */
const TXID = /^[0-9a-f]{64}$/;

export class BitcoinFollower implements ChainFollower {
  private state: BitcoinChainState;
  private readonly loop: SyncLoop;
  private nodeHead = -1;
  private rolledBack = 0;
  private inputs: InputSource | null = null;
  private unresolved = 0;
  /** Whether the node's getblock gives spent outputs (verbosity 3: Bitcoin Core 23 or later); asked once per start. */
  private prevouts: boolean | undefined;
  /** Where it gives none: a copy of each block's answer by hash, prepared again once the spent outputs are found (not fetched again). */
  private readonly answers = new Map<string, Uint8Array>();
  /** Blocks handed to the store whose unit is not durable yet (their hashes, for the blocks that follow them). */
  private readonly unwritten = new Map<number, string>();
  /** Until when getrawtransaction is not asked (the node last answered that it has no -txindex). */
  private noTxindexUntil = 0;
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
      pool: BitcoinIngestPool;
      /** Runs after each poll's blocks (the mempool watcher): same cadence, after the blocks it may confirm. */
      afterSync?: () => Promise<void>;
      /**
       * Where a chain not in the store yet starts: this block, backfilled up to the node's best block at the
       * first sync ('head': that block alone). A chain in the store keeps its state whatever this says.
       */
      startBlock: StartBlock;
      /** Told what was stored once it is durable (a cluster's node publishes it). */
      stored?: StoredListener;
    },
  ) {
    this.chainStart = new ChainStart(chain, kv, clock, log, opts.startBlock, () => this.durable());
    this.state = this.stored();
    this.loop = new SyncLoop(
      chain,
      log,
      clock,
      opts.pollMs,
      () => this.round(),
      async () => {
        await this.prune();
        // The mempool after the blocks: same cadence, after the blocks it may confirm.
        await this.opts.afterSync?.();
      },
    );
  }

  private stored(): BitcoinChainState {
    return this.kv.get<BitcoinChainState>('chainState', this.chain) ?? { head: -1, confirmed: -1, pruned: -1 };
  }

  start(): void {
    this.chainStart.watch();
    this.loop.start();
  }

  stop(): void {
    this.loop.stop();
    this.chainStart.stop();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  /** The state as far as it is durable: blocks handed to the store and not yet flushed are not counted (the block endpoints would not find them). */
  private durable(): BitcoinChainState {
    const head = this.unwritten.size === 0 ? this.state.head : Math.min(...this.unwritten.keys()) - 1;
    return { ...this.state, head, confirmed: Math.min(this.state.confirmed, head) };
  }

  status(): BitcoinFollowerStatus {
    const { head, confirmed, pruned } = this.durable();
    return {
      chain: this.chain,
      head,
      confirmed,
      nodeHead: this.nodeHead,
      oldest: pruned + 1,
      ...this.loop.health.status(),
      inputs: this.inputs,
      unresolvedInputs: this.unresolved,
      backfill: this.chainStart.status(),
    };
  }

  reorgs(): number {
    return this.rolledBack;
  }

  /** Catches up to the node's best block now; resolves when done (tests, and each poll). */
  sync(): Promise<void> {
    return this.loop.sync();
  }

  /** One round: the node's best block, and the blocks up to it (back to the fork point first on a reorg). */
  private async round(): Promise<void> {
    if (this.prevouts === undefined) await this.askVersion();
    const best = await this.upstream.call<string>('getbestblockhash', []);
    if (best !== this.hashOf(this.state.head)) {
      const header = await this.upstream.call<{ height: number }>('getblockheader', [best, true]);
      this.nodeHead = header.height;
      if (this.chainStart.fresh) await this.begin(header.height);
      await this.rollBack();
      await this.catchUp(header.height);
    } else if (this.nodeHead < this.state.head) this.nodeHead = this.state.head;
  }

  /** A fresh chain's first round: its start, saved before any block. */
  private async begin(nodeHead: number): Promise<void> {
    this.state = await this.chainStart.begin<BitcoinChainState>(nodeHead, {});
    this.chainStart.watch();
  }

  private async askVersion(): Promise<void> {
    const { version } = await this.upstream.call<{ version: number }>('getnetworkinfo', []);
    this.prevouts = version >= 230_000;
    if (!this.prevouts)
      this.log.warn(
        'Bitcoin Core before v23 gives no spent outputs with getblock: they are looked up among stored outputs, then by getrawtransaction (which needs -txindex)',
        { chain: this.chain, version },
      );
  }

  /** Block n's hash on our chain: handed over to the store and not yet durable, or read from it. */
  private hashOf(n: number): string | undefined {
    return n < 0 ? undefined : (this.unwritten.get(n) ?? this.kv.get<string>('canon', blockKey(this.chain, n)));
  }

  /**
   * Steps up to `target`, GROUP blocks at a time (as far as they link up) with AHEAD more fetched and
   * prepared meanwhile; stops early at a reorg. A group is written as one unit, flushed to disk while the
   * next group is awaited and its inputs looked up; the next is handed over once it is durable, so units
   * land in order and a reorg sees the store as written.
   */
  private async catchUp(target: number): Promise<void> {
    const ahead = new Map<number, Promise<PreparedBitcoinBlock | null>>();
    let writing: Promise<void> | undefined;
    try {
      while (!this.stopped && this.state.head < target) {
        const first = this.state.head + 1;
        // Where the node gives no spent outputs, a block's inputs may spend the block before: one at a time, each once that one is stored.
        const size = this.prevouts === false ? 1 : GROUP;
        for (let n = first; n <= Math.min(target, first + size - 1 + AHEAD); n++) if (!ahead.has(n)) ahead.set(n, this.fetchAhead(n));
        const numbers = Array.from({ length: Math.min(size, target - first + 1) }, (_, i) => first + i);
        const fetched = await Promise.all(numbers.map((n) => ahead.get(n)!));
        for (const n of numbers) ahead.delete(n);
        if (this.stopped) break;
        if (this.prevouts === false) await writing;
        const group: PreparedBitcoinBlock[] = [];
        let parent = first > 0 ? this.hashOf(first - 1) : undefined;
        for (const [i, block] of fetched.entries()) {
          if (block === null) break;
          if (block.number !== first + i) throw new Error(`asked for block ${first + i}, the node sent block ${block.number}`);
          if (parent !== undefined && block.parentHash !== parent) break;
          group.push(await this.resolved(block, block.number));
          parent = block.hash;
        }
        // The rest (a block the node does not have yet, a link broken further on) is fetched again.
        if (group.length < numbers.length) ahead.clear();
        if (group.length === 0) {
          if (fetched[0] === null) break;
          await writing;
          writing = undefined;
          // The node's branch no longer extends ours: back to the fork point, then on from there.
          if (!(await this.rollBack()))
            throw new Error(`block ${first} (${fetched[0]!.hash}) does not follow our block ${first - 1}, yet the node still has ours`);
          continue;
        }
        await writing;
        writing = this.commitBlocks(group);
        // Its failure is taken at the next await of it (not an unhandled rejection meanwhile).
        writing.catch(() => {});
      }
      await writing;
    } catch (err) {
      // A failed write leaves the store as it was: the state in memory goes back to it.
      await writing?.catch(() => {});
      this.unwritten.clear();
      this.state = this.stored();
      throw err;
    } finally {
      // What was fetched ahead is dropped, and the answers kept for it (a reorg, a stop, a failure).
      await Promise.allSettled(ahead.values());
      this.answers.clear();
    }
  }

  private fetchAhead(n: number): Promise<PreparedBitcoinBlock | null> {
    const block = this.fetch(n);
    block.catch(() => {});
    return block;
  }

  /** Block n of the node's best chain, prepared in the pool; null when the node has no block n (yet). */
  private async fetch(n: number, prevouts?: ReadonlyMap<string, Prevout>): Promise<PreparedBitcoinBlock | null> {
    let hash: string;
    try {
      hash = await this.upstream.call<string>('getblockhash', [n]);
    } catch (err) {
      // -8: "Block height out of range": the node's chain is shorter than we were told a moment ago.
      if (err instanceof NodeError && err.code === -8) return null;
      throw err;
    }
    const body = await rawCall(this.upstream, 'getblock', [hash, 3]);
    // Outputs are kept for later blocks' inputs where the node gives none; the answer too, copied (the pool takes it).
    const keepOutputs = this.prevouts === false;
    if (keepOutputs) this.answers.set(hash, Uint8Array.prototype.slice.call(body));
    return this.opts.pool.prepare(
      this.chain,
      prevouts === undefined ? { block: body, keepOutputs } : { block: body, keepOutputs, prevouts },
    );
  }

  /**
   * The block with every spent output it can have: as the node gave it (verbosity 3), else prepared again
   * with those found among stored outputs and by getrawtransaction (from the kept answer; a node of v23
   * or later that left some out is asked again).
   */
  private async resolved(block: PreparedBitcoinBlock, n: number): Promise<PreparedBitcoinBlock> {
    const kept = this.answers.get(block.hash);
    this.answers.delete(block.hash);
    if (block.unresolved.length === 0) {
      if (block.inputCount > 0 && this.inputs === null) this.inputs = 'getblock';
      return block;
    }
    const found = await this.lookUp(block.unresolved);
    const again =
      found.size === 0
        ? block
        : kept !== undefined
          ? await this.opts.pool.prepare(this.chain, { block: kept, keepOutputs: true, prevouts: found })
          : await this.fetch(n, found);
    if (again === null || again.hash !== block.hash)
      throw new Error(`block ${n} changed while its inputs were looked up (a reorg under way); trying again`);
    this.unresolved += again.unresolved.length;
    this.inputs = again.unresolved.length === 0 ? 'resolved' : 'unresolved';
    return again;
  }

  /** Spent outputs from the stored outputs, then from getrawtransaction (one call per transaction). */
  private async lookUp(inputs: ReadonlyArray<{ txid: string; vout: number }>): Promise<Map<string, Prevout>> {
    // Outputs are stored only where the node gives no spent outputs.
    const found = this.prevouts === false ? prevoutsOf(this.kv, this.chain, inputs) : new Map<string, Prevout>();
    // A node that said it has no -txindex is not asked again for a while: it would say the same for each block.
    if (this.clock.now() < this.noTxindexUntil) return found;
    const missing = [...new Set(inputs.filter((i) => !found.has(outputKey(i.txid, i.vout))).map((i) => i.txid))].filter((t) =>
      TXID.test(t),
    );
    for (const txid of missing) {
      let tx: CoreTransaction;
      try {
        tx = await this.upstream.call('getrawtransaction', [txid, true]);
      } catch (err) {
        // -5: not in the mempool and no -txindex: the rest are not there either.
        if (err instanceof NodeError && err.code === -5) {
          this.noTxindexUntil = this.clock.now() + TXINDEX_RECHECK_MS;
          this.lastInputError(err.message);
          break;
        }
        throw err;
      }
      for (const o of tx.vout) found.set(outputKey(txid, o.n), prevoutOf(o));
    }
    return found;
  }

  private lastInputError(message: string): void {
    if (this.inputs !== 'unresolved')
      this.log.warn(
        'spent outputs cannot be found: input addresses and values are left out (start Bitcoin Core with -txindex, or use v23 or later)',
        { chain: this.chain, err: message },
      );
  }

  /**
   * Writes linked blocks (with their outputs when they were kept), their events and the chain's state as one
   * unit on LMDB's write thread; the state in memory moves on at once, the promise resolves once it is durable.
   */
  private async commitBlocks(blocks: readonly PreparedBitcoinBlock[]): Promise<void> {
    const before = this.state;
    const after = statesAfter(before, blocks, this.opts.confirmations);
    for (const b of blocks) this.unwritten.set(b.number, b.hash);
    const durable = this.kv.writeBehind(() =>
      storeUnit(this.kv, this.chain, bitcoinBlockStore, blocks, before, after, this.events, (n) => this.hashOf(n)),
    );
    this.state = after.at(-1)!;
    await durable;
    this.opts.stored?.blocks(publishedBlocks(this.chain, blocks, before, after));
    for (const b of blocks) this.unwritten.delete(b.number);
    this.chainStart.note(this.durable().head);
    this.events.committed?.(this.chain);
  }

  /** Walks back from our head to the last block the node still has on its best chain, and removes ours above it. True when something was rolled back. */
  private async rollBack(): Promise<boolean> {
    let k = this.state.head;
    // Nothing below the start block is stored: the walk ends there (the start block itself may be replaced).
    const floor = floorOf(this.state);
    while (k >= floor) {
      let theirs: string | null;
      try {
        theirs = await this.upstream.call<string>('getblockhash', [k]);
      } catch (err) {
        if (!(err instanceof NodeError && err.code === -8)) throw err;
        theirs = null; // the node's chain is shorter now
      }
      if (theirs !== null && theirs === this.hashOf(k)) break;
      k--;
    }
    if (k === this.state.head) return false;
    const from = k + 1;
    const to = this.state.head;
    const next = { ...this.state, head: k, confirmed: Math.min(this.state.confirmed, k), pruned: Math.min(this.state.pruned, k) };
    await rollBackUnit(this.kv, bitcoinBlockStore, { chain: this.chain, from, to, after: next }, this.events, this.opts.stored);
    this.state = next;
    this.rolledBack++;
    this.log.info('reorg', { chain: this.chain, from, to });
    return true;
  }

  /** Drops the records and probe columns that fell out of the retention window, a batch at a time. */
  private async prune(): Promise<void> {
    this.state =
      (await pruneChain(this.kv, this.chain, this.state, this.opts.retention, this.events.oldestUnread?.(this.chain))) ?? this.state;
  }
}
