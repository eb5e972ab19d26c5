import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StoredMsg,
} from '@nats-io/jetstream';
import { findChain, type ChainFamily } from '../engine/chains/registry.js';
import type { ConsumerLag } from '../engine/cluster/node.js';
import type { StartState } from '../engine/ingest/chain-start.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import { removeUnit, type BlockStores, type PublishedBlock, type PublishedReorg, type StoredListener } from '../engine/ingest/commit.js';
import type { ChainEvents, ChainFollower } from '../engine/ingest/follow.js';
import { LeasedFollower, type FollowGate, type MakeFollower } from '../engine/ingest/following.js';
import type { ChainLeases, LeaseEvent } from '../engine/ingest/leases.js';
import type { Logger } from '../engine/log.js';
import type { Kv } from '../engine/ports.js';
import { applyBlockMessage, BLOCKS_FORMAT, BlockPublisher, BlockTooLargeError, blocksSubject, isStale } from './blocks.js';
import type { BusConnection } from './connect.js';
import { readFormatted } from './format.js';
import { OrderedApply } from './ordered.js';
import { retryLeftMs, retryWaitMs, within } from './waits.js';
import { BLOCKS_STREAM } from './streams.js';

/**
 * The chains of a cluster node: it follows a chain only while it holds the chain's lease, and publishes what its
 * follower stores; while another node holds it, it applies that node's blocks to its own store, from the position
 * it last applied. Taking a lease over, it first applies what the stream holds beyond its store (the last holder's
 * blocks), then takes back what its store holds beyond the stream (stored here and never published: a crash between
 * the two), which its follower then stores again from the node and publishes: no block is lost between store and
 * publish, and every node's store holds the stream's chain.
 */

/** `meta` key: the last sequence of CHAINPOST_BLOCKS this store holds for the chain, written with what it applied. */
export const blocksPosition = (chain: string): string => `blocksSeq/${chain}`;

/** A test seam: a block this says to drop is not published (as if the node crashed once it was stored). */
export type DropPublish = (chain: string, height: number) => boolean;

export interface ClusterChainsParts {
  bus: BusConnection;
  kv: Kv;
  /** This node's leases; undefined for a node without the `ingest` role, which never follows a chain. */
  leases: ChainLeases | undefined;
  /** The control log's sequence this node has applied: carried by each block it publishes. */
  controlSeq(): number;
  /** Each family's part of the commit path, by family (what applyBlockMessage writes with). */
  stores: BlockStores;
  /** What a block applied from another node tells (the Data API's indexer): it is not matched here. */
  applied: ChainEvents;
  /** What the follower's blocks tell (the matcher and the indexer): told of the blocks taken back at a takeover. */
  followed: ChainEvents;
  log: Logger;
  drop?: DropPublish;
  /**
   * How long a takeover's read of the chain's last message waits before it is asked again, and the longest wait
   * between two tries of a takeover or a block's publish, ms (5 s by default; a node gives its lease poll, TTL / 4):
   * the blocks stream's new leader after a failover is asked within it (bus/partitions.ts, `requestTimeoutMs`).
   */
  requestTimeoutMs?: number;
}

/** What is queued for publishing, in the order the follower stored it. */
type Outgoing = { kind: 'block'; block: PublishedBlock; controlSeq: number } | { kind: 'reorg'; reorg: PublishedReorg; controlSeq: number };

interface Chain {
  readonly chain: string;
  readonly family: ChainFamily | undefined;
  readonly follower: LeasedFollower;
  /** The last sequence of the blocks stream this store holds for the chain. */
  position: number;
  /** Bumped at each lease event: work begun for an older one stops. */
  epoch: number;
  /** The lease events' work, one after the other. */
  work: Promise<void>;
  /** What consumes the chain's subject now: the others' blocks, or a takeover's catch-up. */
  run: OrderedApply | undefined;
  queue: Outgoing[];
  pumping: Promise<void> | undefined;
  /** Why this node stopped applying the chain's blocks (a newer format). */
  halted: string | undefined;
  /** The messages of the chain's subject after the last one applied, as its consumer last said. */
  pending: number;
  /**
   * While this node follows the chain: the sequence of the chain's last message as it knows it (the stream's at
   * takeover, then each of its publishes). A publish expects it, so a node that lost the chain without knowing it
   * (its lease lapsed while it stalled) cannot append after another holder's blocks.
   */
  fence: number;
}

/** The stream's last message of a chain is in a newer format than this node reads. */
class NewerFormat extends Error {}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class ClusterChains implements FollowGate {
  private readonly chains = new Map<string, Chain>();
  private readonly js: JetStreamClient;
  private jsm: Promise<JetStreamManager> | undefined;
  private readonly publisher: BlockPublisher;
  private readonly unlisten: (() => void) | undefined;
  private stopped = false;

  constructor(private readonly parts: ClusterChainsParts) {
    this.js = jetstream(parts.bus.nc);
    this.publisher = new BlockPublisher(parts.bus);
    this.unlisten = parts.leases?.onEvent((event) => this.leaseEvent(event));
  }

  /** The chain's follower: it follows while this node holds the chain's lease, and applies the others' blocks meanwhile. */
  follower(chain: string, make: MakeFollower): ChainFollower {
    const { kv, leases } = this.parts;
    const c: Chain = {
      chain,
      family: findChain(chain)?.family,
      follower: new LeasedFollower(chain, kv, make),
      position: kv.get<number>('meta', blocksPosition(chain)) ?? 0,
      epoch: 0,
      work: Promise.resolve(),
      run: undefined,
      queue: [],
      pumping: undefined,
      halted: undefined,
      pending: 0,
      fence: 0,
    };
    this.chains.set(chain, c);
    this.startApplying(c, c.epoch);
    leases?.take(chain);
    return c.follower;
  }

  /** Stops following and applying: what was stored and not published yet is published first (a few seconds at most), then the leases go. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const c of this.chains.values()) c.follower.unfollow();
    // The last commits of the followers are durable (LMDB commits in order), so their blocks are queued.
    await this.parts.kv.transactAsync(() => undefined);
    await within(Promise.all([...this.chains.values()].map((c) => c.pumping)), 5_000);
    this.unlisten?.();
    await this.parts.leases?.stop();
    for (const c of this.chains.values()) {
      c.epoch++;
      c.queue.length = 0;
      c.run?.stop();
    }
    await Promise.all([...this.chains.values()].flatMap((c) => [c.work, c.run?.done, c.pumping]));
  }

  private leaseEvent(event: LeaseEvent): void {
    const c = this.chains.get(event.chain);
    if (c === undefined) return;
    const epoch = ++c.epoch;
    // What consumes the chain's subject now (the others' blocks, or a takeover's catch-up) stops.
    c.run?.stop();
    if (event.kind === 'lost') {
      // At once: another node may take the lease from now on. What was stored and not published is taken back by
      // the next holder's blocks (the same ones, or another branch).
      c.follower.unfollow();
      c.queue.length = 0;
      if (!this.stopped) this.startApplying(c, epoch);
      return;
    }
    c.work = c.work
      .then(() => this.takeOver(c, epoch))
      .catch((err: unknown) => this.parts.log.error('cluster: taking a chain over failed', { chain: c.chain, error: message(err) }));
  }

  /**
   * A chain whose stream holds a newer format than this node reads: it gives the lease up for good (an upgraded node
   * takes it), rather than hold it without following (a rolling upgrade would stop the chain cluster-wide).
   */
  private async leaveHalted(c: Chain): Promise<void> {
    this.parts.log.error(`cluster: this node gives the chain's lease up: ${c.halted}`, { chain: c.chain });
    await this.parts.leases?.release(c.chain);
  }

  /** Releases the chain's lease (its follower stops at the `lost`) and contends for it again. */
  private async giveUp(chain: string): Promise<void> {
    const leases = this.parts.leases;
    if (leases === undefined) return;
    try {
      await leases.release(chain);
    } catch (err) {
      this.parts.log.warn('cluster: releasing a chain failed', { chain, error: message(err) });
    }
    if (!this.stopped && this.chains.get(chain)?.halted === undefined) leases.take(chain);
  }

  /** Applies the others' blocks from now on (after what runs for the chain). */
  private startApplying(c: Chain, epoch: number): void {
    c.work = c.work.then(() => {
      // A chain halted at a newer format stays so until this node is upgraded.
      if (c.epoch !== epoch || this.stopped || c.halted !== undefined) return;
      c.run = this.consume(c, () => false);
    });
  }

  /**
   * The lease is this node's: the stream's blocks beyond this store applied, this store's blocks beyond the stream
   * taken back (never published), then the follower started from the store's state. Tried again while the bus fails.
   */
  private async takeOver(c: Chain, epoch: number): Promise<void> {
    await c.run?.done;
    c.run = undefined;
    for (let failures = 0; c.epoch === epoch && !this.stopped; failures++) {
      const sentAt = performance.now();
      try {
        const last = await this.lastPublished(c.chain);
        if (last !== undefined && last.seq > c.position && c.epoch === epoch) {
          c.run = this.consume(c, () => c.position >= last.seq || c.epoch !== epoch);
          await c.run.done;
          c.run = undefined;
          if (c.halted !== undefined) return this.leaveHalted(c);
          if (c.position < last.seq) continue;
        }
        if (c.epoch !== epoch || this.stopped) return;
        if (last !== undefined) {
          // The store's block at the stream's head is the stream's, or the store left the stream's branch there.
          const here = this.parts.kv.get<string>('canon', blockKey(c.chain, last.head));
          await this.takeBack(
            c,
            last.hash !== undefined && here !== undefined && here !== last.hash ? last.head : last.head + 1,
            this.parts.followed,
            last.confirmed,
          );
        }
        if (c.epoch !== epoch || this.stopped) return;
        c.fence = last?.seq ?? 0;
        this.parts.log.info('cluster: following a chain (its lease taken)', {
          chain: c.chain,
          node: this.parts.leases?.node,
          position: c.position,
        });
        c.follower.follow(this.listener(c, epoch));
        return;
      } catch (err) {
        if (err instanceof NewerFormat) {
          c.halted = err.message;
          return this.leaveHalted(c);
        }
        this.parts.log.warn('cluster: taking a chain over failed; trying again', { chain: c.chain, error: message(err) });
        await pause(retryLeftMs(failures, sentAt, this.parts.requestTimeoutMs));
      }
    }
  }

  /**
   * The last message of the chain's subject: its sequence, and the chain's head after it (and that block's hash), and
   * the block confirmed after it as far as the message says.
   */
  private async lastPublished(chain: string): Promise<{ seq: number; head: number; hash?: string; confirmed?: number } | undefined> {
    this.jsm ??= jetstreamManager(this.parts.bus.nc, { checkAPI: false, timeout: this.parts.requestTimeoutMs ?? 5_000 });
    const jsm = await this.jsm;
    let stored: StoredMsg | null;
    try {
      stored = await jsm.streams.getMessage(BLOCKS_STREAM, { last_by_subj: blocksSubject(chain) });
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return undefined;
      throw err;
    }
    if (stored === null) return undefined;
    const read = readFormatted({ data: stored.data, headers: stored.header }, BLOCKS_FORMAT);
    if ('newer' in read)
      throw new NewerFormat(`block message ${stored.seq} is in format ${read.newer}, this node reads format ${BLOCKS_FORMAT}: upgrade it`);
    if (!('body' in read)) throw new Error(`the last message of ${chain} is not one this node reads (${JSON.stringify(read)})`);
    const { kind, height, hash, after } = read.body as { kind?: unknown; height?: unknown; hash?: unknown; after?: Partial<StartState> };
    const confirmed = typeof after?.confirmed === 'number' ? { confirmed: after.confirmed } : {};
    if (kind === 'block' && typeof height === 'number' && typeof hash === 'string')
      return { seq: stored.seq, head: height, hash, ...confirmed };
    if (kind === 'reorg' && typeof after?.head === 'number') return { seq: stored.seq, head: after.head, ...confirmed };
    throw new Error(`the last message of ${chain} is no block or reorg`);
  }

  /**
   * Takes back this store's blocks of the chain from `from` up: blocks the stream does not hold (its branch wins). The
   * chain's confirmed block goes back with them, to what the stream says when known (`confirmed`): what those blocks
   * confirmed is confirmed again as they are stored again, and published with them for the other nodes.
   */
  private async takeBack(c: Chain, from: number, events: ChainEvents, confirmed = Number.POSITIVE_INFINITY): Promise<void> {
    const { kv, log } = this.parts;
    const state = kv.get<StartState>('chainState', c.chain);
    const store = c.family === undefined ? undefined : this.parts.stores[c.family];
    if (state === undefined || store === undefined || state.head < from) return;
    if (from <= state.pruned) {
      log.error('cluster: the store holds blocks the stream does not, below what it keeps whole; left as they are', {
        chain: c.chain,
        from,
      });
      return;
    }
    log.warn('cluster: taking back blocks the stream does not hold (stored, not published)', { chain: c.chain, from, to: state.head });
    const after: StartState = { ...state, head: from - 1, confirmed: Math.min(state.confirmed, from - 1, confirmed) };
    await kv.transactAsync(() => removeUnit(kv, store, { chain: c.chain, from, to: state.head, after }, events));
  }

  /** An ordered consumer of the chain's subject from the position after this store's, applying each block until `done`. */
  private consume(c: Chain, done: () => boolean): OrderedApply {
    return new OrderedApply(this.js, BLOCKS_STREAM, {
      subject: blocksSubject(c.chain),
      applied: () => c.position,
      apply: (m) => this.apply(c, m),
      until: done,
      failed: (err) =>
        this.parts.log.warn('cluster: applying blocks failed; trying again', { chain: c.chain, error: message(err), position: c.position }),
    });
  }

  /** Applies one message to this store with the position in the same transaction; false: stop applying the chain. */
  private async apply(c: Chain, m: JsMsg): Promise<boolean> {
    const { kv, log } = this.parts;
    const seq = m.seq;
    if (seq <= c.position) return true;
    const key = blocksPosition(c.chain);
    const write = (): void => kv.put('meta', key, seq);
    let applied = await applyBlockMessage(kv, m, this.parts.applied, this.parts.stores, write);
    if ('applied' in applied && !applied.applied && applied.kind === 'block') {
      // Another block at its height: this store has blocks the stream does not (stored here, never published). The stream's win.
      const here = kv.get<string>('canon', blockKey(c.chain, applied.height));
      if (here !== undefined && here !== applied.hash) {
        await this.takeBack(c, applied.height, this.parts.applied);
        applied = await applyBlockMessage(kv, m, this.parts.applied, this.parts.stores, write);
      }
    }
    if ('newer' in applied) {
      c.halted = `block message ${seq} is in format ${applied.newer}, this node reads format ${BLOCKS_FORMAT}: upgrade it`;
      log.error(`cluster: this node stops applying the chain's blocks: ${c.halted}`, { chain: c.chain });
      return false;
    }
    if ('malformed' in applied) {
      log.error('cluster: a message that is no block skipped', { chain: c.chain, seq, error: applied.malformed });
      await kv.transactAsync(write);
    } else if (!applied.applied && applied.why !== 'stored already' && applied.why !== 'removed already')
      log.warn('cluster: a published block left out', { chain: c.chain, seq, height: applied.height, why: applied.why });
    c.position = seq;
    c.pending = m.info.pending;
    return true;
  }

  /** How far behind the stream this node's store is for each chain it applies (not the ones it follows). */
  lags(): ConsumerLag[] {
    return [...this.chains.values()]
      .filter((c) => c.run !== undefined && !this.parts.leases?.holds(c.chain))
      .map((c) => ({ name: `blocks ${c.chain}`, lag: c.pending }));
  }

  /** What the follower stores while this node holds the lease (`epoch`), queued for publishing in order. */
  private listener(c: Chain, epoch: number): StoredListener {
    const queue = (item: Outgoing): void => {
      if (c.epoch !== epoch) return;
      c.queue.push(item);
      this.pump(c);
    };
    return {
      blocks: (published) => {
        const controlSeq = this.parts.controlSeq();
        for (const block of published)
          if (this.parts.drop?.(c.chain, block.block.number) !== true) queue({ kind: 'block', block, controlSeq });
      },
      reorg: (reorg) => queue({ kind: 'reorg', reorg, controlSeq: this.parts.controlSeq() }),
    };
  }

  /** Publishes the queue in order; a publish that fails (the bus down) is tried again, before anything after it. */
  private pump(c: Chain): void {
    if (c.pumping !== undefined || c.queue.length === 0) return;
    c.pumping = this.publishQueued(c).finally(() => {
      c.pumping = undefined;
      this.pump(c);
    });
  }

  private async publishQueued(c: Chain): Promise<void> {
    const { kv, log } = this.parts;
    for (let failures = 0; c.queue.length > 0; ) {
      const item = c.queue[0]!;
      const family = c.family;
      if (family === undefined) {
        c.queue.length = 0;
        return;
      }
      try {
        const ack =
          item.kind === 'block'
            ? await this.publisher.publishBlock(family, item.block, item.controlSeq, c.fence)
            : await this.publisher.publishReorg(family, item.reorg, item.controlSeq, c.fence);
        failures = 0;
        if (c.queue[0] === item) c.fence = Math.max(c.fence, ack.seq);
        if (c.queue[0] === item) c.queue.shift();
        // This store holds what it published: a consumer started here later begins after it.
        if (ack.seq > c.position) {
          c.position = ack.seq;
          // Not awaited: a position written late or lost only has a consumer meet blocks this store holds already.
          kv.transactAsync(() => kv.put('meta', blocksPosition(c.chain), ack.seq)).catch((err: unknown) =>
            log.warn('cluster: the position of a published block was not written', { chain: c.chain, error: message(err) }),
          );
        }
      } catch (err) {
        if (isStale(err)) {
          // Another node published the chain after what this one knows: it is no longer the chain's holder (its
          // lease lapsed unseen). It gives the chain up and contends again: a takeover starts from the stream.
          log.error('cluster: another node published blocks of this chain; this node stops following it', {
            chain: c.chain,
            fence: c.fence,
          });
          c.queue.length = 0;
          void this.giveUp(c.chain);
          return;
        }
        if (err instanceof BlockTooLargeError) {
          log.error('cluster: a block too large for the NATS server is not published', { chain: c.chain, error: err.message });
          if (c.queue[0] === item) c.queue.shift();
          continue;
        }
        failures++;
        log.warn('cluster: publishing a block failed; trying again', { chain: c.chain, error: message(err) });
        await pause(retryWaitMs(failures, this.parts.requestTimeoutMs));
      }
    }
  }
}
