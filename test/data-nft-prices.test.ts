import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatEther, parseEther, zeroAddress, type TransactionReceipt } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { allPages, devnetApi as api } from './data-api.js';
import { DEV_ACCOUNTS, deploy, publicClient, write, type Deployed } from './contracts.js';
import { indexedTo, startChainpost, stopAndClean, type Running } from './helpers.js';
import { openStore } from '../storage/env.js';
import { moralisFor } from './sdk.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';

/**
 * GET /nft/:address/price and /nft/:address/:token_id/price (the SDK's getNFTContractSalePrices and
 * getNFTSalePrices): the last, lowest, highest and average sale paid in ether over `days`, from sales made on a
 * real anvil through a marketplace contract, one of them ten days before the others (the server's clock starts
 * ten days ahead of anvil's, which catches up before the later sales), one paid in an ERC-20 (not counted).
 * Called through the SDK, which parses every figure.
 */

const [K0, K1, K2] = DEV_ACCOUNTS;
const NATIVE = {
  token_name: 'Ether',
  token_symbol: 'ETH',
  token_logo: null,
  token_decimals: '18',
  token_address: '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee',
};

let anvil: Anvil;
let s: Running;
let nft: Deployed;
let market: Deployed;
let Moralis: any;
/** The sale paid in the ERC-20. */
let tokenSale: { receipt: TransactionReceipt; timestamp: number };
/** The server's time when the sales were made (its clock starts ten days ahead of anvil's), Unix seconds. */
let ahead: number;
/** The ether sales, oldest first. */
const sales: Array<{ receipt: TransactionReceipt; tokenId: string; seller: string; buyer: string; price: bigint; timestamp: number }> = [];

const send = (c: Deployed, functionName: string, args: readonly unknown[], account = K0, value?: bigint) =>
  write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account, ...(value === undefined ? {} : { value }) });

async function sell(tokenId: bigint, seller: typeof K0, buyer: typeof K0, ether: string): Promise<void> {
  const receipt = await send(market, 'buy', [nft.address, tokenId, seller.address], buyer, parseEther(ether));
  const block = await publicClient(anvil.url).getBlock({ blockNumber: receipt.blockNumber });
  sales.push({
    receipt,
    tokenId: String(tokenId),
    seller: seller.address.toLowerCase(),
    buyer: buyer.address.toLowerCase(),
    price: parseEther(ether),
    timestamp: Number(block.timestamp),
  });
}

/** A sale as the answer's sale record writes it. */
const record = (i: number) => {
  const x = sales[i]!;
  return {
    transaction_hash: x.receipt.transactionHash,
    block_timestamp: new Date(x.timestamp * 1000).toISOString(),
    buyer_address: x.buyer,
    seller_address: x.seller,
    price: x.price.toString(),
    price_formatted: formatEther(x.price),
    usd_price_at_sale: null,
    current_usd_value: null,
    token_address: nft.address.toLowerCase(),
    token_id: x.tokenId,
    payment_token: NATIVE,
  };
};

type Schema = { required?: string[]; properties?: Record<string, Schema>; nullable?: boolean };
/** The hosted service's response schema of both operations (its OpenAPI document's `soldPrice`). */
const SOLD_PRICE = (
  JSON.parse(gunzipSync(readFileSync(new URL('./fixtures/reference/data-api-openapi-2.2.json.gz', import.meta.url))).toString('utf8')) as {
    components: { schemas: Record<string, Schema> };
  }
).components.schemas['soldPrice']!;

/** The fields `schema` requires that `value` lacks, with their paths. */
function missing(schema: Schema, value: any, at = ''): string[] {
  if (value === null && schema.nullable === true) return [];
  return [
    ...(schema.required ?? []).filter((k) => value?.[k] === undefined).map((k) => `${at}${k}`),
    ...Object.entries(schema.properties ?? {}).flatMap(([k, sub]) =>
      value?.[k] === undefined || value[k] === null ? [] : missing(sub, value[k], `${at}${k}.`),
    ),
  ];
}

const average = (...i: number[]) => {
  const wei = i.reduce((sum, n) => sum + sales[n]!.price, 0n) / BigInt(i.length);
  return { price: wei.toString(), price_formatted: formatEther(wei), current_usd_value: null };
};

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  // The server's clock runs ten days ahead of anvil's: the first sale is ten days old to it, the later ones are
  // made at its time.
  ahead = Math.ceil(Date.now() / 1000) + 10 * 86_400;
  s = await startChainpost(serverEnv(anvil, { CHAINPOST_NOW: new Date(ahead * 1000).toISOString() }));
  [nft, market] = [await deploy(anvil.url, 'TestNFT', ['Sold', 'SOLD']), await deploy(anvil.url, 'TestMarket')];
  const token = await deploy(anvil.url, 'TestToken', ['Pay', 'PAY', 18, parseEther('100')]);
  for (const id of [1n, 2n, 3n]) await send(nft, 'mint', [A0, id]);
  for (const k of [K0, K1]) await send(nft, 'setApprovalForAll', [market.address, true], k);
  await sell(1n, K0, K1, '1');
  await publicClient(anvil.url).request({ method: 'evm_setNextBlockTimestamp' as never, params: [ahead] as never });
  await sell(1n, K1, K2, '3');
  await sell(2n, K0, K1, '2');
  // Paid in an ERC-20: a trade, not a sale in ether.
  await send(token, 'transfer', [A1, parseEther('5')]);
  await send(token, 'approve', [market.address, parseEther('5')], K1);
  const receipt = await send(market, 'buyWith', [nft.address, 3n, A0, token.address, parseEther('5')], K1);
  tokenSale = { receipt, timestamp: Number((await publicClient(anvil.url).getBlock({ blockNumber: receipt.blockNumber })).timestamp) };
  expect(await indexedTo(s, Number(await publicClient(anvil.url).getBlockNumber()))).toBe(true);
  Moralis = await moralisFor(s.url, s.key);
}, 60_000);

afterAll(async () => {
  await stopAndClean(s);
  await anvil?.stop();
});

describe('NFT sale prices', () => {
  it('answers a collection’s last, lowest, highest and average ether sale over the last `days` (7 by default)', async () => {
    const nftApi = Moralis.EvmApi.nft;
    const week = { last_sale: record(2), lowest_sale: record(2), highest_sale: record(1), average_sale: average(1, 2), total_trades: 2 };
    for (const days of [7, undefined]) {
      const answer = await nftApi.getNFTContractSalePrices({
        chain: '0x539',
        address: nft.address,
        ...(days === undefined ? {} : { days }),
      });
      expect(answer.raw).toEqual(week);
      expect(answer.result.highestSale.price).toBe(parseEther('3').toString());
    }
    const month = await nftApi.getNFTContractSalePrices({ chain: '0x539', address: nft.address, days: 30 });
    expect(month.raw).toEqual({
      last_sale: record(2),
      lowest_sale: record(0),
      highest_sale: record(1),
      average_sale: average(0, 1, 2),
      total_trades: 3,
    });
    expect(missing(SOLD_PRICE, month.raw)).toEqual([]);
  });

  it('answers one token’s sales, and empty figures for a token sold only for an ERC-20', async () => {
    const nftApi = Moralis.EvmApi.nft;
    const one = await nftApi.getNFTSalePrices({ chain: '0x539', address: nft.address, tokenId: '1', days: 30 });
    expect(one.raw).toEqual({
      last_sale: record(1),
      lowest_sale: record(0),
      highest_sale: record(1),
      average_sale: average(0, 1),
      total_trades: 2,
    });
    expect((await nftApi.getNFTSalePrices({ chain: '0x539', address: nft.address, tokenId: '1' })).raw).toMatchObject({
      last_sale: record(1),
      lowest_sale: record(1),
      total_trades: 1,
    });
    const none = await nftApi.getNFTSalePrices({ chain: '0x539', address: nft.address, tokenId: '3', days: 365 });
    const empty = {
      transaction_hash: '',
      block_timestamp: '',
      buyer_address: zeroAddress,
      seller_address: zeroAddress,
      price: '',
      price_formatted: '',
      usd_price_at_sale: null,
      current_usd_value: null,
      token_address: nft.address.toLowerCase(),
      token_id: '3',
      payment_token: NATIVE,
    };
    expect(none.raw).toEqual({
      last_sale: empty,
      lowest_sale: empty,
      highest_sale: empty,
      average_sale: { price: '', price_formatted: '', current_usd_value: null },
      total_trades: 0,
      message: `no sale of ${nft.address.toLowerCase()} token 3 paid in the native currency in the last 365 days`,
    });
    expect(none.result.lastSale.paymentToken.tokenSymbol).toBe('ETH');
    expect(missing(SOLD_PRICE, none.raw)).toEqual([]);
  });

  it('answers 400 naming days or token_id', async () => {
    for (const [field, path] of [
      ['days', api(`/nft/${nft.address}/price`, 'days=366')],
      ['days', api(`/nft/${nft.address}/1/price`, 'days=-1')],
      ['token_id', api(`/nft/${nft.address}/x/price`)],
      ['address', api('/nft/0x12/price')],
    ]) {
      const r = await s.call(path!);
      expect([r.status, r.body.details?.field], path).toEqual([400, field]);
    }
  });
});

/** A sale as the trades lists answer it (`trade`). */
const trade = (
  x: { receipt: TransactionReceipt; timestamp: number },
  tokenId: string,
  seller: string,
  buyer: string,
  price: bigint,
  paid: string | null,
) => ({
  transaction_hash: x.receipt.transactionHash,
  transaction_index: String(x.receipt.transactionIndex),
  token_ids: [tokenId],
  seller_address: seller,
  buyer_address: buyer,
  token_address: nft.address.toLowerCase(),
  marketplace_address: market.address.toLowerCase(),
  price_token_address: paid,
  price: price.toString(),
  block_timestamp: new Date(x.timestamp * 1000).toISOString(),
  block_number: String(x.receipt.blockNumber),
  block_hash: x.receipt.blockHash,
});

describe('a wallet’s NFT trades', () => {
  it('lists the trades a wallet bought or sold, of every contract, newest first, paging to the end', async () => {
    const all = [
      ...sales.map((x) => trade(x, x.tokenId, x.seller, x.buyer, x.price, null)),
      trade(tokenSale, '3', A0, A1, parseEther('5'), null),
    ];
    // The ERC-20 sale names its token.
    all[3]!.price_token_address = (await s.call(api(`/nft/${nft.address}/3/trades`))).body.result[0].price_token_address;
    expect(all[3]!.price_token_address).toMatch(/^0x[0-9a-f]{40}$/);
    const newestFirst = [...all].reverse();
    for (const w of [A0, A1, A2]) {
      const expected = newestFirst.filter((t) => t.buyer_address === w || t.seller_address === w);
      expect(expected.length).toBeGreaterThan(0);
      expect(await allPages(s, `/wallets/${w}/nfts/trades`, 'limit=1'), w).toEqual(expected);
    }
    // Bounded by blocks: A1's trades from the second ether sale's block on.
    const from = Number(sales[1]!.receipt.blockNumber);
    expect(await allPages(s, `/wallets/${A1}/nfts/trades`, `from_block=${from}`)).toEqual(
      newestFirst.filter((t) => (t.buyer_address === A1 || t.seller_address === A1) && Number(t.block_number) >= from),
    );
    const none = await s.call(api('/wallets/0x00000000000000000000000000000000000000aa/nfts/trades'));
    expect(none.body).toEqual({ page: 0, page_size: 100, cursor: null, result: [] });
    for (const [field, path] of [
      ['address', api('/wallets/0x12/nfts/trades')],
      ['cursor', api(`/wallets/${A1}/nfts/trades`, 'cursor=abc')],
      ['to_block', api(`/wallets/${A1}/nfts/trades`, 'to_block=x')],
    ]) {
      const r = await s.call(path!);
      expect([r.status, r.body.details?.field], path).toEqual([400, field]);
    }
  });
});

describe('NFT floor prices (sale-based)', () => {
  const DAY = 86_400;
  /** What a floor's fields say of ether sale `i` (null: no sale). */
  const floorOf = (i: number | null, from: number, to: number) => {
    const x = i === null ? undefined : sales[i]!;
    return {
      floor_price: x === undefined ? null : formatEther(x.price),
      floor_price_usd: null,
      currency: x === undefined ? null : 'eth',
      marketplace: null,
      floor_price_basis: {
        rule: 'lowest_sale',
        window_start: new Date(from * 1000).toISOString(),
        window_end: new Date(to * 1000).toISOString(),
        transaction_hash: x?.receipt.transactionHash ?? null,
        token_id: x?.tokenId ?? null,
        marketplace_address: x === undefined ? null : market.address.toLowerCase(),
      },
    };
  };
  /** The answer's window end (the server's time when it answered), checked to be just after the sales. */
  const windowEnd = (body: any): number => {
    const end = Date.parse(body.floor_price_basis.window_end) / 1000;
    expect(end).toBeGreaterThanOrEqual(ahead);
    expect(end).toBeLessThan(ahead + 600);
    return end;
  };

  it('answers a collection’s floor as its lowest ether sale of the last 7 days, and a token’s as its own', async () => {
    const r = await s.call(api(`/nft/${nft.address}/floor-price`));
    expect(r.status).toBe(200);
    const end = windowEnd(r.body);
    // The 1-ether sale is ten days old; the ERC-20 sale is not an ether sale.
    expect(r.body).toEqual({
      address: nft.address.toLowerCase(),
      ...floorOf(2, end - 7 * DAY, end),
      last_updated: new Date(sales[2]!.timestamp * 1000).toISOString(),
    });
    const one = await s.call(api(`/nft/${nft.address}/1/floor-price`));
    const oneEnd = windowEnd(one.body);
    expect(one.body).toEqual({
      address: nft.address.toLowerCase(),
      token_id: '1',
      ...floorOf(1, oneEnd - 7 * DAY, oneEnd),
      last_updated: new Date(sales[1]!.timestamp * 1000).toISOString(),
    });
    // Token 3 was sold for an ERC-20 only: no floor; last_updated is the window's end.
    const three = await s.call(api(`/nft/${nft.address}/0x3/floor-price`, 'format=hex'));
    const threeEnd = windowEnd(three.body);
    expect(three.body).toEqual({
      address: nft.address.toLowerCase(),
      token_id: '0x3',
      ...floorOf(null, threeEnd - 7 * DAY, threeEnd),
      last_updated: new Date(threeEnd * 1000).toISOString(),
    });
  });

  it('answers the historical floor as each UTC day’s lowest ether sale over the interval, oldest first', async () => {
    const days = (interval: string) => allPages(s, `/nft/${nft.address}/floor-price/historical`, `interval=${interval}`);
    // Each day with an ether sale and its lowest sale, from the sales' own timestamps, oldest first.
    const byDay = new Map<number, number>();
    sales.forEach((x, i) => {
      const day = Math.floor(x.timestamp / DAY) * DAY;
      const low = byDay.get(day);
      if (low === undefined || x.price < sales[low]!.price) byDay.set(day, i);
    });
    const expected = [...byDay].sort(([a], [b]) => a - b);
    expect(expected.length).toBeGreaterThanOrEqual(2);
    for (const interval of ['30d', 'all']) {
      const got = await days(interval);
      // Each day's window is the day (every sale is well inside 30 days), the last one ending at the server's time.
      const ends = got.map((d) => Date.parse(d.floor_price_basis.window_end) / 1000);
      expect(got.map((d, k) => ({ ...d, floor_price_basis: { ...d.floor_price_basis, window_end: ends[k] } }))).toEqual(
        expected.map(([day, i], k) => {
          const f = floorOf(i, day, day + DAY);
          const end = k === expected.length - 1 ? Math.min(day + DAY, ends[k]!) : day + DAY;
          return { ...f, floor_price_basis: { ...f.floor_price_basis, window_end: end }, timestamp: new Date(day * 1000).toISOString() };
        }),
      );
      expect(ends.at(-1)!).toBeGreaterThanOrEqual(ahead);
    }
    // One day back: only the recent sales, the 2-ether one the lowest.
    expect((await days('1d')).map((d) => d.floor_price_basis.transaction_hash).at(-1)).toBe(sales[2]!.receipt.transactionHash);
    const r = await s.call(api(`/nft/${nft.address}/floor-price/historical`, 'interval=2d'));
    expect([r.status, r.body.details?.field]).toEqual([400, 'interval']);
  });
});

describe('a store indexed before the wallet lists (schema version 9)', () => {
  it('gets every trade into its buyer’s and seller’s lists when the server starts on it', async () => {
    const lists = () => Promise.all([A0, A1, A2].map((w) => allPages(s, `/wallets/${w}/nfts/trades`, '')));
    const before = await lists();
    expect(before.flat()).toHaveLength(8);
    await s.stop('SIGTERM');
    // The store as version 9 left it: no wallet rows.
    const store = openStore(s.dir);
    await store.transactAsync(() => {
      expect(store.removeRange('nftTrades', { start: 'wallet/', end: 'wallet/\uffff', limit: 1_000 })).toBe(8);
      store.put('meta', 'schemaVersion', 9);
    });
    await store.close();
    s = await startChainpost(serverEnv(anvil, { CHAINPOST_NOW: new Date(ahead * 1000).toISOString() }), s.dir);
    expect(await lists()).toEqual(before);
  });
});
