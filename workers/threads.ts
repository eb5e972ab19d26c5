import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';

/**
 * The worker pool's threads, started: each loads its entry from then on, while the thread that
 * started them goes on with its own start; workers/pool.ts runs the tasks on them. One worker per core unless told.
 */
export interface Threads {
  readonly count: number;
  /** Started at the first task rather than at once (a server that follows no chain may never run one). */
  readonly lazy: boolean;
  readonly piscina: Piscina;
  close(): Promise<void>;
}

export function startThreads({
  entry,
  data,
  threads = availableParallelism(),
  lazy = false,
}: {
  entry: string;
  /** Each thread's workerData: at least the store's path (workers/match-worker.ts opens its probe column there). */
  data: { readonly path: string } & Record<string, unknown>;
  threads?: number;
  lazy?: boolean;
}): Threads {
  // minThreads: the threads are made here (or, lazy, as tasks come), and kept.
  const piscina = new Piscina({
    filename: entry,
    minThreads: lazy ? 0 : threads,
    maxThreads: threads,
    workerData: data,
    idleTimeout: Infinity,
  });
  return { count: threads, lazy, piscina, close: () => piscina.close() };
}
