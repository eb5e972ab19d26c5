import type { Clock, Timer } from '../clock.js';
import { blockKey } from '../ingest/chain-store.js';
import { publishedBlocks, rollBackUnit, storeUnit, type StoredListener } from '../ingest/commit.js';
import { SyncLoop, pruneChain, rawCall, type ChainEvents, type ChainFollower, type FollowerStatus } from '../ingest/follow.js';
import type { Logger } from '../log.js';
import { NodeError, type Kv, type SlotWake, type Upstream } from '../ports.js';
import {
  solanaBlockStore,
  storedSolanaBlock,
  type PreparedSolanaBlock,
  type PreparedSolanaOutcome,
  type SolanaIngestPool,
  type StoredSolanaBlock,
} from './prepared.js';

/**
 * Follows a Solana node slot by slot into the store (the shared tables and
 * block events of engine/ingest/chain-store.ts, a slot's number as the block
 * number): getSlot (confirmed) at each wake-up, then getBlock for each slot
 * above our head, in order, prepared in the worker pool. A skipped slot
 * (-32007, -32009) leaves a gap: nothing is stored or announced for it. A slot
 * not yet available (-32004) ends the wake-up there; it is asked again at the
 * next, and skipped only once a block above it links past it (agave's answer
 * for a skipped slot above the root). A block whose parent link (parentSlot,
 * previousBlockhash) is not our last stored slot is a fork: our slots above the
 * fork point are rolled back and the node's branch is taken. slotSubscribe
 * wakes the follower as slots come, where the node offers it; the poll runs
 * anyway, as a safety net and for nodes without a WebSocket.
 *
 * A chain followed for the first time starts at the node's confirmed slot of
 * that moment: what came before is history no stream can have asked for.
 *
 * Blocks and forks are written by the shared commit path (engine/ingest/commit.ts: storeUnit, rollBackUnit) and
 * told to `stored` once durable, each block with the state the last one told left (not the state just before
 * it): what the follower writes between blocks (skipped slots, confirmations as the node's tip moves on) is no
 * block of its own, and reaches the other nodes of a cluster with the next block.
 */
export interface SolanaChainState {
  /** Last slot fetched (stored, or skipped); −1 before the first. */
  head: number;
  /** Last slot up to which stored slots were announced as confirmed. */
  confirmed: number;
  /** Last slot whose record and probe column were pruned. */
  pruned: number;
}

export interface SolanaFollowerStatus extends FollowerStatus {
  /** Slots the node reported skipped (or missing) since the start: no block, nothing stored. */
  skippedSlots: number;
  /** How new slots are noticed: slotSubscribe open on the node's WebSocket, or the poll alone. */
  wake: 'websocket' | 'poll';
}

/** Slots fetched and prepared ahead while a group commits: the pool parses them meanwhile. */
const AHEAD = 8;
/** Slots written as one unit while catching up: one flush to disk for them all. */
const GROUP = 4;
/** agave's "slot skipped, or missing due to ledger jump to recent snapshot" and "… missing in long-term storage". */
const SKIPPED = new Set([-32007, -32009]);
/** agave's "Block not available for slot" and "Block status not yet available for slot": announced, not yet fetchable. */
const NOT_YET = new Set([-32004, -32014]);
/** previousBlockhash of a block whose parent the node no longer has (it started from a snapshot above it). */
const UNKNOWN_PARENT = '11111111111111111111111111111111';
/** The WebSocket is tried again after 1 s, doubling up to this, while it fails; back to 1 s once one opens. */
const MAX_RECONNECT_MS = 30_000;

const GET_BLOCK_CONFIG = {
  encoding: 'json',
  transactionDetails: 'full',
  maxSupportedTransactionVersion: 0,
  rewards: false,
  commitment: 'confirmed',
} as const;

/** A slot as the node answered it: its block, skipped, or not yet available. */
type Fetched = PreparedSolanaBlock | 'skipped' | 'later';

export class SolanaFollower implements ChainFollower {
  private state: SolanaChainState | undefined;
  /** The chain's state as the last block or fork told to `stored` left it: a cluster's other nodes hold that one. */
  private told: SolanaChainState | undefined;
  private readonly loop: SyncLoop;
  private reconnect: Timer | undefined;
  private unsubscribe: (() => void) | undefined;
  private reconnectMs = 1_000;
  private subscribed = false;
  private nodeHead = -1;
  private rolledBack = 0;
  private skipped = 0;

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
      /** Full blocks kept (default all), counted in slots. */
      retention?: number;
      pool: SolanaIngestPool;
      /** slotSubscribe on the node's WebSocket; none: the poll alone. */
      slots?: SlotWake;
      /** Told what was stored once it is durable (a cluster's node publishes it). */
      stored?: StoredListener;
    },
  ) {
    this.state = this.told = kv.get<SolanaChainState>('chainState', chain);
    this.loop = new SyncLoop(
      chain,
      log,
      clock,
      opts.pollMs,
      () => this.round(),
      () => this.prune(),
    );
  }

  start(): void {
    this.subscribe();
    this.loop.start();
  }

  private get stopped(): boolean {
    return this.loop.stopped;
  }

  stop(): void {
    this.loop.stop();
    this.reconnect?.cancel();
    this.unsubscribe?.();
  }

  status(): SolanaFollowerStatus {
    const s = this.state ?? { head: -1, confirmed: -1, pruned: -1 };
    return {
      chain: this.chain,
      head: this.lastStored(s.head) ?? -1,
      confirmed: s.confirmed,
      nodeHead: this.nodeHead,
      oldest: s.pruned + 1,
      ...this.loop.health.status(),
      skippedSlots: this.skipped,
      wake: this.subscribed ? 'websocket' : 'poll',
    };
  }

  reorgs(): number {
    return this.rolledBack;
  }

  private subscribe(): void {
    if (this.stopped || this.opts.slots === undefined) return;
    this.unsubscribe = this.opts.slots.subscribe({
      onSlot: (slot) => {
        if (slot > this.nodeHead) this.nodeHead = slot;
        void this.sync();
      },
      onOpen: () => {
        this.subscribed = true;
        this.reconnectMs = 1_000;
      },
      onClose: () => {
        this.unsubscribe = undefined;
        this.subscribed = false;
        if (this.stopped) return;
        // The poll goes on meanwhile; the socket is tried again later, less often while it keeps failing.
        this.reconnect = this.clock.at(this.clock.now() + this.reconnectMs, () => this.subscribe());
        this.reconnectMs = Math.min(MAX_RECONNECT_MS, this.reconnectMs * 2);
      },
    });
  }

  /** Catches up to the node's confirmed slot now; resolves when done (tests, and each wake-up). */
  sync(): Promise<void> {
    return this.loop.sync();
  }

  /** One round: the node's confirmed slot, the slots up to it, and the confirmations it brings. */
  private async round(): Promise<void> {
    const tip = await this.upstream.call<number>('getSlot', [{ commitment: 'confirmed' }]);
    if (tip > this.nodeHead) this.nodeHead = tip;
    // The first time: from the node's confirmed slot on.
    this.state ??= await this.begin(tip);
    await this.catchUp(tip);
    await this.confirm(tip);
  }

  private async begin(tip: number): Promise<SolanaChainState> {
    const state = { head: tip - 1, confirmed: tip - 1, pruned: tip - 1 };
    await this.kv.transactAsync(() => this.kv.put('chainState', this.chain, state));
    this.told = state;
    this.log.info("following a new chain from the node's confirmed slot", { chain: this.chain, slot: tip });
    return state;
  }

  private hashOf(slot: number): string | undefined {
    return this.kv.get<string>('canon', blockKey(this.chain, slot));
  }

  /** Our highest slot holding a block at or below `slot` (undefined: none); `canon` stays through pruning. */
  private lastStored(slot: number): number | undefined {
    if (slot < 0) return undefined;
    const [last] = this.kv.range<string>('canon', { start: blockKey(this.chain, slot), end: `${this.chain}/`, reverse: true, limit: 1 });
    return last === undefined ? undefined : this.slotOf(last.key);
  }

  /**
   * Slots from our head up to `tip`, GROUP at a time with AHEAD more fetched and prepared meanwhile; stops at
   * a slot not yet available. A group's blocks and skipped slots are written as one unit, flushed to disk
   * while the next group is awaited; the next is checked and handed over once it is durable, so units land
   * in order and a fork is found against the store as written.
   */
  private async catchUp(tip: number): Promise<void> {
    const ahead = new Map<number, Promise<Fetched>>();
    // Forks met in a row without a block taken: a node whose answers keep changing is tried again later.
    let forks = 0;
    let writing: Promise<void> | undefined;
    try {
      for (let more = true; more && !this.stopped && this.state!.head < tip; ) {
        const first = this.state!.head + 1;
        for (let n = first; n <= Math.min(tip, first + GROUP - 1 + AHEAD); n++) if (!ahead.has(n)) ahead.set(n, this.fetchAhead(n));
        const last = Math.min(tip, first + GROUP - 1);
        const fetched: Fetched[] = [];
        for (let n = first; n <= last; n++) fetched.push(await ahead.get(n)!);
        await writing;
        writing = undefined;
        if (this.stopped) break;
        const unit: Array<StoredSolanaBlock | number> = [];
        const stored = this.lastStored(first - 1);
        let below = stored === undefined ? undefined : { slot: stored, hash: this.hashOf(stored) };
        for (const [i, got] of fetched.entries()) {
          const slot = first + i;
          // Not available yet: asked again at the next wake-up, unless the node's branch already passed over it.
          if (got === 'later' && !(await this.passedOver(slot, ahead))) {
            more = false;
            break;
          }
          if (got === 'skipped' || got === 'later') {
            unit.push(slot);
            continue;
          }
          // The parent's hash is checked where the node still has it; a node started from a snapshot above it says 111…1.
          if (
            below !== undefined &&
            (got.parentSlot !== below.slot || (got.parentHash !== below.hash && got.parentHash !== UNKNOWN_PARENT))
          ) {
            // A fork at the unit's first block; further on, the unit stops there and the next one starts with it.
            if (unit.length > 0) break;
            ahead.clear();
            if (++forks > 3) throw new Error(`slot ${slot} still does not follow our slot ${below.slot} after rolling back; trying again`);
            // The node's branch no longer extends ours: back to the fork point, then on from there.
            await this.rollBack(got);
            break;
          }
          forks = 0;
          unit.push(storedSolanaBlock(got, below));
          below = { slot: got.slot, hash: got.hash };
        }
        for (let n = first; n < first + unit.length; n++) ahead.delete(n);
        if (unit.length === 0) continue;
        writing = this.commitUnit(unit, tip);
        // Its failure is taken at the next await of it (not an unhandled rejection meanwhile).
        writing.catch(() => {});
      }
      await writing;
    } catch (err) {
      // A failed write leaves the store as it was: the state in memory goes back to it.
      await writing?.catch(() => {});
      this.state = this.kv.get<SolanaChainState>('chainState', this.chain) ?? this.state;
      throw err;
    } finally {
      // What was fetched ahead is dropped (a fork, a stop, a failure, a slot not yet available).
      await Promise.allSettled(ahead.values());
    }
  }

  /**
   * Whether slot `slot`, not available yet, is skipped on the node's confirmed branch: the first block
   * fetched above it links to a parent below it. agave answers -32004, not -32007, for a skipped slot until
   * the root passes it (some 32 slots, 13 s); waiting for that would hold every later slot as long.
   */
  private async passedOver(slot: number, ahead: ReadonlyMap<number, Promise<Fetched>>): Promise<boolean> {
    for (let n = slot + 1; ahead.has(n); n++) {
      const got = await ahead.get(n)!;
      if (got === 'later') return false;
      if (got !== 'skipped') return got.parentSlot < slot;
    }
    return false;
  }

  private fetchAhead(slot: number): Promise<Fetched> {
    const got = this.fetch(slot);
    got.catch(() => {});
    return got;
  }

  /** The node's block at `slot`, prepared in the pool; or what it says instead (skipped, not yet). */
  private async fetch(slot: number): Promise<Fetched> {
    let prepared: PreparedSolanaOutcome;
    try {
      prepared = await this.opts.pool.prepare(this.chain, {
        slot,
        block: await rawCall(this.upstream, 'getBlock', [slot, GET_BLOCK_CONFIG]),
      });
    } catch (err) {
      // A short answer's error is found by the HTTP client; a long one's by the worker, below.
      if (err instanceof NodeError) return this.answered(slot, err.code, err.message);
      throw err;
    }
    // A null result: the slot is on the confirmed branch but its block is not complete on this node yet (agave).
    if (prepared === null) return 'later';
    if ('error' in prepared) return this.answered(slot, prepared.error.code, prepared.error.message);
    return prepared;
  }

  private answered(slot: number, code: number, message: string): Fetched {
    if (SKIPPED.has(code)) return 'skipped';
    if (NOT_YET.has(code)) return 'later';
    throw new NodeError(code, `getBlock ${slot}: ${message}`);
  }

  /**
   * Writes a run of slots (their blocks, and nothing for the skipped ones) with each block's seen event and the
   * confirmations it brings (the stored slots up to it and `confirmations` below the node's tip), and the chain's
   * state, as one unit on LMDB's write thread; the state in memory moves on at once, the promise resolves once
   * the unit is durable.
   */
  private async commitUnit(unit: ReadonlyArray<StoredSolanaBlock | number>, tip: number): Promise<void> {
    const blocks = unit.filter((u): u is StoredSolanaBlock => typeof u !== 'number');
    const lastSlot = unit.map((u) => (typeof u === 'number' ? u : u.number)).at(-1)!;
    const upTo = tip - this.opts.confirmations;
    const before = this.state!;
    // The state after each block; the last one's head is the unit's last slot, skipped or not.
    const after = blocks.map((b, i) => ({
      ...before,
      head: i === blocks.length - 1 ? lastSlot : b.number,
      confirmed: Math.max(before.confirmed, Math.min(upTo, b.number)),
    }));
    const next = after.at(-1) ?? { ...before, head: lastSlot };
    const durable = this.kv.writeBehind(() =>
      blocks.length === 0
        ? this.kv.put('chainState', this.chain, next)
        : storeUnit(this.kv, this.chain, solanaBlockStore, blocks, before, after, this.events, (n) => this.hashOf(n)),
    );
    this.state = next;
    this.skipped += unit.length - blocks.length;
    await durable;
    if (blocks.length === 0) return;
    this.opts.stored?.blocks(publishedBlocks(this.chain, blocks, this.told!, after));
    this.told = next;
    this.events.committed?.(this.chain);
  }

  /**
   * Announces as confirmed, in order, the stored slots `confirmations` below the node's tip (its confirmed
   * slot) that are still ours, where no block commit did (the tip moved on, or slots were skipped): skipped
   * slots have nothing to announce, and a slot above our head waits for it.
   */
  private async confirm(tip: number): Promise<void> {
    const to = Math.min(tip - this.opts.confirmations, this.state!.head);
    if (this.stopped || to <= this.state!.confirmed) return;
    const confirmed = this.storedBetween(this.state!.confirmed + 1, to);
    const next = { ...this.state!, confirmed: to };
    await this.kv.writeBehind(() => {
      for (const [slot, hash] of confirmed) this.events.confirmed(this.chain, slot, hash);
      this.kv.put('chainState', this.chain, next);
    });
    this.state = next;
    if (confirmed.length > 0) this.events.committed?.(this.chain);
  }

  /** Our stored slots from `from` to `to` (inclusive) with their hashes, in order. */
  private storedBetween(from: number, to: number): Array<[slot: number, hash: string]> {
    if (to < from) return [];
    return this.kv
      .range<string>('canon', { start: blockKey(this.chain, from), end: blockKey(this.chain, to + 1) })
      .map((e) => [this.slotOf(e.key), e.value]);
  }

  private slotOf(key: string): number {
    return parseInt(key.slice(this.chain.length + 1), 16);
  }

  /**
   * `got` does not link to our last stored slot: finds the fork point (the highest slot of ours the node
   * still has, asked from its parent down) and removes ours above it.
   */
  private async rollBack(got: PreparedSolanaBlock): Promise<void> {
    let theirs = { slot: got.parentSlot, hash: got.parentHash };
    let ours = this.lastStored(Math.min(theirs.slot, this.state!.head));
    // The node's chain, walked down by parent links, until a block of it is one of ours.
    while (ours !== undefined && !(theirs.slot === ours && theirs.hash === this.hashOf(ours))) {
      if (theirs.slot > ours) {
        const parent = await this.fetch(theirs.slot);
        if (parent === 'skipped' || parent === 'later')
          throw new Error(`slot ${theirs.slot}, the parent of a block the node sent, is not available from it; trying again`);
        theirs = { slot: parent.parentSlot, hash: parent.parentHash };
      } else ours = this.lastStored(ours - 1);
    }
    const keep = ours ?? this.state!.pruned;
    // Slots above the fork point: ours are removed, the skipped ones fetched again on the node's branch.
    const from = keep + 1;
    const to = this.state!.head;
    if (ours === undefined)
      this.log.warn('a fork below the stored slots: every stored slot is rolled back', { chain: this.chain, from, to });
    const removed = this.storedBetween(from, to).map(([slot]) => slot);
    const next = {
      ...this.state!,
      head: keep,
      confirmed: Math.min(this.state!.confirmed, keep),
      pruned: Math.min(this.state!.pruned, keep),
    };
    if (removed.length === 0) {
      // Skipped slots alone above the fork point: nothing to take back, the state moves down.
      await this.kv.transactAsync(() => this.kv.put('chainState', this.chain, next));
      this.state = next;
      return;
    }
    // From our first stored slot above the fork point to our last: the reorg's first block is one we hold.
    const rollback = { chain: this.chain, from: removed[0]!, to: removed.at(-1)!, after: next };
    await rollBackUnit(this.kv, solanaBlockStore, rollback, this.events, this.opts.stored);
    this.state = this.told = next;
    this.rolledBack++;
    this.log.info('reorg', { chain: this.chain, from: rollback.from, to: rollback.to });
  }

  /** Drops the records and probe columns that fell out of the retention window (in slots), a batch at a time. */
  private async prune(): Promise<void> {
    this.state =
      (await pruneChain(this.kv, this.chain, this.state!, this.opts.retention, this.events.oldestUnread?.(this.chain))) ?? this.state;
  }
}
