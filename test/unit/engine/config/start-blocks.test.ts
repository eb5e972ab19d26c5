import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../../engine/config/config.js';

/** CHAINPOST_START_BLOCKS: a block number per followed EVM chain, chain as hex, decimal or slug, and a height for Bitcoin. */
describe('CHAINPOST_START_BLOCKS', () => {
  const chains = '0x1=http://127.0.0.1:8545,base=http://127.0.0.1:8546,0x539=http://127.0.0.1:8547';

  it('is empty by default (each chain starts at the node head of its first start)', () => {
    expect(parseConfig({}).startBlocks.size).toBe(0);
    expect(parseConfig({ CHAINPOST_CHAINS: chains }).startBlocks.size).toBe(0);
  });

  it('takes chains as hex, decimal or slug and blocks as decimal or 0x hex, keyed by chain key', () => {
    const c = parseConfig({ CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: '0x1=19000000, base=0x1c9c380,1337=0' });
    expect([...c.startBlocks]).toEqual([
      ['0x1', 19_000_000],
      ['0x2105', 30_000_000],
      ['0x539', 0],
    ]);
  });

  it('takes the embedded devnet 0x539 when CHAINPOST_CHAINS is unset', () => {
    expect([...parseConfig({ CHAINPOST_START_BLOCKS: 'devnet=12' }).startBlocks]).toEqual([['0x539', 12]]);
  });

  it('takes a Bitcoin height (bitcoin or an alias) when CHAINPOST_BITCOIN_RPC is set, beside the EVM chains', () => {
    const rpc = 'http://user:pass@127.0.0.1:8332';
    expect([...parseConfig({ CHAINPOST_BITCOIN_RPC: rpc, CHAINPOST_START_BLOCKS: 'bitcoin=880000' }).startBlocks]).toEqual([
      ['bitcoin', 880_000],
    ]);
    expect([
      ...parseConfig({ CHAINPOST_CHAINS: chains, CHAINPOST_BITCOIN_RPC: rpc, CHAINPOST_START_BLOCKS: '0x1=19000000,btc=0' }).startBlocks,
    ]).toEqual([
      ['0x1', 19_000_000],
      ['bitcoin', 0],
    ]);
  });

  const bad: Array<[Record<string, string>, string]> = [
    [{ CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: '0x1' }, 'expected chain=value, got "0x1"'],
    [{ CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: '0x1=' }, 'expected a block number (decimal or 0x hex), got ""'],
    [{ CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: '0x1=-5' }, 'expected a block number (decimal or 0x hex), got "-5"'],
    [{ CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: '0x1=1e6' }, 'expected a block number (decimal or 0x hex), got "1e6"'],
    [{ CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: '0x1=0xzz' }, 'expected a block number (decimal or 0x hex), got "0xzz"'],
    [
      { CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: '0x1=99999999999999999999' },
      'expected a block number (decimal or 0x hex), got "99999999999999999999"',
    ],
    [{ CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: '0x999999=1' }, 'not an EVM chain or bitcoin: "0x999999"'],
    [{ CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: 'bitcoin=1' }, 'chain bitcoin is not followed (CHAINPOST_BITCOIN_RPC is unset)'],
    [{ CHAINPOST_SOLANA_RPC: 'http://127.0.0.1:8899', CHAINPOST_START_BLOCKS: 'solana=1' }, 'not an EVM chain or bitcoin: "solana"'],
    [
      { CHAINPOST_BITCOIN_RPC: 'http://127.0.0.1:8332', CHAINPOST_START_BLOCKS: 'bitcoin=-1' },
      'expected a block number (decimal or 0x hex), got "-1"',
    ],
    [{ CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: '0x1=1,1=2' }, 'chain 0x1 is listed twice'],
    [
      { CHAINPOST_CHAINS: chains, CHAINPOST_START_BLOCKS: 'polygon=1' },
      'chain 0x89 is not followed (not in CHAINPOST_CHAINS, or the devnet 0x539 when that is unset)',
    ],
    [{ CHAINPOST_START_BLOCKS: '0x1=1' }, 'chain 0x1 is not followed'],
    [{ CHAINPOST_CHAINS: 'none', CHAINPOST_START_BLOCKS: '0x539=1' }, 'chain 0x539 is not followed'],
  ];
  it.each(bad)('refuses %j naming the variable', (env, problem) => {
    let err: unknown;
    try {
      parseConfig(env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variable).toBe('CHAINPOST_START_BLOCKS');
    expect((err as ConfigError).message).toContain(`CHAINPOST_START_BLOCKS: ${problem}`);
  });
});
