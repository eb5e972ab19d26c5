/**
 * The slots a stand-in Solana node serves. A slot holds a block, or nothing (skipped). The confirmed tip is the
 * highest slot holding a block; a block may be announced before it can be fetched (getSlot names it, getBlock
 * answers -32004 until it is released). A fork replaces the slots from S on with another branch: new
 * blockhashes, parent links (parentSlot, previousBlockhash, blockHeight) rebuilt on the slot below S.
 * No bank state, no consensus: blocks hold the transactions they are given.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import bs58 from 'bs58';
import { type TxEntry } from './build.js';

/** A block reward as getBlock shows it with rewards true. */
export interface Reward {
  commission: number | null;
  lamports: number;
  postBalance: number;
  pubkey: string;
  rewardType: string | null;
}

/** A slot's block: getBlock's fields (json encoding) and whether it can be fetched yet. */
export interface SlotBlock {
  slot: number;
  blockHeight: number | null;
  blockTime: number | null;
  blockhash: string;
  parentSlot: number;
  previousBlockhash: string;
  rewards: Reward[];
  transactions: TxEntry[];
  /** false while announced only: getSlot names it, getBlock answers as `unavailableAs` says (default -32004). */
  available: boolean;
  /** What getBlock answers while the block is not available: agave's -32004 or -32014, or a null result. */
  unavailableAs?: Unavailable;
  /**
   * Bench chains reuse a pool of transactions: transaction i's first signature is then varied with `salt + i`
   * (its last 5 base58 digits), so signatures stay unique across slots (and no longer verify).
   */
  salt?: number;
}

/** What slotSubscribe notifies. */
export interface SlotNotice {
  parent: number;
  root: number;
  slot: number;
}

/** How a node answers getBlock for a confirmed slot whose block it cannot give yet. */
export type Unavailable = -32004 | -32014 | null;

export interface ProduceOptions {
  /** false: announce the slot (getSlot) but answer -32004 (or `unavailableAs`) for its block until `release`. Default true. */
  available?: boolean;
  unavailableAs?: Unavailable;
  blockTime?: number | null;
  salt?: number;
}

export interface ChainOptions {
  /** The first slot a block can be produced at (default 1). */
  firstSlot?: number;
  /** The block height of the first block (default: its slot). */
  firstBlockHeight?: number;
  /** blockTime of slot `firstSlot` (default 1,750,000,000); later slots add 400 ms each. */
  time0?: number;
}

/** How far the root (finalized) trails the confirmed tip, as on mainnet. */
export const ROOT_DISTANCE = 32;

const hashText = (s: string): string => bs58.encode(sha256(new TextEncoder().encode(s)));

export class SolanaChain {
  private readonly blocks = new Map<number, SlotBlock>();
  private readonly listeners = new Set<(n: SlotNotice) => void>();
  /** Counts forks: part of every later blockhash, so a replaced slot never gets its old hash back. */
  private branch = 0;
  /** Counts changes, so answers cached by the server know when they are stale. */
  revision = 0;
  /** The slot the next produced block takes. */
  nextSlot: number;
  /** Lookup tables the node holds (address → listed addresses), for v0 transactions. */
  readonly lookupTables = new Map<string, string[]>();
  readonly firstSlot: number;
  private readonly firstBlockHeight: number;
  private readonly time0: number;

  constructor(opts: ChainOptions = {}) {
    this.firstSlot = opts.firstSlot ?? 1;
    this.nextSlot = this.firstSlot;
    this.firstBlockHeight = opts.firstBlockHeight ?? this.firstSlot;
    this.time0 = opts.time0 ?? 1_750_000_000;
  }

  /** The confirmed tip: the highest slot holding a block, available or not (`firstSlot - 1` while empty). */
  get tip(): number {
    return this.bounds().top;
  }

  /** The lowest and highest block slots, recomputed after a change only (bench chains hold many slots). */
  private bounds(): { low: number; top: number } {
    if (this.cachedBounds?.revision !== this.revision) {
      let low = Infinity;
      let top = this.firstSlot - 1;
      for (const s of this.blocks.keys()) {
        if (s > top) top = s;
        if (s < low) low = s;
      }
      this.cachedBounds = { revision: this.revision, low: low === Infinity ? this.firstSlot : low, top };
    }
    return this.cachedBounds;
  }

  private cachedBounds?: { revision: number; low: number; top: number };

  /** The finalized slot (getSlot finalized): ROOT_DISTANCE below the tip, at least the first block. */
  get root(): number {
    return Math.max(this.firstAvailable, this.tip - ROOT_DISTANCE);
  }

  /** The lowest slot holding a block (getFirstAvailableBlock); slots below it answer -32009. */
  get firstAvailable(): number {
    return this.bounds().low;
  }

  at(slot: number): SlotBlock | undefined {
    return this.blocks.get(slot);
  }

  /** Blocks in slot order. */
  slots(): SlotBlock[] {
    return [...this.blocks.values()].sort((a, b) => a.slot - b.slot);
  }

  /** The block below `slot` (the parent a block at `slot` links to). */
  blockBelow(slot: number): SlotBlock | undefined {
    const { top } = this.bounds();
    if (slot > top) return this.blocks.get(top);
    let best: SlotBlock | undefined;
    for (const b of this.blocks.values()) if (b.slot < slot && (!best || b.slot > best.slot)) best = b;
    return best;
  }

  /** A recent blockhash for transactions built for the next slot (the tip's). */
  get recentBlockhash(): string {
    return this.blocks.get(this.tip)?.blockhash ?? hashText(`recent/${this.firstSlot}`);
  }

  addLookupTable(address: string, addresses: string[]): void {
    this.lookupTables.set(address, addresses);
  }

  /** Calls `listener` for every slot produced (what slotSubscribe sends); answers the unsubscribe. */
  onSlot(listener: (n: SlotNotice) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stores a block as given (a real one, at its own slot); it becomes `nextSlot - 1` if above. No notification. */
  put(block: Omit<SlotBlock, 'available'> & { available?: boolean }): SlotBlock {
    const stored: SlotBlock = { ...block, available: block.available ?? true };
    this.blocks.set(stored.slot, stored);
    this.nextSlot = Math.max(this.nextSlot, stored.slot + 1);
    this.revision++;
    return stored;
  }

  /** A block of `transactions` at `nextSlot`, linked to the block below; notified to slot subscribers. */
  produce(transactions: TxEntry[] = [], opts: ProduceOptions = {}): SlotBlock {
    const slot = this.nextSlot;
    const parent = this.blockBelow(slot);
    const previousBlockhash = parent?.blockhash ?? hashText(`genesis/${slot - 1}`);
    const fees = transactions.reduce((n, t) => n + t.meta.fee, 0);
    const leader = hashText(`leader/${Math.floor(slot / 4)}`);
    const block: SlotBlock = {
      slot,
      blockHeight: parent?.blockHeight != null ? parent.blockHeight + 1 : this.firstBlockHeight + (slot - this.firstSlot),
      blockTime: opts.blockTime !== undefined ? opts.blockTime : this.timeOf(slot, parent),
      blockhash: hashText(`block/${previousBlockhash}/${slot}/${this.branch}/${transactions[0]?.transaction.signatures[0] ?? ''}`),
      parentSlot: parent?.slot ?? slot - 1,
      previousBlockhash,
      // Half the fees go to the leader, half are burnt.
      rewards: [
        { commission: null, lamports: Math.floor(fees / 2), postBalance: 90_000_000_000 + slot, pubkey: leader, rewardType: 'Fee' },
      ],
      transactions,
      available: opts.available ?? true,
      ...(opts.unavailableAs !== undefined ? { unavailableAs: opts.unavailableAs } : {}),
      ...(opts.salt !== undefined ? { salt: opts.salt } : {}),
    };
    this.blocks.set(slot, block);
    this.nextSlot = slot + 1;
    this.revision++;
    const notice = { parent: block.parentSlot, root: this.root, slot };
    for (const l of this.listeners) l(notice);
    return block;
  }

  /** 400 ms a slot after the parent's time (or after `time0` at the first slot). */
  private timeOf(slot: number, parent: SlotBlock | undefined): number {
    // Whole seconds between the slots' absolute times, so consecutive slots advance 2 s every 5 slots.
    if (parent?.blockTime != null) return parent.blockTime + Math.floor((slot * 2) / 5) - Math.floor((parent.slot * 2) / 5);
    return this.time0 + Math.floor(((slot - this.firstSlot) * 2) / 5);
  }

  /** Leaves the next `count` slots empty (skipped): getBlock answers -32007 for them. */
  skip(count = 1): void {
    this.nextSlot += count;
  }

  /** Makes an announced block fetchable. */
  release(slot: number): void {
    const b = this.blocks.get(slot);
    if (!b) throw new Error(`no block at slot ${slot}`);
    b.available = true;
    this.revision++;
  }

  /**
   * Replaces the slots from `from` on: drops their blocks, then produces `branch` from `from` on (an entry
   * 'skip' leaves a slot empty). Answers the dropped blocks.
   */
  fork(from: number, branch: Array<TxEntry[] | 'skip'> = []): SlotBlock[] {
    const dropped = this.slots().filter((b) => b.slot >= from);
    for (const b of dropped) this.blocks.delete(b.slot);
    this.branch++;
    this.nextSlot = from;
    this.revision++;
    for (const slot of branch) {
      if (slot === 'skip') this.skip();
      else this.produce(slot);
    }
    return dropped;
  }
}
