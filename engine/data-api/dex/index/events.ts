import { topicAddress, word } from '../../../evm/store.js';

/**
 * The DEX events prices are derived from (data-api-notes.md §3.1), decoded from a log's topics and data. Pure:
 * each decoder answers undefined for a log that is not its event (wrong topic0, topics or data length).
 */

export const PAIR_CREATED = '0x0d3648bd0f6ba80134a33ba9275ac585d9d315f0ad8355cddefde31afa28d0e9';
export const POOL_CREATED = '0x783cca1c0412dd0d695e784568c96da2e9c22ff989357a2e8b1d9b2b4e6b7118';
export const V2_SYNC = '0x1c411e9a96e071241c2f21f7726b17ae89e3cab4c78be50e062b03a9fffbbad1';
export const V2_SWAP = '0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822';
export const V3_SWAP = '0xc42079f94a6350d7e6235f29174924f928cc2ac818eb64fed8004e115fbcca67';
export const V3_INITIALIZE = '0x98636036cb66a9c19a37435efc1e90142190214e8abeb821bdba3f2990dd4c95';

interface Log {
  topics: readonly string[];
  data: string;
}

const words = (data: string): number => (data.length - 2) / 64;
const uint = (data: string, i: number): bigint => BigInt(word(data, i));
/** A two's complement int256 word. */
const int = (data: string, i: number): bigint => BigInt.asIntN(256, uint(data, i));

/** A pool as its factory announced it (Uniswap V2 PairCreated, V3 PoolCreated); tokens sorted, as the factories sort them. */
export interface PoolCreated {
  pool: string;
  token0: string;
  token1: string;
  /** V3: the fee tier in hundredths of a basis point; V2: null. */
  fee: number | null;
}

export function pairCreated(l: Log): PoolCreated | undefined {
  if (l.topics[0] !== PAIR_CREATED || l.topics.length !== 3 || words(l.data) < 2) return undefined;
  return { pool: topicAddress(word(l.data, 0)), token0: topicAddress(l.topics[1]), token1: topicAddress(l.topics[2]), fee: null };
}

export function poolCreated(l: Log): PoolCreated | undefined {
  if (l.topics[0] !== POOL_CREATED || l.topics.length !== 4 || words(l.data) < 2) return undefined;
  return {
    pool: topicAddress(word(l.data, 1)),
    token0: topicAddress(l.topics[1]),
    token1: topicAddress(l.topics[2]),
    fee: Number(BigInt(l.topics[3]!)),
  };
}

/** A V2 pair's reserves after a Sync (every swap, mint and burn emits one before its own event). */
export function v2Sync(l: Log): { reserve0: bigint; reserve1: bigint } | undefined {
  if (l.topics[0] !== V2_SYNC || l.topics.length !== 1 || words(l.data) !== 2) return undefined;
  return { reserve0: uint(l.data, 0), reserve1: uint(l.data, 1) };
}

/** A swap as the pool's balance changes (positive: into the pool), whichever version logged it. */
export interface SwapDelta {
  sender: string;
  recipient: string;
  amount0: bigint;
  amount1: bigint;
}

export function v2Swap(l: Log): SwapDelta | undefined {
  if (l.topics[0] !== V2_SWAP || l.topics.length !== 3 || words(l.data) !== 4) return undefined;
  return {
    sender: topicAddress(l.topics[1]),
    recipient: topicAddress(l.topics[2]),
    amount0: uint(l.data, 0) - uint(l.data, 2),
    amount1: uint(l.data, 1) - uint(l.data, 3),
  };
}

/** A V3 pool's state after a swap or its initialization: the price as sqrt(token1/token0) in Q64.96, and its liquidity. */
export interface V3State {
  sqrtPriceX96: bigint;
  liquidity: bigint | null;
  tick: number;
}

export function v3Swap(l: Log): (SwapDelta & V3State) | undefined {
  if (l.topics[0] !== V3_SWAP || l.topics.length !== 3 || words(l.data) !== 5) return undefined;
  return {
    sender: topicAddress(l.topics[1]),
    recipient: topicAddress(l.topics[2]),
    amount0: int(l.data, 0),
    amount1: int(l.data, 1),
    sqrtPriceX96: uint(l.data, 2),
    liquidity: uint(l.data, 3),
    tick: Number(int(l.data, 4)),
  };
}

export function v3Initialize(l: Log): V3State | undefined {
  if (l.topics[0] !== V3_INITIALIZE || l.topics.length !== 1 || words(l.data) !== 2) return undefined;
  return { sqrtPriceX96: uint(l.data, 0), liquidity: null, tick: Number(int(l.data, 1)) };
}

/**
 * Uniswap V4: one PoolManager logs every pool's events, each naming its pool by topic1, the PoolId (keccak of the
 * PoolKey; v4-core IPoolManager). Topic0s: viem's keccak of the canonical signatures (PoolId = bytes32, Currency =
 * address, IHooks = address).
 */
export const V4_INITIALIZE = '0xdd466e674ea557f56295e2d0218a125ea4b4f0f6f3307b95f85e6110838d6438';
export const V4_SWAP = '0x40e9cecb9f5f1f1c5b9c97dec2917b7ee92e57ba5563708daca94dd84ad7112f';
export const V4_MODIFY_LIQUIDITY = '0xf208f4912782fd25c7f114ca3723a2d5dd6f3bcc3ac8db5af63baa85f711d5ec';

/** `Initialize(bytes32 indexed id, address indexed currency0, address indexed currency1, uint24 fee, int24 tickSpacing, address hooks, uint160 sqrtPriceX96, int24 tick)`: currency address(0) is the native coin. */
export interface V4Initialize extends V3State {
  id: string;
  currency0: string;
  currency1: string;
  /** The key's fee: hundredths of a basis point, or 0x800000 for a dynamic fee. */
  fee: number;
  tickSpacing: number;
  hooks: string;
}

export function v4Initialize(l: Log): V4Initialize | undefined {
  if (l.topics[0] !== V4_INITIALIZE || l.topics.length !== 4 || words(l.data) !== 5) return undefined;
  return {
    id: l.topics[1]!,
    currency0: topicAddress(l.topics[2]),
    currency1: topicAddress(l.topics[3]),
    fee: Number(uint(l.data, 0)),
    tickSpacing: Number(int(l.data, 1)),
    hooks: topicAddress(word(l.data, 2)),
    sqrtPriceX96: uint(l.data, 3),
    liquidity: null,
    tick: Number(int(l.data, 4)),
  };
}

/**
 * `Swap(bytes32 indexed id, address indexed sender, int128 amount0, int128 amount1, uint160 sqrtPriceX96, uint128
 * liquidity, int24 tick, uint24 fee)`. The event's amounts are the swapper's balance deltas (PoolManager._swap emits
 * Pool.swap's delta, which it then accounts to the caller: negative = paid in), so the pool's side is their negation,
 * read here as SwapDelta has it (positive: into the pool). There is no recipient: it is the sender.
 */
export interface V4Swap extends SwapDelta, V3State {
  id: string;
  liquidity: bigint;
  fee: number;
}

export function v4Swap(l: Log): V4Swap | undefined {
  if (l.topics[0] !== V4_SWAP || l.topics.length !== 3 || words(l.data) !== 6) return undefined;
  const sender = topicAddress(l.topics[2]);
  return {
    id: l.topics[1]!,
    sender,
    recipient: sender,
    amount0: -int(l.data, 0),
    amount1: -int(l.data, 1),
    sqrtPriceX96: uint(l.data, 2),
    liquidity: uint(l.data, 3),
    tick: Number(int(l.data, 4)),
    fee: Number(uint(l.data, 5)),
  };
}

/** `ModifyLiquidity(bytes32 indexed id, address indexed sender, int24 tickLower, int24 tickUpper, int256 liquidityDelta, bytes32 salt)`. */
export interface V4ModifyLiquidity {
  id: string;
  sender: string;
  tickLower: number;
  tickUpper: number;
  liquidityDelta: bigint;
  salt: string;
}

export function v4ModifyLiquidity(l: Log): V4ModifyLiquidity | undefined {
  if (l.topics[0] !== V4_MODIFY_LIQUIDITY || l.topics.length !== 3 || words(l.data) !== 4) return undefined;
  return {
    id: l.topics[1]!,
    sender: topicAddress(l.topics[2]),
    tickLower: Number(int(l.data, 0)),
    tickUpper: Number(int(l.data, 1)),
    liquidityDelta: int(l.data, 2),
    salt: word(l.data, 3),
  };
}
