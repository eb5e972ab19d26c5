import type { Clock, Timer } from '../clock.js';
import { TimerWheel } from './timer-wheel.js';

/**
 * Wakes streams whose failed webhook is due for its retry: one timer per stream in a timer wheel on the service
 * clock, and one service-clock timer at the wheel's earliest due time.
 */
export class RetryScheduler {
  private readonly wheel: TimerWheel;
  private wake: Timer | undefined;
  private wakeAt = Infinity;
  /** Streams by a small number (the wheel's payload), and back. */
  private readonly numbers = new Map<string, number>();
  private readonly byNumber: string[] = [];
  private readonly scheduled = new Map<string, { handle: number; at: number }>();

  /**
   * `fire` wakes a stream and answers the delivery it started, if any. `awaitFired`: a wake-up waits for those
   * deliveries (under the test clock, so that a jump sees each failure's next retry at its own instant); in real time
   * it does not: one slow receiver must not hold other timers back.
   */
  constructor(
    private readonly clock: Clock,
    private readonly fire: (streamId: string) => Promise<void> | undefined,
    private readonly awaitFired = false,
  ) {
    this.wheel = new TimerWheel(clock.now());
  }

  /** Wakes the stream at `at` (service time, ms), instead of when it was to wake before. */
  at(streamId: string, at: number): void {
    const prev = this.scheduled.get(streamId);
    if (prev !== undefined) {
      if (prev.at === at) return;
      this.wheel.cancel(prev.handle);
    }
    this.scheduled.set(streamId, { handle: this.wheel.schedule(at, this.numberOf(streamId)), at });
    this.arm();
  }

  cancel(streamId: string): void {
    const sched = this.scheduled.get(streamId);
    if (sched !== undefined) this.wheel.cancel(sched.handle);
    this.scheduled.delete(streamId);
  }

  /** Nothing wakes any more. */
  stop(): void {
    this.wake?.cancel();
  }

  /** Streams waiting for a wake-up. */
  get size(): number {
    return this.scheduled.size;
  }

  private numberOf(streamId: string): number {
    let n = this.numbers.get(streamId);
    if (n === undefined) {
      this.numbers.set(streamId, (n = this.byNumber.length));
      this.byNumber.push(streamId);
    }
    return n;
  }

  /** One service-clock timer, at the wheel's earliest due time. */
  private arm(): void {
    const next = this.wheel.nextAt();
    if (next === undefined || next >= this.wakeAt) return;
    this.wake?.cancel();
    this.wakeAt = next;
    this.wake = this.clock.at(next, async () => {
      this.wake = undefined;
      this.wakeAt = Infinity;
      const started: Array<Promise<void>> = [];
      this.wheel.advance(this.clock.now(), (n) => {
        const id = this.byNumber[n]!;
        this.scheduled.delete(id);
        const d = this.fire(id);
        if (d !== undefined) started.push(d);
      });
      this.arm();
      if (this.awaitFired) await Promise.all(started);
    });
  }
}
