import type { Clock, Timer } from '../clock.js';

/**
 * Whether each followed chain's head moves. A node can answer every poll and still make no blocks (anvil
 * mines nothing while a call runs), and its upstream state stays `ok` meanwhile: /health shows such a chain
 * `stalled` once its head has stood still for STALL_BLOCK_TIMES of its block times, on the service clock.
 */

/** Block times a head may stand still before its chain is stalled: a few missed blocks are ordinary. */
export const STALL_BLOCK_TIMES = 10;
/** Never sooner than this: fast chains' blocks (Arbitrum's 250 ms) come in bursts, and a poll takes time too. */
export const STALL_MIN_MS = 30_000;
/** How often the heads are looked at between /health reads (service time), so a stall counts from its start. */
const LOOK_EVERY_MS = 5_000;

/** How long a chain with this block time may keep its head before it is stalled. */
export const stallAfterMs = (blockTimeMs: number): number => Math.max(STALL_MIN_MS, STALL_BLOCK_TIMES * blockTimeMs);

export class HeadWatch {
  /** Each chain's head as last looked at, and when it was first seen there. */
  private readonly last = new Map<string, { head: number; since: number }>();
  private next: Timer | undefined;

  constructor(
    private readonly clock: Clock,
    /** A chain's block time, ms (the registry's, the embedded devnet's own). */
    private readonly blockTimeMs: (chain: string) => number,
  ) {}

  /** Looks at the heads `heads` gives now and every LOOK_EVERY_MS of service time on, until stop(). */
  start(heads: () => ReadonlyArray<{ chain: string; head: number }>): void {
    const look = (): void => {
      for (const h of heads()) this.since(h.chain, h.head);
      this.next = this.clock.at(this.clock.now() + LOOK_EVERY_MS, look);
    };
    look();
  }

  /** No more looks: a server closed in a process that goes on (a test's) leaves no timer behind. */
  stop(): void {
    this.next?.cancel();
  }

  /** Whether `chain`, its head at `head` now, has kept that head for its stall time. */
  stalled(chain: string, head: number): boolean {
    return this.clock.now() - this.since(chain, head) >= stallAfterMs(this.blockTimeMs(chain));
  }

  /** Since when the chain's head has been `head`: now, when it just moved. */
  private since(chain: string, head: number): number {
    const seen = this.last.get(chain);
    if (seen !== undefined && seen.head === head) return seen.since;
    const now = this.clock.now();
    this.last.set(chain, { head, since: now });
    return now;
  }
}
