/**
 * Delivery slots: at most `max` webhooks in flight in all, and at most
 * `perOrigin` to one receiver (scheme, host and port), no more than the HTTP
 * client's connections to it: a POST then goes out at once instead of waiting
 * in the client's queue, and one slow receiver cannot hold every slot. Streams
 * that find no slot wait in line for one, in arrival order.
 */
export class Slots {
  private total = 0;
  private readonly busy = new Map<string, number>();
  private readonly lines = new Map<string, Set<string>>();
  private count = 0;

  constructor(
    private readonly max: number,
    private readonly perOrigin: number,
  ) {}

  /** Whether a slot to `origin` is free. */
  free(origin: string): boolean {
    return this.total < this.max && (this.busy.get(origin) ?? 0) < this.perOrigin;
  }

  /** Takes a slot to `origin` for stream `id`, or puts the stream in line for one. */
  take(origin: string, id: string): boolean {
    if (!this.free(origin)) {
      this.wait(origin, id);
      return false;
    }
    this.total++;
    this.busy.set(origin, (this.busy.get(origin) ?? 0) + 1);
    return true;
  }

  wait(origin: string, id: string): void {
    let line = this.lines.get(origin);
    if (line === undefined) this.lines.set(origin, (line = new Set()));
    if (line.has(id)) return;
    line.add(id);
    this.count++;
  }

  release(origin: string): void {
    this.total--;
    const busy = this.busy.get(origin)! - 1;
    if (busy === 0) this.busy.delete(origin);
    else this.busy.set(origin, busy);
  }

  /** The first stream in line for an origin with a free slot, out of its line; undefined when none. */
  next(): string | undefined {
    if (this.total >= this.max) return undefined;
    for (const [origin, line] of this.lines) {
      if (!this.free(origin)) continue;
      const id = line.values().next().value!;
      line.delete(id);
      this.count--;
      if (line.size === 0) this.lines.delete(origin);
      return id;
    }
    return undefined;
  }

  /** Streams in line. */
  get inLine(): number {
    return this.count;
  }

  /** Empties every line (a stop: nothing more starts). */
  clear(): void {
    this.lines.clear();
    this.count = 0;
  }
}
