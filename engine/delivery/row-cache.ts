/**
 * One table's rows (`queueMeta` or `stats`) as committed, kept so that a transaction reads them without a get and a
 * decode (a block's 1,000 webhooks read 2,000). Delivery is their only writer. A row written by a transaction
 * not yet known to have committed is pending and read from the store, which holds what the transactions before
 * wrote; one whose transaction failed stays pending (read from the store) for good.
 */
export class RowCache<T> {
  private readonly rows = new Map<string, T>();
  private readonly pending = new Map<string, number>();
  /** Per row, the write order of the transaction whose value is kept: commits may be told out of order. */
  private readonly versions = new Map<string, number>();

  /** The row as committed, unless a transaction not known to have committed wrote it. */
  known(key: string): T | undefined {
    return this.pending.has(key) ? undefined : this.rows.get(key);
  }

  /** Written by a transaction whose commit is not known yet. */
  wrote(key: string): void {
    this.pending.set(key, (this.pending.get(key) ?? 0) + 1);
  }

  /**
   * That transaction (its writes' `version`, their order among all) committed: the row as it wrote it, unless a later
   * one's is kept. Answers whether its row is kept.
   */
  committed(key: string, value: T, version: number): boolean {
    const n = (this.pending.get(key) ?? 1) - 1;
    if (n > 0) this.pending.set(key, n);
    else this.pending.delete(key);
    if (version <= (this.versions.get(key) ?? 0)) return false;
    this.versions.set(key, version);
    this.rows.set(key, value);
    return true;
  }

  /** Forgets the row kept (read from the store again). */
  forget(key: string): void {
    this.rows.delete(key);
    this.versions.delete(key);
  }

  /** Forgets the rows kept (read from the store again): another node wrote them meanwhile (a partition adopted). */
  clear(): void {
    this.rows.clear();
    this.versions.clear();
  }
}
