import { encodeAbiParameters, encodeEventTopics, parseAbi } from 'viem';
import { describe, expect, it } from 'vitest';
import type { Pricing } from '../../../../../../engine/chains/pricing.js';
import {
  V3_SWAP,
  v3Swap,
  V4_INITIALIZE,
  V4_MODIFY_LIQUIDITY,
  V4_SWAP,
  v4Initialize,
  v4ModifyLiquidity,
  v4Swap,
} from '../../../../../../engine/data-api/dex/index/events.js';
import { currencyToken, v4Move, v4PoolCreated, v4StateRow, virtualReserves } from '../../../../../../engine/data-api/dex/index/v4.js';
import type { V4StateRow } from '../../../../../../engine/data-api/dex/index/keys.js';

/** Uniswap v4-core IPoolManager's events as declared (PoolId = bytes32, Currency and IHooks = address), encoded by viem. */
const V4 = parseAbi([
  'event Initialize(bytes32 indexed id, address indexed currency0, address indexed currency1, uint24 fee, int24 tickSpacing, address hooks, uint160 sqrtPriceX96, int24 tick)',
  'event Swap(bytes32 indexed id, address indexed sender, int128 amount0, int128 amount1, uint160 sqrtPriceX96, uint128 liquidity, int24 tick, uint24 fee)',
  'event ModifyLiquidity(bytes32 indexed id, address indexed sender, int24 tickLower, int24 tickUpper, int256 liquidityDelta, bytes32 salt)',
]);
const topics = (t: ReturnType<typeof encodeEventTopics>): string[] => t as string[];

const ID = `0x${'ab'.repeat(32)}`;
const SALT = `0x${'01'.repeat(32)}`;
const ZERO = '0x0000000000000000000000000000000000000000';
const USDC = '0x00000000000000000000000000000000000000aa';
const TKN = '0x00000000000000000000000000000000000000bb';
const HOOKS = '0x00000000000000000000000000000000000000cc';
const SENDER = '0x00000000000000000000000000000000000000dd';
const MANAGER = { address: '0x00000000000000000000000000000000000000ee', kind: 'v4', name: 'Uniswap v4' } as const;
const WETH = '0x00000000000000000000000000000000000000ff';
const PRICING: Pricing = { wrappedNative: WETH, stablecoins: [USDC], whitelist: [], factories: [MANAGER] };
const Q96 = 1n << 96n;

const initialize = (currency0: string, currency1: string, sqrtPriceX96: bigint, tick: number) => ({
  topics: topics(
    encodeEventTopics({
      abi: V4,
      eventName: 'Initialize',
      args: { id: ID as `0x${string}`, currency0: currency0 as `0x${string}`, currency1: currency1 as `0x${string}` },
    }),
  ),
  data: encodeAbiParameters(
    [{ type: 'uint24' }, { type: 'int24' }, { type: 'address' }, { type: 'uint160' }, { type: 'int24' }],
    [3000, 60, HOOKS, sqrtPriceX96, tick],
  ),
});
const swap = (amount0: bigint, amount1: bigint, sqrtPriceX96: bigint, liquidity: bigint, tick: number) => ({
  topics: topics(encodeEventTopics({ abi: V4, eventName: 'Swap', args: { id: ID as `0x${string}`, sender: SENDER } })),
  data: encodeAbiParameters(
    [{ type: 'int128' }, { type: 'int128' }, { type: 'uint160' }, { type: 'uint128' }, { type: 'int24' }, { type: 'uint24' }],
    [amount0, amount1, sqrtPriceX96, liquidity, tick, 500],
  ),
});
const modify = (tickLower: number, tickUpper: number, liquidityDelta: bigint) => ({
  topics: topics(encodeEventTopics({ abi: V4, eventName: 'ModifyLiquidity', args: { id: ID as `0x${string}`, sender: SENDER } })),
  data: encodeAbiParameters(
    [{ type: 'int24' }, { type: 'int24' }, { type: 'int256' }, { type: 'bytes32' }],
    [tickLower, tickUpper, liquidityDelta, SALT as `0x${string}`],
  ),
});

describe('Uniswap V4 event decoders', () => {
  it('know the topic0 of each event from its canonical signature', () => {
    expect(encodeEventTopics({ abi: V4, eventName: 'Initialize' })[0]).toBe(V4_INITIALIZE);
    expect(encodeEventTopics({ abi: V4, eventName: 'Swap' })[0]).toBe(V4_SWAP);
    expect(encodeEventTopics({ abi: V4, eventName: 'ModifyLiquidity' })[0]).toBe(V4_MODIFY_LIQUIDITY);
    // The reference's constants (data-api-notes.md §3.1).
    expect(V4_SWAP).toBe('0x40e9cecb9f5f1f1c5b9c97dec2917b7ee92e57ba5563708daca94dd84ad7112f');
    expect(V4_INITIALIZE).toBe('0xdd466e674ea557f56295e2d0218a125ea4b4f0f6f3307b95f85e6110838d6438');
  });

  it('read an Initialize: the PoolId, the currencies, the key and the first price', () => {
    expect(v4Initialize(initialize(ZERO, USDC, 5n * Q96, -887_000))).toEqual({
      id: ID,
      currency0: ZERO,
      currency1: USDC,
      fee: 3000,
      tickSpacing: 60,
      hooks: HOOKS,
      sqrtPriceX96: 5n * Q96,
      liquidity: null,
      tick: -887_000,
    });
  });

  it("read a Swap as the pool's side: the event's amounts are the swapper's, negated", () => {
    // v4-core's own test: a zeroForOne exact input of 100 logs amount0 −100 (paid in) and amount1 +98 (taken out).
    expect(v4Swap(swap(-100n, 98n, Q96, 10n ** 18n, -1))).toEqual({
      id: ID,
      sender: SENDER,
      recipient: SENDER,
      amount0: 100n,
      amount1: -98n,
      sqrtPriceX96: Q96,
      liquidity: 10n ** 18n,
      tick: -1,
      fee: 500,
    });
  });

  it('read a ModifyLiquidity, a removal too', () => {
    expect(v4ModifyLiquidity(modify(-120, 60, -(10n ** 20n)))).toEqual({
      id: ID,
      sender: SENDER,
      tickLower: -120,
      tickUpper: 60,
      liquidityDelta: -(10n ** 20n),
      salt: SALT,
    });
  });

  it("refuse each other's logs and the V3 Swap (same name, other signature)", () => {
    const s = swap(-1n, 1n, Q96, 1n, 0);
    expect(v4Initialize(s)).toBeUndefined();
    expect(v4ModifyLiquidity(s)).toBeUndefined();
    expect(v4Swap(modify(0, 60, 1n))).toBeUndefined();
    expect(v3Swap(s)).toBeUndefined();
    expect(v4Swap({ ...s, topics: [V3_SWAP, ...s.topics.slice(1)] })).toBeUndefined();
    // A topic short: not the event.
    expect(v4Swap({ ...s, topics: s.topics.slice(0, 2) })).toBeUndefined();
  });
});

describe('a real mainnet V4 Swap', () => {
  // Ethereum block 21925176, tx 0x81728f20…8e9f (the shared fixtures' helios/rpc/receipts.json, a16z/helios test
  // data, MIT): the Uniswap v4 PoolManager's Swap in the ETH/USDC 0.05% pool (currency0 the native coin), then the
  // router's USDC transfer into the PoolManager that settles it.
  const SWAP = {
    topics: [
      '0x40e9cecb9f5f1f1c5b9c97dec2917b7ee92e57ba5563708daca94dd84ad7112f',
      '0x21c67e77068de97969ba93d4aab21826d33ca12bb9f565d8496e8fda8a82ca27',
      '0x00000000000000000000000066a9893cc07d91d95644aedd05d03f95e1dba8af',
    ],
    data: '0x0000000000000000000000000000000000000000000000000eb489f5782b5e1affffffffffffffffffffffffffffffffffffffffffffffffffffffff68026c800000000000000000000000000000000000000000000336f9debe1d858ae6667d00000000000000000000000000000000000000000000000001e040ebef07baaafffffffffffffffffffffffffffffffffffffffffffffffffffffffffffcf8c100000000000000000000000000000000000000000000000000000000000001f4',
  };
  /** The USDC Transfer's value (log 0x67: router → PoolManager). */
  const USDC_IN = 0x97fd9380n;

  it("is read as the pool's side: the USDC sent into the PoolManager is a positive amount1, the ether paid out negative", () => {
    const swap = v4Swap(SWAP)!;
    expect(swap.amount1).toBe(USDC_IN);
    expect(swap.amount0).toBe(-1_059_623_499_715_010_074n);
    expect(swap).toMatchObject({
      id: SWAP.topics[1],
      sender: '0x66a9893cc07d91d95644aedd05d03f95e1dba8af',
      sqrtPriceX96: 3_886_394_538_491_783_437_248_125n,
      liquidity: 135_179_370_892_868_266n,
      tick: -198_463,
      fee: 500,
    });
    // Its price: ether at $2,406.21 (sqrtPriceX96² × 10^18 / (2^192 × 10^6) USDC per ether).
    const usdCents = (swap.sqrtPriceX96 ** 2n * 10n ** 18n * 100n) / ((1n << 192n) * 10n ** 6n);
    expect(usdCents).toBe(240_621n);
  });
});

describe('V4 pools in the DEX index', () => {
  it("price the native coin as the wrapped native token, in the key's order", () => {
    expect(currencyToken(PRICING, ZERO)).toBe(WETH);
    expect(currencyToken(PRICING, USDC)).toBe(USDC);
    expect(v4PoolCreated(PRICING, MANAGER, initialize(ZERO, USDC, Q96, 0))).toEqual([ID, ['v4', WETH, USDC, MANAGER.address, 3000]]);
    expect(v4PoolCreated(PRICING, MANAGER, initialize(USDC, TKN, Q96, 0))).toEqual([ID, ['v4', USDC, TKN, MANAGER.address, 3000]]);
    // The native coin against its own wrapped token prices nothing.
    expect(v4PoolCreated(PRICING, MANAGER, initialize(ZERO, WETH, Q96, 0))).toBeUndefined();
    expect(v4PoolCreated(PRICING, MANAGER, swap(1n, 1n, Q96, 1n, 0))).toBeUndefined();
  });

  it('take the virtual reserves of the active liquidity: L·2^96/√P and L·√P/2^96', () => {
    // √P = 2 (price 4 token1 per token0): L 1000 is 500 token0 and 2000 token1, whose ratio is the price.
    expect(virtualReserves(1000n, 2n * Q96)).toEqual([500n, 2000n]);
    expect(virtualReserves(0n, 2n * Q96)).toEqual([0n, 0n]);
    expect(v4StateRow(2n * Q96, 1000n, 13_863)).toEqual([`0x${(2n * Q96).toString(16)}`, '0x3e8', 13_863, '0x1f4', '0x7d0']);
  });

  it("move a pool's state: Initialize at no liquidity, ModifyLiquidity in range only, a Swap's own numbers", () => {
    const rows = new Map<string, V4StateRow>();
    const step = (log: { topics: string[]; data: string }) => {
      const m = v4Move(log, (pool) => rows.get(pool))!;
      if (m.state !== undefined) rows.set(m.pool, m.state);
      return m;
    };
    expect(step(initialize(USDC, TKN, 2n * Q96, 13_863))).toEqual({ pool: ID, state: v4StateRow(2n * Q96, 0n, 13_863) });
    // [13800, 13920) holds tick 13863: active liquidity grows.
    expect(step(modify(13_800, 13_920, 1000n)).state).toEqual(v4StateRow(2n * Q96, 1000n, 13_863));
    // Below and above the tick, and the upper bound itself: no state row.
    expect(step(modify(0, 13_863, 5n))).toEqual({ pool: ID });
    expect(step(modify(13_864, 20_000, 5n))).toEqual({ pool: ID });
    expect(step(modify(13_863, 13_864, 7n)).state).toEqual(v4StateRow(2n * Q96, 1007n, 13_863));
    // A swap says its liquidity and price; a removal then takes from that.
    const s = step(swap(-10n, 30n, 3n * Q96, 900n, 21_972));
    expect(s.state).toEqual(v4StateRow(3n * Q96, 900n, 21_972));
    expect(s.swap).toMatchObject({ amount0: 10n, amount1: -30n });
    expect(step(modify(20_000, 30_000, -400n)).state).toEqual(v4StateRow(3n * Q96, 500n, 21_972));
    // A pool with no state yet (initialized before the indexes began): nothing known to move.
    rows.clear();
    expect(step(modify(20_000, 30_000, 1n))).toEqual({ pool: ID });
  });
});
