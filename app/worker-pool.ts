import { fileURLToPath } from 'node:url';
import type { BitcoinAnswers, BitcoinIngestPool } from '../engine/bitcoin/prepared.js';
import type { EvmIngestPool, NodeAnswers } from '../engine/evm/prepared.js';
import type { SolanaAnswers, SolanaIngestPool } from '../engine/solana/prepared.js';
import type { WindowDeriver } from '../engine/bitcoin/xpub-windows.js';
import type { FilterCompiler, MatchPool } from '../engine/match/ports.js';
import { taskPool } from '../workers/pool.js';

/**
 * The server's worker pool (workers/pool.ts) on the entry of app/worker.ts, with each family's tasks as the
 * port its follower or wallets use: matching, compiling, preparing each family's blocks, deriving xpub windows.
 */
export interface WorkerPool {
  match: MatchPool;
  ingest: EvmIngestPool;
  bitcoin: BitcoinIngestPool;
  solana: SolanaIngestPool;
  compile: FilterCompiler;
  /** Added xpubs' gap windows derived off the serving thread. */
  xpubs: WindowDeriver;
  ready(): Promise<void>;
  close(): Promise<void>;
}

export function workerPool(path: string, threads?: number): WorkerPool {
  const pool = taskPool({ path, entry: workerEntry(), ...(threads === undefined ? {} : { threads }) });
  return {
    match: pool.match,
    compile: pool.compile,
    // The answers' bytes are moved to the worker, not copied.
    ingest: { prepare: (chain: string, answers: NodeAnswers) => pool.run('ingest', { chain, answers }, [answers.block, answers.receipts, answers.traces]) },
    bitcoin: { prepare: (chain: string, answers: BitcoinAnswers) => pool.run('bitcoin', { chain, answers }, [answers.block]) },
    solana: { prepare: (chain: string, answers: SolanaAnswers) => pool.run('solana', { chain, answers }, [answers.block]) },
    xpubs: { derive: (task) => pool.run('xpubWindow', task) },
    ready: () => pool.ready(),
    close: () => pool.close(),
  };
}

/** The match workers alone (benches and tests of matching). */
export const matchPool = (path: string, threads?: number): MatchPool => workerPool(path, threads).match;

/** The compiled entry: beside this file in dist/, or in dist/ when this runs from the TypeScript sources (vitest). */
function workerEntry(): string {
  const here = fileURLToPath(import.meta.url);
  return here.endsWith('.ts') ? fileURLToPath(new URL('../dist/app/worker.js', import.meta.url)) : fileURLToPath(new URL('./worker.js', import.meta.url));
}
