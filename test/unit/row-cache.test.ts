import { describe, expect, it } from 'vitest';
import { RowCache, type QueueMeta } from '../../engine/delivery/dispatcher.js';

const meta = (nextSeq: number, queued: number): QueueMeta => ({ nextSeq, queued });

describe('RowCache (queueMeta and stats rows as committed)', () => {
  it('answers nothing for a row written by a transaction not known to have committed, then the committed row', () => {
    const c = new RowCache();
    c.committed(c.metas, 's1', meta(1, 1), c.nextVersion());
    expect(c.known(c.metas, 's1')).toEqual(meta(1, 1));
    c.wrote(c.metas, 's1');
    const v = c.nextVersion();
    expect(c.known(c.metas, 's1')).toBeUndefined();
    c.committed(c.metas, 's1', meta(2, 2), v);
    expect(c.known(c.metas, 's1')).toEqual(meta(2, 2));
  });

  it('keeps the later transaction’s row when commits are told out of order, and reads the store while one is pending', () => {
    const c = new RowCache();
    c.wrote(c.metas, 's1');
    const a = c.nextVersion();
    c.wrote(c.metas, 's1');
    const b = c.nextVersion();
    c.committed(c.metas, 's1', meta(5, 5), b);
    // a is still pending: the store holds b's row, the cache would not know whether a's came after.
    expect(c.known(c.metas, 's1')).toBeUndefined();
    c.committed(c.metas, 's1', meta(4, 4), a);
    expect(c.known(c.metas, 's1')).toEqual(meta(5, 5));
  });

  it('reads a row whose transaction failed (never told committed) from the store for good', () => {
    const c = new RowCache();
    c.committed(c.stats, 't', { totalWebhooksDelivered: 1 } as never, c.nextVersion());
    c.wrote(c.stats, 't');
    c.nextVersion();
    // The failed transaction is never committed; a later one that wrote the row commits.
    c.wrote(c.stats, 't');
    const later = c.nextVersion();
    c.committed(c.stats, 't', { totalWebhooksDelivered: 3 } as never, later);
    expect(c.known(c.stats, 't')).toBeUndefined();
  });

  it('keeps queueMeta and stats rows apart under the same key', () => {
    const c = new RowCache();
    c.wrote(c.metas, 'k');
    c.nextVersion();
    c.committed(c.stats, 'k', { totalWebhooksDelivered: 7 } as never, c.nextVersion());
    expect(c.known(c.stats, 'k')).toEqual({ totalWebhooksDelivered: 7 });
    expect(c.known(c.metas, 'k')).toBeUndefined();
  });
});
