import { canonicalNumber } from '../ingest/block-hashes.js';
import type { ChainState } from '../evm/follower.js';
import { RecordView } from '../evm/record-view.js';
import { decodeRecord, type BlockRecord } from '../evm/record.js';
import { blockKey } from '../ingest/chain-store.js';
import type { Kv } from '../ports.js';
import { isHash, quantity } from './methods.js';

/**
 * What the store holds of one chain, as node access sees it at one moment:
 * the follower's state, the node's latest block when that is known, and
 * each held block's record and probe column. A held block is ingested,
 * canonical (a reorg removes what left the chain) and not pruned.
 */
export class Held {
  readonly head: number;
  readonly pruned: number;
  readonly confirmed: number;

  constructor(
    private readonly kv: Kv,
    readonly chain: string,
    state: ChainState | undefined,
    /** The node's latest block, when known to be current (see EvmFollower.nodeLatest). */
    readonly latest: number | undefined,
    /** Reorgs the store took so far (EvmFollower.reorgs). */
    private readonly reorgs: number,
  ) {
    this.head = state?.head ?? -1;
    this.pruned = state?.pruned ?? -1;
    this.confirmed = state?.confirmed ?? -1;
  }

  /** Whether every block from `from` to `to` is held. */
  holds(from: number, to: number): boolean {
    return from > this.pruned && from <= to && to <= this.head;
  }

  /**
   * A block parameter as the number it means to the node, where the store can
   * tell: a hex number, "earliest", or "latest" while the store has the node's
   * latest block. Undefined for "pending", "safe" and "finalized" (the node
   * decides those), an unknown latest, or anything malformed (the node answers it).
   */
  number(param: unknown): number | undefined {
    if (param === 'earliest') return 0;
    if (param === 'latest') return this.latest !== undefined && this.latest <= this.head ? this.latest : undefined;
    return quantity(param);
  }

  /** A block named by number, tag or hash, as its number, where the store can tell (see number()). */
  block(param: unknown): number | undefined {
    return isHash(param) ? this.numberOf(param) : this.number(param);
  }

  /** The number of the canonical block with this hash, if the store knows it. */
  numberOf(hash: string): number | undefined {
    return canonicalNumber(this.kv, this.chain, hash);
  }

  /** The canonical hash at `n` (kept after pruning). */
  hashAt(n: number): string | undefined {
    return this.kv.get<string>('canon', this.key(n));
  }

  /**
   * Names the block held at `n` for what node access keeps of it in memory: its chain, number and
   * the reorgs so far, as only a reorg replaces a stored block. Checking its hash instead would
   * read the store once per block, which is what the kept copy saves.
   */
  blockId(n: number): string {
    return `${this.chain}/${n}.${this.reorgs}`;
  }

  /** A held block's record, read in place (its bytes copied out of the store). */
  record(n: number): RecordView | undefined {
    const bytes = this.kv.getRaw('blocks', this.key(n));
    return bytes === undefined ? undefined : RecordView.of(bytes);
  }

  /** A held block's whole record, decoded. */
  fullRecord(n: number): BlockRecord | undefined {
    const bytes = this.kv.getRaw('blocks', this.key(n));
    return bytes === undefined ? undefined : decodeRecord(bytes);
  }

  /** A held block's probe column, valid only until the next read of the store. */
  probe(n: number): Uint8Array | undefined {
    return this.kv.getRaw('probes', this.key(n));
  }

  private key(n: number): string {
    return blockKey(this.chain, n);
  }
}
