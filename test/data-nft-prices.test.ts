import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatEther, parseEther, zeroAddress, type TransactionReceipt } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { devnetApi as api } from './data-api.js';
import { DEV_ACCOUNTS, deploy, publicClient, write, type Deployed } from './contracts.js';
import { indexedTo, startChainpost, stopAndClean, type Running } from './helpers.js';
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
  const ahead = Math.ceil(Date.now() / 1000) + 10 * 86_400;
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
  await send(market, 'buyWith', [nft.address, 3n, A0, token.address, parseEther('5')], K1);
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
