import type { IngestPool } from '../ports.js';

/**
 * A Solana slot's block made ready to write off the main thread (the worker
 * pool's `solana` task): the node's getBlock answer into the stored record and
 * probe column, with the parent link the follower checks.
 */
export interface SolanaAnswers {
  slot: number;
  /** The getBlock HTTP response body (a JSON-RPC envelope). */
  block: Uint8Array;
}

export interface PreparedSolanaBlock {
  slot: number;
  hash: string;
  parentSlot: number;
  parentHash: string;
  blockHeight: number | null;
  blockTime: number | null;
  txCount: number;
  record: Uint8Array;
  probe: Uint8Array;
}

/** A block, or the JSON-RPC error the node answered instead (a skipped slot, one not available yet). */
export type SolanaPrepared = PreparedSolanaBlock | { error: { code: number; message: string } };

/** prepare() resolves null when the node's result is null. */
export type SolanaIngestPool = IngestPool<SolanaAnswers, SolanaPrepared>;

interface GetBlockReply {
  result?: {
    blockhash: string;
    previousBlockhash: string;
    parentSlot: number;
    blockHeight?: number | null;
    blockTime?: number | null;
    transactions?: unknown[];
  } | null;
  error?: { code: number; message: string } | null;
}

/** The node's getBlock answer into the block to write; its error as given; null when it says null. */
export function prepareSolanaBlock(answers: SolanaAnswers): SolanaPrepared | null {
  const reply = JSON.parse(new TextDecoder().decode(answers.block)) as GetBlockReply;
  if (reply.error !== undefined && reply.error !== null) return { error: { code: reply.error.code, message: reply.error.message } };
  const b = reply.result;
  if (b === undefined || b === null) return null;
  return {
    slot: answers.slot,
    hash: b.blockhash,
    parentSlot: b.parentSlot,
    parentHash: b.previousBlockhash,
    blockHeight: b.blockHeight ?? null,
    blockTime: b.blockTime ?? null,
    txCount: b.transactions?.length ?? 0,
    // replaced at merge by the real record/probe (branch solcore)
    record: new Uint8Array(0),
    probe: new Uint8Array(0),
  };
}
