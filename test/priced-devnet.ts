import { getContractAddress, parseUnits, type Hex } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { compileContracts, DEV_ACCOUNTS, publicClient } from './contracts.js';
import {
  addV2Liquidity,
  addV3Liquidity,
  createV2Pair,
  createV3Pool,
  deployDex,
  initializeV3Pool,
  priceCalls,
  sqrtPriceOf,
  sqrtPriceX96Of,
  v2PriceAt,
  type Created,
  type Dex,
  type Ratio,
} from './dex.js';
import { startChainpost, stopAndClean, type Running } from './helpers.js';
import { serverEnv } from './streams-harness.js';

/**
 * The priced devnet of the DEX price tests (docs/api.md, Prices): a real anvil with the Uniswap V2/V3 stand-ins
 * (test/dex.ts), the real server following it from block 0 with a devnet pricing entry (CHAINPOST_PRICING: the
 * wrapped native token, USDC as the stablecoin, both factories), and three pools: WETH/USDC (V2, $2,000 an
 * ether), TKA/WETH (V2, 0.001 ether a TKA) and TKB/USDC (V3 fee 3000, $50 a TKB). Prices the tests compute
 * themselves, in integers, from the pools' reserves (getReserves) or slot0 read by eth_call at a block.
 */

export { decimalText, times, type Ratio } from './dex.js';

export interface PricedDevnet {
  anvil: Anvil;
  s: Running;
  dex: Dex;
  wethUsdc: Created;
  tkaWeth: Created;
  tkbUsdc: Created;
  decimalsOf(token: string): number;
  /** An amount in whole tokens as the token's smallest units. */
  units(amount: string, token: { address: Hex }): bigint;
  /** A V2 pair of (a, b) with liquidity given in whole tokens. */
  v2Pool(a: { address: Hex }, b: { address: Hex }, amountA: string, amountB: string): Promise<Created>;
  /** Waits until the server has ingested anvil's head; returns it. */
  indexed(): Promise<number>;
  /** A V2 pair's price of `token` in its other token (whole units), from getReserves at `block`. */
  v2Price(pair: Created, token: Hex, block: number): Promise<Ratio>;
  /** A V3 pool's price of `token` in its other token, from slot0 at `block`. */
  v3Price(pool: Created, token: Hex, block: number): Promise<Ratio>;
  /** Runs `action` with anvil's next block at `t` (Unix seconds): a router swap's own block comes a second or so later, after its approval's. */
  at(t: number, action: () => Promise<unknown>): Promise<void>;
  stop(): Promise<void>;
}

const lc = (a: string): string => a.toLowerCase();

/** The devnet's options: see startPricedDevnet. */
interface PricedOptions {
  wrappedBtc?: (tokens: Dex['tokens']) => Array<{ address: Hex }>;
  serverFirst?: boolean;
  /** The factories' names in the pricing entry (MiniSwap, MiniSwap v3): Uniswap's make them the DeFi adapters' protocols. */
  exchanges?: { v2: string; v3: string };
}

/** The devnet's pricing entry (CHAINPOST_PRICING) for the DEX's tokens and factories. */
function pricingOf(dex: Pick<Dex, 'tokens' | 'v2Factory' | 'v3Factory'>, opts: PricedOptions) {
  const { usdc, weth, tkb } = dex.tokens;
  return {
    '0x539': {
      wrappedNative: weth.address,
      stablecoins: [usdc.address],
      // TKB (8 decimals) stands for wrapped bitcoin: Bitcoin's price in the cross-chain API is its price.
      wrappedBtc: (opts.wrappedBtc?.(dex.tokens) ?? [tkb]).map((t) => t.address),
      factories: [
        { address: dex.v2Factory.address, kind: 'v2', name: opts.exchanges?.v2 ?? 'MiniSwap' },
        { address: dex.v3Factory.address, kind: 'v3', name: opts.exchanges?.v3 ?? 'MiniSwap v3' },
      ],
    },
  };
}

/**
 * `more`: server settings beyond the devnet's, given its anvil (another chain, a Bitcoin node), made before the
 * server starts; `wrappedBtc`: the tokens the pricing entry lists as wrapped bitcoin (default TKB);
 * `serverFirst`: the server starts, and indexes the chain so far, before the DEX is deployed, its pricing entry
 * naming the tokens and factories at the addresses their deployment will take (the deployer's next nonces), as a
 * devnet's registry does; `exchanges`: the factories' names.
 */
export async function startPricedDevnet(
  more: (anvil: Anvil) => Record<string, string> | Promise<Record<string, string>> = () => ({}),
  opts: PricedOptions = {},
): Promise<PricedDevnet> {
  const anvil = await startAnvil({ chainId: 1337 });
  let s: Running | undefined;
  let dex: Dex;
  if (opts.serverFirst === true) {
    const extra = await more(anvil);
    const nonce = await publicClient(anvil.url).getTransactionCount({ address: DEV_ACCOUNTS[0].address });
    // deployDex's order: USDC, WETH, TKA, TKB, the V2 factory, its router, the V3 factory.
    const [usdc, weth, tka, tkb, v2Factory, , v3Factory] = Array.from({ length: 7 }, (_, i) => ({
      address: getContractAddress({ from: DEV_ACCOUNTS[0].address, nonce: BigInt(nonce + i) }),
    }));
    const planned = { tokens: { usdc, weth, tka, tkb }, v2Factory, v3Factory } as unknown as Dex;
    const early = await startChainpost(
      serverEnv(anvil, { CHAINPOST_START_BLOCKS: '0x539=0', CHAINPOST_PRICING: JSON.stringify(pricingOf(planned, opts)), ...extra }),
    );
    s = early;
    // Indexed before the deployment: the price index has read the registry's tokens while they had no code.
    await priceCalls(
      () => early,
      () => anvil.url,
    ).indexed();
    dex = await deployDex(anvil.url);
    const deployed = [dex.tokens.usdc, dex.tokens.weth, dex.tokens.tka, dex.tokens.tkb, dex.v2Factory, dex.v3Factory].map((c) => c.address);
    if (deployed.join() !== [usdc, weth, tka, tkb, v2Factory, v3Factory].map((c) => c!.address).join())
      throw new Error('the DEX was not deployed at the addresses its pricing entry names');
  } else {
    dex = await deployDex(anvil.url);
  }
  const { usdc, weth, tka, tkb } = dex.tokens;
  const decimals = new Map<string, number>(
    [
      [usdc, 6],
      [weth, 18],
      [tka, 18],
      [tkb, 8],
    ].map(([t, d]) => [lc((t as { address: Hex }).address), d as number]),
  );
  const decimalsOf = (token: string): number => decimals.get(lc(token))!;
  const units = (amount: string, token: { address: Hex }): bigint => parseUnits(amount, decimalsOf(token.address));
  s ??= await startChainpost(
    serverEnv(anvil, {
      CHAINPOST_START_BLOCKS: '0x539=0',
      CHAINPOST_PRICING: JSON.stringify(pricingOf(dex, opts)),
      ...(await more(anvil)),
    }),
  );
  const server = s;
  const v2Pool = async (a: { address: Hex }, b: { address: Hex }, amountA: string, amountB: string): Promise<Created> => {
    const pair = await createV2Pair(anvil.url, dex, a.address, b.address);
    const [x, y] = lc(pair.token0) === lc(a.address) ? [units(amountA, a), units(amountB, b)] : [units(amountB, b), units(amountA, a)];
    await addV2Liquidity(anvil.url, pair, x, y);
    return pair;
  };
  const wethUsdc = await v2Pool(weth, usdc, '1000', '2000000');
  const tkaWeth = await v2Pool(tka, weth, '10000', '10');
  const tkbUsdc = await createV3Pool(anvil.url, dex, tkb.address, usdc.address, 3000);
  const [b0, b1] =
    lc(tkbUsdc.token0) === lc(tkb.address) ? [units('1000', tkb), units('50000', usdc)] : [units('50000', usdc), units('1000', tkb)];
  await initializeV3Pool(anvil.url, tkbUsdc.address, sqrtPriceX96Of(b0, b1));
  await addV3Liquidity(anvil.url, tkbUsdc, b0, b1);

  const client = publicClient(anvil.url);
  return {
    anvil,
    s: server,
    dex,
    wethUsdc,
    tkaWeth,
    tkbUsdc,
    decimalsOf,
    units,
    v2Pool,
    indexed: priceCalls(
      () => server,
      () => anvil.url,
    ).indexed,
    v2Price: (pair, token, block) => v2PriceAt(anvil.url, pair, token, block, decimalsOf),
    async v3Price(pool, token, block) {
      const [sqrt] = (await client.readContract({
        address: pool.address,
        abi: compileContracts().TestV3Pool.abi,
        functionName: 'slot0',
        blockNumber: BigInt(block),
      })) as [bigint];
      return sqrtPriceOf(sqrt, token, pool.token0, decimalsOf(pool.token0), decimalsOf(pool.token1));
    },
    async at(t, action) {
      await client.request({ method: 'evm_setNextBlockTimestamp' as never, params: [t] as never });
      await action();
    },
    async stop() {
      await stopAndClean(server);
      await anvil.stop();
    },
  };
}
