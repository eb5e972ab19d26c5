import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, parseUnits, type Hex, type TransactionReceipt } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { deploy, DEV_ACCOUNTS, publicClient, write, type Deployed } from './contracts.js';
import {
  addV2Liquidity,
  createV2Pair,
  deployDex,
  formatted,
  times,
  transferToken,
  v2PriceAt,
  v2RouterSwapExactIn,
  type Created,
  type Dex,
  type Ratio,
} from './dex.js';
import { startChainpost, stopAndClean, indexedTo, until, type Running } from './helpers.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';

/**
 * The USD fields of part 1's answers that the DEX prices fill (docs/api.md, Prices): holders' usd_value, approvals' usd_price
 * and usd_at_risk, and an NFT's last_sale in USD at the sale's block and now. On a real anvil with Uniswap V2
 * stand-ins (test/dex.ts) followed by the real server with a devnet pricing entry; every amount is checked against
 * one computed here, in integers, from the pairs' reserves read by eth_call at the block it is about.
 */

type Json = Record<string, any>;

const [K0, K1, K2] = DEV_ACCOUNTS;
const DEAD = '0x000000000000000000000000000000000000dead';
const BEEF = '0x000000000000000000000000000000000000beef';

let anvil: Anvil;
let s: Running;
let dex: Dex;
/** WETH/USDC: ether's price, $2,000 at first. TKA/WETH: TKA's, 0.001 ether. TKB has no pool. */
let wethUsdc: Created;
let tkaWeth: Created;
let nft: Deployed;
/** The blocks of the NFT sales: token 1 for ether, token 2 for TKA, token 3 for TKB. */
const saleBlock = new Map<bigint, number>();

const lc = (a: string): string => a.toLowerCase();
const addr = (d: { address: Hex }): string => lc(d.address);
const rpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;
const anvilHead = async (): Promise<number> => Number(await publicClient(anvil.url).getBlockNumber());
const whole = (raw: bigint, decimals: number): Ratio => ({ num: raw, den: 10n ** BigInt(decimals) });

/** A USD amount truncated to the cent with two decimals. */
function cents(r: Ratio): string {
  const c = (r.num * 100n) / r.den;
  return `${c / 100n}.${(c % 100n).toString().padStart(2, '0')}`;
}

/** Waits until the server has ingested anvil's head; that head. */
async function indexed(): Promise<number> {
  const target = await anvilHead();
  const ok = await indexedTo(s, target);
  expect(ok, `the server ingested block ${target}`).toBe(true);
  return target;
}

async function ok(path: string): Promise<any> {
  const r = await s.call(`/api/v2.2${path}${path.includes('?') ? '&' : '?'}chain=0x539`);
  expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
  return r.body;
}

const DECIMALS: Record<string, number> = {};
const ethUsd = (block: number): Promise<Ratio> => v2PriceAt(anvil.url, wethUsdc, dex.tokens.weth.address, block, (t) => DECIMALS[t]!);
const tkaUsd = async (block: number): Promise<Ratio> =>
  times(await v2PriceAt(anvil.url, tkaWeth, dex.tokens.tka.address, block, (t) => DECIMALS[t]!), await ethUsd(block));

const send = (c: Deployed, functionName: string, args: readonly unknown[], account = K0, value?: bigint): Promise<TransactionReceipt> =>
  write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account, ...(value === undefined ? {} : { value }) });

async function v2Pool(a: Deployed, b: Deployed, amountA: bigint, amountB: bigint): Promise<Created> {
  const pair = await createV2Pair(anvil.url, dex, a.address, b.address);
  const [x, y] = lc(pair.token0) === addr(a) ? [amountA, amountB] : [amountB, amountA];
  await addV2Liquidity(anvil.url, pair, x, y);
  return pair;
}

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  dex = await deployDex(anvil.url);
  const { usdc, weth, tka, tkb } = dex.tokens;
  for (const [t, d] of [
    [usdc, 6],
    [weth, 18],
    [tka, 18],
    [tkb, 8],
  ] as const)
    DECIMALS[addr(t)] = d;
  const pricing = {
    '0x539': {
      wrappedNative: weth.address,
      stablecoins: [usdc.address],
      factories: [{ address: dex.v2Factory.address, kind: 'v2', name: 'MiniSwap' }],
    },
  };
  s = await startChainpost(serverEnv(anvil, { CHAINPOST_START_BLOCKS: '0x539=0', CHAINPOST_PRICING: JSON.stringify(pricing) }));
  wethUsdc = await v2Pool(weth, usdc, parseUnits('1000', 18), parseUnits('2000000', 6));
  tkaWeth = await v2Pool(tka, weth, parseUnits('10000', 18), parseUnits('10', 18));
  // Holders of TKA and TKB besides the deployer.
  await transferToken(anvil.url, tka.address, A1, parseUnits('100', 18));
  await transferToken(anvil.url, tka.address, A2, parseUnits('57.123456789', 18));
  await transferToken(anvil.url, tkb.address, A1, parseUnits('50', 8));
  await transferToken(anvil.url, tkb.address, A2, parseUnits('5', 8));
  // Approvals: more than A1 holds, unlimited, less than A0 holds; and of a token no pool prices.
  const approve = (token: Deployed, spender: string, amount: bigint, account = K0) =>
    write(anvil.url, { address: token.address, abi: token.abi, functionName: 'approve', args: [spender, amount], account });
  await approve(tka, DEAD, parseUnits('1000', 18), K1);
  await approve(tka, BEEF, 2n ** 256n - 1n, K1);
  await approve(tka, DEAD, parseUnits('30.5', 18));
  await approve(tkb, DEAD, parseUnits('10', 8), K1);
  // NFT sales: token 3 for TKB, token 1 for ether, token 2 for TKA (the collection's last trade).
  nft = await deploy(anvil.url, 'TestNFT', ['Priced NFT', 'PNFT']);
  const market = await deploy(anvil.url, 'TestMarket');
  for (const id of [1n, 2n, 3n]) await send(nft, 'mint', [A0, id]);
  await send(nft, 'setApprovalForAll', [market.address, true]);
  await approve(tkb, market.address, parseUnits('5', 8), K1);
  saleBlock.set(3n, Number((await send(market, 'buyWith', [nft.address, 3n, A0, tkb.address, parseUnits('5', 8)], K1)).blockNumber));
  saleBlock.set(1n, Number((await send(market, 'buy', [nft.address, 1n, A0], K1, parseEther('0.5'))).blockNumber));
  await approve(tka, market.address, parseUnits('25', 18), K2);
  saleBlock.set(2n, Number((await send(market, 'buyWith', [nft.address, 2n, A0, tka.address, parseUnits('25', 18)], K2)).blockNumber));
  // Then ether (and TKA through it) goes up: "now" differs from the sales' blocks.
  await v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address], parseUnits('100000', 6));
  await indexed();
}, 120_000);

afterAll(async () => {
  await stopAndClean(s);
  await anvil?.stop();
});

describe('GET /erc20/:token_address/owners', () => {
  it('values each balance in USD at the indexed head, to the cent, as the reserves say', async () => {
    const head = await indexed();
    const { tka } = dex.tokens;
    const usd = await tkaUsd(head);
    const body = await ok(`/erc20/${addr(tka)}/owners`);
    const owners = body.result as Json[];
    // The deployer, the pair, A1, A2, and the buyer's seller A0 (the deployer): at least four holders.
    expect(owners.length).toBeGreaterThanOrEqual(4);
    for (const o of owners) expect(o['usd_value'], o['owner_address']).toBe(cents(times(whole(BigInt(o['balance']), 18), usd)));
    // A1's 100 TKA at $2-and-a-bit: a value with cents, not 0 and not a number.
    const a1 = owners.find((o) => o['owner_address'] === A1)!;
    expect(typeof a1['usd_value']).toBe('string');
    expect(Number(a1['usd_value'])).toBeGreaterThan(200);
  });

  it('answers null, never 0, for a token no pool prices', async () => {
    const owners = (await ok(`/erc20/${addr(dex.tokens.tkb)}/owners`)).result as Json[];
    expect(owners.length).toBeGreaterThanOrEqual(3);
    for (const o of owners) expect(o['usd_value']).toBeNull();
  });
});

describe('GET /wallets/:address/approvals', () => {
  const find = (result: Json[], token: string, spender: string): Json =>
    result.find((r) => r['token']['address'] === token && r['spender']['address'] === spender)!;

  it("gives the token's USD price and, at risk, the allowance capped by the balance in USD", async () => {
    const head = await indexed();
    const { tka } = dex.tokens;
    const usd = await tkaUsd(head);
    const a1 = (await ok(`/wallets/${A1}/approvals`)).result as Json[];
    // 1,000 approved and unlimited: what A1 holds (100 TKA) is at risk.
    for (const spender of [DEAD, BEEF]) {
      const r = find(a1, addr(tka), spender);
      expect(r['token'], spender).toMatchObject({
        current_balance: parseUnits('100', 18).toString(),
        usd_price: formatted(usd),
        usd_at_risk: cents(times(whole(parseUnits('100', 18), 18), usd)),
      });
    }
    // A0 holds far more than the 30.5 approved: the allowance is at risk.
    const a0 = find((await ok(`/wallets/${A0}/approvals`)).result, addr(tka), DEAD);
    expect(BigInt(a0['token']['current_balance'])).toBeGreaterThan(parseUnits('30.5', 18));
    expect(a0['token']).toMatchObject({ usd_price: formatted(usd), usd_at_risk: cents(times(whole(parseUnits('30.5', 18), 18), usd)) });
    // The same price as the wallet's balances answer for the token.
    const balances = (await ok(`/wallets/${A1}/tokens`)).result as Json[];
    expect(balances.find((b) => b['token_address'] === addr(tka))!['usd_price']).toBe(formatted(usd));
  });

  it('answers null price and risk for a token no pool prices', async () => {
    const r = find((await ok(`/wallets/${A1}/approvals`)).result, addr(dex.tokens.tkb), DEAD);
    expect(r['value']).toBe(parseUnits('10', 8).toString());
    expect(r['token']).toMatchObject({ usd_price: null, usd_at_risk: null });
  });
});

describe('last_sale in USD', () => {
  /** What last_sale's USD fields must be for a sale of `paid` raw units priced at `usdAt(block)`. */
  async function expected(id: bigint, paid: bigint, decimals: number, usdAt: (block: number) => Promise<Ratio>): Promise<Json> {
    const head = await indexed();
    const [then, now] = [await usdAt(saleBlock.get(id)!), await usdAt(head)];
    return { usd_price_at_sale: cents(times(whole(paid, decimals), then)), current_usd_value: cents(times(whole(paid, decimals), now)) };
  }

  it("prices a sale in ether as the wrapped native token at the sale's block and at the head", async () => {
    const want = await expected(1n, parseEther('0.5'), 18, ethUsd);
    // Ether went up after the sale: the two differ (about $1,000 at the sale).
    expect(want['current_usd_value']).not.toBe(want['usd_price_at_sale']);
    expect(Number(want['usd_price_at_sale'])).toBeCloseTo(1000, -1);
    const [t] = (await ok(`/nft/${addr(nft)}/1/transfers?include_prices=true&limit=1`)).result as Json[];
    expect(t!['last_sale']).toMatchObject({ price: parseEther('0.5').toString(), payment_token: { token_symbol: 'ETH' }, ...want });
  });

  it("prices a sale in an ERC-20 by that token's price, on the transfers, the wallet's NFTs and the collection", async () => {
    const want = await expected(2n, parseUnits('25', 18), 18, tkaUsd);
    expect(want['current_usd_value']).not.toBe(want['usd_price_at_sale']);
    const sale = { price: parseUnits('25', 18).toString(), payment_token: { token_address: addr(dex.tokens.tka) }, ...want };
    const [t] = (await ok(`/nft/${addr(nft)}/2/transfers?include_prices=true&limit=1`)).result as Json[];
    expect(t!['last_sale']).toMatchObject(sale);
    const held = (await ok(`/${A2}/nft?include_prices=true`)).result as Json[];
    expect(held.find((n) => n['token_address'] === addr(nft) && n['token_id'] === '2')!['last_sale']).toMatchObject(sale);
    expect((await ok(`/nft/${addr(nft)}/2?include_prices=true`)).last_sale).toMatchObject(sale);
    // The collection's last trade is this sale.
    expect((await ok(`/nft/${addr(nft)}/metadata?include_prices=true`)).last_sale).toMatchObject(sale);
    const collections = (await ok(`/${A2}/nft/collections?include_prices=true`)).result as Json[];
    expect(collections.find((c) => c['token_address'] === addr(nft))!['last_sale']).toMatchObject(sale);
    // The wallet's transfer list carries it too.
    const listed = (await ok(`/${A2}/nft/transfers?include_prices=true`)).result as Json[];
    expect(listed.find((x) => x['token_id'] === '2')!['last_sale']).toMatchObject(sale);
  });

  it('answers null for a sale paid in a token no pool prices', async () => {
    const [t] = (await ok(`/nft/${addr(nft)}/3/transfers?include_prices=true&limit=1`)).result as Json[];
    expect(t!['last_sale']).toMatchObject({
      price: parseUnits('5', 8).toString(),
      payment_token: { token_address: addr(dex.tokens.tkb) },
      usd_price_at_sale: null,
      current_usd_value: null,
    });
  });
});

describe('GET /erc20/metadata and GET /tokens/search', () => {
  const totalSupply = async (token: Deployed, block: number): Promise<bigint> =>
    (await publicClient(anvil.url).readContract({
      address: token.address,
      abi: token.abi,
      functionName: 'totalSupply',
      blockNumber: BigInt(block),
    })) as bigint;

  it("fully_diluted_valuation: the total supply at the token's price, to the cent; null without a pool", async () => {
    const head = await indexed();
    const { tka, tkb } = dex.tokens;
    const [a, b] = (await ok(`/erc20/metadata?addresses[]=${addr(tka)}&addresses[]=${addr(tkb)}`)) as Json[];
    expect(a!['fully_diluted_valuation']).toBe(cents(times(whole(await totalSupply(tka, head), 18), await tkaUsd(head))));
    expect(b!['fully_diluted_valuation']).toBeNull();
    expect(a!['market_cap']).toBeNull();
  });

  it('search: usdPrice as the price endpoint answers it, the valuation, and the percent change over a day once there is one', async () => {
    const { usdc, weth, tka, tkb } = dex.tokens;
    const search = async (): Promise<Json[]> => (await ok('/tokens/search?query=token&chains=0x539')).result;
    const before = (await search()).find((r) => r['tokenAddress'] === addr(tka))!;
    // The chain is younger than a day: no change to give.
    expect(before['usdPricePercentChange']).toBeNull();
    // A day and a minute on, ether moves again: TKA's price a day before is the one at the last block before.
    const last = await publicClient(anvil.url).getBlock();
    await rpc('evm_setNextBlockTimestamp', [Number(last.timestamp) + 86_400 + 60]);
    await v2RouterSwapExactIn(anvil.url, dex, [usdc.address, weth.address], parseUnits('50000', 6));
    const head = await indexed();
    const found = await search();
    const a = found.find((r) => r['tokenAddress'] === addr(tka))!;
    const [now, then] = [await tkaUsd(head), await tkaUsd(Number(last.number))];
    expect(a['usdPrice']).toBe((await ok(`/erc20/${addr(tka)}/price`)).usdPrice);
    expect(Math.abs(a['usdPrice'] - Number(formatted(now))) / a['usdPrice']).toBeLessThan(1e-12);
    const fdv = Number(cents(times(whole(await totalSupply(tka, head), 18), now)));
    expect(Math.abs(a['fullyDilutedValuation'] - fdv) / fdv).toBeLessThan(1e-9);
    const [n, t] = [Number(formatted(now)), Number(formatted(then))];
    expect(n).not.toBe(t);
    expect(a['usdPricePercentChange'].oneDay).toBeCloseTo((100 * (n - t)) / t, 9);
    const b = found.find((r) => r['tokenAddress'] === addr(tkb))!;
    expect(b).toMatchObject({ usdPrice: null, usdPricePercentChange: null, fullyDilutedValuation: null });
  });
});
