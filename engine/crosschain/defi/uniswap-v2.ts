import { parseAbi } from 'viem/utils';
import { held } from '../../data-api/erc20/balances.js';
import { poolKey, type PoolRow } from '../../data-api/dex/index/keys.js';
import { inBatches } from '../../data-api/common/node-reads.js';
import { readView, type AdapterContext, type DefiAdapter, type RawPosition } from './adapter.js';

/**
 * Uniswap V2 liquidity: each LP token the wallet holds (the ERC-20 balances index) that is a pair of a
 * registry factory of the protocol (the DEX index's pools) is a position worth its share of the pair's
 * reserves: balance / totalSupply of reserve0 and of reserve1, both read at the block (getReserves, totalSupply).
 */

const ABI = parseAbi(['function getReserves() view returns (uint112, uint112, uint32)', 'function totalSupply() view returns (uint256)']);

/** The wallet's share of a pair's reserve, rounded down as burn() pays it. */
export const shareOfReserve = (balance: bigint, reserve: bigint, supply: bigint): bigint =>
  supply === 0n ? 0n : (balance * reserve) / supply;

async function position(ctx: AdapterContext, pair: string, row: PoolRow, balance: bigint): Promise<RawPosition | null> {
  const [reserves, supply] = await Promise.all([
    readView<readonly [bigint, bigint, number]>(ctx, ABI, pair, 'getReserves'),
    readView<bigint>(ctx, ABI, pair, 'totalSupply'),
  ]);
  if (reserves === null || supply === null || supply === 0n) return null;
  const [reserve0, reserve1] = reserves;
  return {
    label: 'liquidity',
    address: pair,
    tokens: [
      { tokenType: 'lp', address: pair, amount: balance },
      { tokenType: 'supplied', address: row[1], amount: shareOfReserve(balance, reserve0, supply) },
      { tokenType: 'supplied', address: row[2], amount: shareOfReserve(balance, reserve1, supply) },
    ],
    details: {
      pair,
      factory: row[3],
      reserves: [reserve0.toString(), reserve1.toString()],
      reserve0: reserve0.toString(),
      reserve1: reserve1.toString(),
      shares: balance.toString(),
      totalSupply: supply.toString(),
      // Percent, as the hosted service's share_of_pool.
      shareOfPool: Number((balance * 10n ** 12n) / supply) / 1e10,
    },
  };
}

export const uniswapV2: DefiAdapter = {
  protocol: { id: 'uniswap-v2', name: 'Uniswap v2', url: 'https://app.uniswap.org/pools/v2', kind: 'v2' },
  async positions(ctx, wallet) {
    const factories = new Set(ctx.factories.map((f) => f.address));
    const pairs = (await held(ctx.deps, ctx.chain, wallet, ctx.block, undefined, [])).flatMap((h) => {
      const row = ctx.deps.kv.get<PoolRow>('dexPools', poolKey(ctx.chain, h.token));
      return row !== undefined && row[0] === 'v2' && factories.has(row[3]) ? [{ ...h, row }] : [];
    });
    const found = await inBatches(pairs.map((p) => () => position(ctx, p.token, p.row, p.balance)));
    return found.filter((p): p is RawPosition => p !== null);
  },
};
