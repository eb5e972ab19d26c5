import { PAIR_CREATED, V2_SWAP, V2_SYNC } from '../engine/data-api/dex/index/events.js';
import { indexedBlock, type IndexedBlock } from '../engine/data-api/common/indexer.js';
import type { BlockRecord, StoredTx } from '../engine/evm/record.js';
import { addressOf, prng, syntheticHash, syntheticTime } from '../test/kit/data-chain.js';

/**
 * A synthetic DEX chain for bench:prices, in the records a node's answers become (engine/evm/record.ts): block 0
 * creates `pools` Uniswap V2 pairs with the bench's factory (PairCreated), each of a token against the wrapped native
 * token or the stablecoin, and the wrapped native token's own stable pairs; every later block holds
 * `swapsPerBlock` swaps, each a transaction with the pair's Sync (the reserves after it) then its Swap, as a V2
 * pair logs them. Token i is worth about $1 to $1,000; every pair holds at least $10,000 a side. Deterministic for a seed.
 */

export interface DexShape {
  blocks: number;
  swapsPerBlock: number;
  pools: number;
  /** Tokens besides the stablecoin and the wrapped native token. */
  tokens: number;
  seed: number;
}

export const FACTORY = addressOf('token', 0x7fff_fff0);
export const WETH = addressOf('token', 0x7fff_fff1);
export const USDC = addressOf('token', 0x7fff_fff2);
/** The wrapped native token's stable pairs: the first pools. */
export const STABLE_POOLS = 4;
const ETH_USD = 2000n;

export const tokenOf = (i: number): string => addressOf('token', i);
export const poolOf = (i: number): string => addressOf('token', 0x4000_0000 + i);
const topicOf = (address: string): string => `0x${'0'.repeat(24)}${address.slice(2)}`;
const word = (n: bigint): string => n.toString(16).padStart(64, '0');
const quantity = (n: number | bigint): string => `0x${n.toString(16)}`;

/** Pool i: [token0, token1] sorted, and its starting reserves (raw units: 18 decimals, USDC 6). */
export function poolTokens(shape: DexShape, i: number): { token0: string; token1: string; reserve0: bigint; reserve1: bigint } {
  const rand = prng(shape.seed * 7919 + i);
  let [a, b, ra, rb]: [string, string, bigint, bigint] = ['', '', 0n, 0n];
  if (i < STABLE_POOLS) {
    const eth = BigInt(100 + Math.floor(rand() * 10_000));
    [a, b, ra, rb] = [WETH, USDC, eth * 10n ** 18n, eth * ETH_USD * 10n ** 6n];
  } else {
    const token = tokenOf(i % shape.tokens);
    const usd = BigInt(1 + Math.floor(rand() * 1000));
    const units = BigInt(10_000 + Math.floor(rand() * 1_000_000));
    // Against the wrapped native token two times in three, else against the stablecoin.
    if (i % 3 !== 0) [a, b, ra, rb] = [token, WETH, units * 10n ** 18n, (units * usd * 10n ** 18n) / ETH_USD];
    else [a, b, ra, rb] = [token, USDC, units * 10n ** 18n, units * usd * 10n ** 6n];
  }
  return a < b ? { token0: a, token1: b, reserve0: ra, reserve1: rb } : { token0: b, token1: a, reserve0: rb, reserve1: ra };
}

const tx = (hash: string, from: string, to: string, logs: StoredTx['logs'], i: number): StoredTx => ({
  tx: { hash, from, to, value: '0x0', nonce: '0x0', gas: '0x30d40', gasPrice: '0x3b9aca00', input: '0x022c0d9f', type: '0x2' },
  receipt: {
    status: '0x1',
    gasUsed: '0x186a0',
    cumulativeGasUsed: quantity(100_000 * (i + 1)),
    effectiveGasPrice: '0x3b9aca00',
    contractAddress: null,
    type: '0x2',
  },
  logs,
});

/** Block `n`: the pairs' creation and first Sync (block 0), or its swaps. */
export function dexBlock(chain: string, shape: DexShape, n: number): IndexedBlock {
  const rand = prng(shape.seed * 1_000_003 + n);
  const txs: StoredTx[] = [];
  let logIndex = 0;
  const log = (address: string, topics: string[], data: string) => ({ address, topics, data, logIndex: quantity(logIndex++) });
  if (n === 0) {
    for (let i = 0; i < shape.pools; i++) {
      const p = poolTokens(shape, i);
      const pool = poolOf(i);
      txs.push(
        tx(
          `0x${word(BigInt(i + 1))}`,
          tokenOf(0),
          FACTORY,
          [
            log(FACTORY, [PAIR_CREATED, topicOf(p.token0), topicOf(p.token1)], `0x${word(BigInt(pool))}${word(BigInt(i + 1))}`),
            log(pool, [V2_SYNC], `0x${word(p.reserve0)}${word(p.reserve1)}`),
          ],
          i,
        ),
      );
    }
  } else {
    for (let i = 0; i < shape.swapsPerBlock; i++) {
      const k = Math.floor(rand() * shape.pools);
      const p = poolTokens(shape, k);
      const pool = poolOf(k);
      // A small trade: the reserves move by up to 0.1% (the bench measures reads, not market moves).
      const inBps = BigInt(1 + Math.floor(rand() * 10));
      const in0 = rand() < 0.5;
      const [r0, r1] = in0
        ? [p.reserve0 + (p.reserve0 * inBps) / 10_000n, p.reserve1 - (p.reserve1 * inBps) / 10_010n]
        : [p.reserve0 - (p.reserve0 * inBps) / 10_010n, p.reserve1 + (p.reserve1 * inBps) / 10_000n];
      const trader = addressOf('wallet', Math.floor(rand() * 100_000));
      const [a0In, a1In, a0Out, a1Out] = in0 ? [r0 - p.reserve0, 0n, 0n, p.reserve1 - r1] : [0n, r1 - p.reserve1, p.reserve0 - r0, 0n];
      txs.push(
        tx(
          `0x${word(BigInt(n) * 1_000_000n + BigInt(i))}`,
          trader,
          pool,
          [
            log(pool, [V2_SYNC], `0x${word(r0)}${word(r1)}`),
            log(pool, [V2_SWAP, topicOf(trader), topicOf(trader)], `0x${word(a0In)}${word(a1In)}${word(a0Out)}${word(a1Out)}`),
          ],
          i,
        ),
      );
    }
  }
  const hash = syntheticHash(n);
  const header = {
    number: quantity(n),
    hash,
    parentHash: n === 0 ? `0x${'0'.repeat(64)}` : syntheticHash(n - 1),
    timestamp: quantity(syntheticTime(n)),
    miner: addressOf('wallet', 0),
    gasUsed: quantity(100_000 * txs.length),
    gasLimit: '0x1c9c380',
    baseFeePerGas: '0x3b9aca00',
  };
  const record: BlockRecord = { header, txs, internal: [] };
  return indexedBlock(chain, n, hash, record);
}
