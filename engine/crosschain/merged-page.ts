import type { Chain } from '../chains/registry.js';
import { readCursor, writeCursor } from './cursor.js';
import { acrossChains, type FailedChain } from './fan-out.js';

/**
 * Cursor pages over several chains at once, newest first, merged by time. Each
 * chain's list is read strictly after the position where its last page ended
 * (its own key order: newest first), so blocks that arrive meanwhile, on the
 * newest end, shift no page, and a chain that fails for one page keeps its
 * position and resumes on the next. The cursor (cursor.ts) holds the next
 * page's number and each chain's position (null: that chain has nothing left).
 */

/** An item of one chain's list, with where the list continues after it. */
export interface ChainItem<T> {
  /** Seconds (or any unit shared by every chain of the list); newer first. */
  readonly time: number;
  /** The chain list's position just past this item (its key). */
  readonly at: string;
  readonly item: T;
}

/** Reads up to `limit` items of one chain's list, newest first, strictly after `after` (from the newest when undefined). */
export type ChainList<T> = (chain: Chain, after: string | undefined, limit: number) => ChainItem<T>[] | Promise<ChainItem<T>[]>;

export interface MergedPage<T> {
  items: Array<ChainItem<T> & { chain: Chain }>;
  page: number;
  cursor: string | null;
  failed: FailedChain[];
}

/** Where a merged list continues (cursor.ts keeps the list it was made for). */
interface MergedPosition {
  p: number;
  /** Per chain key: where its list continues; null when it has nothing left. */
  c: Record<string, string | null>;
}

const validPosition = (at: Record<string, unknown>): boolean => {
  const positions = at.c;
  return (
    Number.isSafeInteger(at.p) &&
    positions !== null &&
    typeof positions === 'object' &&
    !Array.isArray(positions) &&
    Object.values(positions).every((c) => c === null || typeof c === 'string')
  );
};

/** `list` names the query (path, its filters, the chains) so a cursor cannot be replayed on another. */
export async function mergedPage<T>(
  chains: readonly Chain[],
  read: ChainList<T>,
  opts: { list: string; limit: number; cursor: string | null | undefined },
): Promise<MergedPage<T>> {
  const list = `${opts.list}|${chains.map((c) => c.key).join(',')}`;
  const from =
    opts.cursor === null || opts.cursor === undefined || opts.cursor === ''
      ? undefined
      : readCursor<MergedPosition>(opts.cursor, list, validPosition);
  const positions: Record<string, string | null | undefined> = { ...(from?.c ?? {}) };
  // One more than the page per chain: whether it has more after what this page takes.
  const live = chains.filter((c) => positions[c.key] !== null);
  // "" (a chain that failed before its first page) reads from the newest, as a chain not yet read.
  const { parts, failed } = await acrossChains(live, (chain) => read(chain, positions[chain.key] || undefined, opts.limit + 1));
  const merged = parts
    .flatMap(({ chain, value }) => value.map((item, i) => ({ ...item, chain, i })))
    // Newest first; a tie keeps chains in the order asked and each chain's own order.
    .sort((a, b) => b.time - a.time || chains.indexOf(a.chain) - chains.indexOf(b.chain) || a.i - b.i);
  const taken = merged.slice(0, opts.limit);
  for (const { chain, value } of parts) {
    const mine = taken.filter((t) => t.chain === chain);
    const last = mine[mine.length - 1];
    if (last !== undefined) positions[chain.key] = last.at;
    // Everything it had was taken and it had no more than the page: nothing left.
    if (mine.length === value.length && value.length <= opts.limit) positions[chain.key] = null;
  }
  // A chain not read yet (it failed on its first page) continues from the newest: "".
  const next: MergedPosition = {
    p: (from?.p ?? 0) + 1,
    c: Object.fromEntries(chains.map((c) => [c.key, positions[c.key] === undefined ? '' : positions[c.key]!])),
  };
  const more = Object.values(next.c).some((at) => at !== null);
  return {
    items: taken.map(({ time, at, item, chain }) => ({ time, at, item, chain })),
    page: from?.p ?? 0,
    cursor: more ? writeCursor(list, next) : null,
    failed,
  };
}
