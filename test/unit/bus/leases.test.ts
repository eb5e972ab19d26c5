import { describe, expect, it } from 'vitest';
import { CHAIN_LEASES, chainOfKey, leaseKey, PARTITION_LEASES } from '../../../bus/leases.js';
import { leaseTimings } from '../../../engine/ingest/leases.js';

describe('the leases of the chains', () => {
  it('names each chain by a KV key of letters, digits, - and _ only, which reads back to the chain', () => {
    const chains = ['0x1', 'bitcoin', 'aptos:testnet', 'bsc testnet', 'a.b/c=d', 'é'];
    const keys = chains.map(leaseKey);
    expect(keys.slice(0, 4)).toEqual(['0x1', 'bitcoin', 'aptos=3atestnet', 'bsc=20testnet']);
    for (const key of keys) expect(key).toMatch(/^[-_=A-Za-z0-9]+$/);
    expect(new Set(keys).size).toBe(chains.length);
    expect(keys.map(chainOfKey)).toEqual(chains);
  });

  it('renews three times a TTL, polls four times, counts a lease unrenewed before its TTL ends, and bounds a request by a poll (100 ms at least)', () => {
    expect(leaseTimings(12_000)).toEqual({ renewEveryMs: 4_000, pollEveryMs: 3_000, lostAfterMs: 10_000, requestTimeoutMs: 3_000 });
    expect(leaseTimings(200).requestTimeoutMs).toBe(100);
  });

  it('names a delivery partition `partition.<n>`, two tokens, which no chain’s one-token key matches', () => {
    expect(PARTITION_LEASES.key(7)).toBe('partition.7');
    expect(PARTITION_LEASES.nameOf('partition.63')).toBe(63);
    // A chain named like a partition key still makes one token: the chains' pattern `*` never lists a partition.
    expect(CHAIN_LEASES.key('partition.7')).toBe('partition=2e7');
    expect(CHAIN_LEASES.keys).toBe('*');
    expect(PARTITION_LEASES.keys).toBe('partition.*');
  });
});
