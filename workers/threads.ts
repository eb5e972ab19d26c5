import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';

/**
 * The worker pool's threads, started: each loads its entry from then on (~1.5 s of modules), while the thread that
 * started them goes on with its own start; workers/pool.ts runs the tasks on them. One worker per core unless told.
 */
export interface Threads {
  readonly count: number;
  readonly piscina: Piscina;
  close(): Promise<void>;
}

export function startThreads({
  path,
  entry,
  threads = availableParallelism(),
}: {
  path: string;
  entry: string;
  threads?: number;
}): Threads {
  // minThreads: the threads are made here, not at the first task.
  const piscina = new Piscina({ filename: entry, minThreads: threads, maxThreads: threads, workerData: { path }, idleTimeout: Infinity });
  return { count: threads, piscina, close: () => piscina.close() };
}
