import { describe, expect, it } from 'vitest';
import { chainFor } from '../../../../engine/chains/lifecycle.js';
import { CHAINS, findChain, findEvmChain } from '../../../../engine/chains/registry.js';
import { CHAIN_REMOVALS, ENDPOINT_REMOVALS, chainRemoval, effectiveAt, migrationTarget } from '../../../../engine/chains/removals.js';
import { AUTH_CHAIN_IDS } from '../../../../engine/auth/schemas.js';
import { ApiError } from '../../../../engine/errors.js';

// Every EVM id the interface names: the auth allow-list and the data/stream examples.
const AUTH_ALLOW_LIST = [
  1, 5, 10, 25, 56, 97, 100, 137, 250, 338, 420, 1284, 1285, 1337, 8453, 43113, 43114, 80001, 80002, 84531, 88888, 11155111,
];
const NAMED_HEX = [
  '0x1',
  '0x38',
  '0x89',
  '0x2105',
  '0xa',
  '0xa4b1',
  '0xa86a',
  '0x19',
  '0x64',
  '0xfa',
  '0x504',
  '0x505',
  '0x46f',
  '0xaa36a7',
  '0x13882',
  '0x14a34',
  '0x15b32',
  '0x27d8',
  '0xe705',
  '0x507',
  '0x106a',
  '0x539',
];

const ms = (iso: string) => Date.parse(iso);

describe('chain registry', () => {
  it('holds every chain the interface names, with all its attributes', () => {
    // The sign-in allow-list is the interface's, so each of its chains is checked here.
    expect([...AUTH_CHAIN_IDS]).toEqual(AUTH_ALLOW_LIST);
    for (const id of [...AUTH_ALLOW_LIST.map(String), ...NAMED_HEX]) {
      const c = findEvmChain(id);
      expect(c, id).toBeDefined();
      expect(c!.hexId).toBe(`0x${c!.decimalId!.toString(16)}`);
      expect(c!.confirmations).toBeGreaterThan(0);
      expect(c!.blockTimeMs).toBeGreaterThan(0);
      expect(c!.slug).not.toBe('');
    }
    expect(findChain('bitcoin')?.family).toBe('bitcoin');
    expect(findChain('solana')?.family).toBe('solana');
    expect(findChain('aptos')?.family).toBe('aptos');
    expect(findChain('aptos-testnet')?.family).toBe('aptos');
  });

  it('finds a chain by hex (any case, leading zeros), decimal and slug', () => {
    for (const v of ['0x1', '0X01', '1', 'eth', 'ETH', 1]) expect(findChain(v)?.key).toBe('0x1');
    expect(findChain('base')?.key).toBe('0x2105');
    expect(findChain('8453')?.key).toBe('0x2105');
    expect(findChain('moonbeam')?.key).toBe('0x504');
    expect(findChain('lisk')?.key).toBe('0x46f');
    expect(findChain('devnet')?.key).toBe('0x539');
    expect(findChain('0x999999')).toBeUndefined();
    expect(findChain('nope')).toBeUndefined();
    expect(findChain(1.5)).toBeUndefined();
  });

  it('keeps ids and slugs unique', () => {
    const slugs = CHAINS.map((c) => c.slug);
    expect(new Set(slugs).size).toBe(slugs.length);
    const keys = CHAINS.map((c) => c.key);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('uses the documented confirmation depths', () => {
    const depth = (s: string) => findChain(s)!.confirmations;
    expect([
      depth('eth'),
      depth('bsc'),
      depth('arbitrum'),
      depth('polygon'),
      depth('base'),
      depth('optimism'),
      depth('avalanche'),
      depth('gnosis'),
    ]).toEqual([12, 18, 18, 100, 100, 500, 100, 12]);
    expect([depth('bitcoin'), depth('solana'), depth('0x539')]).toEqual([2, 100, 12]);
  });
});

describe('removals', () => {
  it('takes effect at 00:00 UTC of each date, not a millisecond before', () => {
    const fantom = findChain('0xfa')!;
    expect(chainRemoval(fantom, 'data', ms('2026-05-28T23:59:59.999Z'))).toBeUndefined();
    expect(chainRemoval(fantom, 'data', ms('2026-05-29T00:00:00Z'))?.date).toBe('2026-05-29');
    expect(effectiveAt('2026-09-25')).toBe(ms('2026-09-25T00:00:00Z'));
  });

  it('applies each entry of the Versioning table to its surfaces only', () => {
    const at = (iso: string) => ms(iso);
    const moonbeam = findChain('moonbeam')!;
    // Stops producing blocks on 2026-08-01, but stays queryable until 2026-09-25.
    expect(chainRemoval(moonbeam, 'blocks', at('2026-08-01T00:00:00Z'))).toBeDefined();
    expect(chainRemoval(moonbeam, 'data', at('2026-09-24T23:59:59Z'))).toBeUndefined();
    expect(migrationTarget(moonbeam, chainRemoval(moonbeam, 'data', at('2026-09-25T00:00:00Z'))!)).toBe('0x2105');
    expect(migrationTarget(findChain('lisk')!, chainRemoval(findChain('lisk')!, 'data', at('2026-09-25T00:00:00Z'))!)).toBeUndefined();
    expect(chainRemoval(findChain('lisk')!, 'rpc', at('2026-09-25T00:00:00Z'))).toBeDefined();
    expect(chainRemoval(findChain('lisk')!, 'blocks', at('2026-09-24T00:00:00Z'))).toBeUndefined();
    for (const id of ['0x15b32', '0x27d8', '0xe705', '0x507', '0x106a']) {
      expect(chainRemoval(findChain(id)!, 'streams', at('2026-06-14T23:59:59Z'))).toBeUndefined();
      expect(chainRemoval(findChain(id)!, 'streams', at('2026-06-15T00:00:00Z'))).toBeDefined();
    }
    expect(chainRemoval(findChain('eth')!, 'data', at('2027-01-01T00:00:00Z'))).toBeUndefined();
    expect(CHAIN_REMOVALS.map((r) => r.date)).toEqual(['2026-05-29', '2026-06-01', '2026-06-15', '2026-08-01', '2026-09-25']);
  });

  it('lists the June endpoint removals as 410 with replacements and the July ones as 404', () => {
    const june = ENDPOINT_REMOVALS.filter((r) => r.date === '2026-06-04');
    const july = ENDPOINT_REMOVALS.filter((r) => r.date === '2026-07-31');
    expect(june.every((r) => r.status === 410)).toBe(true);
    expect(july.every((r) => r.status === 404)).toBe(true);
    expect(july).toHaveLength(8);
    expect(june.find((r) => r.path === '/erc20/:token_address/pairs/stats')?.replacement).toBe('GET /tokens/{tokenAddress}/analytics');
    expect(june.find((r) => r.path === '/erc20/metadata/symbols')?.replacement).toBe('GET /tokens/search');
  });

  it('chainFor answers 400 naming the field for data and 404 for node access', () => {
    const after = ms('2026-10-01T00:00:00Z');
    const err = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e as ApiError;
      }
      throw new Error('did not throw');
    };
    const d = err(() => chainFor('moonriver', 'data', after));
    expect(d.status).toBe(400);
    expect(d.message).toMatch(/^chain: chain 0x505 \(moonriver\) was removed on 2026-09-25; migrate to base \(0x2105\)/);
    const r = err(() => chainFor('0x505', 'rpc', after));
    expect(r.status).toBe(404);
    expect(err(() => chainFor('bitcoin', 'data', after)).status).toBe(400);
    expect(chainFor('bitcoin', 'crosschain', after, { families: ['evm', 'bitcoin'] }).key).toBe('bitcoin');
    expect(chainFor('0x38', 'data', after).slug).toBe('bsc');
  });
});
