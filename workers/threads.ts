import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';

/**
 * The worker pool's threads, started: each loads its entry from then on, while the thread that
 * started them goes on with its own start; workers/pool.ts runs the tasks on them. One worker per core unless told.
 */
export interface Threads {
  readonly count: number;
  readonly piscina: Piscina;
  close(): Promise<void>;
}

export function startThreads({
  entry,
  data,
  threads = availableParallelism(),
}: {
  entry: string;
  /** Each thread's workerData: at least the store's path (workers/match-worker.ts opens its probe column there). */
  data: { readonly path: string } & Record<string, unknown>;
  threads?: number;
}): Threads {
  // minThreads: the threads are made here, not at the first task.
  const piscina = new Piscina({ filename: entry, minThreads: threads, maxThreads: threads, workerData: data, idleTimeout: Infinity });
  return { count: threads, piscina, close: () => piscina.close() };
}
