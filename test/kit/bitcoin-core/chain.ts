/**
 * The chain a stand-in Bitcoin Core serves: blocks by height (the active chain) and by hash (stale ones stay
 * readable, as in Core), a mempool, and the outputs of every active-chain transaction for prevouts.
 * Blocks are stored as given: no proof of work, no script or amount checks. A chain that starts above
 * genesis may have the headers below its first block (a pruned node's block index, computed on demand).
 */
import { Block, Transaction } from 'bitcoinjs-lib';
import type { PrunedHeaders } from './headers.js';
import { blockWork, displayHex, type BlockPlace, type Prevout } from './shapes.js';

/** A stored block and what the chain knows of it. */
export interface StoredBlock {
  hash: string;
  block: Block;
  bytes: Buffer;
  height: number;
  chainwork: bigint;
  mediantime: number;
}

/** A transaction of the active chain, where it was mined. */
export interface MinedTx {
  tx: Transaction;
  block: StoredBlock;
  index: number;
}

/** A transaction in the mempool and when it came (Core's entry `time`). */
export interface PoolTx {
  tx: Transaction;
  time: number;
}

const toBytes = (raw: string | Uint8Array): Buffer => (typeof raw === 'string' ? Buffer.from(raw.trim(), 'hex') : Buffer.from(raw));

/**
 * A copy of a serialized block whose header's prevhash is `prevHash` (display hex), and its time `time` when
 * given; its hash changes, its txids do not.
 */
export function relinkBlock(raw: string | Uint8Array, prevHash: string, time?: number): Buffer {
  const bytes = Buffer.from(toBytes(raw));
  Buffer.from(prevHash, 'hex').reverse().copy(bytes, 4);
  if (time !== undefined) bytes.writeUInt32LE(time, 68);
  return bytes;
}

/** Core's median time past: the median of this block's time and its ten predecessors'. */
function medianTime(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export class BitcoinChain {
  private readonly active: StoredBlock[] = [];
  private readonly byHash = new Map<string, StoredBlock>();
  private readonly mined = new Map<string, MinedTx>();
  private readonly pool = new Map<string, PoolTx>();
  private readonly outside = new Map<string, Prevout>();
  /** Counts changes to the blocks (not the mempool), so block answers cached by the server know when they are stale. */
  revision = 0;

  /** Blocks below this height have no data (Core's -prune): headers stay, getblock fails. */
  prunedBelow = 0;

  /**
   * `start`: the height of the first block appended (a chain may begin above genesis); `below`: the headers of
   * the heights under it (no block data: a pruned node's), else those heights are not served at all.
   */
  constructor(
    readonly start = 0,
    readonly below?: PrunedHeaders,
  ) {
    if (below !== undefined && below.count !== start)
      throw new Error(`headers below a chain starting at ${start} are 0 … ${start - 1}, not 0 … ${below.count - 1}`);
    if (below !== undefined) this.prunedBelow = start;
  }

  /** The tip's height (`start - 1` while empty). */
  get height(): number {
    return this.start + this.active.length - 1;
  }

  get tip(): StoredBlock | undefined {
    return this.active.at(-1);
  }

  at(height: number): StoredBlock | undefined {
    return height < this.start ? undefined : this.active[height - this.start];
  }

  byId(hash: string): StoredBlock | undefined {
    return this.byHash.get(hash);
  }

  isActive(b: StoredBlock): boolean {
    return this.at(b.height) === b;
  }

  /** The hash of the active chain's block at `height`: a stored block's, or a header's below them. */
  hashAt(height: number): string | undefined {
    if (height >= this.start) return this.at(height)?.hash;
    return height >= 0 ? this.below?.hash(height) : undefined;
  }

  /** The height of a hash among the headers below the stored blocks (they have no data). */
  headerOnly(hash: string): number | undefined {
    return this.below?.heightOf(hash);
  }

  /** Puts a block on top of the tip, linked or not; mined transactions leave the mempool. Answers its hash. */
  append(raw: string | Uint8Array): string {
    const bytes = toBytes(raw);
    const block = Block.fromBuffer(bytes);
    const height = this.height + 1;
    const times = [...this.timesBefore(height, 10), block.timestamp];
    const stored: StoredBlock = {
      hash: block.getId(),
      block,
      bytes,
      height,
      chainwork: this.chainworkAt(height - 1) + blockWork(block.bits),
      mediantime: medianTime(times),
    };
    this.active.push(stored);
    this.byHash.set(stored.hash, stored);
    (block.transactions ?? []).forEach((tx, index) => {
      const txid = tx.getId();
      this.mined.set(txid, { tx, block: stored, index });
      this.pool.delete(txid);
    });
    this.evictConflicts(block);
    this.revision++;
    return stored.hash;
  }

  /** The times of the `count` active blocks below `height` (headers below the stored blocks included). */
  private timesBefore(height: number, count: number): number[] {
    const from = Math.max(0, height - count);
    return Array.from({ length: height - from }, (_, i) => from + i)
      .map((h) => (h >= this.start ? this.at(h)!.block.timestamp : this.below?.time(h)))
      .filter((t): t is number => t !== undefined);
  }

  /** The chain's work up to the active block at `height` (0 below genesis). */
  private chainworkAt(height: number): bigint {
    if (height >= this.start) return this.at(height)!.chainwork;
    return height >= 0 ? (this.below?.chainwork(height) ?? 0n) : 0n;
  }

  /** Mempool transactions spending an output the block spends leave the mempool, as in Core. */
  private evictConflicts(block: Block): void {
    if (this.pool.size === 0) return;
    const spent = new Set((block.transactions ?? []).slice(1).flatMap((tx) => tx.ins.map(outpointOf)));
    for (const [txid, { tx }] of this.pool) if (tx.ins.some((i) => spent.has(outpointOf(i)))) this.pool.delete(txid);
  }

  /** A copy of `raw` whose prevhash is `prevHash` (see relinkBlock). */
  relink(raw: string | Uint8Array, prevHash: string): Buffer {
    return relinkBlock(raw, prevHash);
  }

  /**
   * Replaces the top `depth` blocks with `blocks`. As in Core, the replaced blocks stay readable by hash
   * (confirmations -1) and their transactions go back to the mempool unless the new blocks hold or spend them.
   */
  reorg(depth: number, blocks: Array<string | Uint8Array>): string[] {
    if (depth > this.active.length) throw new Error(`cannot reorg ${depth} blocks of a chain of ${this.active.length}`);
    const dropped = this.active.splice(this.active.length - depth, depth);
    const orphaned = dropped.flatMap((b) => (b.block.transactions ?? []).slice(1));
    for (const tx of dropped.flatMap((b) => b.block.transactions ?? [])) this.mined.delete(tx.getId());
    this.revision++;
    const hashes = blocks.map((b) => this.append(b));
    const spent = new Set(hashes.flatMap((h) => (this.byHash.get(h)!.block.transactions ?? []).flatMap((tx) => tx.ins.map(outpointOf))));
    for (const tx of orphaned) {
      if (!this.mined.has(tx.getId()) && !tx.ins.some((i) => spent.has(outpointOf(i))))
        this.pool.set(tx.getId(), { tx, time: nowSeconds() });
    }
    return hashes;
  }

  /** Drops the data of blocks below `height`, as `pruneblockchain` does (their outputs still give prevouts, as undo data would). */
  prune(height: number): void {
    this.prunedBelow = Math.max(this.prunedBelow, height);
  }

  /** Whether a block's data is served (not pruned). */
  hasData(b: StoredBlock): boolean {
    return b.height >= this.prunedBelow;
  }

  /** Adds a transaction to the mempool; answers its txid. */
  addToMempool(txHex: string): string {
    const tx = Transaction.fromHex(txHex);
    this.pool.set(tx.getId(), { tx, time: nowSeconds() });
    return tx.getId();
  }

  dropFromMempool(txid: string): boolean {
    return this.pool.delete(txid);
  }

  /** Mempool transactions in arrival order. */
  mempool(): Map<string, PoolTx> {
    return this.pool;
  }

  /** A transaction of the active chain (what -txindex finds). */
  minedTx(txid: string): MinedTx | undefined {
    return this.mined.get(txid);
  }

  /** Makes an output of a block this chain does not hold known, as if its funding block were stored (for real blocks' prevouts). */
  knowOutput(txid: string, vout: number, prevout: Prevout): void {
    this.outside.set(`${txid}:${vout}`, prevout);
    this.revision++;
  }

  /** The outputs `tx` spends, where the active chain (or knowOutput) has them; unknown ones are undefined (a pruned node's gap). */
  prevouts(tx: Transaction): Array<Prevout | undefined> {
    if (tx.isCoinbase()) return [];
    return tx.ins.map((input) => {
      const from = this.mined.get(displayHex(input.hash));
      const out = from?.tx.outs[input.index];
      if (from && out) return { generated: from.index === 0, height: from.block.height, value: out.value, script: out.script };
      return this.outside.get(outpointOf(input));
    });
  }

  /** What a block's JSON needs from the chain: confirmations and next block count only on the active chain. */
  place(b: StoredBlock): BlockPlace {
    const active = this.isActive(b);
    const prev = displayHex(b.block.prevHash!);
    const next = active ? this.at(b.height + 1) : undefined;
    return {
      height: b.height,
      confirmations: active ? this.height - b.height + 1 : -1,
      mediantime: b.mediantime,
      chainwork: b.chainwork,
      ...(/^0+$/.test(prev) ? {} : { previousblockhash: prev }),
      ...(next ? { nextblockhash: next.hash } : {}),
    };
  }
}

const outpointOf = (input: { hash: Uint8Array; index: number }): string => `${displayHex(input.hash)}:${input.index}`;
const nowSeconds = (): number => Math.floor(Date.now() / 1000);
