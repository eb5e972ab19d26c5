import type { Clock, Timer } from '../clock.js';
import type { Logger } from '../log.js';
import type { Kv, Upstream } from '../ports.js';
import { pruneBlock } from './chain-store.js';

/**
 * What every chain family's follower shares: the events it announces blocks
 * with (the matcher's block-event log listens), and the status /health and
 * /metrics report (a family adds its own fields). Each family's follower is in its folder (engine/evm/,
 * engine/bitcoin/).
 */
export interface ChainEvents {
  seen(chain: string, number: number, hash: string): void;
  /** `hash`: the confirmed block's (canonical) hash. */
  confirmed(chain: string, number: number, hash: string): void;
  /** A transaction the follower's announcements were made in is durable (they can be read now). */
  committed?(chain: string): void;
  /** Blocks from `from` to `to` (inclusive) are no longer canonical. */
  reorged(chain: string, from: number, to: number): void;
  /** The lowest block whose record a listener has yet to read (pruning stops below it); undefined when none. */
  oldestUnread?(chain: string): number | undefined;
  /**
   * Before a follower writes blocks above `head` while it catches up: a promise when a listener wants it to wait
   * (the Data API's indexes, more than a batch behind: a catch-up is done when they are too, and the follower's
   * own work running ahead only takes the event loop from theirs); undefined to go on at once.
   */
  pace?(chain: string, head: number): Promise<void> | undefined;
}

export interface FollowerStatus {
  chain: string;
  head: number;
  confirmed: number;
  /** The highest block the node announced (EVM: newHeads or eth_blockNumber; Bitcoin: its best block's height); −1 before the first. */
  nodeHead: number;
  /** Oldest block whose full record is still stored. */
  oldest: number;
  upstream: 'ok' | 'failing';
  /** Failed sync attempts since the start. */
  upstreamErrors: number;
  lastError?: string;
}

/** A followed chain, whatever its family. */
export interface ChainFollower {
  start(): void;
  stop(): void;
  status(): FollowerStatus;
  /** How many times the store rolled back (a reorg) since the start. */
  reorgs(): number;
}

/**
 * A call's answer as the node sent it (its body, for the worker pool to parse); an upstream without a raw
 * call (a test's stand-in) has its answer written out again as a JSON-RPC body.
 */
export function rawCall(upstream: Upstream, method: string, params: unknown[]): Promise<Uint8Array> {
  if (upstream.callRaw !== undefined) return upstream.callRaw(method, params);
  return upstream.call<unknown>(method, params).then((result) => new TextEncoder().encode(JSON.stringify({ result, error: null, id: 1 })));
}

const MAX_BACKOFF_MS = 30_000;
/** Blocks pruned per transaction: the window's tail is cut a little at each wake-up, never in one long stall. */
const PRUNE_BATCH = 1_000;

/** How a follower's node is doing: failures in a row (the poll backs off), errors since the start, the last one. */
export class UpstreamHealth {
  private failures = 0;
  private errors = 0;
  private lastError: string | undefined;

  constructor(
    private readonly chain: string,
    private readonly log: Logger,
  ) {}

  ok(): void {
    this.failures = 0;
    this.lastError = undefined;
  }

  failed(err: unknown): void {
    this.failures++;
    this.errors++;
    this.lastError = (err as Error).message;
    this.log.warn('upstream failing', { chain: this.chain, failures: this.failures, err: this.lastError });
  }

  /** The wait before the next poll: the interval, doubled for each failure in a row, up to 30 s. */
  delay(pollMs: number): number {
    return this.failures === 0 ? pollMs : Math.min(MAX_BACKOFF_MS, pollMs * 2 ** this.failures);
  }

  status(): Pick<FollowerStatus, 'upstream' | 'upstreamErrors' | 'lastError'> {
    return {
      upstream: this.failures === 0 ? 'ok' : 'failing',
      upstreamErrors: this.errors,
      ...(this.lastError === undefined ? {} : { lastError: this.lastError }),
    };
  }
}

/**
 * The blocks whose records and probe columns may be pruned now, a batch at most: below the retention
 * window, confirmed (a reorg may still need what is above), and read by every listener. Undefined: none.
 */
export function prunable(
  state: { head: number; confirmed: number; pruned: number },
  retention: number | undefined,
  oldestUnread: number | undefined,
): { from: number; to: number } | undefined {
  if (retention === undefined) return undefined;
  const from = state.pruned + 1;
  const to = Math.min(from + PRUNE_BATCH, state.head - retention + 1, state.confirmed + 1, oldestUnread ?? Infinity) - 1;
  return to < from ? undefined : { from, to };
}

/**
 * Drops the records and probe columns prunable() allows, with the chain's next state, in one transaction;
 * answers that state (undefined: nothing to prune).
 */
export async function pruneChain<S extends { head: number; confirmed: number; pruned: number }>(
  kv: Kv,
  chain: string,
  state: S,
  retention: number | undefined,
  oldestUnread: number | undefined,
): Promise<S | undefined> {
  const range = prunable(state, retention, oldestUnread);
  if (range === undefined) return undefined;
  const next = { ...state, pruned: range.to };
  await kv.transactAsync(() => {
    for (let n = range.from; n <= range.to; n++) pruneBlock(kv, chain, n);
    kv.put('chainState', chain, next);
  });
  return next;
}

/**
 * Where a chain's following ends: at service time `at` (its removal from the registry), the first wake-up
 * from then on stops the loop and calls `end` (the rest of the follower's stop, and its log line) instead of
 * syncing.
 */
export interface FollowEnd {
  at: number;
  end(): void;
}

/**
 * The wake-up loop of a follower: one sync at a time, a call during it queuing one more round (a wake-up is
 * never lost: one that comes during `after` starts a sync at once), the poll timer as a safety net, backing
 * off while the node fails, and the node's health from how each sync ended. A follower with its own wake-ups
 * (a head or slot subscription) calls sync() from them.
 */
export class SyncLoop {
  readonly health: UpstreamHealth;
  private running = false;
  private again = false;
  private stoppedAt = false;
  private timer: Timer | undefined;

  constructor(
    chain: string,
    log: Logger,
    private readonly clock: Clock,
    private readonly pollMs: number,
    /** Catches up with the node once; run again while wake-ups came during it. */
    private readonly round: () => Promise<void>,
    /** After the rounds (pruning, the mempool), before the sync counts as healthy. */
    private readonly after: () => Promise<void>,
    private readonly ends?: FollowEnd,
  ) {
    this.health = new UpstreamHealth(chain, log);
  }

  get stopped(): boolean {
    return this.stoppedAt;
  }

  start(): void {
    this.poll();
  }

  stop(): void {
    this.stoppedAt = true;
    this.timer?.cancel();
  }

  /** Catches up now; resolves when done (tests, and each wake-up). Coalesced: one runs, one more waits. */
  async sync(): Promise<void> {
    if (this.stoppedAt) return;
    if (this.ends !== undefined && this.clock.now() >= this.ends.at) {
      this.stop();
      this.ends.end();
      return;
    }
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        await this.round();
      } while (this.again && !this.stoppedAt);
      await this.after();
      this.health.ok();
    } catch (err) {
      if (this.stoppedAt) return;
      this.health.failed(err);
    } finally {
      this.running = false;
      if (this.again && !this.stoppedAt) void this.sync();
    }
  }

  private poll(): void {
    if (this.stoppedAt) return;
    void this.sync().finally(() => {
      if (this.stoppedAt) return;
      this.timer = this.clock.at(this.clock.now() + this.health.delay(this.pollMs), () => this.poll());
    });
  }
}
