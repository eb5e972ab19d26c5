import type { Kv } from '../engine/ports.js';

/** A Kv that counts the entries its reads return (and refuses to count a range: paging must not). */
export function counting(kv: Kv): { kv: Kv; reads: () => number; reset(): void } {
  let reads = 0;
  const wrapped: Kv = Object.create(kv);
  wrapped.range = (table, opts) => {
    const rows = kv.range(table, opts);
    reads += rows.length;
    return rows as never;
  };
  wrapped.get = (table, key) => {
    reads++;
    return kv.get(table, key);
  };
  wrapped.count = () => {
    throw new Error('a page counted its range');
  };
  return { kv: wrapped, reads: () => reads, reset: () => void (reads = 0) };
}
