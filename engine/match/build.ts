import type { StoredStream } from '../streams/model.js';
import type { OVER_BUDGET } from './node-share.js';

/** A matched block as a stream's webhook body is built from it. */
export interface MatchedBlock {
  chain: string;
  number: number;
  /** The stored block record, in its family's format, read in place: a stream's body decodes only the items it matched. */
  bytes: Uint8Array;
  confirmed: boolean;
}

/**
 * Builds a stream's webhook body (a stream of its family: S) for a block from the probe refs that matched it; null
 * when nothing is left to send. `budget`: how long the node calls the stream asks for (EVM triggers) may take.
 */
export type BuildWebhook<S extends StoredStream = StoredStream> = (
  block: MatchedBlock,
  stream: S,
  refs: readonly number[],
  budget?: CallBudget,
) => Promise<Record<string, unknown> | null>;

/** The service time a stream's trigger calls for one block have: none starts once `expired()`, and one under way is given up when `over` settles. */
export interface CallBudget {
  /** The budget's length (CHAINPOST_TRIGGER_BUDGET_MS), for the message of a call given up. */
  readonly ms: number;
  expired(): boolean;
  readonly over: Promise<void>;
  /** Makes one node call within the budget, once the stream's tenant has node time left (NodeShare): its answer, or OVER_BUDGET. */
  call<T>(run: () => Promise<T>): Promise<T | typeof OVER_BUDGET>;
}

/** A builder that could not reach a node it needs (token metadata, say): the round fails and is tried again. */
export class NodeUnavailable extends Error {
  override name = 'NodeUnavailable';
}
