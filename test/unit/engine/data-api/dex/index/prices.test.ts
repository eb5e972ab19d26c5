import { encodeAbiParameters, encodeEventTopics, parseAbi } from 'viem';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../../../../../engine/config/config.js';
import { parsePricing, PRICING } from '../../../../../../engine/chains/pricing.js';
import {
  PAIR_CREATED,
  pairCreated,
  POOL_CREATED,
  poolCreated,
  V2_SWAP,
  V2_SYNC,
  v2Swap,
  v2Sync,
  V3_INITIALIZE,
  V3_SWAP,
  v3Initialize,
  v3Swap,
} from '../../../../../../engine/data-api/dex/index/events.js';
import { bucketOf } from '../../../../../../engine/data-api/dex/index/swap-candles.js';
import { decimal } from '../../../../../../engine/data-api/dex/index/prices.js';

/** The events as Uniswap declares them (data-api-notes.md §3.1), encoded by viem: the decoders must read what the contracts write. */
/** viem's topics as a log holds them (every topic given here, so none is null). */
const topics = (t: ReturnType<typeof encodeEventTopics>): string[] => t as string[];

const EVENTS = parseAbi([
  'event PairCreated(address indexed token0, address indexed token1, address pair, uint)',
  'event PoolCreated(address indexed token0, address indexed token1, uint24 indexed fee, int24 tickSpacing, address pool)',
  'event Sync(uint112 reserve0, uint112 reserve1)',
  'event Swap(address indexed sender, uint amount0In, uint amount1In, uint amount0Out, uint amount1Out, address indexed to)',
  'event Initialize(uint160 sqrtPriceX96, int24 tick)',
]);
const V3 = parseAbi([
  'event Swap(address indexed sender, address indexed recipient, int256 amount0, int256 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick)',
]);

const A = '0x00000000000000000000000000000000000000aa';
const B = '0x00000000000000000000000000000000000000bb';
const POOL = '0x00000000000000000000000000000000000000cc';

describe('DEX event decoders', () => {
  it('know the documented topic0 of each event', () => {
    expect(encodeEventTopics({ abi: EVENTS, eventName: 'PairCreated' })[0]).toBe(PAIR_CREATED);
    expect(encodeEventTopics({ abi: EVENTS, eventName: 'PoolCreated' })[0]).toBe(POOL_CREATED);
    expect(encodeEventTopics({ abi: EVENTS, eventName: 'Sync' })[0]).toBe(V2_SYNC);
    expect(encodeEventTopics({ abi: EVENTS, eventName: 'Swap' })[0]).toBe(V2_SWAP);
    expect(encodeEventTopics({ abi: EVENTS, eventName: 'Initialize' })[0]).toBe(V3_INITIALIZE);
    expect(encodeEventTopics({ abi: V3, eventName: 'Swap' })[0]).toBe(V3_SWAP);
  });

  it('read pools as their factories announce them', () => {
    const v2 = {
      topics: topics(encodeEventTopics({ abi: EVENTS, eventName: 'PairCreated', args: { token0: A, token1: B } })),
      data: encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [POOL, 7n]),
    };
    expect(pairCreated(v2)).toEqual({ pool: POOL, token0: A, token1: B, fee: null });
    const v3 = {
      topics: topics(encodeEventTopics({ abi: EVENTS, eventName: 'PoolCreated', args: { token0: A, token1: B, fee: 3000 } })),
      data: encodeAbiParameters([{ type: 'int24' }, { type: 'address' }], [60, POOL]),
    };
    expect(poolCreated(v3)).toEqual({ pool: POOL, token0: A, token1: B, fee: 3000 });
    // Each decoder refuses the other's log.
    expect(poolCreated(v2)).toBeUndefined();
    expect(pairCreated(v3)).toBeUndefined();
  });

  it("read a V2 Sync and Swap as reserves and the pool's balance changes", () => {
    const sync = {
      topics: topics(encodeEventTopics({ abi: EVENTS, eventName: 'Sync' })),
      data: encodeAbiParameters([{ type: 'uint112' }, { type: 'uint112' }], [2_000_000_000_000n, 10n ** 21n]),
    };
    expect(v2Sync(sync)).toEqual({ reserve0: 2_000_000_000_000n, reserve1: 10n ** 21n });
    const swap = {
      topics: topics(encodeEventTopics({ abi: EVENTS, eventName: 'Swap', args: { sender: A, to: B } })),
      data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }], [1000n, 0n, 0n, 3n]),
    };
    // 1000 of token0 in, 3 of token1 out.
    expect(v2Swap(swap)).toEqual({ sender: A, recipient: B, amount0: 1000n, amount1: -3n });
    expect(v2Sync(swap)).toBeUndefined();
  });

  it("read a V3 Swap's signed deltas and post-swap state, and Initialize", () => {
    const swap = {
      topics: topics(encodeEventTopics({ abi: V3, eventName: 'Swap', args: { sender: A, recipient: B } })),
      data: encodeAbiParameters(
        [{ type: 'int256' }, { type: 'int256' }, { type: 'uint160' }, { type: 'uint128' }, { type: 'int24' }],
        [-5n, 7n, 1984403731948787316926650586759168n, 10n ** 18n, -201_000],
      ),
    };
    expect(v3Swap(swap)).toEqual({
      sender: A,
      recipient: B,
      amount0: -5n,
      amount1: 7n,
      sqrtPriceX96: 1984403731948787316926650586759168n,
      liquidity: 10n ** 18n,
      tick: -201_000,
    });
    const init = {
      topics: topics(encodeEventTopics({ abi: EVENTS, eventName: 'Initialize' })),
      data: encodeAbiParameters([{ type: 'uint160' }, { type: 'int24' }], [2n ** 96n, 0]),
    };
    expect(v3Initialize(init)).toEqual({ sqrtPriceX96: 2n ** 96n, liquidity: null, tick: 0 });
    expect(v2Swap(swap)).toBeUndefined();
  });
});

describe('decimal', () => {
  it('writes a ratio truncated, without trailing zeros', () => {
    expect(decimal({ num: 2000n, den: 1n })).toBe('2000');
    expect(decimal({ num: 1n, den: 3n }, 6)).toBe('0.333333');
    expect(decimal({ num: 5n, den: 4n }, 2)).toBe('1.25');
    expect(decimal({ num: 1n, den: 10n ** 40n })).toBe('0');
  });

  it("gives the notes' worked V3 check: sqrtPriceX96 1984403731948787316926650586759168 on USDC(6)/WETH(18) is ETH ≈ 1594.04 USDC", () => {
    const sqrt = 1984403731948787316926650586759168n;
    // token0 (USDC) in token1 (WETH): sqrt² × 10^6 / (2^192 × 10^18); ETH in USDC is its inverse.
    expect(decimal({ num: sqrt * sqrt * 10n ** 6n, den: (1n << 192n) * 10n ** 18n }, 9)).toBe('0.000627337');
    // ≈ 1594.04 rounded, as the notes give it; decimal() truncates.
    expect(Number(decimal({ num: (1n << 192n) * 10n ** 18n, den: sqrt * sqrt * 10n ** 6n }, 6))).toBeCloseTo(1594.04, 2);
  });
});

describe('CHAINPOST_PRICING', () => {
  const devnet = {
    wrappedNative: A.toUpperCase().replace('0X', '0x'),
    stablecoins: [B],
    whitelist: [],
    factories: [{ address: POOL, kind: 'v2', name: 'MiniSwap' }],
  };

  it("adds a chain's entry (by id or slug), addresses lower case, and keeps the registry's", () => {
    const p = parsePricing(JSON.stringify({ devnet }));
    expect(p.get('0x539')).toEqual({
      wrappedNative: A,
      stablecoins: [B],
      whitelist: [],
      factories: [{ address: POOL, kind: 'v2', name: 'MiniSwap' }],
      wrappedBtc: [],
    });
    expect(p.get('0x1')).toBe(PRICING.get('0x1'));
    expect(parseConfig({ CHAINPOST_PRICING: JSON.stringify({ '0x539': devnet }) }).pricing.get('0x539')?.factories[0]?.name).toBe(
      'MiniSwap',
    );
  });

  it("replaces a chain's entry whole", () => {
    expect(parsePricing(JSON.stringify({ 1: { wrappedNative: A } })).get('0x1')).toEqual({
      wrappedNative: A,
      stablecoins: [],
      whitelist: [],
      factories: [],
      wrappedBtc: [],
    });
  });

  it('stops the start naming what is wrong', () => {
    const bad = (v: unknown): string => {
      try {
        parseConfig({ CHAINPOST_PRICING: typeof v === 'string' ? v : JSON.stringify(v) });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(bad('{')).toMatch(/^CHAINPOST_PRICING: not JSON/);
    expect(bad([])).toBe('CHAINPOST_PRICING: expected a JSON object keyed by chain, e.g. {"0x539":{"wrappedNative":"0x…"}}');
    expect(bad({ nochain: devnet })).toBe('CHAINPOST_PRICING: unknown EVM chain "nochain"');
    expect(bad({ devnet: { ...devnet, wrappedNative: '0x12' } })).toBe(
      'CHAINPOST_PRICING: devnet.wrappedNative: expected a 0x address of 40 hex digits',
    );
    expect(bad({ devnet: { ...devnet, factories: [{ address: POOL, kind: 'v5', name: 'X' }] } })).toMatch(
      /^CHAINPOST_PRICING: devnet\.factories\.0\.kind: /,
    );
    expect(bad({ devnet: { ...devnet, stablecoins: [A, 'usdc'] } })).toBe(
      'CHAINPOST_PRICING: devnet.stablecoins.1: expected a 0x address of 40 hex digits',
    );
    expect(bad({ devnet: { ...devnet, extra: 1 } })).toMatch(/^CHAINPOST_PRICING: devnet: .*extra/);
    expect(bad({ devnet, 1337: devnet })).toBe('CHAINPOST_PRICING: chain 0x539 is given twice');
    expect(bad({ devnet: { ...devnet, stablecoins: [B, A] } })).toBe(
      'CHAINPOST_PRICING: devnet.stablecoins: the wrapped native token is priced, not counted at $1',
    );
    expect(bad({ devnet: { ...devnet, factories: [devnet.factories[0], { ...devnet.factories[0], name: 'Again' }] } })).toBe(
      `CHAINPOST_PRICING: devnet.factories.1.address: ${POOL} is listed twice`,
    );
    expect(bad({ devnet: { ...devnet, factories: [{ ...devnet.factories[0], positionManager: B }] } })).toBe(
      'CHAINPOST_PRICING: devnet.factories.0.positionManager: only a v3 factory has a NonfungiblePositionManager',
    );
    expect(bad({ devnet: { ...devnet, factories: [{ ...devnet.factories[0], kind: 'v3', positionManager: 'npm' }] } })).toBe(
      'CHAINPOST_PRICING: devnet.factories.0.positionManager: expected a 0x address of 40 hex digits',
    );
    expect(
      parsePricing(
        JSON.stringify({
          devnet: {
            ...devnet,
            factories: [{ address: POOL, kind: 'v3', name: 'Uniswap v3', positionManager: B.toUpperCase().replace('0X', '0x') }],
          },
        }),
      ).get('0x539')?.factories[0]?.positionManager,
    ).toBe(B);
  });
});

describe('candle buckets', () => {
  const at = (iso: string): number => Date.parse(iso) / 1000;
  const bucket = (iso: string, tf: Parameters<typeof bucketOf>[1]): string => new Date(bucketOf(at(iso), tf) * 1000).toISOString();

  it('start weeks on Monday and months on their first day, UTC', () => {
    expect(bucket('2026-11-29T23:59:59Z', '1w')).toBe('2026-11-23T00:00:00.000Z'); // a Sunday: the Monday before
    expect(bucket('2026-11-30T00:00:00Z', '1w')).toBe('2026-11-30T00:00:00.000Z'); // a Monday: itself
    expect(bucket('1970-01-01T12:00:00Z', '1w')).toBe('1969-12-29T00:00:00.000Z'); // the epoch was a Thursday
    expect(bucket('2024-02-29T13:00:00Z', '1M')).toBe('2024-02-01T00:00:00.000Z');
    expect(bucket('2026-12-31T23:59:59Z', '1M')).toBe('2026-12-01T00:00:00.000Z');
  });

  it('cut the others at multiples of their length', () => {
    expect(bucket('2026-11-24T23:17:45Z', '1h')).toBe('2026-11-24T23:00:00.000Z');
    expect(bucket('2026-11-24T23:17:45Z', '4h')).toBe('2026-11-24T20:00:00.000Z');
    expect(bucket('2026-11-24T23:17:45Z', '5min')).toBe('2026-11-24T23:15:00.000Z');
    expect(bucket('2026-11-24T23:17:45Z', '1d')).toBe('2026-11-24T00:00:00.000Z');
    expect(bucket('2026-11-24T23:17:45Z', '10s')).toBe('2026-11-24T23:17:40.000Z');
  });
});
