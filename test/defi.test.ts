import { parseUnits, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { compileContracts, deploy, DEV_ACCOUNTS, publicClient, write, type Deployed } from './contracts.js';
import {
  addV2Liquidity,
  addV3Liquidity,
  createV2Pair,
  createV3Pool,
  deployDex,
  getSlot0,
  initializeV3Pool,
  priceCalls,
  sqrtPriceX96Of,
  v2SwapExactIn,
  v3SwapAtReserves,
  type Created,
  type Dex,
} from './dex.js';
import { startChainpost, stopAndClean, type Running } from './helpers.js';
import { serverEnv } from './streams-harness.js';

/**
 * DeFi positions (docs/api.md) on a real anvil with the Uniswap stand-ins: a V2 pair's LP tokens (test/dex.ts) and
 * V3 positions of TestPositionManager (test/contracts/TestPositionManager.sol: the NonfungiblePositionManager's
 * positions(uint256) and ERC-721 ownership, minted with the fields given) in a TestV3Pool (slot0). The expected
 * amounts and USD values are computed here from the contracts' state read at the indexed head: V2 by the share
 * of reserves in integers, V3 by the liquidity formulas with sqrt(1.0001^tick) written out in floating point.
 */

const lc = (a: string): string => a.toLowerCase();
const WALLET = lc(DEV_ACCOUNTS[1].address);
const OTHER = lc(DEV_ACCOUNTS[2].address);
/** Equal to `rel` relative error (the V3 figures are computed here in floating point). */
const near = (actual: number, expected: number, rel = 1e-9): void =>
  expect(Math.abs(actual - expected), `${actual} vs ${expected}`).toBeLessThanOrEqual(Math.abs(expected) * rel);

interface V3Fields {
  tickLower: number;
  tickUpper: number;
  liquidity: bigint;
  tokensOwed0: bigint;
  tokensOwed1: bigint;
}

/** A position's token0 and token1 by the Uniswap V3 formulas, with √price = √(1.0001^tick) (the prices' 2^96 scale taken out). */
function v3Amounts(sqrtPriceX96: bigint, p: V3Fields): [number, number] {
  const sp = Number(sqrtPriceX96) / 2 ** 96;
  const sa = Math.sqrt(1.0001 ** p.tickLower);
  const sb = Math.sqrt(1.0001 ** p.tickUpper);
  const L = Number(p.liquidity);
  if (sp <= sa) return [(L * (sb - sa)) / (sa * sb), 0];
  if (sp < sb) return [(L * (sb - sp)) / (sp * sb), L * (sp - sa)];
  return [0, L * (sb - sa)];
}

describe('DeFi positions: Uniswap V2 liquidity tokens and V3 positions, /v1 and /api/v2.2', () => {
  let anvil: Anvil;
  let s: Running;
  let dex: Dex;
  let manager: Deployed;
  let pair: Created;
  let pool: Created;
  const decimals = new Map<string, number>();
  const positions: Array<V3Fields & { owner: string }> = [];

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: 1337 });
    dex = await deployDex(anvil.url);
    manager = await deploy(anvil.url, 'TestPositionManager', [dex.v3Factory.address]);
    const { usdc, weth, tkb } = dex.tokens;
    for (const [t, d] of [
      [usdc, 6],
      [weth, 18],
      [tkb, 8],
    ] as const)
      decimals.set(lc(t.address), d);
    // The registry's names make these factories Uniswap's: the adapters read the pools of factories named so.
    const pricing = {
      '0x539': {
        wrappedNative: weth.address,
        stablecoins: [usdc.address],
        factories: [
          { address: dex.v2Factory.address, kind: 'v2', name: 'Uniswap v2' },
          { address: dex.v3Factory.address, kind: 'v3', name: 'Uniswap v3', positionManager: manager.address },
        ],
      },
    };
    s = await startChainpost(serverEnv(anvil, { CHAINPOST_START_BLOCKS: '0x539=0', CHAINPOST_PRICING: JSON.stringify(pricing) }));

    // V2: WETH/USDC at $2,000 an ether; the wallet adds 10 ether's worth, then a swap moves the reserves.
    pair = await createV2Pair(anvil.url, dex, weth.address, usdc.address);
    const amounts = (w: string, u: string): [bigint, bigint] =>
      lc(pair.token0) === lc(weth.address) ? [parseUnits(w, 18), parseUnits(u, 6)] : [parseUnits(u, 6), parseUnits(w, 18)];
    await addV2Liquidity(anvil.url, pair, ...amounts('1000', '2000000'));
    await addV2Liquidity(anvil.url, pair, ...amounts('10', '20000'), { to: WALLET as Hex });
    await v2SwapExactIn(anvil.url, pair, weth.address, parseUnits('5', 18));

    // V3: TKB/USDC (fee 3000) at $50 a TKB, with balances for the price's side rule, then a swap.
    pool = await createV3Pool(anvil.url, dex, tkb.address, usdc.address, 3000);
    const tkbFirst = lc(pool.token0) === lc(tkb.address);
    const [b0, b1] = tkbFirst ? [parseUnits('1000', 8), parseUnits('50000', 6)] : [parseUnits('50000', 6), parseUnits('1000', 8)];
    await initializeV3Pool(anvil.url, pool.address, sqrtPriceX96Of(b0, b1));
    await addV3Liquidity(anvil.url, pool, b0, b1);
    await v3SwapAtReserves(anvil.url, pool, usdc.address, parseUnits('500', 6));
    const { tick } = await getSlot0(anvil.url, pool.address);
    const base = Math.floor(tick / 60) * 60;
    // In range with fees owed; above the price (all token0); below it (all token1); and one of another wallet.
    const wanted: Array<V3Fields & { owner: string }> = [
      { owner: WALLET, tickLower: base - 1200, tickUpper: base + 1200, liquidity: 10n ** 12n, tokensOwed0: 12_345n, tokensOwed1: 67_890n },
      { owner: WALLET, tickLower: base + 600, tickUpper: base + 3000, liquidity: 3n * 10n ** 11n, tokensOwed0: 0n, tokensOwed1: 0n },
      { owner: WALLET, tickLower: base - 6000, tickUpper: base - 600, liquidity: 7n * 10n ** 10n, tokensOwed0: 0n, tokensOwed1: 0n },
      { owner: OTHER, tickLower: base - 60, tickUpper: base + 60, liquidity: 10n ** 9n, tokensOwed0: 0n, tokensOwed1: 0n },
    ];
    for (const p of wanted) {
      const position = {
        nonce: 0n,
        operator: '0x0000000000000000000000000000000000000000',
        token0: pool.token0,
        token1: pool.token1,
        fee: 3000,
        tickLower: p.tickLower,
        tickUpper: p.tickUpper,
        liquidity: p.liquidity,
        feeGrowthInside0LastX128: 0n,
        feeGrowthInside1LastX128: 0n,
        tokensOwed0: p.tokensOwed0,
        tokensOwed1: p.tokensOwed1,
      };
      await write(anvil.url, { address: manager.address, abi: manager.abi, functionName: 'mint', args: [p.owner, position] });
      positions.push(p);
    }
    await priceCalls(
      () => s,
      () => anvil.url,
    ).indexed();
  }, 120_000);

  afterAll(async () => {
    await stopAndClean(s);
    await anvil?.stop();
  });

  /** What the chain holds at its head, read here: the V2 pair's reserves, supply and the wallet's LP balance; the V3 pool's slot0; the prices they give. */
  async function expected() {
    const client = publicClient(anvil.url);
    const pairAbi = compileContracts().TestV2Pair.abi;
    const read = (functionName: string, args: unknown[] = []) =>
      client.readContract({ address: pair.address, abi: pairAbi, functionName, args });
    const [r0, r1] = (await read('getReserves')) as [bigint, bigint];
    const supply = (await read('totalSupply')) as bigint;
    const lp = (await read('balanceOf', [WALLET])) as bigint;
    const { usdc, weth, tkb } = dex.tokens;
    const d = (t: string): number => decimals.get(lc(t))!;
    const whole = (raw: bigint | number, t: string): number => Number(raw) / 10 ** d(t);
    // USD per whole token: USDC $1; WETH from the pair's reserves; TKB from the pool's √price.
    const [rWeth, rUsdc] = lc(pair.token0) === lc(weth.address) ? [r0, r1] : [r1, r0];
    const { sqrtPriceX96 } = await getSlot0(anvil.url, pool.address);
    const p0 = (Number(sqrtPriceX96) / 2 ** 96) ** 2 * 10 ** (d(pool.token0) - d(pool.token1));
    const usd = new Map<string, number>([
      [lc(usdc.address), 1],
      [lc(weth.address), whole(rUsdc, usdc.address) / whole(rWeth, weth.address)],
      [lc(tkb.address), lc(pool.token0) === lc(tkb.address) ? p0 : 1 / p0],
    ]);
    const value = (raw: bigint | number, t: string): number => whole(raw, t) * usd.get(lc(t))!;
    const v2 = { amount0: (lp * r0) / supply, amount1: (lp * r1) / supply, lp, r0, r1, supply };
    const v2Usd = value(v2.amount0, pair.token0) + value(v2.amount1, pair.token1);
    const v3 = positions
      .filter((p) => p.owner === WALLET)
      .map((p) => {
        const [a0, a1] = v3Amounts(sqrtPriceX96, p);
        return {
          ...p,
          a0,
          a1,
          usd: value(a0, pool.token0) + value(a1, pool.token1),
          unclaimed: value(p.tokensOwed0, pool.token0) + value(p.tokensOwed1, pool.token1),
        };
      });
    return { v2, v2Usd, v3, usd };
  }

  it('values a V2 LP position at its share of the reserves and V3 positions by their liquidity, ticks and slot0 (/v1)', async () => {
    const e = await expected();
    const r = await s.call(`/v1/wallets/${WALLET}/defi/positions?chains=0x539,bitcoin`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.meta.unsupportedChains).toEqual(['bitcoin']);
    expect(typeof r.body.meta.syncedAt['0x539']).toBe('number');
    expect(r.body.cursor).toBeNull();
    const items = r.body.result as any[];
    expect(items.map((i) => i.protocolId).sort()).toEqual(['uniswap-v2', 'uniswap-v3', 'uniswap-v3', 'uniswap-v3']);

    const v2 = items.find((i) => i.protocolId === 'uniswap-v2');
    expect(v2).toMatchObject({ chainId: '0x539', protocolName: 'Uniswap v2', position: { label: 'liquidity', address: lc(pair.address) } });
    const supplied = v2.position.tokens.filter((t: any) => t.tokenType === 'supplied');
    expect(supplied.map((t: any) => [t.address, t.balance])).toEqual([
      [lc(pair.token0), e.v2.amount0.toString()],
      [lc(pair.token1), e.v2.amount1.toString()],
    ]);
    expect(v2.position.tokens.find((t: any) => t.tokenType === 'lp')).toMatchObject({
      address: lc(pair.address),
      balance: e.v2.lp.toString(),
      usdValue: null,
    });
    near(v2.position.balanceUsd, e.v2Usd);
    expect(v2.position.details.liquidity).toMatchObject({
      reserve0: e.v2.r0.toString(),
      reserve1: e.v2.r1.toString(),
      totalSupply: e.v2.supply.toString(),
      shares: e.v2.lp.toString(),
    });
    for (const t of supplied) near(t.usdPrice, e.usd.get(t.address)!);

    const v3 = items.filter((i) => i.protocolId === 'uniswap-v3').map((i) => i.position);
    expect(v3.map((p: any) => p.details.liquidity.positionKey)).toEqual(['1', '2', '3']);
    v3.forEach((p: any, n: number) => {
      const want = e.v3[n]!;
      expect(p.address).toBe(lc(pool.address));
      expect(p.details.liquidity).toMatchObject({
        tickLower: want.tickLower,
        tickUpper: want.tickUpper,
        liquidity: want.liquidity.toString(),
        feeTier: 0.003,
      });
      const [t0, t1] = p.tokens.filter((t: any) => t.tokenType === 'supplied');
      expect([t0.address, t1.address]).toEqual([lc(pool.token0), lc(pool.token1)]);
      near(Number(t0.balance), want.a0);
      near(Number(t1.balance), want.a1);
      near(p.balanceUsd, want.usd);
      near(p.unclaimedUsd, want.unclaimed);
    });
    // Above its range a position is all token0, below it all token1; fees owed are reward tokens.
    expect(v3[1].tokens.find((t: any) => t.address === lc(pool.token1)).balance).toBe('0');
    expect(v3[2].tokens.find((t: any) => t.address === lc(pool.token0)).balance).toBe('0');
    expect([v3[0].details.liquidity.isInRange, v3[1].details.liquidity.isInRange, v3[2].details.liquidity.isInRange]).toEqual([
      true,
      false,
      false,
    ]);
    expect(v3[0].tokens.filter((t: any) => t.tokenType === 'reward').map((t: any) => [t.address, t.balance])).toEqual([
      [lc(pool.token0), '12345'],
      [lc(pool.token1), '67890'],
    ]);

    // Pages: one position at a time, the cursor to the next, the same four.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: any } = await s.call(
        `/v1/wallets/${WALLET}/defi/positions?limit=1${cursor === null ? '' : `&cursor=${cursor}`}`,
      );
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      seen.push(...page.body.result.map((i: any) => i.position.details.liquidity.positionKey ?? i.position.address));
      // The cursor is of this list: one protocol's positions, or another wallet's, are another.
      if (page.body.cursor !== null) {
        for (const other of [`/v1/wallets/${WALLET}/defi/uniswap-v3/positions`, `/v1/wallets/0x${'1'.repeat(40)}/defi/positions`]) {
          expect((await s.call(`${other}?limit=1&cursor=${page.body.cursor}`)).body.details, other).toEqual({ field: 'cursor' });
        }
      }
      cursor = page.body.cursor;
    } while (cursor !== null);
    expect(seen).toEqual(items.map((i) => i.position.details.liquidity.positionKey ?? i.position.address));
  });

  it('answers one protocol, the summary and the protocol list (/v1)', async () => {
    const e = await expected();
    const v3Total = e.v3.reduce((sum, p) => sum + p.usd, 0);
    const v3Unclaimed = e.v3.reduce((sum, p) => sum + p.unclaimed, 0);
    const one = await s.call(`/v1/wallets/${WALLET}/defi/uniswap-v3/positions?chains=0x539`);
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body.result).toMatchObject({ protocolId: 'uniswap-v3', chainId: '0x539' });
    expect(one.body.result.positions).toHaveLength(3);
    near(one.body.result.totalUsd, v3Total);
    near(one.body.result.totalUnclaimedUsd, v3Unclaimed);

    const summary = await s.call(`/v1/wallets/${WALLET}/defi/summary`);
    expect(summary.status, JSON.stringify(summary.body)).toBe(200);
    expect(summary.body.result).toMatchObject({ activeProtocols: 2, totalPositions: 4 });
    near(summary.body.result.totalUsd, v3Total + e.v2Usd);
    const rows = Object.fromEntries(summary.body.result.protocols.map((p: any) => [p.protocolId, p]));
    expect(rows['uniswap-v2']).toMatchObject({ chainId: '0x539', positionCount: 1 });
    expect(rows['uniswap-v3']).toMatchObject({ chainId: '0x539', positionCount: 3 });
    near(rows['uniswap-v2'].totalUsd, e.v2Usd);

    // The other wallet holds one V3 position and no LP token.
    const other = await s.call(`/v1/wallets/${OTHER}/defi/summary`);
    expect(other.body.result).toMatchObject({ activeProtocols: 1, totalPositions: 1 });

    const head = await priceCalls(
      () => s,
      () => anvil.url,
    ).indexed();
    const protocols = await s.call('/v1/defi/protocols?chains=0x539');
    expect(protocols.status, JSON.stringify(protocols.body)).toBe(200);
    expect(protocols.body.meta).toEqual({ syncedAt: { '0x539': head } });
    expect(protocols.body.result).toEqual([
      {
        protocolId: 'uniswap-v2',
        protocolName: 'Uniswap v2',
        protocolUrl: 'https://app.uniswap.org/pools/v2',
        protocolLogo: null,
        chains: ['0x539'],
      },
      {
        protocolId: 'uniswap-v3',
        protocolName: 'Uniswap v3',
        protocolUrl: 'https://app.uniswap.org/positions',
        protocolLogo: null,
        chains: ['0x539'],
      },
    ]);
  });

  it('answers the same positions under /api/v2.2 with its field names', async () => {
    const e = await expected();
    const all = await s.call(`/api/v2.2/wallets/${WALLET}/defi/positions?chain=0x539`);
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body).toHaveLength(4);
    const v2 = all.body.find((p: any) => p.protocol_id === 'uniswap-v2');
    expect(v2.position.tokens.map((t: any) => t.token_type)).toEqual(['defi-token', 'supplied', 'supplied']);
    expect(v2.position.tokens[1]).toMatchObject({ contract_address: lc(pair.token0), balance: e.v2.amount0.toString() });
    expect(v2.position.position_details).toMatchObject({
      pair: lc(pair.address),
      reserve0: e.v2.r0.toString(),
      total_supply: e.v2.supply.toString(),
      no_price_available: false,
    });
    near(v2.position.balance_usd, e.v2Usd);

    const one = await s.call(`/api/v2.2/wallets/${WALLET}/defi/uniswap-v3/positions?chain=0x539`);
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    expect(one.body).toMatchObject({ protocol_id: 'uniswap-v3', protocol_name: 'Uniswap v3' });
    expect(one.body.positions.map((p: any) => p.position_details.position_key)).toEqual(['1', '2', '3']);
    near(
      one.body.total_usd_value,
      e.v3.reduce((sum, p) => sum + p.usd, 0),
    );

    const summary = await s.call(`/api/v2.2/wallets/${WALLET}/defi/summary?chain=0x539`);
    expect(summary.status, JSON.stringify(summary.body)).toBe(200);
    expect(summary.body).toMatchObject({ active_protocols: 2, total_positions: 4 });
    expect(summary.body.protocols.map((p: any) => [p.protocol_id, p.positions])).toEqual([
      ['uniswap-v2', 1],
      ['uniswap-v3', 3],
    ]);
  });

  it('answers bad parameters 400 naming the field, and an unknown protocol naming it', async () => {
    const bad = async (path: string, field: string, text?: string): Promise<void> => {
      const r = await s.call(path);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.message, path).toContain(field);
      if (text !== undefined) expect(r.body.message, path).toContain(text);
    };
    await bad('/v1/wallets/0x1234/defi/positions', 'walletAddress');
    await bad(`/v1/wallets/${WALLET}/defi/aave-v3/positions`, 'protocol', 'aave-v3');
    await bad(`/v1/wallets/${WALLET}/defi/positions?limit=many`, 'limit');
    await bad(`/v1/wallets/${WALLET}/defi/positions?cursor=nope`, 'cursor');
    await bad(`/v1/wallets/${WALLET}/defi/summary?chains=atlantis`, 'chains');
    await bad('/v1/defi/protocols?limit=-1', 'limit');
    await bad('/api/v2.2/wallets/nobody/defi/summary?chain=0x539', 'address');
    await bad(`/api/v2.2/wallets/${WALLET}/defi/lido/positions?chain=0x539`, 'protocol', 'lido');
    await bad(`/api/v2.2/wallets/${WALLET}/defi/positions?chain=atlantis`, 'chain');
  });
});
