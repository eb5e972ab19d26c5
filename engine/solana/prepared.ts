import { blockKey, isCanonicalBlock, removeCanonical, writeCanonical } from '../ingest/chain-store.js';
import type { BlockStore, CommittedBlock } from '../ingest/commit.js';
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

/**
 * A slot's block as the commit path stores it (engine/ingest/commit.ts): its slot as the block number, linked to
 * the stored block it follows (`parentNumber`: its parent slot, the slots between skipped; `parentHash`: that
 * block's hash, also where the node said 111…1 for a parent it no longer has).
 */
export interface StoredSolanaBlock extends CommittedBlock {
  parentNumber: number;
  record: Uint8Array;
  probe: Uint8Array;
}

/** A prepared block as stored, linked to `below` (the stored block the follower checked it follows; none: the first). */
export function storedSolanaBlock(b: PreparedSolanaBlock, below: { hash: string | undefined } | undefined): StoredSolanaBlock {
  return {
    number: b.slot,
    hash: b.hash,
    parentNumber: b.parentSlot,
    parentHash: below?.hash ?? b.parentHash,
    record: b.record,
    probe: b.probe,
  };
}

/**
 * The Solana family's part of the commit path: the follower's commits and a cluster node's apply of a published
 * block write alike (the shared tables alone: a skipped slot has no row).
 */
export const solanaBlockStore: BlockStore<StoredSolanaBlock> = {
  write(kv, chain, blocks) {
    for (const b of blocks) writeCanonical(kv, chain, b);
  },
  remove(kv, chain, from, to) {
    // The stored slots alone, not every slot between (a span of skipped slots may be long).
    const stored = kv.keys('canon', { start: blockKey(chain, from), end: blockKey(chain, to + 1) });
    for (const key of stored) removeCanonical(kv, chain, parseInt(key.slice(chain.length + 1), 16));
  },
  received(data) {
    const b = data as Partial<StoredSolanaBlock>;
    if (!isCanonicalBlock(b) || typeof b.parentNumber !== 'number')
      throw new Error('a Solana block without its slot, hashes, parent slot, record or probe column');
    const { number, hash, parentNumber, parentHash, record, probe } = b as StoredSolanaBlock;
    return { number, hash, parentNumber, parentHash, record, probe };
  },
};
