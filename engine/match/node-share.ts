import type { Clock, Timer } from '../clock.js';

/**
 * The node time a tenant's trigger calls take on a chain, shared out over time: a bucket of node-ms per tenant
 * and chain, refilled at `msPerSecond` of each second of service time (CHAINPOST_TRIGGER_SHARE_MS) up to
 * `burstMs` (one block's budget, CHAINPOST_TRIGGER_BUDGET_MS). A call starts only while the tenant's bucket, less
 * the time its calls under way have run so far, is not overdrawn; once a call has settled, the time it took is taken
 * from the bucket, which may go below zero (the next call waits until it is refilled). A call given up on its
 * budget is charged when the node is done with it: it kept the node busy until then.
 *
 * The per-block budget alone lets a stream whose calls always run out of gas keep the node busy without pause, a
 * block after another; the node then answers everyone else's reads late (anvil traces a block only once the call
 * under way has ended, and every node has only so many cores). With the share, one tenant keeps a chain's node
 * busy at most that fraction of the time, over any stretch longer than a burst.
 */
export interface ShareOptions {
  /** Node-ms per second a tenant's trigger calls on one chain may take, on average. */
  msPerSecond: number;
  /** The most a tenant may take at once, after its calls paused long enough. */
  burstMs: number;
}

/** What a call given up on its budget (waiting for time, or under way) resolves to. */
export const OVER_BUDGET = Symbol('over budget');

interface Bucket {
  /** Node-ms left at `at`, before the calls under way are counted. */
  ms: number;
  at: number;
  /** Start times of the calls under way. */
  running: Set<{ since: number }>;
  /** Wakes the calls waiting for time: a call settled. */
  settled: Array<() => void>;
}

/** One chain's share: a bucket per tenant (kept while the server runs: tenants are few). */
export class NodeShare {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly clock: Clock,
    private readonly opts: ShareOptions,
  ) {}

  /**
   * Runs `call` once the tenant's share on this chain is not overdrawn, and resolves to its answer; to OVER_BUDGET when `over`
   * settles first, whether the call was waiting for time or under way (then it is left to end on its own).
   */
  async run<T>(tenantId: string, call: () => Promise<T>, over: Promise<void>): Promise<T | typeof OVER_BUDGET> {
    const b = this.bucket(tenantId);
    let gaveUp = false;
    const given = over.then(() => void (gaveUp = true));
    for (let left = this.left(b); left < 0; left = this.left(b)) {
      if (gaveUp) return OVER_BUDGET;
      await this.refilled(b, -left, given);
    }
    if (gaveUp) return OVER_BUDGET;
    const running = { since: this.clock.now() };
    b.running.add(running);
    const answer = call();
    void answer.catch(() => undefined).finally(() => this.charge(b, running));
    return Promise.race([answer, given.then((): typeof OVER_BUDGET => OVER_BUDGET)]);
  }

  /** Node-ms the tenant has now: the bucket refilled to this instant, less what its calls under way have run. */
  private left(b: Bucket): number {
    const now = this.clock.now();
    b.ms = Math.min(this.opts.burstMs, b.ms + ((now - b.at) * this.opts.msPerSecond) / 1000);
    b.at = now;
    let running = 0;
    for (const r of b.running) running += now - r.since;
    return b.ms - running;
  }

  private charge(b: Bucket, r: { since: number }): void {
    this.left(b);
    b.ms -= this.clock.now() - r.since;
    b.running.delete(r);
    for (const wake of b.settled.splice(0)) wake();
  }

  /** Waits until `owed` node-ms have been refilled, a call of the tenant settled (the sum changed), or `given` settled. */
  private refilled(b: Bucket, owed: number, given: Promise<void>): Promise<void> {
    // With calls under way the debt grows as they run: wait for one to settle rather than for the refill.
    const waitMs = b.running.size > 0 ? Infinity : Math.max(1, Math.ceil((owed * 1000) / this.opts.msPerSecond));
    return new Promise<void>((resolve) => {
      let timer: Timer | undefined;
      const wake = (): void => {
        timer?.cancel();
        resolve();
      };
      if (waitMs !== Infinity) timer = this.clock.at(this.clock.now() + waitMs, wake);
      else b.settled.push(wake);
      void given.then(wake);
    });
  }

  private bucket(tenantId: string): Bucket {
    let b = this.buckets.get(tenantId);
    if (b === undefined) this.buckets.set(tenantId, (b = { ms: this.opts.burstMs, at: this.clock.now(), running: new Set(), settled: [] }));
    return b;
  }
}
