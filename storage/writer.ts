import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Table } from '../engine/ports.js';

/**
 * A thread of the server's own that writes units of writes into the store (workers/store-writer.ts): Kv.overlay
 * seals its units here. Each is written in one synchronous transaction in that thread, so neither the event loop
 * (the puts' B-tree work, a µs or more each) nor LMDB's write thread of this one (which commits the followers'
 * blocks) carries it; and it is checked there first against what it was built on, atomically with its writes.
 * Started at the first unit.
 */

/** What a unit expects the store to hold before it is written: (table, key, value), undefined for no key. */
export type Expected = ReadonlyArray<readonly [Table, string, unknown]>;

export interface WriterUnit {
  id: number;
  /** storage/write-log.ts's bytes. */
  log: Uint8Array;
  expect: Expected;
}

export type WriterReply = { id: number; wrote: boolean } | { id: number; error: string };

/** The thread's entry: beside this file in dist/, or in dist/ when this runs from the TypeScript sources (vitest). */
function entry(): string {
  const here = fileURLToPath(import.meta.url);
  return here.endsWith('.ts')
    ? fileURLToPath(new URL('../dist/workers/store-writer.js', import.meta.url))
    : fileURLToPath(new URL('../workers/store-writer.js', import.meta.url));
}

export class StoreWriter {
  private worker: Worker | undefined;
  private next = 0;
  private readonly waiting = new Map<number, { resolve(wrote: boolean): void; reject(err: Error): void }>();
  private readonly pending = new Set<Promise<boolean>>();

  constructor(
    private readonly path: string,
    /**
     * Called before a unit's promise settles: this thread's reads outside a transaction share a snapshot until
     * lmdb-js renews it (after its own commits, or a timer's turn later), which would not yet hold what the writer
     * thread committed.
     */
    private readonly committed: () => void,
  ) {}

  /** Writes the log's units if the store holds what `expect` says, in one transaction; resolves once durable (false: not written). */
  write(log: Uint8Array, expect: Expected): Promise<boolean> {
    const worker = this.started();
    const id = ++this.next;
    const written = new Promise<boolean>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      // Moved, not copied: the log is a buffer of its own.
      worker.postMessage({ id, log, expect } satisfies WriterUnit, [log.buffer as ArrayBuffer]);
    });
    this.pending.add(written);
    const settle = (): void => void this.pending.delete(written);
    written.then(settle, settle);
    return written;
  }

  /** Ends the thread once what was handed to it is written. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private started(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(entry(), { workerData: { path: this.path } });
    worker.on('message', (reply: WriterReply) => {
      const waiting = this.waiting.get(reply.id);
      if (waiting === undefined) return;
      this.waiting.delete(reply.id);
      this.committed();
      if ('error' in reply) waiting.reject(new Error(`the store's writer thread: ${reply.error}`));
      else waiting.resolve(reply.wrote);
    });
    const fail = (err: Error): void => {
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
      if (this.worker === worker) this.worker = undefined;
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the store's writer thread exited (${code})`)));
    this.worker = worker;
    return worker;
  }
}
