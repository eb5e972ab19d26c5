import { describe, expect, it } from 'vitest';
import type { QueueMeta } from '../../../../engine/delivery/kv-queue.js';
import { RowCache } from '../../../../engine/delivery/row-cache.js';

const meta = (nextSeq: number, queued: number): QueueMeta => ({ nextSeq, queued });

describe('RowCache (queueMeta and stats rows as committed)', () => {
  it('answers nothing for a row written by a transaction not known to have committed, then the committed row', () => {
    const c = new RowCache<QueueMeta>();
    c.committed('s1', meta(1, 1), 1);
    expect(c.known('s1')).toEqual(meta(1, 1));
    c.wrote('s1');
    expect(c.known('s1')).toBeUndefined();
    c.committed('s1', meta(2, 2), 2);
    expect(c.known('s1')).toEqual(meta(2, 2));
  });

  it('keeps the later transaction’s row when commits are told out of order, and reads the store while one is pending', () => {
    const c = new RowCache<QueueMeta>();
    c.wrote('s1');
    c.wrote('s1');
    expect(c.committed('s1', meta(5, 5), 2)).toBe(true);
    // The write of order 1 is still pending: the store holds the later row, the cache would not know which came last.
    expect(c.known('s1')).toBeUndefined();
    // Told it is not kept: the x-queue-size in memory keeps the later count too.
    expect(c.committed('s1', meta(4, 4), 1)).toBe(false);
    expect(c.known('s1')).toEqual(meta(5, 5));
  });

  it('reads a row whose transaction failed (never told committed) from the store for good', () => {
    const c = new RowCache<number>();
    c.committed('t', 1, 1);
    c.wrote('t');
    // The failed transaction (order 2) is never committed; a later one that wrote the row commits.
    c.wrote('t');
    c.committed('t', 3, 3);
    expect(c.known('t')).toBeUndefined();
  });
});
