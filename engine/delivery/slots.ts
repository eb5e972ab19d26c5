/**
 * Delivery slots: at most `max` webhooks in flight in all, and at most
 * `perOrigin` to one receiver (scheme, host and port), no more than the HTTP
 * client's connections to it: a POST then goes out at once instead of waiting
 * in the client's queue, and one slow receiver cannot hold every slot. Streams
 * that find no slot wait for one in arrival order.
 */
export class Slots {
  private total = 0;
  private readonly busy = new Map<string, number>();
  private readonly waiting = new Map<string, Set<string>>();
  private count = 0;

  constructor(
    private readonly max: number,
    private readonly perOrigin: number,
  ) {}

  /** Takes a slot to `origin` for stream `id`, or puts the stream in line for one. */
  take(origin: string, id: string): boolean {
    const busy = this.busy.get(origin) ?? 0;
    if (this.total < this.max && busy < this.perOrigin) {
      this.total++;
      this.busy.set(origin, busy + 1);
      return true;
    }
    let line = this.waiting.get(origin);
    if (line === undefined) this.waiting.set(origin, (line = new Set()));
    if (!line.has(id)) {
      line.add(id);
      this.count++;
    }
    return false;
  }

  /** Gives a slot back; returns the streams in line that may now take one (to try again), this origin's first. */
  release(origin: string): string[] {
    this.total--;
    const busy = this.busy.get(origin)! - 1;
    if (busy === 0) this.busy.delete(origin);
    else this.busy.set(origin, busy);
    const out: string[] = [];
    const pull = (o: string): void => {
      const line = this.waiting.get(o)!;
      let room = Math.min(this.max - this.total - out.length, this.perOrigin - (this.busy.get(o) ?? 0));
      for (const id of line) {
        if (room-- <= 0) break;
        line.delete(id);
        this.count--;
        out.push(id);
      }
      if (line.size === 0) this.waiting.delete(o);
    };
    if (this.waiting.has(origin)) pull(origin);
    for (const o of [...this.waiting.keys()]) if (o !== origin && this.total + out.length < this.max) pull(o);
    return out;
  }

  /** Streams in line for a slot. */
  get inLine(): number {
    return this.count;
  }

  /** Empties every line (a stop: nothing more starts). */
  clear(): void {
    this.waiting.clear();
    this.count = 0;
  }
}
