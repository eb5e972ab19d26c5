import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeAbiParameters, getAddress, pad, parseUnits, type Hex, type Log, type TransactionReceipt } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { compileContracts, DEV_ACCOUNTS, publicClient, write } from './contracts.js';
import {
  addV2Liquidity,
  addV3Liquidity,
  balanceOf,
  createV2Pair,
  createV3Pool,
  deployDex,
  getAmountOut,
  getReserves,
  getSlot0,
  initializeV3Pool,
  setV3Liquidity,
  sortTokens,
  sqrtPriceX96Of,
  tickOf,
  isqrt,
  v2RouterSwapExactIn,
  v2SwapExactIn,
  v3Swap,
  type Created,
  type Dex,
} from './dex.js';

/**
 * The Uniswap stand-ins of test/contracts/TestDex.sol on a real anvil: each event's
 * topic0 is the one documented for Uniswap (data-api-notes §3.1, written out here,
 * not derived from our ABI), logs come in Uniswap's order, and the pair's maths is
 * Uniswap V2's (reserves from balances, the 0.3% fee K check).
 */
const TOPIC = {
  PairCreated: '0x0d3648bd0f6ba80134a33ba9275ac585d9d315f0ad8355cddefde31afa28d0e9',
  PoolCreated: '0x783cca1c0412dd0d695e784568c96da2e9c22ff989357a2e8b1d9b2b4e6b7118',
  Sync: '0x1c411e9a96e071241c2f21f7726b17ae89e3cab4c78be50e062b03a9fffbbad1',
  V2Swap: '0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822',
  V2Mint: '0x4c209b5fc8ad50758f13e2e1088ba56a560dff690a1c6fef26394f4c03821c4f',
  V2Burn: '0xdccd412f0b1252819cb1fd330b93224ca42612892bb3f4f789976e6d81936496',
  V3Swap: '0xc42079f94a6350d7e6235f29174924f928cc2ac818eb64fed8004e115fbcca67',
  Initialize: '0x98636036cb66a9c19a37435efc1e90142190214e8abeb821bdba3f2990dd4c95',
  Transfer: '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef',
} as const;

const [A0, A1] = DEV_ACCOUNTS.map((a) => a.address) as [Hex, Hex];
const ZERO = '0x0000000000000000000000000000000000000000';
const topicOf = (address: Hex): Hex => pad(address.toLowerCase() as Hex, { size: 32 });
const topic0s = (r: TransactionReceipt): (Hex | undefined)[] => r.logs.map((l) => l.topics[0]);
const uints = (log: Log, n: number): bigint[] =>
  decodeAbiParameters(
    Array.from({ length: n }, () => ({ type: 'uint256' })),
    log.data,
  ) as bigint[];
const ints = (log: Log): readonly [bigint, bigint, bigint, bigint, number] =>
  decodeAbiParameters([{ type: 'int256' }, { type: 'int256' }, { type: 'uint160' }, { type: 'uint128' }, { type: 'int24' }], log.data);

let anvil: Anvil;
let dex: Dex;
let url: string;
beforeAll(async () => {
  anvil = await startAnvil();
  url = anvil.url;
  dex = await deployDex(url);
});
afterAll(async () => {
  await anvil?.stop();
});

describe('TestV2Factory', () => {
  it('createPair sorts the tokens and emits PairCreated(token0 indexed, token1 indexed, pair, allPairs.length)', async () => {
    const { weth, usdc, tka } = dex.tokens;
    const first = await createV2Pair(url, dex, weth.address, usdc.address);
    const [token0, token1] = sortTokens(weth.address, usdc.address);
    expect(first.receipt.logs).toHaveLength(1);
    const [log] = first.receipt.logs as [Log];
    expect(log.address.toLowerCase()).toBe(dex.v2Factory.address.toLowerCase());
    expect(log.topics).toEqual([TOPIC.PairCreated, topicOf(token0), topicOf(token1)]);
    const [pairWord, length] = decodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], log.data);
    expect(getAddress(pairWord)).toBe(first.address);
    expect(length).toBe(1n);
    expect([first.token0, first.token1]).toEqual([token0, token1]);

    // The opposite argument order finds the same pair; a second pair is number 2; a duplicate reverts.
    const read = (functionName: string, args: readonly unknown[] = []) =>
      publicClient(url).readContract({ address: dex.v2Factory.address, abi: dex.v2Factory.abi, functionName, args });
    expect(await read('getPair', [usdc.address, weth.address])).toBe(first.address);
    expect(await read('getPair', [weth.address, usdc.address])).toBe(first.address);
    const second = await createV2Pair(url, dex, tka.address, weth.address);
    expect(decodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], second.receipt.logs[0]!.data)[1]).toBe(2n);
    expect(await read('allPairsLength')).toBe(2n);
    await expect(createV2Pair(url, dex, usdc.address, weth.address)).rejects.toThrow(/PAIR_EXISTS/);
    const pairRead = (functionName: string) =>
      publicClient(url).readContract({ address: first.address, abi: compileContracts().TestV2Pair.abi, functionName });
    expect(await pairRead('token0')).toBe(token0);
    expect(await pairRead('token1')).toBe(token1);
    expect(await pairRead('factory')).toBe(dex.v2Factory.address);
  });
});

describe('TestV2Pair', () => {
  let pair: Created;
  // 2,000,000 USDC against 1,000 TKA (18 decimals): 2,000 USDC per TKA.
  const usdcAmount = parseUnits('2000000', 6);
  const tkaAmount = parseUnits('1000', 18);
  const amounts = (): [bigint, bigint] =>
    pair.token0 === getAddress(dex.tokens.usdc.address) ? [usdcAmount, tkaAmount] : [tkaAmount, usdcAmount];

  beforeAll(async () => {
    pair = await createV2Pair(url, dex, dex.tokens.usdc.address, dex.tokens.tka.address);
  });

  it('mint takes the transferred balances as liquidity: LP Transfers, then Sync, then Mint', async () => {
    const [amount0, amount1] = amounts();
    const receipt = await addV2Liquidity(url, pair, amount0, amount1, { to: A1 });
    expect(receipt.logs.every((l) => l.address.toLowerCase() === pair.address.toLowerCase())).toBe(true);
    expect(topic0s(receipt)).toEqual([TOPIC.Transfer, TOPIC.Transfer, TOPIC.Sync, TOPIC.V2Mint]);
    const [locked, minted, sync, mint] = receipt.logs as [Log, Log, Log, Log];
    // Uniswap locks MINIMUM_LIQUIDITY at address(0) on the first mint.
    expect(locked.topics).toEqual([TOPIC.Transfer, topicOf(ZERO), topicOf(ZERO)]);
    expect(uints(locked, 1)).toEqual([1000n]);
    expect(minted.topics).toEqual([TOPIC.Transfer, topicOf(ZERO), topicOf(A1)]);
    const liquidity = uints(minted, 1)[0]!;
    expect(liquidity).toBe(isqrt(amount0 * amount1) - 1000n);
    expect(uints(sync, 2)).toEqual([amount0, amount1]);
    expect(mint.topics).toEqual([TOPIC.V2Mint, topicOf(A0)]);
    expect(uints(mint, 2)).toEqual([amount0, amount1]);
    const reserves = await getReserves(url, pair.address);
    expect([reserves.reserve0, reserves.reserve1]).toEqual([amount0, amount1]);
    const block = await publicClient(url).getBlock({ blockNumber: receipt.blockNumber });
    expect(BigInt(reserves.blockTimestampLast)).toBe(block.timestamp);
  });

  for (const direction of ['token0 in', 'token1 in'] as const) {
    it(`swap (${direction}): output Transfer, Sync, Swap; reserves equal the Sync; the output is getAmountOut's`, async () => {
      const before = await getReserves(url, pair.address);
      const zeroForOne = direction === 'token0 in';
      const tokenIn = zeroForOne ? pair.token0 : pair.token1;
      const tokenOut = zeroForOne ? pair.token1 : pair.token0;
      const amountIn = tokenIn === getAddress(dex.tokens.usdc.address) ? parseUnits('5000', 6) : parseUnits('3', 18);
      const outBefore = await balanceOf(url, tokenOut, A1);
      const swap = await v2SwapExactIn(url, pair, tokenIn, amountIn, { to: A1 });

      const [reserveIn, reserveOut] = zeroForOne ? [before.reserve0, before.reserve1] : [before.reserve1, before.reserve0];
      expect(swap.amountOut).toBe(getAmountOut(amountIn, reserveIn, reserveOut));
      expect(await balanceOf(url, tokenOut, A1)).toBe(outBefore + swap.amountOut);

      expect(topic0s(swap.receipt)).toEqual([TOPIC.Transfer, TOPIC.Sync, TOPIC.V2Swap]);
      const [out, sync, swapLog] = swap.receipt.logs as [Log, Log, Log];
      expect(out.address.toLowerCase()).toBe(tokenOut.toLowerCase());
      expect(out.topics.slice(1)).toEqual([topicOf(pair.address), topicOf(A1)]);
      expect(sync.logIndex!).toBeLessThan(swapLog.logIndex!);
      expect(swapLog.topics).toEqual([TOPIC.V2Swap, topicOf(A0), topicOf(A1)]);
      const [amount0In, amount1In, amount0Out, amount1Out] = uints(swapLog, 4) as [bigint, bigint, bigint, bigint];
      expect([amount0In, amount1In, amount0Out, amount1Out]).toEqual(
        zeroForOne ? [amountIn, 0n, 0n, swap.amountOut] : [0n, amountIn, swap.amountOut, 0n],
      );

      const after = await getReserves(url, pair.address);
      expect(uints(sync, 2)).toEqual([after.reserve0, after.reserve1]);
      expect(after.reserve0).toBe(before.reserve0 + amount0In - amount0Out);
      expect(after.reserve1).toBe(before.reserve1 + amount1In - amount1Out);
      // The fee rule, from the event alone: (balance·1000 − in·3) products keep K·1000².
      const adjusted0 = after.reserve0 * 1000n - amount0In * 3n;
      const adjusted1 = after.reserve1 * 1000n - amount1In * 3n;
      expect(adjusted0 * adjusted1).toBeGreaterThanOrEqual(before.reserve0 * before.reserve1 * 1000n ** 2n);
      // The execution price includes the fee: less out than at the mid price.
      expect(swap.amountOut * reserveIn).toBeLessThan(amountIn * reserveOut);
    });
  }

  it('swap enforces the K check: one unit more than getAmountOut reverts, and the input stays for sync', async () => {
    const before = await getReserves(url, pair.address);
    const amountIn = parseUnits('1', 18);
    const tkaIsToken0 = pair.token0 === getAddress(dex.tokens.tka.address);
    const fair = tkaIsToken0
      ? getAmountOut(amountIn, before.reserve0, before.reserve1)
      : getAmountOut(amountIn, before.reserve1, before.reserve0);
    await expect(v2SwapExactIn(url, pair, dex.tokens.tka.address, amountIn, { amountOut: fair + 1n })).rejects.toThrow(/UniswapV2: K/);
    // The reverted swap left the sent input in the pair, unaccounted until sync().
    expect(await getReserves(url, pair.address)).toEqual(before);
    const receipt = await write(url, { address: pair.address, abi: compileContracts().TestV2Pair.abi, functionName: 'sync' });
    expect(topic0s(receipt)).toEqual([TOPIC.Sync]);
    const after = await getReserves(url, pair.address);
    expect(uints(receipt.logs[0]!, 2)).toEqual([after.reserve0, after.reserve1]);
    expect(tkaIsToken0 ? [after.reserve0 - before.reserve0, after.reserve1] : [after.reserve1 - before.reserve1, after.reserve0]).toEqual([
      amountIn,
      tkaIsToken0 ? before.reserve1 : before.reserve0,
    ]);
  });

  it('swap without input reverts (INSUFFICIENT_INPUT_AMOUNT)', async () => {
    await expect(
      write(url, { address: pair.address, abi: compileContracts().TestV2Pair.abi, functionName: 'swap', args: [1000n, 0n, A0, '0x'] }),
    ).rejects.toThrow(/INSUFFICIENT_INPUT_AMOUNT/);
  });

  it('the router swaps in one transaction: input Transfer, then per hop output Transfer, Sync, Swap (two hops)', async () => {
    const { usdc, tka, weth } = dex.tokens;
    // The TKA/WETH pair of the factory test, given liquidity: 1,000 TKA against 500 WETH.
    const [token0, token1] = sortTokens(tka.address, weth.address);
    const second: Created = {
      address: (await publicClient(url).readContract({
        address: dex.v2Factory.address,
        abi: dex.v2Factory.abi,
        functionName: 'getPair',
        args: [tka.address, weth.address],
      })) as Hex,
      token0,
      token1,
      receipt: undefined as unknown as TransactionReceipt,
    };
    const [tkaIn, wethIn] = [parseUnits('1000', 18), parseUnits('500', 18)];
    await addV2Liquidity(
      url,
      second,
      token0 === getAddress(tka.address) ? tkaIn : wethIn,
      token0 === getAddress(tka.address) ? wethIn : tkaIn,
    );
    const r1 = await getReserves(url, pair.address);
    const r2 = await getReserves(url, second.address);
    const amountIn = parseUnits('10000', 6);
    const { amounts, receipt } = await v2RouterSwapExactIn(url, dex, [usdc.address, tka.address, weth.address], amountIn, { to: A1 });

    // Independently of the router: getAmountOut hop by hop on the reserves read before.
    const usdc0 = pair.token0 === getAddress(usdc.address);
    const mid = getAmountOut(amountIn, usdc0 ? r1.reserve0 : r1.reserve1, usdc0 ? r1.reserve1 : r1.reserve0);
    const tka0 = second.token0 === getAddress(tka.address);
    const out = getAmountOut(mid, tka0 ? r2.reserve0 : r2.reserve1, tka0 ? r2.reserve1 : r2.reserve0);
    expect(amounts).toEqual([amountIn, mid, out]);

    expect(receipt.from.toLowerCase()).toBe(A0.toLowerCase());
    expect(topic0s(receipt)).toEqual([TOPIC.Transfer, TOPIC.Transfer, TOPIC.Sync, TOPIC.V2Swap, TOPIC.Transfer, TOPIC.Sync, TOPIC.V2Swap]);
    const [paid, hop, sync1, swap1, delivered, sync2, swap2] = receipt.logs as [Log, Log, Log, Log, Log, Log, Log];
    const router = dex.v2Router.address;
    expect([paid.address, paid.topics[1], paid.topics[2], uints(paid, 1)[0]]).toEqual([
      usdc.address.toLowerCase(),
      topicOf(A0),
      topicOf(pair.address),
      amountIn,
    ]);
    expect([hop.address, hop.topics[2], uints(hop, 1)[0]]).toEqual([tka.address.toLowerCase(), topicOf(second.address), mid]);
    expect([sync1.address, swap1.address]).toEqual([pair.address.toLowerCase(), pair.address.toLowerCase()]);
    expect(swap1.topics).toEqual([TOPIC.V2Swap, topicOf(router), topicOf(second.address)]);
    expect(uints(swap1, 4)).toEqual(usdc0 ? [amountIn, 0n, 0n, mid] : [0n, amountIn, mid, 0n]);
    expect([delivered.address, delivered.topics[2], uints(delivered, 1)[0]]).toEqual([weth.address.toLowerCase(), topicOf(A1), out]);
    expect([sync2.address, swap2.address]).toEqual([second.address.toLowerCase(), second.address.toLowerCase()]);
    expect(swap2.topics).toEqual([TOPIC.V2Swap, topicOf(router), topicOf(A1)]);
    expect(uints(swap2, 4)).toEqual(tka0 ? [mid, 0n, 0n, out] : [0n, mid, out, 0n]);
    const after1 = await getReserves(url, pair.address);
    const after2 = await getReserves(url, second.address);
    expect(uints(sync1, 2)).toEqual([after1.reserve0, after1.reserve1]);
    expect(uints(sync2, 2)).toEqual([after2.reserve0, after2.reserve1]);
    await expect(v2RouterSwapExactIn(url, dex, [usdc.address, tka.address], amountIn, { amountOutMin: 10n ** 30n })).rejects.toThrow(
      /INSUFFICIENT_OUTPUT_AMOUNT/,
    );
  });

  it('burn returns the LP share: LP Transfer to 0, token Transfers, Sync, Burn', async () => {
    const abi = compileContracts().TestV2Pair.abi;
    const lp = (await publicClient(url).readContract({ address: pair.address, abi, functionName: 'balanceOf', args: [A1] })) as bigint;
    const share = lp / 4n;
    await write(url, { address: pair.address, abi, functionName: 'transfer', args: [pair.address, share], account: DEV_ACCOUNTS[1] });
    const before = await getReserves(url, pair.address);
    const supply = (await publicClient(url).readContract({ address: pair.address, abi, functionName: 'totalSupply' })) as bigint;
    const receipt = await write(url, { address: pair.address, abi, functionName: 'burn', args: [A1], account: DEV_ACCOUNTS[1] });
    expect(topic0s(receipt)).toEqual([TOPIC.Transfer, TOPIC.Transfer, TOPIC.Transfer, TOPIC.Sync, TOPIC.V2Burn]);
    const [lpBurn, , , sync, burn] = receipt.logs as [Log, Log, Log, Log, Log];
    expect(lpBurn.topics).toEqual([TOPIC.Transfer, topicOf(pair.address), topicOf(ZERO)]);
    const amount0 = (share * before.reserve0) / supply;
    const amount1 = (share * before.reserve1) / supply;
    expect(burn.topics).toEqual([TOPIC.V2Burn, topicOf(A1), topicOf(A1)]);
    expect(uints(burn, 2)).toEqual([amount0, amount1]);
    expect(uints(sync, 2)).toEqual([before.reserve0 - amount0, before.reserve1 - amount1]);
    const after = await getReserves(url, pair.address);
    expect([after.reserve0, after.reserve1]).toEqual([before.reserve0 - amount0, before.reserve1 - amount1]);
  });
});

describe('TestV3Factory and TestV3Pool', () => {
  let pool: Created;
  const fees = [
    [500, 10],
    [3000, 60],
    [10000, 200],
  ] as const;

  it('createPool sorts and emits PoolCreated(token0, token1, fee indexed, tickSpacing, pool) for each default tier', async () => {
    const { usdc, weth } = dex.tokens;
    const [token0, token1] = sortTokens(usdc.address, weth.address);
    for (const [fee, spacing] of fees) {
      const created = await createV3Pool(url, dex, weth.address, usdc.address, fee);
      expect(created.receipt.logs).toHaveLength(1);
      const [log] = created.receipt.logs as [Log];
      expect(log.address.toLowerCase()).toBe(dex.v3Factory.address.toLowerCase());
      expect(log.topics).toEqual([TOPIC.PoolCreated, topicOf(token0), topicOf(token1), pad(`0x${fee.toString(16)}`, { size: 32 })]);
      const [tickSpacing, address] = decodeAbiParameters([{ type: 'int24' }, { type: 'address' }], log.data);
      expect(tickSpacing).toBe(spacing);
      expect(getAddress(address)).toBe(created.address);
      const read = (functionName: string) =>
        publicClient(url).readContract({ address: created.address, abi: compileContracts().TestV3Pool.abi, functionName });
      expect([await read('token0'), await read('token1'), await read('fee'), await read('tickSpacing')]).toEqual([
        token0,
        token1,
        fee,
        spacing,
      ]);
      if (fee === 3000) pool = created;
    }
    await expect(createV3Pool(url, dex, usdc.address, weth.address, 3000)).rejects.toThrow();
    await expect(createV3Pool(url, dex, usdc.address, dex.tokens.tka.address, 100 as 500)).rejects.toThrow();
  });

  it('initialize emits Initialize(sqrtPriceX96, tick) and sets the 7-field slot0', async () => {
    // Liquidity is the pool's balances: 2,000,000 USDC and 1,000 WETH, the price their ratio.
    const [usdcAmount, wethAmount] = [parseUnits('2000000', 6), parseUnits('1000', 18)];
    const [amount0, amount1] = pool.token0 === getAddress(dex.tokens.usdc.address) ? [usdcAmount, wethAmount] : [wethAmount, usdcAmount];
    await addV3Liquidity(url, pool, amount0, amount1);
    await setV3Liquidity(url, pool.address, 123_456_789n);
    const sqrtPriceX96 = sqrtPriceX96Of(amount0, amount1);
    const receipt = await initializeV3Pool(url, pool.address, sqrtPriceX96);
    expect(topic0s(receipt)).toEqual([TOPIC.Initialize]);
    const [price, tick] = decodeAbiParameters([{ type: 'uint160' }, { type: 'int24' }], receipt.logs[0]!.data);
    expect(price).toBe(sqrtPriceX96);
    expect(tick).toBe(tickOf(sqrtPriceX96));
    expect(await getSlot0(url, pool.address)).toEqual({
      sqrtPriceX96,
      tick,
      observationIndex: 0,
      observationCardinality: 1,
      observationCardinalityNext: 1,
      feeProtocol: 0,
      unlocked: true,
    });
    expect(
      await publicClient(url).readContract({ address: pool.address, abi: compileContracts().TestV3Pool.abi, functionName: 'liquidity' }),
    ).toBe(123_456_789n);
    await expect(initializeV3Pool(url, pool.address, sqrtPriceX96)).rejects.toThrow(/AI/);
  });

  for (const direction of ['token0 in', 'token1 in'] as const) {
    it(`swapExact (${direction}): output Transfer, input Transfer, Swap with the pool's signed deltas; slot0 follows`, async () => {
      const zeroForOne = direction === 'token0 in';
      const [tokenIn, tokenOut] = zeroForOne ? [pool.token0, pool.token1] : [pool.token1, pool.token0];
      const balance0 = await balanceOf(url, pool.token0, pool.address);
      const balance1 = await balanceOf(url, pool.token1, pool.address);
      const amountIn = tokenIn === getAddress(dex.tokens.usdc.address) ? parseUnits('4000', 6) : parseUnits('2', 18);
      const [reserveIn, reserveOut] = zeroForOne ? [balance0, balance1] : [balance1, balance0];
      const amountOut = getAmountOut(amountIn, reserveIn, reserveOut);
      const [after0, after1] = zeroForOne ? [balance0 + amountIn, balance1 - amountOut] : [balance0 - amountOut, balance1 + amountIn];
      const sqrtPriceX96After = sqrtPriceX96Of(after0, after1);
      const receipt = await v3Swap(url, pool, { tokenIn, amountIn, amountOut, sqrtPriceX96After, recipient: A1 });

      expect(topic0s(receipt)).toEqual([TOPIC.Transfer, TOPIC.Transfer, TOPIC.V3Swap]);
      const [out, into, swap] = receipt.logs as [Log, Log, Log];
      expect(out.address.toLowerCase()).toBe(tokenOut.toLowerCase());
      expect(out.topics.slice(1)).toEqual([topicOf(pool.address), topicOf(A1)]);
      expect(into.address.toLowerCase()).toBe(tokenIn.toLowerCase());
      expect(into.topics.slice(1)).toEqual([topicOf(A0), topicOf(pool.address)]);
      expect(swap.topics).toEqual([TOPIC.V3Swap, topicOf(A0), topicOf(A1)]);
      const [amount0, amount1, sqrtPriceX96, liquidity, tick] = ints(swap);
      // The pool's balance deltas: positive into the pool.
      expect([amount0, amount1]).toEqual(zeroForOne ? [amountIn, -amountOut] : [-amountOut, amountIn]);
      expect(await balanceOf(url, pool.token0, pool.address)).toBe(balance0 + amount0);
      expect(await balanceOf(url, pool.token1, pool.address)).toBe(balance1 + amount1);
      expect(sqrtPriceX96).toBe(sqrtPriceX96After);
      expect(liquidity).toBe(123_456_789n);
      expect(tick).toBe(tickOf(sqrtPriceX96After));
      const slot0 = await getSlot0(url, pool.address);
      expect([slot0.sqrtPriceX96, slot0.tick]).toEqual([sqrtPriceX96, tick]);
    });
  }

  it('swapExact refuses a price that moves against the trade, and an unapproved input', async () => {
    const { sqrtPriceX96 } = await getSlot0(url, pool.address);
    const amountIn = parseUnits('1', 6);
    const usdcIs0 = pool.token0 === getAddress(dex.tokens.usdc.address);
    // Selling token0 must lower sqrtPriceX96.
    await expect(
      v3Swap(url, pool, { tokenIn: pool.token0, amountIn, amountOut: 0n, sqrtPriceX96After: sqrtPriceX96 + 1n }),
    ).rejects.toThrow(/SPL/);
    await expect(
      v3Swap(url, pool, { tokenIn: pool.token1, amountIn, amountOut: 0n, sqrtPriceX96After: sqrtPriceX96 - 1n }),
    ).rejects.toThrow(/SPL/);
    // A sender with no balance of the input cannot pay for the output.
    const account = DEV_ACCOUNTS[2];
    const tokenIn = usdcIs0 ? pool.token0 : pool.token1;
    await expect(
      v3Swap(url, pool, { tokenIn, amountIn, amountOut: 1n, sqrtPriceX96After: usdcIs0 ? sqrtPriceX96 - 1n : sqrtPriceX96 + 1n, account }),
    ).rejects.toThrow(/insufficient balance/);
    expect((await getSlot0(url, pool.address)).sqrtPriceX96).toBe(sqrtPriceX96);
  });

  it('an uninitialized pool refuses swaps', async () => {
    const created = await createV3Pool(url, dex, dex.tokens.tka.address, dex.tokens.tkb.address, 3000);
    await expect(v3Swap(url, created, { tokenIn: created.token0, amountIn: 1n, amountOut: 1n, sqrtPriceX96After: 1n })).rejects.toThrow(
      /LOK/,
    );
  });
});
