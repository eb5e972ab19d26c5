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

/**
 * Each worker's young generation, MB. The objects a mainnet block's node answers parse into live until its record
 * is encoded: with V8's default size a prepare met young collections that copied them (bench:ingest's catch-up of
 * 1,000 blocks with --trace-gc: about 100 scavenges and 1.7–2.3 s of them per worker; at 64 MB, 60 and 0.9–1.2 s).
 */
const WORKER_YOUNG_MB = 64;

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
    resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_MB },
  });
  return { count: threads, lazy, piscina, close: () => piscina.close() };
}
