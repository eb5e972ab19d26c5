import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUnits, type Hex, type LocalAccount, type TransactionReceipt } from 'viem';
import { DEV_ACCOUNTS, publicClient } from './contracts.js';
import { transferToken, v2RouterSwapExactIn, v2SwapExactIn, v3SwapAtReserves, type Created } from './dex.js';
import type { Pricing } from '../engine/chains/pricing.js';
import { ServiceClock } from '../engine/clock.js';
import type { DataDeps } from '../engine/data-api/common/deps.js';
import {
  poolKey,
  poolRowsPrefix,
  tokenPoolsPrefix,
  tokenSwapsPrefix,
  type PoolRow,
  type SwapRow,
} from '../engine/data-api/dex/index/keys.js';
import { DataIndexer, type IndexState } from '../engine/data-api/common/indexer.js';
import { pairSwaps, pairSwapsQuery } from '../engine/data-api/dex/swaps.js';
import { analyticsQuery, SCAN, tokenAnalytics } from '../engine/data-api/scores/analytics.js';
import { pos } from '../engine/evm/store.js';
import { TokenMetadata } from '../engine/evm/token-metadata.js';
import { blockKey } from '../engine/ingest/chain-store.js';
import type { Kv } from '../engine/ports.js';
import { openStore, type Store } from '../storage/env.js';
import { tempDir, until } from './helpers.js';
import { decimalText, startPricedDevnet, times, type PricedDevnet, type Ratio } from './priced-devnet.js';
import { noNode } from './kit/no-node.js';
import { quietLog } from './kit/quiet-log.js';

/**
 * The swap lists (GET /api/v2.2/wallets/:address/swaps, /erc20/:address/swaps, /pairs/:address/swaps) end to end on the priced devnet of test/priced-devnet.ts (Uniswap V2 and V3
 * stand-ins on a real anvil, the real server following it with a pricing entry). One wallet swaps both ways on a
 * V2 pair, through the V2 router and on a V3 pool; another wallet swaps too. Each item's legs are checked against
 * the amounts the test sent, and its USD figures against prices computed here, in integers, from the pools'
 * reserves (getReserves) or slot0 read by eth_call at the swap's block.
 */

type Json = Record<string, any>;

let net: PricedDevnet;
/** WETH/USDC (V2), TKA/WETH (V2), TKB/USDC (V3): each token's only pool, so its pricing pool. */
let wethUsdc: Created;
let tkaWeth: Created;
let tkbUsdc: Created;

const [, ALICE, BOB] = DEV_ACCOUNTS;
const lc = (a: string): string => a.toLowerCase();
const rpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(net.anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;

const swapsOf = (wallet: string, query = ''): Promise<{ status: number; body: any }> =>
  net.s.call(`/api/v2.2/wallets/${wallet}/swaps?chain=0x539${query === '' ? '' : `&${query}`}`);
async function listed(wallet: string, query = ''): Promise<Json> {
  const r = await swapsOf(wallet, query);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}
const hashes = (page: Json): string[] => (page.result as Json[]).map((i) => i['transactionHash']);

/** The ratio as the answers' USD numbers are made: a decimal with 36 digits after the point, as a number. */
const toNumber = (r: Ratio): number => Number(decimalText(r, 36));

/** USD per whole token at `block`, computed here: USDC $1, WETH through WETH/USDC, TKA through TKA/WETH then WETH, TKB through TKB/USDC. */
async function usdAt(token: string, block: number): Promise<Ratio> {
  const { usdc, weth, tka, tkb } = net.dex.tokens;
  if (lc(token) === lc(usdc.address)) return { num: 1n, den: 1n };
  if (lc(token) === lc(weth.address)) return net.v2Price(wethUsdc, weth.address, block);
  if (lc(token) === lc(tka.address)) return times(await net.v2Price(tkaWeth, tka.address, block), await usdAt(weth.address, block));
  if (lc(token) === lc(tkb.address)) return net.v3Price(tkbUsdc, tkb.address, block);
  throw new Error(`no price for ${token}`);
}

/** A swap the test made: who sent it, where, and what the wallet got and gave. */
interface Made {
  receipt: TransactionReceipt;
  pool: Created;
  exchange: 'MiniSwap' | 'MiniSwap v3';
  type: 'buy' | 'sell';
  bought: [token: Hex, raw: bigint];
  sold: [token: Hex, raw: bigint];
}
/** Alice's swaps, oldest first; Bob's one swap; Bob's swap that took the place of one a reorg removed (the wallet list's reorg test). */
const alice: Made[] = [];
let bob: Made;
let bobAfterReorg: Made | undefined;
/** Every swap still on the chain, oldest first. */
const everySwap = (): Made[] => [...alice, bob, ...(bobAfterReorg === undefined ? [] : [bobAfterReorg])];

async function v2Swap(pool: Created, tokenIn: Hex, amountIn: bigint, account: LocalAccount, type: Made['type']): Promise<Made> {
  const r = await v2SwapExactIn(net.anvil.url, pool, tokenIn, amountIn, { account });
  const tokenOut = lc(tokenIn) === lc(pool.token0) ? pool.token1 : pool.token0;
  return { receipt: r.receipt, pool, exchange: 'MiniSwap', type, bought: [tokenOut, r.amountOut], sold: [tokenIn, amountIn] };
}
async function v3Swap(tokenIn: Hex, amountIn: bigint, account: LocalAccount, type: Made['type']): Promise<Made> {
  const r = await v3SwapAtReserves(net.anvil.url, tkbUsdc, tokenIn, amountIn, { account });
  const tokenOut = lc(tokenIn) === lc(tkbUsdc.token0) ? tkbUsdc.token1 : tkbUsdc.token0;
  return { receipt: r.receipt, pool: tkbUsdc, exchange: 'MiniSwap v3', type, bought: [tokenOut, r.amountOut], sold: [tokenIn, amountIn] };
}

beforeAll(async () => {
  net = await startPricedDevnet();
  ({ wethUsdc, tkaWeth, tkbUsdc } = net);
  const { usdc, weth, tka, tkb } = net.dex.tokens;
  for (const account of [ALICE, BOB])
    for (const [t, amount] of [
      [usdc, '1000000'],
      [weth, '100'],
      [tka, '100000'],
      [tkb, '100'],
    ] as const)
      await transferToken(net.anvil.url, t.address, account.address, net.units(amount, t));
  // Alice: ether bought and sold on the V2 pair, TKA sold for ether through the router, TKB bought and sold on the V3 pool.
  alice.push(await v2Swap(wethUsdc, usdc.address, net.units('10000', usdc), ALICE, 'buy'));
  alice.push(await v2Swap(wethUsdc, weth.address, net.units('2', weth), ALICE, 'sell'));
  const routed = await v2RouterSwapExactIn(net.anvil.url, net.dex, [tka.address, weth.address], net.units('1000', tka), { account: ALICE });
  alice.push({
    receipt: routed.receipt,
    pool: tkaWeth,
    exchange: 'MiniSwap',
    type: 'sell',
    bought: [weth.address, routed.amounts[1]!],
    sold: [tka.address, routed.amounts[0]!],
  });
  alice.push(await v3Swap(usdc.address, net.units('500', usdc), ALICE, 'buy'));
  alice.push(await v3Swap(tkb.address, net.units('3', tkb), ALICE, 'sell'));
  bob = await v2Swap(wethUsdc, usdc.address, net.units('5000', usdc), BOB, 'buy');
  await net.indexed();
}, 180_000);

/**
 * A swap's legs as the test sent them, valued at its block by prices computed here: whole amounts, USD, and the item
 * fields they make. Seen from `token` (a token's list): that token is the base, bought in a buy.
 */
async function legsOf(m: Made, token?: Hex) {
  const block = Number(m.receipt.blockNumber);
  const leg = async ([token, raw]: [Hex, bigint]) => {
    const usd = await usdAt(token, block);
    const whole: Ratio = { num: raw, den: 10n ** BigInt(net.decimalsOf(token)) };
    return {
      whole,
      usdAmount: toNumber(times(whole, usd)),
      item: {
        address: lc(token),
        amount: formatUnits(raw, net.decimalsOf(token)),
        usdPrice: toNumber(usd),
        usdAmount: toNumber(times(whole, usd)),
        logo: null,
      },
    };
  };
  const [bought, sold] = [await leg(m.bought), await leg(m.sold)];
  // The pool's base: the token that does not route to USD (ether against USDC); a buy received it. The trade's value is the other leg.
  const [poolBase, usdLeg] = m.type === 'buy' ? [bought, sold] : [sold, bought];
  const type = token === undefined ? m.type : lc(m.bought[0]) === lc(token) ? 'buy' : 'sell';
  const [base, quote] = token === undefined ? [poolBase, usdLeg] : type === 'buy' ? [bought, sold] : [sold, bought];
  const { timestamp } = await publicClient(net.anvil.url).getBlock({ blockNumber: m.receipt.blockNumber });
  return {
    bought,
    sold,
    base,
    quote,
    common: {
      transactionHash: m.receipt.transactionHash,
      transactionIndex: m.receipt.transactionIndex,
      transactionType: type,
      blockNumber: block,
      blockTimestamp: new Date(Number(timestamp) * 1000).toISOString(),
      walletAddress: lc(m.receipt.from),
      baseQuotePrice: decimalText({ num: quote.whole.num * base.whole.den, den: quote.whole.den * base.whole.num }, 18),
      totalValueUsd: usdLeg.usdAmount,
      subCategory: null,
    },
  };
}

/** A wallet or token list's item for the swap (swapsByWalletAddressResult), in a token's list when `token` is given. */
async function tradeItem(m: Made, token?: Hex): Promise<Json> {
  const { bought, sold, common } = await legsOf(m, token);
  return {
    ...common,
    pairAddress: lc(m.pool.address),
    exchangeName: m.exchange,
    exchangeAddress: lc(m.exchange === 'MiniSwap' ? net.dex.v2Factory.address : net.dex.v3Factory.address),
    bought: bought.item,
    sold: sold.item,
  };
}

afterAll(async () => {
  await net?.stop();
});

const newestFirst = (made: Made[]): string[] => made.map((m) => m.receipt.transactionHash).reverse();

describe('GET /wallets/:address/swaps', () => {
  it("lists the wallet's swaps newest first, each leg as the test sent it, priced at its block from the pools' own state", async () => {
    const page = await listed(lc(ALICE.address));
    expect(hashes(page)).toEqual(newestFirst(alice));
    expect(page).toMatchObject({ page: 0, page_size: 100, cursor: null });
    for (const m of alice)
      expect(
        (page.result as Json[]).find((i) => i['transactionHash'] === m.receipt.transactionHash),
        m.receipt.transactionHash,
      ).toMatchObject(await tradeItem(m));
    const [first, , routed, , tkbSell] = alice.map(
      (m) => (page.result as Json[]).find((i) => i['transactionHash'] === m.receipt.transactionHash)!,
    );
    expect(first!['pairLabel']).toBe('WETH/USDC');
    expect(routed!['pairLabel']).toBe('TKA/WETH');
    expect(tkbSell!['pairLabel']).toBe('TKB/USDC');
    expect(first!['bought']).toMatchObject({ symbol: 'WETH', name: 'Wrapped Ether' });
  });

  it("lists another wallet's swaps apart, and none for a wallet that never swapped", async () => {
    expect(hashes(await listed(lc(BOB.address)))).toEqual([bob.receipt.transactionHash]);
    expect(await listed(lc(DEV_ACCOUNTS[0].address))).toMatchObject({ result: [], cursor: null });
    // Any case in the path.
    expect(hashes(await listed(ALICE.address))).toEqual(newestFirst(alice));
  });

  it('pages by cursor, in either order', async () => {
    for (const [order, expected] of [
      ['DESC', newestFirst(alice)],
      ['ASC', newestFirst(alice).reverse()],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: Json = await listed(lc(ALICE.address), `limit=2&order=${order}${cursor === null ? '' : `&cursor=${cursor}`}`);
        expect(page.page).toBe(pages);
        expect(page.result.length).toBeLessThanOrEqual(2);
        seen.push(...hashes(page));
        cursor = page.cursor;
        pages++;
      } while (cursor !== null);
      expect(pages).toBe(3);
      expect(seen).toEqual(expected);
    }
    // A cursor is for the list it came from.
    const { cursor } = await listed(lc(ALICE.address), 'limit=2');
    expect((await swapsOf(lc(ALICE.address), `limit=2&transactionTypes=buy&cursor=${cursor}`)).status).toBe(400);
  });

  it("pages on from a cursor made before the token and pair lists (the wallet list's cursor form is kept)", async () => {
    const wallet = lc(ALICE.address);
    const { weth } = net.dex.tokens;
    // The cursor as the server made it then: the list named by order, blocks, dates, token and types, after the last key returned.
    const oldCursor = (list: string, key: string): string =>
      Buffer.from(JSON.stringify({ l: list, k: key, p: 1 }), 'utf8').toString('base64url');
    const keyOf = (c: string): string => JSON.parse(Buffer.from(c, 'base64url').toString('utf8')).k;
    const first = await listed(wallet, 'limit=2');
    expect(hashes(await listed(wallet, `limit=2&cursor=${oldCursor('wallet-swaps DESC ,,,, ', keyOf(first.cursor))}`))).toEqual(
      newestFirst(alice).slice(2, 4),
    );
    const sells = await listed(wallet, `tokenAddress=${lc(weth.address)}&transactionTypes=sell&limit=1`);
    const rest = await listed(
      wallet,
      `tokenAddress=${lc(weth.address)}&transactionTypes=sell&limit=1&cursor=${oldCursor(`wallet-swaps DESC ,,,,${lc(weth.address)} sell`, keyOf(sells.cursor))}`,
    );
    expect([...hashes(sells), ...hashes(rest)]).toEqual(newestFirst(alice.filter((m) => m.pool !== tkbUsdc && m.type === 'sell')));
  });

  it('filters by transaction type, token and blocks', async () => {
    const wallet = lc(ALICE.address);
    const { weth, tkb } = net.dex.tokens;
    const of = (keep: (m: Made, i: number) => boolean): string[] => newestFirst(alice.filter(keep));
    expect(hashes(await listed(wallet, 'transactionTypes=buy'))).toEqual(of((m) => m.type === 'buy'));
    expect(hashes(await listed(wallet, 'transactionTypes[]=sell'))).toEqual(of((m) => m.type === 'sell'));
    expect(hashes(await listed(wallet, 'transactionTypes[]=sell&transactionTypes[]=buy'))).toEqual(newestFirst(alice));
    expect(hashes(await listed(wallet, `tokenAddress=${tkb.address}`))).toEqual(of((m) => m.pool === tkbUsdc));
    expect(hashes(await listed(wallet, `tokenAddress=${lc(weth.address)}&transactionTypes=sell`))).toEqual(
      of((m) => m.pool !== tkbUsdc && m.type === 'sell'),
    );
    // Paged while filtered: one sell a page.
    const first = await listed(wallet, 'transactionTypes=sell&limit=1');
    const second = await listed(wallet, `transactionTypes=sell&limit=1&cursor=${first.cursor}`);
    expect([...hashes(first), ...hashes(second)]).toEqual(of((m) => m.type === 'sell').slice(0, 2));
    const block = (i: number): number => Number(alice[i]!.receipt.blockNumber);
    expect(hashes(await listed(wallet, `fromBlock=${block(2)}`))).toEqual(of((_, i) => i >= 2));
    expect(hashes(await listed(wallet, `toBlock=${block(1)}`))).toEqual(of((_, i) => i <= 1));
    expect(hashes(await listed(wallet, `fromBlock=${block(1)}&toBlock=${block(3)}&order=ASC`))).toEqual(
      of((_, i) => i >= 1 && i <= 3).reverse(),
    );
    const { timestamp } = await publicClient(net.anvil.url).getBlock({ blockNumber: BigInt(block(4)) });
    expect(hashes(await listed(wallet, `fromDate=${new Date((Number(timestamp) + 1) * 1000).toISOString()}`))).toEqual([]);
  });

  it('answers 400 naming a bad parameter', async () => {
    const bad = await swapsOf('0x12');
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('address');
    for (const [query, field] of [
      ['transactionTypes=hold', 'transactionTypes'],
      ['tokenAddress=weth', 'tokenAddress'],
      ['fromBlock=first', 'fromBlock'],
      ['toDate=someday', 'toDate'],
      ['limit=101', 'limit'],
      ['order=UP', 'order'],
    ] as const) {
      const r = await swapsOf(lc(ALICE.address), query);
      expect(r.status, query).toBe(400);
      expect(JSON.stringify(r.body), query).toContain(field);
    }
  });

  it('takes back a swap a reorg removes', async () => {
    const wallet = lc(ALICE.address);
    const { usdc } = net.dex.tokens;
    await net.indexed();
    const snapshot = await rpc<string>('evm_snapshot', []);
    const gone = await v2Swap(wethUsdc, usdc.address, net.units('1000', usdc), ALICE, 'buy');
    await net.indexed();
    expect(hashes(await listed(wallet))).toEqual([gone.receipt.transactionHash, ...newestFirst(alice)]);
    await rpc('evm_revert', [snapshot]);
    // A longer chain without it, where Bob's same swap takes its place (block, pool and log index): Alice's list does not show it.
    const instead = await v2Swap(wethUsdc, usdc.address, net.units('1000', usdc), BOB, 'buy');
    bobAfterReorg = instead;
    expect([instead.receipt.blockNumber, instead.receipt.logs.at(-1)!.logIndex]).toEqual([
      gone.receipt.blockNumber,
      gone.receipt.logs.at(-1)!.logIndex,
    ]);
    await rpc('anvil_mine', ['0x4']);
    await net.indexed();
    expect(await until(async () => hashes(await listed(lc(BOB.address)))[0] === instead.receipt.transactionHash, 10_000, 20)).toBe(true);
    expect(hashes(await listed(wallet))).toEqual(newestFirst(alice));
    expect(hashes(await listed(lc(BOB.address)))).toEqual([instead.receipt.transactionHash, bob.receipt.transactionHash]);
  });
});

const tokenSwapsOf = (token: string, query = ''): Promise<{ status: number; body: any }> =>
  net.s.call(`/api/v2.2/erc20/${token}/swaps?chain=0x539${query === '' ? '' : `&${query}`}`);
const pairSwapsOf = (pair: string, query = ''): Promise<{ status: number; body: any }> =>
  net.s.call(`/api/v2.2/pairs/${pair}/swaps?chain=0x539${query === '' ? '' : `&${query}`}`);
async function ok(r: Promise<{ status: number; body: any }>): Promise<Json> {
  const { status, body } = await r;
  expect(status, JSON.stringify(body)).toBe(200);
  return body;
}
/** The swaps in pools of `token`, newest first. */
const ofToken = (token: Hex, keep: (m: Made) => boolean = () => true): string[] =>
  newestFirst(everySwap().filter((m) => (lc(m.pool.token0) === lc(token) || lc(m.pool.token1) === lc(token)) && keep(m)));
const ofPool = (pool: Created, keep: (m: Made) => boolean = () => true): string[] =>
  newestFirst(everySwap().filter((m) => m.pool === pool && keep(m)));

/** Every page of a list by cursor, `limit` a page: the hashes in order and how many pages. */
async function allPages(
  call: (query: string) => Promise<{ status: number; body: any }>,
  query: string,
): Promise<{ seen: string[]; pages: number }> {
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: Json = await ok(call(`${query}${cursor === null ? '' : `&cursor=${cursor}`}`));
    expect(page.page).toBe(pages);
    seen.push(...hashes(page));
    cursor = page.cursor;
    pages++;
  } while (cursor !== null);
  return { seen, pages };
}

describe('GET /erc20/:address/swaps', () => {
  it("lists the token's swaps in every pool of it, newest first, each item as the wallet list has it", async () => {
    const { usdc, weth, tka } = net.dex.tokens;
    // Ether: WETH/USDC and TKA/WETH (the router's hop); USDC: WETH/USDC and TKB/USDC (V3).
    for (const token of [weth, usdc]) {
      const page = await ok(tokenSwapsOf(lc(token.address)));
      expect(hashes(page), token.address).toEqual(ofToken(token.address));
      expect(new Set((page.result as Json[]).map((i) => i['pairAddress'])).size).toBe(2);
      expect(page).toMatchObject({ page: 0, page_size: 100, cursor: null });
      for (const m of everySwap().filter((x) => ofToken(token.address).includes(x.receipt.transactionHash)))
        expect(
          (page.result as Json[]).find((i) => i['transactionHash'] === m.receipt.transactionHash),
          m.receipt.transactionHash,
        ).toMatchObject(await tradeItem(m, token.address));
    }
    // Any case in the path; a token that never traded has none.
    expect(hashes(await ok(tokenSwapsOf(tka.address)))).toEqual(ofToken(tka.address));
    expect(await ok(tokenSwapsOf(lc(DEV_ACCOUNTS[0].address)))).toMatchObject({ result: [], cursor: null });
  });

  it('filters by transaction type (the asked token bought or sold, as analytics counts it, even for a quote token) and blocks, and pages by cursor in either order', async () => {
    const { usdc, weth } = net.dex.tokens;
    const token = lc(usdc.address);
    // USDC and WETH are quote tokens of their pools (they route to USD): a buy of USDC is the pool's sell of WETH or TKB.
    for (const t of [usdc, weth]) {
      const boughtIt = (m: Made): boolean => lc(m.bought[0]) === lc(t.address);
      const buys = await ok(tokenSwapsOf(lc(t.address), 'transactionTypes=buy'));
      expect(hashes(buys), t.address).toEqual(ofToken(t.address, boughtIt));
      expect(hashes(await ok(tokenSwapsOf(lc(t.address), 'transactionTypes[]=sell'))), t.address).toEqual(
        ofToken(t.address, (m) => !boughtIt(m)),
      );
      expect(ofToken(t.address, boughtIt).length, t.address).toBeGreaterThan(0);
      expect(ofToken(t.address, (m) => !boughtIt(m)).length, t.address).toBeGreaterThan(0);
      // The asked token is the base: bought in a buy, first in the label.
      for (const item of buys.result as Json[])
        expect([item['bought'].address, item['pairLabel'].split('/')[0]]).toEqual([lc(t.address), t === usdc ? 'USDC' : 'WETH']);
    }
    const from = Number(alice[3]!.receipt.blockNumber);
    expect(hashes(await ok(tokenSwapsOf(token, `fromBlock=${from}`)))).toEqual(
      ofToken(usdc.address, (m) => Number(m.receipt.blockNumber) >= from),
    );
    for (const [order, expected] of [
      ['DESC', ofToken(usdc.address)],
      ['ASC', ofToken(usdc.address).reverse()],
    ] as const) {
      const { seen, pages } = await allPages((q) => tokenSwapsOf(token, q), `limit=2&order=${order}`);
      expect(seen).toEqual(expected);
      expect(pages).toBe(Math.ceil(expected.length / 2));
    }
    // Paged while filtered, one buy a page.
    expect((await allPages((q) => tokenSwapsOf(token, q), 'limit=1&transactionTypes=buy')).seen).toEqual(
      ofToken(usdc.address, (m) => lc(m.bought[0]) === token),
    );
    // A cursor is for the list it came from: another token's is refused.
    const { cursor } = await ok(tokenSwapsOf(token, 'limit=1'));
    expect((await tokenSwapsOf(lc(net.dex.tokens.weth.address), `limit=1&cursor=${cursor}`)).status).toBe(400);
  });

  it('answers 400 naming a bad parameter', async () => {
    const bad = await tokenSwapsOf('0x12');
    expect(bad.status).toBe(400);
    expect(bad.body.details.field).toBe('address');
    for (const [query, field] of [
      ['transactionTypes=addLiquidity', 'transactionTypes'],
      ['fromBlock=first', 'fromBlock'],
      ['toDate=someday', 'toDate'],
      ['limit=101', 'limit'],
      ['order=UP', 'order'],
    ] as const) {
      const r = await tokenSwapsOf(lc(net.dex.tokens.usdc.address), query);
      expect(r.status, query).toBe(400);
      expect(String(r.body.details.field), query).toMatch(new RegExp(`^${field}(\.|$)`));
    }
  });
});

describe('GET /pairs/:address/swaps', () => {
  it("lists the pair's swaps newest first under the pair's exchange, label and tokens, each priced at its block", async () => {
    const { usdc, weth, tkb } = net.dex.tokens;
    const head = await net.indexed();
    for (const [pool, base, quote, exchange, factory] of [
      [wethUsdc, weth, usdc, 'MiniSwap', net.dex.v2Factory],
      [tkbUsdc, tkb, usdc, 'MiniSwap v3', net.dex.v3Factory],
    ] as const) {
      const page = await ok(pairSwapsOf(lc(pool.address)));
      expect(hashes(page)).toEqual(ofPool(pool));
      expect(page).toMatchObject({
        page: 0,
        pageSize: 100,
        cursor: null,
        pairAddress: lc(pool.address),
        exchangeName: exchange,
        exchangeAddress: lc(factory.address),
        exchangeLogo: null,
        baseToken: { address: lc(base.address), usdPrice: toNumber(await usdAt(base.address, head)) },
        quoteToken: { address: lc(quote.address), symbol: 'USDC', usdPrice: 1 },
      });
      for (const m of everySwap().filter((x) => x.pool === pool)) {
        const { base: b, quote: q, common } = await legsOf(m);
        const want = {
          ...common,
          baseTokenAmount: b.item.amount,
          quoteTokenAmount: q.item.amount,
          baseTokenPriceUsd: b.item.usdPrice,
          quoteTokenPriceUsd: q.item.usdPrice,
        };
        expect(
          (page.result as Json[]).find((i) => i['transactionHash'] === m.receipt.transactionHash),
          m.receipt.transactionHash,
        ).toEqual(want);
      }
    }
    expect((await ok(pairSwapsOf(lc(wethUsdc.address))))['pairLabel']).toBe('WETH/USDC');
  });

  it('filters by transaction type and pages by cursor', async () => {
    const pair = lc(wethUsdc.address);
    expect(hashes(await ok(pairSwapsOf(pair, 'transactionTypes=sell')))).toEqual(ofPool(wethUsdc, (m) => m.type === 'sell'));
    expect(hashes(await ok(pairSwapsOf(pair, 'transactionTypes=buy,sell')))).toEqual(ofPool(wethUsdc));
    // Liquidity changes are the reference's types too, but not indexed: none.
    expect(hashes(await ok(pairSwapsOf(pair, 'transactionTypes=addLiquidity')))).toEqual([]);
    const { seen, pages } = await allPages((q) => pairSwapsOf(pair, q), 'limit=1&order=ASC');
    expect(seen).toEqual(ofPool(wethUsdc).reverse());
    expect(pages).toBe(ofPool(wethUsdc).length);
  });

  it('answers 404 for a pair the server does not index, 400 naming a bad parameter', async () => {
    for (const unknown of [lc(net.dex.tokens.usdc.address), `0x${'ab'.repeat(32)}`]) {
      const r = await pairSwapsOf(unknown);
      expect(r.status, unknown).toBe(404);
      expect(r.body.message).toContain('no DEX pool');
    }
    for (const [path, query, field] of [
      ['0x12', '', 'address'],
      [lc(wethUsdc.address), 'transactionTypes=hold', 'transactionTypes'],
      [lc(wethUsdc.address), 'limit=-1', 'limit'],
    ] as const) {
      const r = await pairSwapsOf(path, query);
      expect(r.status, `${path} ${query}`).toBe(400);
      expect(String(r.body.details.field), query).toMatch(new RegExp(`^${field}(\.|$)`));
    }
  });
});

describe('swaps by token across a reorg', () => {
  it("takes back a swap a reorg removes from its tokens' lists", async () => {
    const { usdc, tkb } = net.dex.tokens;
    await net.indexed();
    const before = { tkb: ofToken(tkb.address), usdc: ofToken(usdc.address) };
    const snapshot = await rpc<string>('evm_snapshot', []);
    const gone = await v3Swap(usdc.address, net.units('100', usdc), ALICE, 'buy');
    await net.indexed();
    expect(hashes(await ok(tokenSwapsOf(lc(tkb.address))))).toEqual([gone.receipt.transactionHash, ...before.tkb]);
    await rpc('evm_revert', [snapshot]);
    // A longer chain without it, where a swap in another pool of USDC (WETH/USDC) is mined in its block.
    const instead = await v2Swap(wethUsdc, usdc.address, net.units('100', usdc), BOB, 'buy');
    expect(instead.receipt.blockNumber).toBe(gone.receipt.blockNumber);
    await rpc('anvil_mine', ['0x4']);
    await net.indexed();
    expect(
      await until(async () => hashes(await ok(tokenSwapsOf(lc(usdc.address))))[0] === instead.receipt.transactionHash, 10_000, 20),
    ).toBe(true);
    expect(hashes(await ok(tokenSwapsOf(lc(tkb.address))))).toEqual(before.tkb);
    expect(hashes(await ok(tokenSwapsOf(lc(usdc.address))))).toEqual([instead.receipt.transactionHash, ...before.usdc]);
    // The index itself, read from the server's own store (the lists skip an entry whose swap row is gone, so they alone
    // would not see an entry left behind): the removed swap's entries are gone, the swap mined instead has its own.
    const store = openStore(net.s.dir);
    try {
      const entries = (token: Hex) =>
        store.range<string>('dexTokenSwaps', {
          start: tokenSwapsPrefix('0x539', lc(token)),
          end: `${tokenSwapsPrefix('0x539', lc(token))}\uffff`,
        });
      const atBlock = (token: Hex) =>
        entries(token)
          .filter((e) => e.key.split('/')[2] === pos(Number(gone.receipt.blockNumber), 0).split('/')[0])
          .map((e) => e.value);
      expect(atBlock(tkb.address)).toEqual([]);
      expect(atBlock(usdc.address)).toEqual([lc(wethUsdc.address)]);
      expect(entries(tkb.address).length).toBe(before.tkb.length);
      expect(entries(usdc.address).length).toBe(before.usdc.length + 1);
    } finally {
      void store.close();
    }
  });
});

describe('a busy token (the DEX tables written directly to a real store)', () => {
  const CHAIN = '0x539';
  const [BASE, USDC, BUSY, FACTORY, TRADER] = ['01', '04', '06', '03', '0c'].map((b) => `0x${b.repeat(20)}`) as [
    string,
    string,
    string,
    string,
    string,
  ];
  /** BASE/USDC: HOT_SWAPS swaps, ten a block, buys and sells of BASE in turn. */
  const HOT = `0x${'bb'.repeat(20)}`;
  const HOT_SWAPS = 12_000;
  /** BUSY's index entries (past SCAN), 150 a block, in pools of its own without swap rows: only the scan's bound is looked at. */
  const BUSY_ENTRIES = SCAN + 50_000;
  const HEAD = 1_200;
  const T0 = 1_800_000_000;
  const row: PoolRow = ['v2', BASE, USDC, FACTORY, null];
  const pricing: Pricing = {
    wrappedNative: `0x${'02'.repeat(20)}`,
    stablecoins: [USDC],
    whitelist: [],
    factories: [{ address: FACTORY, kind: 'v2', name: 'Test' }],
  };
  let store: Store;
  let deps: DataDeps;
  /** Entries read from each table by the request under test (range rows and gets). */
  const reads = new Map<string, number>();
  const counted = (kv: Store): Kv =>
    new Proxy(kv, {
      get(target, prop, recv) {
        const count = (what: string, n: number): void => void reads.set(what, (reads.get(what) ?? 0) + n);
        if (prop === 'range')
          return (table: never, o: never) =>
            target.range(table, o).map((r, _, all) => (r === all[0] && count(`range ${table}`, all.length), r));
        if (prop === 'get') return (table: never, k: string) => (count(`get ${table}`, 1), target.get(table, k));
        const v = Reflect.get(target, prop, recv);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as Kv;

  beforeAll(() => {
    store = openStore(tempDir());
    const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, (T0 + HEAD) * 1000);
    const indexer = new DataIndexer(
      store,
      [],
      clock,
      quietLog(() => clock.now()),
    );
    deps = {
      kv: counted(store),
      tokens: new TokenMetadata(store, noNode.call),
      reads: noNode,
      indexer,
      follower: () => undefined,
      pricing: () => pricing,
    };
    store.transact(() => {
      for (let b = 1; b <= HEAD; b++) store.put('blockTimes', blockKey(CHAIN, b), [T0 + b, `0x${b.toString(16).padStart(64, '0')}`]);
      store.put('indexState', CHAIN, { number: HEAD, hash: `0x${HEAD.toString(16).padStart(64, '0')}`, start: 1 } satisfies IndexState);
      store.put('chainState', CHAIN, { head: HEAD, confirmed: HEAD, tracer: null, pruned: -1 });
      store.put('dexPools', poolKey(CHAIN, HOT), row);
      for (const [a, b] of [
        [BASE, USDC],
        [USDC, BASE],
      ])
        store.put('dexPools', `${tokenPoolsPrefix(CHAIN, a!, b!)}${HOT}`, 0);
      for (let i = 0; i < HOT_SWAPS; i++) {
        const place = pos(1 + Math.floor(i / 10), i % 10);
        const buy = i % 2 === 0;
        store.put('dexSwaps', poolRowsPrefix(CHAIN, HOT) + place, [
          `0x${i.toString(16).padStart(64, '0')}`,
          0,
          TRADER,
          buy ? '-1000000000000000000' : '1000000000000000000',
          buy ? '1000000' : '-1000000',
        ] satisfies SwapRow);
        for (const token of [BASE, USDC]) store.put('dexTokenSwaps', tokenSwapsPrefix(CHAIN, token) + place, HOT);
      }
      for (let i = 0; i < BUSY_ENTRIES; i++)
        store.put(
          'dexTokenSwaps',
          tokenSwapsPrefix(CHAIN, BUSY) + pos(HEAD - Math.floor(i / 150), i % 150),
          `0x${(i % 16).toString(16).repeat(40)}`,
        );
    });
  }, 120_000);
  afterAll(() => {
    void store?.close();
  });

  it("counts a token's day from at most SCAN index entries, and at most DAY_SWAPS swaps of a pool", async () => {
    reads.clear();
    await tokenAnalytics(deps, CHAIN, analyticsQuery.parse({ tokenAddress: BUSY }));
    // Read a chunk at a time: at most one chunk past the bound.
    expect(reads.get('range dexTokenSwaps')).toBeLessThanOrEqual(SCAN + 1_000);
    reads.clear();
    const a = await tokenAnalytics(deps, CHAIN, analyticsQuery.parse({ tokenAddress: BASE }));
    // The pool's newest 10,000 swaps: half of them buys.
    expect([a.totalBuys['24h'], a.totalSells['24h'], a.totalBuyers['24h']]).toEqual([5_000, 5_000, 1]);
    expect(reads.get('get dexSwaps')).toBeLessThanOrEqual(10_000);
  });

  it('answers a pair list asked only for liquidity changes (never indexed) with an empty last page, reading no swap', async () => {
    reads.clear();
    for (const transactionTypes of [['addLiquidity'], ['addLiquidity', 'removeLiquidity']]) {
      const p = await pairSwaps(deps, CHAIN, pairSwapsQuery.parse({ address: HOT, transactionTypes }));
      expect([p.result, p.cursor], transactionTypes.join()).toEqual([[], null]);
    }
    expect(reads.get('range dexSwaps') ?? 0).toBe(0);
    // With a swap type beside them: the swaps of that type.
    expect(
      (
        await pairSwaps(deps, CHAIN, pairSwapsQuery.parse({ address: HOT, transactionTypes: ['addLiquidity', 'sell'], limit: '3' }))
      ).result.map((i) => i.transactionType),
    ).toEqual(['sell', 'sell', 'sell']);
  });
});
