/**
 * Per-key token bucket: `rate` tokens per second, burst of the same size.
 * Time comes from the service clock, so a test can drain and refill it.
 */
interface Bucket {
  tokens: number;
  last: number;
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly rate: number,
    private readonly now: () => number,
  ) {}

  /** 0 when the request may go ahead, else the whole seconds to wait (for Retry-After). */
  take(id: string): number {
    if (this.rate === 0) return 0;
    const t = this.now();
    let b = this.buckets.get(id);
    if (b === undefined) {
      b = { tokens: this.rate, last: t };
      this.buckets.set(id, b);
    } else if (t > b.last) {
      b.tokens = Math.min(this.rate, b.tokens + ((t - b.last) * this.rate) / 1000);
      b.last = t;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - b.tokens) / this.rate));
  }
}
