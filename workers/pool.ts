import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { unpackMatches, type FilterSetData } from '../engine/match/filter-set.js';
import type { MatchPool } from '../engine/ports.js';
import type { MatchTask } from './match-worker.js';

/**
 * The match workers: a piscina pool, one worker per core, each with its own
 * read handle on the server's LMDB environment.
 */
export function matchPool(path: string, threads = availableParallelism()): MatchPool {
  const pool = new Piscina<MatchTask, Uint32Array>({ filename: workerFile(), minThreads: threads, maxThreads: threads, workerData: { path }, idleTimeout: Infinity });
  return {
    async match(chain: string, numbers: readonly number[], filter: FilterSetData) {
      const packed = await pool.run({ chain, numbers: [...numbers], filter });
      return unpackMatches(packed, numbers.length);
    },
    close: () => pool.close(),
  };
}

/** The compiled worker: beside this file in dist/, or in dist/ when this runs from the TypeScript sources (vitest). */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  return here.endsWith('.ts') ? fileURLToPath(new URL('../dist/workers/match-worker.js', import.meta.url)) : fileURLToPath(new URL('./match-worker.js', import.meta.url));
}
