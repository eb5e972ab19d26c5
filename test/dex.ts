import { getAddress, parseEventLogs, parseUnits, type Hex, type LocalAccount, type TransactionReceipt } from 'viem';
import { expect } from 'vitest';
import { compileContracts, deploy, DEV_ACCOUNTS, publicClient, write, type Deployed } from './contracts.js';
import { indexedTo, until, type Running } from './helpers.js';

/**
 * Uniswap V2/V3 stand-ins on an anvil devnet (test/contracts/TestDex.sol), for
 * the DEX price tests: a token set, both factories, pairs and pools, liquidity
 * and swaps. Every write waits for its receipt and throws if it reverted.
 */

/** The token set of the DEX price tests: a 6-decimal stablecoin, the wrapped native token and two others. */
export interface DexTokens {
  usdc: Deployed;
  weth: Deployed;
  tka: Deployed;
  tkb: Deployed;
}

export interface Dex {
  tokens: DexTokens;
  v2Factory: Deployed;
  /** UniswapV2Router02's swapExactTokensForTokens over v2Factory's pairs. */
  v2Router: Deployed;
  v3Factory: Deployed;
}

/** Each token's initial supply, in whole tokens, minted to the deployer: enough for any test. */
const SUPPLY = 1_000_000_000_000n;

/** Deploys the four tokens and both factories, all from `account` (which holds every token's supply). */
export async function deployDex(rpcUrl: string, account: LocalAccount = DEV_ACCOUNTS[0]): Promise<Dex> {
  const token = (name: string, symbol: string, decimals: number): Promise<Deployed> =>
    deploy(rpcUrl, 'TestToken', [name, symbol, decimals, parseUnits(SUPPLY.toString(), decimals)], account);
  // One at a time: parallel deploys from one account would race for nonces.
  const usdc = await token('USD Coin', 'USDC', 6);
  const weth = await token('Wrapped Ether', 'WETH', 18);
  const tka = await token('Token A', 'TKA', 18);
  const tkb = await token('Token B', 'TKB', 8);
  const v2Factory = await deploy(rpcUrl, 'TestV2Factory', [], account);
  const v2Router = await deploy(rpcUrl, 'TestV2Router', [v2Factory.address], account);
  const v3Factory = await deploy(rpcUrl, 'TestV3Factory', [], account);
  return { tokens: { usdc, weth, tka, tkb }, v2Factory, v2Router, v3Factory };
}

/** A pair or pool as created: its address and sorted tokens, and the creation receipt. */
export interface Created {
  address: Hex;
  token0: Hex;
  token1: Hex;
  receipt: TransactionReceipt;
}

/** Uniswap's token order: token0 is the lower address. */
export const sortTokens = (a: Hex, b: Hex): [Hex, Hex] =>
  BigInt(a) < BigInt(b) ? [getAddress(a), getAddress(b)] : [getAddress(b), getAddress(a)];

const abi = () => compileContracts();
const read = (
  rpcUrl: string,
  address: Hex,
  name: 'TestV2Pair' | 'TestV3Pool' | 'TestToken',
  functionName: string,
  args: readonly unknown[] = [],
): Promise<unknown> => publicClient(rpcUrl).readContract({ address, abi: abi()[name].abi, functionName, args });

/** The created pair/pool in a factory receipt: the address argument at `index` of its one creation event. */
function createdAddress(receipt: TransactionReceipt, factory: Deployed, eventName: 'PairCreated' | 'PoolCreated', index: number): Hex {
  const [log] = parseEventLogs({ abi: factory.abi, logs: receipt.logs, eventName });
  // PairCreated's last parameter is unnamed, so viem gives its arguments as an array.
  const args = log?.args as readonly unknown[] | Record<string, unknown> | undefined;
  const address = Array.isArray(args) ? args[index] : Object.values(args ?? {})[index];
  if (typeof address !== 'string') throw new Error(`no ${eventName} in tx ${receipt.transactionHash}`);
  return getAddress(address);
}

export async function createV2Pair(rpcUrl: string, dex: Dex, tokenA: Hex, tokenB: Hex, account?: LocalAccount): Promise<Created> {
  const receipt = await write(rpcUrl, {
    address: dex.v2Factory.address,
    abi: dex.v2Factory.abi,
    functionName: 'createPair',
    args: [tokenA, tokenB],
    account,
  });
  const [token0, token1] = sortTokens(tokenA, tokenB);
  return { address: createdAddress(receipt, dex.v2Factory, 'PairCreated', 2), token0, token1, receipt };
}

/** Creates a V3 pool; fee is one of the default tiers 500, 3000, 10000. */
export async function createV3Pool(
  rpcUrl: string,
  dex: Dex,
  tokenA: Hex,
  tokenB: Hex,
  fee: 500 | 3000 | 10000,
  account?: LocalAccount,
): Promise<Created> {
  const receipt = await write(rpcUrl, {
    address: dex.v3Factory.address,
    abi: dex.v3Factory.abi,
    functionName: 'createPool',
    args: [tokenA, tokenB, fee],
    account,
  });
  const [token0, token1] = sortTokens(tokenA, tokenB);
  return { address: createdAddress(receipt, dex.v3Factory, 'PoolCreated', 4), token0, token1, receipt };
}

/** An ERC-20 transfer of a TestToken from `account` (the first dev account unless told). */
export const transferToken = (rpcUrl: string, token: Hex, to: Hex, amount: bigint, account?: LocalAccount): Promise<TransactionReceipt> =>
  write(rpcUrl, { address: token, abi: abi().TestToken.abi, functionName: 'transfer', args: [to, amount], account });

export const balanceOf = async (rpcUrl: string, token: Hex, owner: Hex): Promise<bigint> =>
  (await read(rpcUrl, token, 'TestToken', 'balanceOf', [owner])) as bigint;

export interface Reserves {
  reserve0: bigint;
  reserve1: bigint;
  blockTimestampLast: number;
}

export async function getReserves(rpcUrl: string, pair: Hex): Promise<Reserves> {
  const [reserve0, reserve1, blockTimestampLast] = (await read(rpcUrl, pair, 'TestV2Pair', 'getReserves')) as [bigint, bigint, number];
  return { reserve0, reserve1, blockTimestampLast };
}

/**
 * Adds V2 liquidity as Uniswap's router does: transfers both amounts to the pair,
 * then mint(to) (a third transaction here, the router does it in one).
 */
export async function addV2Liquidity(
  rpcUrl: string,
  pair: Created,
  amount0: bigint,
  amount1: bigint,
  opts: { to?: Hex; account?: LocalAccount } = {},
): Promise<TransactionReceipt> {
  const account = opts.account ?? DEV_ACCOUNTS[0];
  await transferToken(rpcUrl, pair.token0, pair.address, amount0, account);
  await transferToken(rpcUrl, pair.token1, pair.address, amount1, account);
  return write(rpcUrl, {
    address: pair.address,
    abi: abi().TestV2Pair.abi,
    functionName: 'mint',
    args: [opts.to ?? account.address],
    account,
  });
}

/** UniswapV2Library.getAmountOut: the output of an exact input after the 0.3% fee. */
export function getAmountOut(amountIn: bigint, reserveIn: bigint, reserveOut: bigint): bigint {
  if (amountIn <= 0n) throw new Error('getAmountOut: amountIn must be positive');
  if (reserveIn <= 0n || reserveOut <= 0n) throw new Error('getAmountOut: empty reserves');
  const amountInWithFee = amountIn * 997n;
  return (amountInWithFee * reserveOut) / (reserveIn * 1000n + amountInWithFee);
}

export interface V2Swap {
  amountIn: bigint;
  amountOut: bigint;
  /** The transfer of the input to the pair. */
  transferReceipt: TransactionReceipt;
  /** The pair's swap (its logs: the output Transfer, Sync, Swap). */
  receipt: TransactionReceipt;
}

/**
 * Swaps an exact input of `tokenIn` on a V2 pair: reads the reserves, computes the
 * output with getAmountOut (or takes `amountOut` to try other values), sends the
 * input to the pair, then calls swap.
 */
export async function v2SwapExactIn(
  rpcUrl: string,
  pair: Created,
  tokenIn: Hex,
  amountIn: bigint,
  opts: { to?: Hex; account?: LocalAccount; amountOut?: bigint } = {},
): Promise<V2Swap> {
  const account = opts.account ?? DEV_ACCOUNTS[0];
  const zeroForOne = getAddress(tokenIn) === pair.token0;
  if (!zeroForOne && getAddress(tokenIn) !== pair.token1) throw new Error(`${tokenIn} is not a token of pair ${pair.address}`);
  const { reserve0, reserve1 } = await getReserves(rpcUrl, pair.address);
  const amountOut =
    opts.amountOut ?? (zeroForOne ? getAmountOut(amountIn, reserve0, reserve1) : getAmountOut(amountIn, reserve1, reserve0));
  const transferReceipt = await transferToken(rpcUrl, tokenIn, pair.address, amountIn, account);
  const args = [zeroForOne ? 0n : amountOut, zeroForOne ? amountOut : 0n, opts.to ?? account.address, '0x'];
  const receipt = await write(rpcUrl, { address: pair.address, abi: abi().TestV2Pair.abi, functionName: 'swap', args, account });
  return { amountIn, amountOut, transferReceipt, receipt };
}

/**
 * Swaps an exact input along `path` (token addresses, one V2 pair per hop) through
 * the router, in one transaction as on mainnet: approve, then
 * swapExactTokensForTokens (logs: input Transfer to the first pair, then per hop
 * the output Transfer, Sync, Swap). `amounts` are the router's getAmountsOut just before.
 */
export async function v2RouterSwapExactIn(
  rpcUrl: string,
  dex: Dex,
  path: readonly Hex[],
  amountIn: bigint,
  opts: { to?: Hex; account?: LocalAccount; amountOutMin?: bigint } = {},
): Promise<{ amounts: bigint[]; receipt: TransactionReceipt }> {
  const account = opts.account ?? DEV_ACCOUNTS[0];
  const router = dex.v2Router;
  const amounts = (await publicClient(rpcUrl).readContract({
    address: router.address,
    abi: router.abi,
    functionName: 'getAmountsOut',
    args: [amountIn, path],
  })) as bigint[];
  await write(rpcUrl, { address: path[0]!, abi: abi().TestToken.abi, functionName: 'approve', args: [router.address, amountIn], account });
  // The deadline only has to be in the future; anvil's clock starts at the wall clock.
  const deadline = 2n ** 63n;
  const args = [amountIn, opts.amountOutMin ?? 0n, path, opts.to ?? account.address, deadline];
  const receipt = await write(rpcUrl, {
    address: router.address,
    abi: router.abi,
    functionName: 'swapExactTokensForTokens',
    args,
    account,
  });
  return { amounts, receipt };
}

/** Uniswap V3's slot0, all seven fields. */
export interface Slot0 {
  sqrtPriceX96: bigint;
  tick: number;
  observationIndex: number;
  observationCardinality: number;
  observationCardinalityNext: number;
  feeProtocol: number;
  unlocked: boolean;
}

export async function getSlot0(rpcUrl: string, pool: Hex): Promise<Slot0> {
  const [sqrtPriceX96, tick, observationIndex, observationCardinality, observationCardinalityNext, feeProtocol, unlocked] = (await read(
    rpcUrl,
    pool,
    'TestV3Pool',
    'slot0',
  )) as [bigint, number, number, number, number, number, boolean];
  return { sqrtPriceX96, tick, observationIndex, observationCardinality, observationCardinalityNext, feeProtocol, unlocked };
}

/** floor(sqrt(n)) for a bigint (Newton's method). */
export function isqrt(n: bigint): bigint {
  if (n < 0n) throw new Error('isqrt of a negative number');
  if (n < 2n) return n;
  let x = n;
  let y = (x + 1n) / 2n;
  while (y < x) {
    x = y;
    y = (x + n / x) / 2n;
  }
  return x;
}

/** sqrtPriceX96 for a raw price of amount1/amount0 (token1 per token0): floor(sqrt(amount1·2^192/amount0)). */
export const sqrtPriceX96Of = (amount0: bigint, amount1: bigint): bigint => isqrt((amount1 << 192n) / amount0);

/** The tick of a sqrtPriceX96, floor(log_1.0001(price)), in floating point: close enough for a test pool's reported tick. */
export const tickOf = (sqrtPriceX96: bigint): number => Math.floor((2 * Math.log(Number(sqrtPriceX96) / 2 ** 96)) / Math.log(1.0001));

/** Initializes a V3 pool at a price (the tick derived from it unless told). */
export const initializeV3Pool = (
  rpcUrl: string,
  pool: Hex,
  sqrtPriceX96: bigint,
  tick = tickOf(sqrtPriceX96),
  account?: LocalAccount,
): Promise<TransactionReceipt> =>
  write(rpcUrl, { address: pool, abi: abi().TestV3Pool.abi, functionName: 'initialize', args: [sqrtPriceX96, tick], account });

/** Sets the in-range liquidity the pool reports in slot state and Swap events. */
export const setV3Liquidity = (rpcUrl: string, pool: Hex, liquidity: bigint, account?: LocalAccount): Promise<TransactionReceipt> =>
  write(rpcUrl, { address: pool, abi: abi().TestV3Pool.abi, functionName: 'setLiquidity', args: [liquidity], account });

/** Adds V3 "liquidity": plain transfers to the pool, whose balances are its reserves. */
export async function addV3Liquidity(
  rpcUrl: string,
  pool: Created,
  amount0: bigint,
  amount1: bigint,
  account?: LocalAccount,
): Promise<void> {
  await transferToken(rpcUrl, pool.token0, pool.address, amount0, account);
  await transferToken(rpcUrl, pool.token1, pool.address, amount1, account);
}

export interface V3SwapArgs {
  tokenIn: Hex;
  amountIn: bigint;
  amountOut: bigint;
  sqrtPriceX96After: bigint;
  /** Derived from sqrtPriceX96After unless told. */
  tickAfter?: number;
  recipient?: Hex;
  account?: LocalAccount;
}

/**
 * A V3 swap with explicit numbers: approves the pool for amountIn of tokenIn, then
 * swapExact (logs: output Transfer, input Transfer, Swap). Returns the swap's receipt.
 */
export async function v3Swap(rpcUrl: string, pool: Created, s: V3SwapArgs): Promise<TransactionReceipt> {
  const account = s.account ?? DEV_ACCOUNTS[0];
  const zeroForOne = getAddress(s.tokenIn) === pool.token0;
  if (!zeroForOne && getAddress(s.tokenIn) !== pool.token1) throw new Error(`${s.tokenIn} is not a token of pool ${pool.address}`);
  await write(rpcUrl, { address: s.tokenIn, abi: abi().TestToken.abi, functionName: 'approve', args: [pool.address, s.amountIn], account });
  const args = [
    zeroForOne,
    s.amountIn,
    s.amountOut,
    s.sqrtPriceX96After,
    s.tickAfter ?? tickOf(s.sqrtPriceX96After),
    s.recipient ?? account.address,
  ];
  return write(rpcUrl, { address: pool.address, abi: abi().TestV3Pool.abi, functionName: 'swapExact', args, account });
}

/**
 * The V3 swap that keeps the pool's price at its reserves' ratio: out by the
 * constant-product rule (no fee) on the pool's balances, the post-swap price
 * sqrt(balance1/balance0) after it. Handy when a test wants prices it can check
 * against balanceOf.
 */
export async function v3SwapAtReserves(
  rpcUrl: string,
  pool: Created,
  tokenIn: Hex,
  amountIn: bigint,
  opts: { recipient?: Hex; account?: LocalAccount } = {},
): Promise<{ amountOut: bigint; sqrtPriceX96After: bigint; receipt: TransactionReceipt }> {
  const zeroForOne = getAddress(tokenIn) === pool.token0;
  const balance0 = await balanceOf(rpcUrl, pool.token0, pool.address);
  const balance1 = await balanceOf(rpcUrl, pool.token1, pool.address);
  const [reserveIn, reserveOut] = zeroForOne ? [balance0, balance1] : [balance1, balance0];
  const amountOut = (amountIn * reserveOut) / (reserveIn + amountIn);
  const sqrtPriceX96After = zeroForOne
    ? sqrtPriceX96Of(balance0 + amountIn, balance1 - amountOut)
    : sqrtPriceX96Of(balance0 - amountOut, balance1 + amountIn);
  const receipt = await v3Swap(rpcUrl, pool, { tokenIn, amountIn, amountOut, sqrtPriceX96After, ...opts });
  return { amountOut, sqrtPriceX96After, receipt };
}

/** A non-negative rational: the prices the tests compute from reserves, exactly. */
export interface Ratio {
  num: bigint;
  den: bigint;
}

export const times = (a: Ratio, b: Ratio): Ratio => ({ num: a.num * b.num, den: a.den * b.den });

/** The ratio truncated to `digits` decimals, without trailing zeros (how the answers write prices). */
export function decimalText(r: Ratio, digits: number): string {
  const scaled = ((r.num * 10n ** BigInt(digits)) / r.den).toString().padStart(digits + 1, '0');
  const frac = scaled.slice(-digits).replace(/0+$/, '');
  return frac === '' ? scaled.slice(0, -digits) : `${scaled.slice(0, -digits)}.${frac}`;
}

/** The ratio as a USD price is written (usdPriceFormatted, usd_price): 18 decimals. */
export const formatted = (r: Ratio): string => decimalText(r, 18);

/** A pool's price of `token` in its other token, from its price of token0 in token1 (whole units). */
const sideOf = (p0: Ratio, token: string, token0: string): Ratio =>
  token.toLowerCase() === token0.toLowerCase() ? p0 : { num: p0.den, den: p0.num };

/** A V2 pair's reserves at `block` (getReserves), token0's first; with `token`, that token's first. */
export async function v2ReservesAt(rpcUrl: string, pair: Created, block: number, token?: string): Promise<[bigint, bigint]> {
  const [r0, r1] = (await publicClient(rpcUrl).readContract({
    address: pair.address,
    abi: abi().TestV2Pair.abi,
    functionName: 'getReserves',
    blockNumber: BigInt(block),
  })) as [bigint, bigint, number];
  return token === undefined || token.toLowerCase() === pair.token0.toLowerCase() ? [r0, r1] : [r1, r0];
}

/** A V2 pair's price of `token` in its other token (whole units; `decimals` of a token by lowercase address), from getReserves at `block`. */
export async function v2PriceAt(
  rpcUrl: string,
  pair: Created,
  token: Hex,
  block: number,
  decimals: (token: string) => number,
): Promise<Ratio> {
  const [r0, r1] = await v2ReservesAt(rpcUrl, pair, block);
  const [d0, d1] = [decimals(pair.token0.toLowerCase()), decimals(pair.token1.toLowerCase())];
  return sideOf({ num: r1 * 10n ** BigInt(d0), den: r0 * 10n ** BigInt(d1) }, token, pair.token0);
}

/** A V3 or V4 pool's price of `token` in its other token (whole units), from its sqrtPriceX96: sqrt² · 10^d0 / (2^192 · 10^d1). */
export function sqrtPriceOf(sqrtPriceX96: bigint, token: string, token0: string, d0: number, d1: number): Ratio {
  return sideOf({ num: sqrtPriceX96 * sqrtPriceX96 * 10n ** BigInt(d0), den: (1n << 192n) * 10n ** BigInt(d1) }, token, token0);
}

/**
 * The price calls of a server following an anvil devnet (chain 0x539; both given late, as a test's beforeAll
 * starts them): wait until it ingested anvil's head, GET a token's price, and GET one that must be 200.
 */
export function priceCalls(server: () => Running, rpcUrl: () => string) {
  /** Waits until the server has ingested anvil's head. */
  async function indexed(): Promise<number> {
    // Uncached: viem keeps a client's block number for its polling interval, and a swap just made must count.
    const target = Number(await publicClient(rpcUrl()).getBlockNumber({ cacheTime: 0 }));
    const ok = await indexedTo(server(), target);
    expect(ok, `the server ingested block ${target}`).toBe(true);
    return target;
  }
  const price = (token: string, query = ''): Promise<{ status: number; body: any }> =>
    server().call(`/api/v2.2/erc20/${token}/price?chain=0x539${query === '' ? '' : `&${query}`}`);
  async function priced(token: string, query = ''): Promise<Record<string, any>> {
    const r = await price(token, query);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  }
  return { indexed, price, priced };
}

/** A Uniswap v4 PoolKey (currencies sorted; address 0 the native coin). */
export interface PoolKey {
  currency0: Hex;
  currency1: Hex;
  fee: number;
  tickSpacing: number;
  hooks: Hex;
}

/** A V4 pool of the stand-in PoolManager (TestV4PoolManager): its key and PoolId. */
export interface V4Pool {
  manager: Deployed;
  key: PoolKey;
  id: Hex;
}

export const NATIVE: Hex = '0x0000000000000000000000000000000000000000';
/** The widest ticks a position may take (TickMath's, at tick spacing 60). */
export const FULL_RANGE = [-887_220, 887_220] as const;

const manage = (
  rpcUrl: string,
  pool: V4Pool,
  functionName: string,
  args: readonly unknown[],
  value?: bigint,
  account?: LocalAccount,
): Promise<TransactionReceipt> =>
  write(rpcUrl, {
    address: pool.manager.address,
    abi: pool.manager.abi,
    functionName,
    args: [pool.key, ...args],
    ...(value === undefined ? {} : { value }),
    account,
  });

/** Lets the manager take `amount` of an ERC-20 currency (the native coin goes as the call's value instead). */
async function allow(rpcUrl: string, pool: V4Pool, currency: Hex, amount: bigint, account?: LocalAccount): Promise<bigint> {
  if (currency === NATIVE) return amount;
  if (amount > 0n)
    await write(rpcUrl, {
      address: currency,
      abi: abi().TestToken.abi,
      functionName: 'approve',
      args: [pool.manager.address, amount],
      account,
    });
  return 0n;
}

/** Initializes the V4 pool of two currencies at the price amountB/amountA (of B per A, raw units), fee 3000, spacing 60. */
export async function initializeV4Pool(
  rpcUrl: string,
  manager: Deployed,
  a: Hex,
  amountA: bigint,
  b: Hex,
  amountB: bigint,
): Promise<V4Pool & { receipt: TransactionReceipt }> {
  const aFirst = BigInt(a) < BigInt(b);
  const [currency0, currency1] = aFirst ? [getAddress(a), getAddress(b)] : [getAddress(b), getAddress(a)];
  const key: PoolKey = { currency0, currency1, fee: 3000, tickSpacing: 60, hooks: NATIVE };
  const id = (await publicClient(rpcUrl).readContract({
    address: manager.address,
    abi: manager.abi,
    functionName: 'toId',
    args: [key],
  })) as Hex;
  const sqrt = aFirst ? sqrtPriceX96Of(amountA, amountB) : sqrtPriceX96Of(amountB, amountA);
  const pool = { manager, key, id };
  return { ...pool, receipt: await manage(rpcUrl, pool, 'initialize', [sqrt, tickOf(sqrt)]) };
}

/** A position's liquidity change, with the amounts moved into (adding) or out of (removing) the manager. */
export async function modifyV4Liquidity(
  rpcUrl: string,
  pool: V4Pool,
  ticks: readonly [number, number],
  liquidityDelta: bigint,
  amount0 = 0n,
  amount1 = 0n,
  account?: LocalAccount,
): Promise<TransactionReceipt> {
  const value =
    liquidityDelta > 0n
      ? (await allow(rpcUrl, pool, pool.key.currency0, amount0, account)) +
        (await allow(rpcUrl, pool, pool.key.currency1, amount1, account))
      : 0n;
  return manage(
    rpcUrl,
    pool,
    'modifyLiquidity',
    [ticks[0], ticks[1], liquidityDelta, `0x${'00'.repeat(32)}`, amount0, amount1],
    value,
    account,
  );
}

/** The pool's price and active liquidity as the manager holds them (at `block`, by default the latest). */
export async function getV4Pool(
  rpcUrl: string,
  pool: V4Pool,
  block?: number,
): Promise<{ sqrtPriceX96: bigint; tick: number; liquidity: bigint }> {
  const at = block === undefined ? {} : { blockNumber: BigInt(block) };
  const read = (functionName: string) =>
    publicClient(rpcUrl).readContract({ address: pool.manager.address, abi: pool.manager.abi, functionName, args: [pool.id], ...at });
  const [sqrtPriceX96, tick] = (await read('getSlot0')) as [bigint, number];
  return { sqrtPriceX96, tick, liquidity: (await read('getLiquidity')) as bigint };
}

/**
 * A V4 swap of an exact input that keeps the price on the constant-product curve of the active liquidity's virtual
 * reserves (no fee): out = in·y/(x+in), the post-swap price sqrt of their ratio after. Returns its receipt.
 */
export async function v4SwapAtLiquidity(
  rpcUrl: string,
  pool: V4Pool,
  tokenIn: Hex,
  amountIn: bigint,
  account?: LocalAccount,
): Promise<{ amountOut: bigint; sqrtPriceX96After: bigint; receipt: TransactionReceipt }> {
  const zeroForOne = getAddress(tokenIn) === pool.key.currency0;
  if (!zeroForOne && getAddress(tokenIn) !== pool.key.currency1) throw new Error(`${tokenIn} is no currency of pool ${pool.id}`);
  const { sqrtPriceX96, liquidity } = await getV4Pool(rpcUrl, pool);
  const [x, y] = [(liquidity << 96n) / sqrtPriceX96, (liquidity * sqrtPriceX96) >> 96n];
  const amountOut = zeroForOne ? (amountIn * y) / (x + amountIn) : (amountIn * x) / (y + amountIn);
  const sqrtPriceX96After = zeroForOne ? sqrtPriceX96Of(x + amountIn, y - amountOut) : sqrtPriceX96Of(x - amountOut, y + amountIn);
  const value = await allow(rpcUrl, pool, getAddress(tokenIn), amountIn, account);
  const receipt = await manage(
    rpcUrl,
    pool,
    'swap',
    [zeroForOne, amountIn, amountOut, sqrtPriceX96After, tickOf(sqrtPriceX96After)],
    value,
    account,
  );
  return { amountOut, sqrtPriceX96After, receipt };
}
