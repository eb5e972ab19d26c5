import type { Kv } from '../../engine/ports.js';

/**
 * A Kv that counts what its reads return: the entries of range reads (the index entries a page touches) and
 * point reads, apart and together; it refuses to count a range (paging must not). Tests and bench:data.
 */
export function counting(kv: Kv): { kv: Kv; reads: () => number; ranges: () => number; points: () => number; reset(): void } {
  let ranges = 0;
  let points = 0;
  const wrapped: Kv = Object.create(kv);
  wrapped.range = (table, opts) => {
    const rows = kv.range(table, opts);
    ranges += rows.length;
    return rows as never;
  };
  wrapped.get = (table, key) => {
    points++;
    return kv.get(table, key);
  };
  wrapped.count = () => {
    throw new Error('a page counted its range');
  };
  return { kv: wrapped, reads: () => ranges + points, ranges: () => ranges, points: () => points, reset: () => void (ranges = points = 0) };
}
