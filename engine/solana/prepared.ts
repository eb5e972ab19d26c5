import type { IngestPool } from '../ports.js';
import { KeyTable } from './key.js';
import { SolProbeWriter } from './probe.js';
import { SolRecordWriter } from './record.js';
import type { RpcError } from './rpc-json.js';
import { scanSolanaBlock } from './scan.js';

/**
 * A Solana slot made ready to write off the main thread (the worker pool's
 * `solana` task): getBlock's answer read into the stored record and probe
 * column, with what the follower checks the chain with.
 */
export interface PreparedSolanaBlock {
  slot: number;
  /** The blockhash (base58). */
  hash: string;
  parentSlot: number;
  /** previousBlockhash: "11111111111111111111111111111111" when the node no longer has the parent. */
  parentHash: string;
  blockHeight: number | null;
  blockTime: number | null;
  txCount: number;
  record: Uint8Array;
  probe: Uint8Array;
}

export interface SolanaAnswers {
  /** The slot asked for (getBlock's result does not say it). */
  slot: number;
  /** The response body of getBlock(slot, {encoding json, transactionDetails full, maxSupportedTransactionVersion 0, rewards false}). */
  block: Uint8Array;
}

/** What a slot's answer gives: the block; null (result null: not complete on the node yet); or the node's JSON-RPC error (-32007/-32009 skipped, -32004/-32014 not yet). */
export type PreparedSolanaOutcome = PreparedSolanaBlock | null | { error: RpcError };

export type SolanaIngestPool = IngestPool<SolanaAnswers, PreparedSolanaOutcome>;

export function prepareSolanaBlock(answers: SolanaAnswers): PreparedSolanaOutcome {
  // One key table for both: each distinct key decoded once per slot. Each transaction is written as it is read.
  const keys = new KeyTable();
  const record = new SolRecordWriter(keys);
  const probe = new SolProbeWriter(keys);
  let txCount = 0;
  const block = scanSolanaBlock(answers.slot, answers.block, (t, i) => {
    record.add(t);
    probe.add(t, i, record.keyIds);
    txCount++;
  });
  if (block === null || 'error' in block) return block;
  return {
    slot: block.slot,
    hash: block.blockhash,
    parentSlot: block.parentSlot,
    parentHash: block.previousBlockhash,
    blockHeight: block.blockHeight,
    blockTime: block.blockTime,
    txCount,
    record: record.finish(block),
    probe: probe.finish(),
  };
}
