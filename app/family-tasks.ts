import { prepareBitcoinBlock, type BitcoinAnswers, type PreparedBitcoinBlock } from '../engine/bitcoin/prepared.js';
import { prepareBlock, type NodeAnswers, type PreparedBlock } from '../engine/evm/prepared.js';
import { prepareSolanaBlock, type PreparedSolanaOutcome, type SolanaAnswers } from '../engine/solana/prepared.js';
import { pack } from '../storage/codec.js';
import { movable } from '../workers/transfer.js';

export { deriveWindow as xpubWindow } from '../engine/bitcoin/xpub-windows.js';

/**
 * The chain families' tasks of the worker pool (EVM: `ingest`; Bitcoin: `bitcoin` and `xpubWindow`; Solana: `solana`): a block's node answers, as bytes, into
 * what the main thread writes (engine/evm/prepared.ts), index values
 * encoded as the store encodes them.
 */
export interface IngestTask {
  chain: string;
  answers: NodeAnswers;
}

export function ingest(task: IngestTask): PreparedBlock | null {
  const block = prepareBlock(task.chain, task.answers, pack);
  // Moved back, not copied: some 300 KB a mainnet block, which the serving thread would otherwise allocate and copy.
  return block === null ? null : movable(block, [block.record, block.probe, ...Object.values(block.rows).flatMap((r) => [r.keys, r.bytes])]);
}

/** The Bitcoin task: Bitcoin Core's getblock answer into the block record and probe column (engine/bitcoin/prepared.ts). */
export function bitcoin(task: { answers: BitcoinAnswers }): PreparedBitcoinBlock | null {
  const block = prepareBitcoinBlock(task.answers);
  return block === null ? null : movable(block, [block.record, block.probe]);
}

/** The Solana task: getBlock's answer into the slot record and probe column, or what the node said instead (engine/solana/prepared.ts). */
export function solana(task: { answers: SolanaAnswers }): PreparedSolanaOutcome {
  const block = prepareSolanaBlock(task.answers);
  return block === null || 'error' in block ? block : movable(block, [block.record, block.probe]);
}
