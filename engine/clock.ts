import { MinHeap } from './heap.js';

/**
 * The service clock. Every timed rule (removal dates, challenge expiry, retries,
 * error → terminated, retention) reads `now()` and schedules with `at()`, so a
 * test can move time forward instead of sleeping.
 */
export interface Clock {
  /** Service time, ms since the Unix epoch. */
  now(): number;
  /** Run `fire` once service time reaches `when`. */
  at(when: number, fire: () => void | Promise<void>): Timer;
}

export interface Timer {
  cancel(): void;
}

/** Port to real time: a monotonic reading and one OS timer. Wired in app/process.ts. */
export interface Ticker {
  elapsedMs(): number;
  wake(delayMs: number, fn: () => void): () => void;
}

interface Pending {
  at: number;
  seq: number;
  fire: () => void | Promise<void>;
  cancelled: boolean;
}

/** OS timers cannot wait longer than 2^31-1 ms; waking hourly and re-checking is simpler. */
const MAX_WAKE_MS = 3_600_000;

export class ServiceClock implements Clock {
  private readonly timers = new MinHeap<Pending>();
  private readonly origin: number;
  private skipped = 0;
  private seq = 0;
  private disarm: (() => void) | undefined;
  private armedFor = Infinity;
  private draining: Promise<void> = Promise.resolve();

  /** `onError` sees what a timer threw; one failing timer never stops the others. */
  constructor(
    private readonly ticker: Ticker,
    private readonly startAt: number,
    private readonly onError: (err: unknown) => void = () => {},
  ) {
    this.origin = ticker.elapsedMs();
  }

  now(): number {
    return Math.floor(this.startAt + (this.ticker.elapsedMs() - this.origin) + this.skipped);
  }

  at(when: number, fire: () => void | Promise<void>): Timer {
    const t: Pending = { at: when, seq: this.seq++, fire, cancelled: false };
    this.timers.push(t);
    if (when < this.armedFor) this.arm();
    return { cancel: () => void (t.cancelled = true) };
  }

  /**
   * Moves service time forward by `ms`. Time steps to each timer's due instant
   * before it fires, so a timer sees its own time and one that schedules another
   * inside the jump (a retry chain) fires again; resolves at the end of the jump.
   */
  advance(ms: number): Promise<number> {
    if (!(ms >= 0) || !Number.isFinite(ms)) throw new RangeError('advance needs a finite, non-negative duration');
    this.draining = this.draining.then(async () => {
      // Measured from where the previous jump ended: two jumps asked at once add up.
      const target = this.now() + ms;
      for (;;) {
        const next = this.timers.peek();
        if (next === undefined || next.at > target) break;
        this.moveTo(next.at);
        await this.fireDue();
      }
      this.moveTo(target);
      await this.fireDue();
    });
    return this.draining.then(() => this.now());
  }

  /** Skips service time forward to `instant` (never back). */
  private moveTo(instant: number): void {
    const now = this.now();
    if (instant > now) this.skipped += instant - now;
  }

  /** Number of timers still waiting (cancelled ones are dropped lazily). */
  get pending(): number {
    return this.timers.size;
  }

  private drain(): Promise<void> {
    // Serialized, so a wake-up and an advance never interleave their timers.
    this.draining = this.draining.then(() => this.fireDue());
    return this.draining;
  }

  private async fireDue(): Promise<void> {
    for (;;) {
      const next = this.timers.peek();
      if (next === undefined || next.at > this.now()) break;
      this.timers.pop();
      if (next.cancelled) continue;
      try {
        await next.fire();
      } catch (err) {
        this.onError(err);
      }
    }
    this.arm();
  }

  private arm(): void {
    this.disarm?.();
    this.disarm = undefined;
    let next = this.timers.peek();
    while (next?.cancelled) {
      this.timers.pop();
      next = this.timers.peek();
    }
    if (next === undefined) {
      this.armedFor = Infinity;
      return;
    }
    this.armedFor = next.at;
    const delay = Math.min(Math.max(0, next.at - this.now()), MAX_WAKE_MS);
    this.disarm = this.ticker.wake(delay, () => {
      this.disarm = undefined;
      this.armedFor = Infinity;
      void this.drain();
    });
  }
}
