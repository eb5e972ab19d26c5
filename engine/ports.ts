/**
 * Ports the engine is wired to in engine/main.ts. The clock is engine/clock.ts;
 * the key-value store is below (LMDB in storage/env.ts).
 */

/** Named tables of the store. storage/README.md documents each key and value. */
export const TABLES = ['meta', 'keys', 'tenants', 'challenges', 'binds', 'expiries', 'profiles', 'accounts'] as const;
export type Table = (typeof TABLES)[number];

export interface Entry<T> {
  key: string;
  value: T;
}

/** Ordered, transactional key-value storage; keys sort as strings. Writes are durable when they return. */
export interface Kv {
  get<T>(table: Table, key: string): T | undefined;
  put(table: Table, key: string, value: unknown): void;
  remove(table: Table, key: string): void;
  /** Entries with start ≤ key < end, in key order. */
  range<T>(table: Table, opts?: { start?: string; end?: string; limit?: number }): Array<Entry<T>>;
  /** Runs `fn` in one write transaction (nested calls join it). */
  transact<T>(fn: () => T): T;
}
