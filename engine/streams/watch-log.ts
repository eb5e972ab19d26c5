import type { Kv } from '../ports.js';

/**
 * The change log of what streams watch (`watchChanges`): a row per change of a stream's addresses (and per stream
 * created), under a sequence number counted in `meta/watchSeq`, written in the same write transaction as the change
 * itself (engine/streams/control-plane.ts). A base kept in the store says the last number it holds; the rows after it
 * are the changes a start lays over it, and those a change layer is built from (docs/decisions/watched-set.md).
 */
export interface WatchChange {
  id: string;
  /** Addresses added (true) or removed (false), in their stored form. */
  add?: boolean;
  addresses?: string[];
  /** The stream was created (its addresses, if any, come in their own rows). */
  created?: true;
}

const SEQ = 'watchSeq';

/** A row's key: its number, zero-padded so keys sort as numbers. */
const changeKey = (seq: number): string => String(seq).padStart(15, '0');

/** The number of the last change logged (0: none). */
export const watchSeq = (kv: Pick<Kv, 'get'>): number => kv.get<number>('meta', SEQ) ?? 0;

/** Logs a change (inside the change's write transaction); its number. */
export function logWatchChange(kv: Kv, change: WatchChange): number {
  const seq = watchSeq(kv) + 1;
  kv.put('meta', SEQ, seq);
  kv.put('watchChanges', changeKey(seq), change);
  return seq;
}

/** Each change after `after` up to `upTo` (all, unless told), in order, a page at a time. */
export function changesAfter(
  kv: Pick<Kv, 'range'>,
  after: number,
  visit: (seq: number, change: WatchChange) => void,
  upTo = Number.MAX_SAFE_INTEGER,
): void {
  const end = changeKey(upTo + 1);
  for (let start = changeKey(after + 1); ; ) {
    const page = kv.range<WatchChange>('watchChanges', { start, end, limit: PAGE });
    for (const { key, value } of page) visit(Number(key), value);
    if (page.length < PAGE) return;
    start = changeKey(Number(page.at(-1)!.key) + 1);
  }
}

/** Removes the rows up to `upTo` (a base holding them is written): how many. */
export const pruneChanges = (kv: Pick<Kv, 'removeRange'>, upTo: number): number =>
  kv.removeRange('watchChanges', { start: changeKey(0), end: changeKey(upTo + 1), limit: Number.MAX_SAFE_INTEGER });

const PAGE = 100;
