/**
 * What callers of node access share of the node's answers: identical calls in
 * flight go upstream once (InFlight), and answers about blocks deeper than the
 * confirmation depth are kept (AnswerCache), as they no longer change.
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

/** Least recently used first out, bounded by entries and by the size of the serialized answers. */
export class AnswerCache {
  private readonly entries = new Map<string, CachedAnswer>();
  private size = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxChars: number,
  ) {}

  get(key: string): CachedAnswer | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    // Map order is insertion order: moved to the end, it is the most recently used.
    this.entries.delete(key);
    this.entries.set(key, e);
    return e;
  }

  set(key: string, answer: CachedAnswer): void {
    if (answer.json.length > this.maxChars) return;
    this.delete(key);
    this.entries.set(key, answer);
    this.size += answer.json.length;
    for (const [k] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.size <= this.maxChars) break;
      this.delete(k);
    }
  }

  delete(key: string): void {
    const e = this.entries.get(key);
    if (e === undefined) return;
    this.entries.delete(key);
    this.size -= e.json.length;
  }

  get count(): number {
    return this.entries.size;
  }

  get chars(): number {
    return this.size;
  }
}
