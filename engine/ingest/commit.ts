import type { ChainFamily } from '../chains/registry.js';
import type { Kv } from '../ports.js';
import { historyEnd, type StartState } from './chain-start.js';
import { blockKey } from './chain-store.js';
import type { ChainEvents } from './follow.js';

/**
 * The commit path every family's follower shares, and what a cluster's other nodes apply a published block with
 * (the block as the chain's follower stored it: docs/architecture.md): one piece of code, so every node's store
 * holds the bytes the follower's holds. Both run inside a transaction their caller opened.
 */

/** What the commit path reads of a family's prepared block. */
export interface CommittedBlock {
  number: number;
  hash: string;
  parentHash: string;
  /** The number of the block it links to, where the chain skips numbers (a Solana slot's parent slot); else number − 1. */
  parentNumber?: number;
}

/** How a family writes its prepared blocks and takes them back. */
export interface BlockStore<B extends CommittedBlock> {
  /** Writes linked blocks, lowest first: record, probe column, canonical hash both ways, the family's index rows. */
  write(kv: Kv, chain: string, blocks: readonly B[]): void;
  /** Removes blocks `from` to `to` and their rows (a reorg); it reads what it removes. */
  remove(kv: Kv, chain: string, from: number, to: number): void;
  /** The block as a published message carried it (msgpack gives a typed array back as bytes); throws if it is none. */
  received(data: unknown): B;
}

/** Each family's part of the commit path, by family name (app/ derives it from the families' `blocks`). */
export type BlockStores = Partial<Record<ChainFamily, BlockStore<CommittedBlock>>>;

/** The chain's state after each of `blocks`: its head, and the blocks `confirmations` below it confirmed. */
export function statesAfter<S extends StartState>(before: S, blocks: readonly CommittedBlock[], confirmations: number): S[] {
  let state = before;
  return blocks.map((b) => (state = { ...state, head: b.number, confirmed: Math.max(state.confirmed, b.number - confirmations) }));
}

/**
 * One unit of the commit path: the blocks, their announcements and the chain's state after the last. Each block
 * is seen (above the chain's history: backfilled blocks are announced to no listener), then confirms the blocks
 * from the state before it to the state after it. `after`: statesAfter's. `hashOf`: a canonical block's hash below
 * the unit (the follower's: from memory while the commit holding it is in flight).
 */
export function storeUnit<B extends CommittedBlock, S extends StartState>(
  kv: Kv,
  chain: string,
  store: BlockStore<B>,
  blocks: readonly B[],
  before: S,
  after: readonly S[],
  events: ChainEvents,
  hashOf: (n: number) => string | undefined,
): void {
  store.write(kv, chain, blocks);
  const inUnit = new Map(blocks.map((b) => [b.number, b.hash]));
  let confirmed = before.confirmed;
  blocks.forEach((b, i) => {
    const next = after[i]!;
    const history = historyEnd(next);
    if (b.number > history) events.seen(chain, b.number, b.hash);
    while (confirmed < next.confirmed) {
      confirmed++;
      // A number holding no block (a skipped Solana slot) has nothing to announce.
      const hash = confirmed > history ? (inUnit.get(confirmed) ?? hashOf(confirmed)) : undefined;
      if (hash !== undefined) events.confirmed(chain, confirmed, hash);
    }
  });
  kv.put('chainState', chain, after.at(-1)!);
}

/** Blocks `from` to `to` of a chain taken back (a reorg), and the chain's state after it. */
export interface Rollback<S extends StartState = StartState> {
  chain: string;
  from: number;
  to: number;
  after: S;
}

/** Takes a rollback's blocks back and saves the chain's state after it. */
export function removeUnit(kv: Kv, store: BlockStore<CommittedBlock>, { chain, from, to, after }: Rollback, events: ChainEvents): void {
  store.remove(kv, chain, from, to);
  events.reorged(chain, from, to);
  kv.put('chainState', chain, after);
}

/** A follower's reorg: removeUnit in a transaction of its own, then `stored` told of it once it is durable. */
export async function rollBackUnit(
  kv: Kv,
  store: BlockStore<CommittedBlock>,
  rollback: Rollback,
  events: ChainEvents,
  stored: StoredListener | undefined,
): Promise<void> {
  const hash = kv.get<string>('canon', blockKey(rollback.chain, rollback.from));
  await kv.transactAsync(() => removeUnit(kv, store, rollback, events));
  if (hash !== undefined) stored?.reorg({ ...rollback, hash });
}

/** A block as the chain's follower stored it, for the cluster's other nodes: with the chain's state before and after it. */
export interface PublishedBlock<B extends CommittedBlock = CommittedBlock, S extends StartState = StartState> {
  chain: string;
  block: B;
  before: S;
  after: S;
}

/** A reorg as the chain's follower stored it: its rollback, and the hash of the block at `from` it removed. */
export interface PublishedReorg<S extends StartState = StartState> extends Rollback<S> {
  hash: string;
}

/**
 * What a chain's follower stored, told once it is durable and in the order it was stored: on a cluster, the node
 * holding the chain's lease publishes it to the others (bus/blocks.ts).
 */
export interface StoredListener {
  blocks(published: ReadonlyArray<PublishedBlock>): void;
  reorg(reorg: PublishedReorg): void;
}

/** A unit's blocks as published, one by one, each with the state before and after it. */
export function publishedBlocks<B extends CommittedBlock, S extends StartState>(
  chain: string,
  blocks: readonly B[],
  before: S,
  after: readonly S[],
): Array<PublishedBlock<B, S>> {
  return blocks.map((block, i) => ({ chain, block, before: i === 0 ? before : after[i - 1]!, after: after[i]! }));
}

/** What applying a published block or reorg did: written, or why this store was left as it was. */
export type ApplyOutcome = { applied: true } | { applied: false; why: string };

/**
 * Writes a published block into this store as the follower's commit wrote it, its announcements made from the
 * states the message carries (a function of the message and the store alone). Idempotent by (chain, height, hash):
 * a block this store holds already, at its height, is left as it is. A block that does not extend this store's
 * chain (another block at its height, or below it another than its parent) is refused: a change of branch comes
 * as a reorg first, in the order the follower stored them.
 */
export function applyBlock<B extends CommittedBlock>(
  kv: Kv,
  store: BlockStore<B>,
  published: PublishedBlock<B>,
  events: ChainEvents,
): ApplyOutcome {
  const { chain, block } = published;
  const here = kv.get<string>('canon', blockKey(chain, block.number));
  if (here === block.hash) return { applied: false, why: 'stored already' };
  if (here !== undefined) return { applied: false, why: `this store holds block ${here} at height ${block.number}` };
  // The block this store holds nearest below it must be its parent, if it holds any from there (the numbers
  // between them hold no block on the block's chain).
  const parent = block.parentNumber ?? block.number - 1;
  const below =
    parent < 0 ? undefined : kv.range<string>('canon', { start: blockKey(chain, parent), end: blockKey(chain, block.number) }).at(-1);
  if (below !== undefined && (below.key !== blockKey(chain, parent) || below.value !== block.parentHash))
    return { applied: false, why: `its parent ${block.parentHash} is not this store's block ${below.value} below it` };
  storeUnit(kv, chain, store, [block], published.before, [published.after], events, (n) => kv.get<string>('canon', blockKey(chain, n)));
  return { applied: true };
}

/** Takes back what a published reorg removed; idempotent: a store whose block at `from` is not the removed one is left as it is. */
export function applyReorg(kv: Kv, store: BlockStore<CommittedBlock>, reorg: PublishedReorg, events: ChainEvents): ApplyOutcome {
  const here = kv.get<string>('canon', blockKey(reorg.chain, reorg.from));
  if (here !== reorg.hash) return { applied: false, why: here === undefined ? 'removed already' : `this store holds block ${here} there` };
  removeUnit(kv, store, reorg, events);
  return { applied: true };
}
