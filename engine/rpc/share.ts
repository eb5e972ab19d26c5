/**
 * What callers of node access share: identical calls in flight go upstream
 * once (InFlight), and answers about blocks deeper than the confirmation depth
 * are kept, as they no longer change (an Lru of CachedAnswer).
 */
export class InFlight<T> {
  private readonly pending = new Map<string, Promise<T>>();

  /** `start()`'s promise, or the one already running under `key`; `shared` says which. */
  run(key: string, start: () => Promise<T>): { promise: Promise<T>; shared: boolean } {
    const running = this.pending.get(key);
    if (running !== undefined) return { promise: running, shared: true };
    const promise = start();
    this.pending.set(key, promise);
    // Settled (start() never rejects here, but a rejection must not stay behind either).
    const drop = (): void => void this.pending.delete(key);
    promise.then(drop, drop);
    return { promise, shared: false };
  }

  get size(): number {
    return this.pending.size;
  }
}

export interface CachedAnswer {
  /** The result, serialized. */
  json: string;
  /** The block it is about, and that block's hash when it was cached: a reorg that deep makes it stale. */
  block: number;
  hash: string;
}

/**
 * Bounded by entries and by the summed size of the values; the least recently
 * used go first, by second chance: a read marks its entry, and an eviction
 * moves a marked entry to the back (unmarked) instead of dropping it, so a
 * read sets one flag instead of moving the entry in the Map.
 */
export class Lru<V> {
  private readonly entries = new Map<string, { value: V; used: boolean }>();
  private total = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxSize: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    e.used = true;
    return e.value;
  }

  /** Keeps `value` (replacing what `key` held), unless it alone is larger than the bound. */
  set(key: string, value: V): void {
    if (this.sizeOf(value) > this.maxSize) return;
    this.delete(key);
    this.entries.set(key, { value, used: false });
    this.total += this.sizeOf(value);
    while (this.entries.size > this.maxEntries || this.total > this.maxSize) {
      const [k, e] = this.entries.entries().next().value!;
      if (e.used && k !== key) {
        this.entries.delete(k);
        this.entries.set(k, { value: e.value, used: false });
      } else this.delete(k);
    }
  }

  delete(key: string): void {
    const e = this.entries.get(key);
    if (e === undefined) return;
    this.entries.delete(key);
    this.total -= this.sizeOf(e.value);
  }

  get count(): number {
    return this.entries.size;
  }

  get size(): number {
    return this.total;
  }
}
