import type { Clock, Timer } from '../clock.js';

/**
 * Work that follows a chain's commits (the matcher's drain, the Data API's
 * index build): one run per chain at a time; a wake-up during a run runs it
 * once more after it, so nothing committed meanwhile waits for the next one;
 * a failed run is reported and tried again `retryMs` later.
 */
export class ChainRuns {
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly retries = new Map<string, Timer>();
  private halted = false;

  constructor(
    private readonly run: (chain: string) => Promise<void>,
    private readonly clock: Clock,
    private readonly retryMs: number,
    private readonly failed: (chain: string, err: unknown) => void,
  ) {}

  get stopped(): boolean {
    return this.halted;
  }

  wake(chain: string): void {
    if (this.halted) return;
    if (this.running.has(chain)) {
      this.again.add(chain);
      return;
    }
    const run = this.run(chain)
      .catch((err: unknown) => {
        this.failed(chain, err);
        this.retries.get(chain)?.cancel();
        this.retries.set(
          chain,
          this.clock.at(this.clock.now() + this.retryMs, () => this.wake(chain)),
        );
      })
      .finally(() => {
        this.running.delete(chain);
        if (this.again.delete(chain)) this.wake(chain);
      });
    this.running.set(chain, run);
  }

  /** Whether a chain's run is under way. */
  get busy(): boolean {
    return this.running.size > 0;
  }

  /** Resolves once no chain's run is under way (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running.values());
  }

  /** No new run starts; the ones under way end at their next check of `stopped`. */
  stop(): void {
    this.halted = true;
    for (const t of this.retries.values()) t.cancel();
  }
}
