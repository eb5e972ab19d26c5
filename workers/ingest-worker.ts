import { prepareBlock, type NodeAnswers, type PreparedBlock } from '../engine/ingest/prepared.js';
import { pack } from '../storage/codec.js';

/**
 * The ingest task of the worker pool: a block's node answers, as bytes, into
 * what the main thread writes (engine/ingest/prepared.ts), index values
 * encoded as the store encodes them.
 */
export interface IngestTask {
  chain: string;
  answers: NodeAnswers;
}

export function ingest(task: IngestTask): PreparedBlock | null {
  return prepareBlock(task.chain, task.answers, pack);
}
