import { topicAddress, word } from '../evm/store.js';

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
  return { pool: topicAddress(word(l.data, 1)), token0: topicAddress(l.topics[1]), token1: topicAddress(l.topics[2]), fee: Number(BigInt(l.topics[3]!)) };
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
  return { sender: topicAddress(l.topics[1]), recipient: topicAddress(l.topics[2]), amount0: uint(l.data, 0) - uint(l.data, 2), amount1: uint(l.data, 1) - uint(l.data, 3) };
}

/** A V3 pool's state after a swap or its initialization: the price as sqrt(token1/token0) in Q64.96, and its liquidity. */
export interface V3State {
  sqrtPriceX96: bigint;
  liquidity: bigint | null;
  tick: number;
}

export function v3Swap(l: Log): (SwapDelta & V3State) | undefined {
  if (l.topics[0] !== V3_SWAP || l.topics.length !== 3 || words(l.data) !== 5) return undefined;
  return { sender: topicAddress(l.topics[1]), recipient: topicAddress(l.topics[2]), amount0: int(l.data, 0), amount1: int(l.data, 1), sqrtPriceX96: uint(l.data, 2), liquidity: uint(l.data, 3), tick: Number(int(l.data, 4)) };
}

export function v3Initialize(l: Log): V3State | undefined {
  if (l.topics[0] !== V3_INITIALIZE || l.topics.length !== 1 || words(l.data) !== 2) return undefined;
  return { sqrtPriceX96: uint(l.data, 0), liquidity: null, tick: Number(int(l.data, 1)) };
}
