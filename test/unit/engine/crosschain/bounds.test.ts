import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { heldIds, MAX_V3_POSITIONS } from '../../../../engine/crosschain/defi/uniswap-v3.js';
import { MAX_INSIGHT_TRANSACTIONS, withinInsightBound } from '../../../../engine/crosschain/wallet-insight.js';
import { openStore } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';
import { refusal } from './refusal.js';

/** The two /v1 bounds past which an answer is a 400: insight's transactions per chain, Uniswap v3 positions per manager. */

describe('wallet insight: transactions folded per chain', () => {
  it('takes up to the bound and refuses one more, naming walletAddress and saying the bound', () => {
    expect(() => withinInsightBound(3, '0x1', 3)).not.toThrow();
    expect(refusal(() => withinInsightBound(4, '0x1', 3))).toEqual({
      status: 400,
      details: { field: 'walletAddress' },
      message: expect.stringContaining('more than 3 transactions on chain 0x1'),
    });
    expect(MAX_INSIGHT_TRANSACTIONS).toBe(100_000);
    expect(() => withinInsightBound(MAX_INSIGHT_TRANSACTIONS, '0x1')).not.toThrow();
    expect(refusal(() => withinInsightBound(MAX_INSIGHT_TRANSACTIONS + 1, '0x1')).message).toContain('more than 100000 transactions');
  });
});

describe('Uniswap v3: positions read per wallet and manager', () => {
  const dir = tempDir();
  const store = openStore(dir);
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const wallet = `0x${'a'.repeat(40)}`;
  const manager = `0x${'b'.repeat(40)}`;
  const id = (n: number) => n.toString(16).padStart(64, '0');
  store.transact(() => {
    for (const n of [1, 2, 3]) store.put('nftOwners', `owner/0x1/${wallet}/${manager}/${id(n)}`, { amount: '0x1' });
    // Another manager's and another chain's NFTs are not counted.
    store.put('nftOwners', `owner/0x1/${wallet}/0x${'c'.repeat(40)}/${id(4)}`, { amount: '0x1' });
    store.put('nftOwners', `owner/0x2/${wallet}/${manager}/${id(5)}`, { amount: '0x1' });
  });

  it('reads the token ids up to the bound and refuses one more, naming walletAddress and saying the bound', () => {
    expect(heldIds(store, '0x1', wallet, manager, 3)).toEqual([1n, 2n, 3n]);
    expect(refusal(() => heldIds(store, '0x1', wallet, manager, 2))).toEqual({
      status: 400,
      details: { field: 'walletAddress' },
      message: expect.stringContaining(`holds more than 2 Uniswap v3 positions of ${manager} on chain 0x1`),
    });
    expect(MAX_V3_POSITIONS).toBe(1_000);
    expect(heldIds(store, '0x1', wallet, manager)).toEqual([1n, 2n, 3n]);
  });
});
