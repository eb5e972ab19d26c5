import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { BitcoinAnswers, BitcoinIngestPool } from '../engine/bitcoin/prepared.js';
import type { EvmIngestPool, NodeAnswers } from '../engine/evm/prepared.js';
import type { SolanaAnswers, SolanaIngestPool } from '../engine/solana/prepared.js';
import { unpackMatches, type FilterSetData } from '../engine/match/filter-set.js';
import type { CompileTask, FilterCompiler, MatchPool } from '../engine/match/ports.js';
import type { WindowDeriver } from '../engine/bitcoin/xpub-windows.js';
import { packCompileTask } from './compile-worker.js';
import { ownBuffers } from './transfer.js';

/**
 * The server's worker threads: one piscina pool, one worker per core, that
 * matches blocks (each worker with its own read handle on the server's LMDB
 * environment), prepares the blocks ingestion writes, compiles large filter sets and derives added xpubs' windows.
 */
export interface WorkerPool {
  match: MatchPool;
  ingest: EvmIngestPool;
  bitcoin: BitcoinIngestPool;
  solana: SolanaIngestPool;
  /** Filter sets compiled off the serving thread. */
  compile: FilterCompiler;
  /** Added xpubs' gap windows derived off the serving thread. */
  xpubs: WindowDeriver;
  /** Resolves once every worker has loaded its code (a task each), rejects when one cannot. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function workerPool(path: string, threads = availableParallelism()): WorkerPool {
  const pool = new Piscina({ filename: workerFile(), minThreads: threads, maxThreads: threads, workerData: { path }, idleTimeout: Infinity });
  const close = (): Promise<void> => pool.close();
  return {
    match: {
      async match(chain: string, numbers: readonly number[], filter: FilterSetData) {
        const packed = (await pool.run({ chain, numbers: [...numbers], filter })) as Uint32Array;
        return unpackMatches(packed, numbers.length);
      },
      close,
    },
    ingest: {
      // The answers' bytes are moved to the worker, not copied.
      prepare: (chain: string, answers: NodeAnswers) => pool.run({ chain, answers }, { name: 'ingest', transferList: ownBuffers([answers.block, answers.receipts, answers.traces]) }),
    },
    bitcoin: {
      prepare: (chain: string, answers: BitcoinAnswers) => pool.run({ chain, answers }, { name: 'bitcoin', transferList: ownBuffers([answers.block]) }),
    },
    solana: {
      prepare: (chain: string, answers: SolanaAnswers) => pool.run({ chain, answers }, { name: 'solana', transferList: ownBuffers([answers.block]) }),
    },
    compile: {
      compile: (task: CompileTask) => pool.run(packCompileTask(task), { name: 'compile' }),
    },
    xpubs: {
      derive: (task) => pool.run(task, { name: 'xpubWindow' }),
    },
    // One task per thread: a worker takes one at a time, so each of them answers.
    ready: () => Promise.all(Array.from({ length: threads }, () => pool.run(null, { name: 'ping' }))).then(() => {}),
    close,
  };
}

/** The match workers alone (benches and tests of matching). */
export const matchPool = (path: string, threads?: number): MatchPool => workerPool(path, threads).match;

/** The compiled worker: beside this file in dist/, or in dist/ when this runs from the TypeScript sources (vitest). */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  return here.endsWith('.ts') ? fileURLToPath(new URL('../dist/workers/worker.js', import.meta.url)) : fileURLToPath(new URL('./worker.js', import.meta.url));
}
