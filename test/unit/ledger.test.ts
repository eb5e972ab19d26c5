import { describe, expect, it } from 'vitest';
import { auditLedger, type Arrival, type ChainBlock } from '../ledger.js';

/** The crash ledger's audit on hand-made ledgers: each kind of defect is reported, a clean ledger reports none. */
describe('auditLedger', () => {
  const W = '0xwatched';
  const watches = new Map([['s', new Set([W])]]);
  // Blocks 1..6; 1, 2 and 3 hold a transaction to the watched address; 2 confirmations.
  const chain: ChainBlock[] = [1, 2, 3, 4, 5, 6].map((n) => ({
    number: n,
    hash: `0xh${n}`,
    txs: n <= 3 ? [{ hash: `0xt${n}`, from: '0xa', to: W }] : [],
  }));
  const at = (n: number, confirmed: boolean, run = 1, hash = `0xh${n}`): Arrival => ({
    streamId: 's',
    number: n,
    hash,
    confirmed,
    txs: [`0xt${n}`],
    run,
  });
  const clean = [at(1, false), at(2, false), at(1, true), at(3, false), at(2, true), at(3, true)];
  const defects = (arrivals: Arrival[]) => {
    const r = auditLedger(arrivals, chain, watches, 2);
    return {
      missing: r.missing.length,
      confirmedOffChain: r.confirmedOffChain.length,
      wrongContent: r.wrongContent.length,
      badDuplicates: r.badDuplicates.length,
      orderBroken: r.orderBroken.length,
      duplicates: r.duplicates.length,
    };
  };
  const none = { missing: 0, confirmedOffChain: 0, wrongContent: 0, badDuplicates: 0, orderBroken: 0, duplicates: 0 };

  it('finds nothing wrong in a complete ledger in order, and counts what is required', () => {
    const r = auditLedger(clean, chain, watches, 2);
    expect(r.required).toEqual({ unconfirmed: 3, confirmed: 3 });
    expect(defects(clean)).toEqual(none);
  });

  it('reports a missing webhook', () => {
    expect(defects(clean.filter((_, i) => i !== 4))).toEqual({ ...none, missing: 1 });
  });

  it('allows an unconfirmed webhook of a block that left the chain, never a confirmed one', () => {
    const orphan = at(3, false, 1, '0xold3');
    expect(defects([...clean.slice(0, 3), orphan, ...clean.slice(3)])).toEqual(none);
    expect(auditLedger([...clean.slice(0, 3), orphan, ...clean.slice(3)], chain, watches, 2).orphanedUnconfirmed).toBe(1);
    expect(defects([...clean, at(3, true, 1, '0xold3')]).confirmedOffChain).toBe(1);
  });

  it('reports a webhook carrying other transactions, or for a block the stream does not match', () => {
    expect(defects(clean.map((a, i) => (i === 0 ? { ...a, txs: [] } : a))).wrongContent).toBe(1);
    expect(defects([...clean, at(5, false)]).wrongContent).toBe(1);
  });

  it('allows a repeat only at a kill seam: the last of one run again as the first of the next', () => {
    const seam = [at(1, false), at(2, false, 1), at(2, false, 2), at(1, true, 2), at(3, false, 2), at(2, true, 2), at(3, true, 2)];
    expect(defects(seam)).toEqual({ ...none, duplicates: 1 });
    // The same webhook twice within one run, or again after another of the stream's webhooks.
    expect(defects([...clean.slice(0, 2), at(2, false), ...clean.slice(2)]).badDuplicates).toBe(1);
    expect(
      defects([at(1, false), at(2, false), at(1, true, 2), at(2, false, 2), at(3, false, 2), at(2, true, 2), at(3, true, 2)]).badDuplicates,
    ).toBe(1);
  });

  it('allows, with a seam depth, the last few of a run again at the start of the next, in order, and no more', () => {
    // The run before ended with 2 unconfirmed, 1 confirmed: the next starts with both again, in order.
    const seam = [
      at(1, false),
      at(2, false),
      at(1, true),
      at(2, false, 2),
      at(1, true, 2),
      at(3, false, 2),
      at(2, true, 2),
      at(3, true, 2),
    ];
    const depth = (arrivals: Arrival[], seamDepth: number) => auditLedger(arrivals, chain, watches, 2, { seamDepth });
    expect(depth(seam, 2).duplicates.map((d) => d.depth)).toEqual([0, 1]);
    expect(depth(seam, 2).badDuplicates).toEqual([]);
    // One process: only the last one again.
    expect(depth(seam, 1).badDuplicates).toHaveLength(2);
    // Out of order, only the one that ended the run before is a seam's.
    const swapped = [
      at(1, false),
      at(2, false),
      at(1, true),
      at(1, true, 2),
      at(2, false, 2),
      at(3, false, 2),
      at(2, true, 2),
      at(3, true, 2),
    ];
    expect(depth(swapped, 2).duplicates).toHaveLength(1);
    expect(depth(swapped, 2).badDuplicates).toHaveLength(1);
  });

  it('reports broken order: confirmed or final unconfirmed webhooks going back, a confirmed one before its unconfirmed one', () => {
    expect(defects([at(2, false), at(1, false), at(1, true), at(3, false), at(2, true), at(3, true)]).orderBroken).toBe(1);
    expect(defects([at(1, false), at(2, false), at(3, false), at(2, true), at(1, true), at(3, true)]).orderBroken).toBe(1);
    expect(defects([at(1, true), at(1, false), at(2, false), at(3, false), at(2, true), at(3, true)]).orderBroken).toBe(1);
    // A reorg's new branch announced again from its fork is no break.
    expect(defects([at(1, false), at(2, false, 1, '0xold2'), at(2, false), at(1, true), at(3, false), at(2, true), at(3, true)])).toEqual(
      none,
    );
  });
});
