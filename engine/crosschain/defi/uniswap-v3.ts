import { parseAbi } from 'viem/utils';
import type { Factory } from '../../chains/pricing.js';
import type { Holding } from '../../data-api/nft/index/writer.js';
import { inBatches } from '../../data-api/common/node-reads.js';
import { badRequest } from '../../errors.js';
import type { Kv } from '../../ports.js';
import { readView, type AdapterContext, type DefiAdapter, type RawPosition } from './adapter.js';
import { amountsForLiquidity, sqrtRatioAtTick } from './v3-math.js';

/**
 * Uniswap V3 positions: each NFT of the protocol's NonfungiblePositionManager the wallet holds (the NFT
 * ownership index) is a position: positions(tokenId) gives its tokens, fee, ticks, liquidity and tokensOwed;
 * its pool (the factory's getPool) gives the price (slot0). Its amounts are what its liquidity is worth at that
 * price between its ticks (./v3-math.ts); tokensOwed (fees and withdrawn liquidity credited to it, not yet
 * collected) is its unclaimed part. Fees earned since the position was last touched are not counted.
 */

const ABI = parseAbi([
  'function positions(uint256 tokenId) view returns (uint96 nonce, address operator, address token0, address token1, uint24 fee, int24 tickLower, int24 tickUpper, uint128 liquidity, uint256 feeGrowthInside0LastX128, uint256 feeGrowthInside1LastX128, uint128 tokensOwed0, uint128 tokensOwed1)',
  'function getPool(address, address, uint24) view returns (address)',
  'function slot0() view returns (uint160 sqrtPriceX96, int24 tick, uint16 observationIndex, uint16 observationCardinality, uint16 observationCardinalityNext, uint8 feeProtocol, bool unlocked)',
]);

type Positions = readonly [bigint, string, string, string, number, number, number, bigint, bigint, bigint, bigint, bigint];
type Slot0 = readonly [bigint, number, number, number, number, number, boolean];

/** Positions read per wallet and manager at most: each costs three node calls. */
export const MAX_V3_POSITIONS = 1_000;

/** The NFTs of `manager` the wallet holds at the indexed head: their token ids (past `max`, a 400). */
export function heldIds(kv: Kv, chain: string, wallet: string, manager: string, max = MAX_V3_POSITIONS): bigint[] {
  const prefix = `owner/${chain}/${wallet}/${manager}/`;
  const held = kv.range<Holding>('nftOwners', { start: prefix, end: `${prefix}\uffff`, limit: max + 1 });
  if (held.length > max)
    throw badRequest(
      'walletAddress',
      `holds more than ${max} Uniswap v3 positions of ${manager} on chain ${chain}: more than this server reads for one answer`,
    );
  return held.map((e) => BigInt(`0x${e.key.slice(prefix.length)}`));
}

async function position(ctx: AdapterContext, factory: Factory, manager: string, tokenId: bigint): Promise<RawPosition | null> {
  const p = await readView<Positions>(ctx, ABI, manager, 'positions', [tokenId]);
  if (p === null) return null;
  const [, , token0, token1, fee, tickLower, tickUpper, liquidity, , , owed0, owed1] = p;
  const pool = (await readView<string>(ctx, ABI, factory.address, 'getPool', [token0, token1, fee]))?.toLowerCase();
  const slot0 = pool === undefined || /^0x0+$/.test(pool) ? null : await readView<Slot0>(ctx, ABI, pool, 'slot0');
  if (pool === undefined || slot0 === null || slot0[0] === 0n) return null;
  const [sqrtPriceX96, tick] = slot0;
  const [amount0, amount1] = amountsForLiquidity(sqrtPriceX96, tickLower, tickUpper, liquidity);
  const [t0, t1] = [token0.toLowerCase(), token1.toLowerCase()];
  return {
    label: 'liquidity',
    address: pool,
    tokens: [
      { tokenType: 'supplied', address: t0, amount: amount0 },
      { tokenType: 'supplied', address: t1, amount: amount1 },
      ...(owed0 > 0n ? [{ tokenType: 'reward' as const, address: t0, amount: owed0 }] : []),
      ...(owed1 > 0n ? [{ tokenType: 'reward' as const, address: t1, amount: owed1 }] : []),
    ],
    details: {
      poolAddress: pool,
      factory: factory.address,
      positionKey: tokenId.toString(),
      assetStandard: 'ERC721',
      // A fraction, as the hosted service's fee_tier (3000 → 0.003).
      feeTier: fee / 1_000_000,
      liquidity: liquidity.toString(),
      tickLower,
      tickUpper,
      currentTick: tick,
      sqrtPriceX96: sqrtPriceX96.toString(),
      // In range as the pool counts it: the position's liquidity is active from tickLower up to (not at) tickUpper.
      isInRange: tick >= tickLower && tick < tickUpper,
      tokensOwed0: owed0.toString(),
      tokensOwed1: owed1.toString(),
      sqrtPriceLowerX96: sqrtRatioAtTick(tickLower).toString(),
      sqrtPriceUpperX96: sqrtRatioAtTick(tickUpper).toString(),
    },
  };
}

export const uniswapV3: DefiAdapter = {
  protocol: { id: 'uniswap-v3', name: 'Uniswap v3', url: 'https://app.uniswap.org/positions', kind: 'v3' },
  async positions(ctx, wallet) {
    const jobs = ctx.factories.flatMap((f) =>
      f.positionManager === undefined
        ? []
        : heldIds(ctx.deps.kv, ctx.chain, wallet, f.positionManager).map((id) => () => position(ctx, f, f.positionManager!, id)),
    );
    return (await inBatches(jobs)).filter((p): p is RawPosition => p !== null);
  },
};
