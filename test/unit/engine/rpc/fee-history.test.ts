import { describe, expect, it } from 'vitest';
import { nextBaseFee } from '../../../../engine/rpc/fee-history.js';

/** EIP-1559's next base fee, in integers as nodes compute it (values seen from anvil 1.7.1). */
describe('nextBaseFee', () => {
  const GWEI = 1_000_000_000n;

  it('falls by up to 1/8 below the gas target', () => {
    expect(nextBaseFee(0, 30_000_000, GWEI)).toBe(875_000_000n);
    // anvil: a block with one 21,000-gas transfer at 1 gwei → 0x342a1c58.
    expect(nextBaseFee(21_000, 30_000_000, GWEI)).toBe(0x342a1c58n);
  });

  it('stays at the target and rises by at least 1 above it', () => {
    expect(nextBaseFee(15_000_000, 30_000_000, GWEI)).toBe(GWEI);
    expect(nextBaseFee(30_000_000, 30_000_000, GWEI)).toBe(1_125_000_000n);
    expect(nextBaseFee(15_000_001, 30_000_000, 7n)).toBe(8n);
  });

  it('keeps a zero base fee at zero (set so on purpose)', () => {
    expect(nextBaseFee(30_000_000, 30_000_000, 0n)).toBe(0n);
  });
});
