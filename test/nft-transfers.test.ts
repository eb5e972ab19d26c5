import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, parseUnits } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { DEV_ACCOUNTS, deploy, publicClient, write, type Deployed } from './contracts.js';
import { startChainpost, stopAndClean, indexedTo, until, type Running } from './helpers.js';
import { byPosition, paid, scan, type Json, type Scanned } from './nft-scan.js';
import { moralisFor } from './sdk.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';

/**
 * GET /api/v2.2/nft/:address/:token_id/transfers end to end: ERC-721 and
 * ERC-1155 tokens minted, moved and sold on a real anvil, the real server
 * binary following it, and every answer compared with what anvil's own blocks
 * and receipts say (read with viem, decoded with viem's ABI decoder).
 */

const [K0, K1, K2] = DEV_ACCOUNTS;
const BIG_ID = 2n ** 255n + 7n;
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
let spam: Deployed;
let multi: Deployed;
let token: Deployed;
let market: Deployed;

const send = (c: Deployed, functionName: string, args: readonly unknown[], account = K0, value?: bigint) =>
  write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account, ...(value === undefined ? {} : { value }) });
const rpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;

/** Waits until the server has ingested anvil's head. */
async function indexed(): Promise<void> {
  const target = Number(await publicClient(anvil.url).getBlockNumber());
  const ok = await indexedTo(s, target);
  expect(ok, `the server ingested block ${target}`).toBe(true);
}

/** Every NFT transfer on anvil so far, from its blocks and receipts. */
async function chainTransfers(): Promise<{ all: Scanned[]; receipts: Map<number, Json[]> }> {
  const head = Number(await publicClient(anvil.url).getBlockNumber());
  const all: Scanned[] = [];
  const receipts = new Map<number, Json[]>();
  for (let n = 0; n <= head; n++) {
    const tag = `0x${n.toString(16)}`;
    const [block, r] = await Promise.all([rpc<Json>('eth_getBlockByNumber', [tag, true]), rpc<Json[]>('eth_getBlockReceipts', [tag])]);
    receipts.set(n, r);
    all.push(...scan(block, r));
  }
  return { all, receipts };
}

/** What the chain says one token's transfers are, oldest first. */
async function expectedOf(c: Deployed, tokenId: bigint): Promise<Json[]> {
  const { all } = await chainTransfers();
  return all
    .filter((t) => t.contract === c.address.toLowerCase() && t.tokenId === tokenId)
    .sort(byPosition)
    .map((t) => t.record);
}

/** The endpoint on the devnet (0x539) unless the query names a chain (the default is 0x1). */
const path = (c: Deployed | string, tokenId: bigint | string, query = ''): string => {
  const q = /(^|&)chain=/.test(query) ? query : query === '' ? 'chain=0x539' : `${query}&chain=0x539`;
  return `/api/v2.2/nft/${typeof c === 'string' ? c : c.address}/${tokenId}/transfers?${q}`;
};

/** Every page from `query` on, following the cursors; checks the envelope of each. */
async function pages(c: Deployed, tokenId: bigint, query: string, cursor: string | null = null, firstPage = 0): Promise<Json[]> {
  const out: Json[] = [];
  let page = firstPage;
  do {
    const r = await s.call(path(c, tokenId, cursor === null ? query : `${query}&cursor=${cursor}`));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ page: page++, block_exists: true, index_complete: true });
    out.push(...r.body.result);
    cursor = r.body.cursor;
  } while (cursor !== null);
  return out;
}

beforeAll(async () => {
  anvil = await startAnvil({ chainId: 1337 });
  // After 2026-09-25, when moonbeam leaves the data API.
  s = await startChainpost(serverEnv(anvil, { CHAINPOST_NOW: '2026-10-01T00:00:00Z' }));
  [nft, spam, multi, token, market] = [
    await deploy(anvil.url, 'TestNFT', ['Test NFT', 'TNFT']),
    await deploy(anvil.url, 'TestNFT', ['Claim your reward at www.example.xyz', 'CLAIM']),
    await deploy(anvil.url, 'TestMulti'),
    await deploy(anvil.url, 'TestToken', ['Test Token', 'TT', 6, parseUnits('1000', 6)]),
    await deploy(anvil.url, 'TestMarket'),
  ];
  // ERC-721 token 1: minted, moved around three accounts, then sold for ether and then for TT.
  await send(nft, 'mint', [A0, 1n]);
  await send(nft, 'transferFrom', [A0, A1, 1n]);
  await send(nft, 'safeTransferFrom', [A1, A2, 1n], K1);
  await send(nft, 'transferFrom', [A2, A0, 1n], K2);
  for (const k of [K0, K1]) await send(nft, 'setApprovalForAll', [market.address, true], k);
  await send(market, 'buy', [nft.address, 1n, A0], K1, parseEther('1.5'));
  await send(token, 'transfer', [A2, parseUnits('10', 6)]);
  await send(token, 'approve', [market.address, parseUnits('10', 6)], K2);
  await send(market, 'buyWith', [nft.address, 1n, A1, token.address, parseUnits('2.5', 6)], K2);
  // Token 2: minted only. Token 3: sold for ether once. A token id above 2^255.
  await send(nft, 'mint', [A0, 2n]);
  await send(nft, 'mint', [A0, 3n]);
  await send(market, 'buy', [nft.address, 3n, A0], K2, parseEther('0.25'));
  await send(nft, 'mint', [A1, BIG_ID]);
  await send(spam, 'mint', [A1, 1n]);
  // ERC-1155 id 7: minted, moved, batch-minted with id 7 twice in one log, batch-moved by an operator.
  await send(multi, 'mint', [A0, 7n, 10n]);
  await send(multi, 'safeTransferFrom', [A0, A1, 7n, 3n, '0x']);
  await send(multi, 'mintBatch', [A1, [7n, 8n, 7n], [1n, 2n, 4n]]);
  await send(multi, 'setApprovalForAll', [A2, true], K1);
  await send(multi, 'safeBatchTransferFrom', [A1, A0, [7n, 7n, 8n], [2n, 1n, 2n], '0x'], K2);
  await indexed();
}, 60_000);

afterAll(async () => {
  await stopAndClean(s);
  await anvil?.stop();
});

describe('GET /api/v2.2/nft/:address/:token_id/transfers on anvil', () => {
  it('answers every field of every ERC-721 transfer as the chain has it, newest first by default and oldest first with ASC', async () => {
    for (const id of [1n, 2n, 3n]) {
      const expected = await expectedOf(nft, id);
      expect(expected.length).toBeGreaterThan(0);
      const r = await s.call(path(nft, id));
      expect(r.status).toBe(200);
      expect(r.body).toEqual({
        page: 0,
        page_size: 100,
        cursor: null,
        result: [...expected].reverse(),
        block_exists: true,
        index_complete: true,
      });
      expect((await s.call(path(nft, id, 'order=ASC'))).body.result).toEqual(expected);
    }
    const one = await expectedOf(nft, 1n);
    expect(one.map((t) => [t['from_address'], t['to_address']])).toEqual([
      ['0x0000000000000000000000000000000000000000', A0],
      [A0, A1],
      [A1, A2],
      [A2, A0],
      [A0, A1],
      [A1, A2],
    ]);
    // The ether sale: value is the transaction's, amount the token's.
    expect(one[4]).toMatchObject({
      value: parseEther('1.5').toString(),
      amount: '1',
      contract_type: 'ERC721',
      transaction_type: 'Single',
      operator: null,
      possible_spam: 'false',
      verified_collection: 'false',
    });
    expect(one[4]!['block_timestamp']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
  });

  it('answers ERC-1155 transfers: single, batch (an id listed twice in one log gives two records) and the operator', async () => {
    const expected = await expectedOf(multi, 7n);
    expect(expected.map((t) => [t['transaction_type'], t['amount'], t['operator'], t['from_address'], t['to_address']])).toEqual([
      ['Single', '10', A0, '0x0000000000000000000000000000000000000000', A0],
      ['Single', '3', A0, A0, A1],
      ['Batch', '1', A0, '0x0000000000000000000000000000000000000000', A1],
      ['Batch', '4', A0, '0x0000000000000000000000000000000000000000', A1],
      ['Batch', '2', A2, A1, A0],
      ['Batch', '1', A2, A1, A0],
    ]);
    expect(new Set(expected.map((t) => `${t['transaction_hash']}/${t['log_index']}`)).size).toBe(4);
    expect((await s.call(path(multi, 7n, 'order=ASC'))).body.result).toEqual(expected);
    expect((await s.call(path(multi, 7n, 'order=DESC'))).body.result).toEqual([...expected].reverse());
    expect((await s.call(path(multi, 8n, 'order=ASC'))).body.result).toEqual(await expectedOf(multi, 8n));
  });

  it('reads the token id as hex with format=hex, answers it in decimal, and any address case', async () => {
    const expected = [...(await expectedOf(nft, BIG_ID))].reverse();
    expect(expected).toHaveLength(1);
    expect(expected[0]!['token_id']).toBe(BIG_ID.toString());
    for (const q of [`format=hex`, `format=hex&chain=devnet`]) {
      expect((await s.call(path(nft, `0x${BIG_ID.toString(16)}`, q))).body.result).toEqual(expected);
      expect((await s.call(path(nft, BIG_ID.toString(16).toUpperCase(), q))).body.result).toEqual(expected);
    }
    expect((await s.call(path(nft.address.toLowerCase(), BIG_ID, 'format=decimal&chain=1337'))).body.result).toEqual(expected);
    expect((await s.call(path(nft.address.toUpperCase().replace('0X', '0x'), BIG_ID, 'chain=0x539'))).body.result).toEqual(expected);
  });

  it('flags a contract whose name advertises a claim as possible spam', async () => {
    const r = await s.call(path(spam, 1n));
    expect(r.body.result).toHaveLength(1);
    expect(r.body.result[0]).toMatchObject({ possible_spam: 'true', verified_collection: 'false' });
  });

  it('pages by cursor with limit 2 to the end, nothing lost or repeated, in both orders', async () => {
    for (const [c, id] of [
      [nft, 1n],
      [multi, 7n],
    ] as const) {
      const expected = await expectedOf(c, id);
      const asc = await pages(c, id, 'order=ASC&limit=2');
      expect(asc).toEqual(expected);
      expect(await pages(c, id, 'limit=2')).toEqual([...expected].reverse());
      const first = await s.call(path(c, id, 'limit=2'));
      expect(first.body).toMatchObject({ page: 0, page_size: 2 });
      expect(first.body.cursor).toEqual(expect.any(String));
    }
    // The last page says so: cursor null.
    const last = await s.call(path(nft, 1n, 'limit=6'));
    expect(last.body).toMatchObject({ page_size: 6, cursor: null });
    expect(last.body.result).toHaveLength(6);
  });

  it('keeps a cursor valid while new blocks arrive: DESC goes on below its page, ASC reaches the new transfer', async () => {
    const before = await expectedOf(nft, 2n);
    expect(before).toHaveLength(1);
    for (let i = 0; i < 3; i++) await send(nft, 'transferFrom', i % 2 === 0 ? [A0, A1, 2n] : [A1, A0, 2n], i % 2 === 0 ? K0 : K1);
    await indexed();
    const old = await expectedOf(nft, 2n);
    const desc = await s.call(path(nft, 2n, 'limit=2'));
    const asc = await s.call(path(nft, 2n, 'limit=2&order=ASC'));
    // More blocks: a transfer of this token and one of another.
    await send(nft, 'transferFrom', [A1, A2, 2n], K1);
    await send(nft, 'mint', [A2, 99n]);
    await indexed();
    const now = await expectedOf(nft, 2n);
    expect(now).toHaveLength(old.length + 1);
    expect(await pages(nft, 2n, 'limit=2', desc.body.cursor, 1)).toEqual([...old].reverse().slice(2));
    expect([...asc.body.result, ...(await pages(nft, 2n, 'limit=2&order=ASC', asc.body.cursor, 1))]).toEqual(now);
  });

  it('include_prices: last_sale is the token’s most recent sale, in ether or in an ERC-20, and null when it was never sold', async () => {
    const { all, receipts } = await chainTransfers();
    const saleOf = (id: bigint) =>
      all
        .filter((t) => t.contract === nft.address.toLowerCase() && t.tokenId === id && paid(t, receipts.get(t.at[0])!) !== undefined)
        .sort(byPosition)
        .at(-1);
    const sold = saleOf(1n)!;
    const erc20 = await s.call(path(nft, 1n, 'include_prices=true'));
    expect(erc20.body.result).toHaveLength(6);
    for (const t of erc20.body.result) {
      expect(t.last_sale).toEqual({
        transaction_hash: sold.record['transaction_hash'],
        block_timestamp: sold.record['block_timestamp'],
        buyer_address: A2,
        seller_address: A1,
        price: '2500000',
        price_formatted: '2.5',
        usd_price_at_sale: null,
        current_usd_value: null,
        token_address: nft.address.toLowerCase(),
        token_id: '1',
        payment_token: {
          token_name: 'Test Token',
          token_symbol: 'TT',
          token_logo: null,
          token_decimals: '6',
          token_address: token.address.toLowerCase(),
        },
      });
    }
    const native = saleOf(3n)!;
    const r3 = await s.call(path(nft, 3n, 'include_prices=true&limit=1'));
    expect(r3.body.result[0].last_sale).toEqual({
      transaction_hash: native.record['transaction_hash'],
      block_timestamp: native.record['block_timestamp'],
      buyer_address: A2,
      seller_address: A0,
      price: parseEther('0.25').toString(),
      price_formatted: '0.25',
      usd_price_at_sale: null,
      current_usd_value: null,
      token_address: nft.address.toLowerCase(),
      token_id: '3',
      payment_token: NATIVE,
    });
    // Never sold (token 2 only moved without payment, the ERC-1155 id only minted and moved): null; without include_prices: absent.
    expect(saleOf(2n)).toBeUndefined();
    for (const r of [await s.call(path(nft, 2n, 'include_prices=true')), await s.call(path(multi, 7n, 'include_prices=true'))]) {
      expect(r.body.result.length).toBeGreaterThan(0);
      for (const t of r.body.result) expect(t.last_sale).toBeNull();
    }
    for (const q of ['', 'include_prices=false']) expect((await s.call(path(nft, 1n, q))).body.result[0]).not.toHaveProperty('last_sale');
  });

  it('answers a chain it does not follow 400 naming chain and how to add it, and a removed chain 400', async () => {
    expect((await s.call(path(nft, 1n))).body.index_complete).toBe(true);
    // No chain named: 0x1, which this server does not follow.
    for (const p of [
      `/api/v2.2/nft/${nft.address}/1/transfers`,
      path(nft, 1n, 'chain=eth'),
      path(nft, 1n, 'chain=0x1'),
      path(nft, 1n, 'chain=base'),
    ]) {
      const r = await s.call(p);
      expect(r.status, p).toBe(400);
      expect(r.body, p).toMatchObject({
        message: expect.stringMatching(/^chain: 0x[0-9a-f]+ \(.+\) is not followed by this server; add it to CHAINPOST_CHAINS/),
        details: { field: 'chain' },
      });
    }
    const moonbeam = await s.call(path(nft, 1n, 'chain=moonbeam'));
    expect(moonbeam.status).toBe(400);
    expect(moonbeam.body).toMatchObject({
      message: expect.stringMatching(/^chain: chain 0x504 \(moonbeam\) was removed on 2026-09-25/),
      details: { field: 'chain' },
    });
  });

  it('answers every bad parameter 400 naming it', async () => {
    const other = (await s.call(path(multi, 7n, 'limit=1'))).body.cursor as string;
    const asc = (await s.call(path(nft, 1n, 'limit=1&order=ASC'))).body.cursor as string;
    const bad: Array<[string, string, string]> = [
      ['address', path('0x123', 1n), ''],
      ['address', path('not-an-address', 1n), ''],
      ['token_id', path(nft, 'abc'), ''],
      ['token_id', path(nft, '0x10'), 'format=decimal'],
      ['token_id', path(nft, 'zz'), 'format=hex'],
      ['token_id', path(nft, (2n ** 256n).toString()), ''],
      ['format', path(nft, 1n), 'format=octal'],
      ['include_prices', path(nft, 1n), 'include_prices=yes'],
      ['limit', path(nft, 1n), 'limit=101'],
      ['limit', path(nft, 1n), 'limit=1.5'],
      ['limit', path(nft, 1n), 'limit=-1'],
      ['limit', path(nft, 1n), 'limit=ten'],
      ['order', path(nft, 1n), 'order=asc'],
      ['order', path(nft, 1n), 'order=NEWEST'],
      ['cursor', path(nft, 1n), 'cursor=not-a-cursor'],
      ['cursor', path(nft, 1n), `cursor=${other}`],
      ['cursor', path(nft, 1n), `cursor=${asc}&order=DESC`],
      ['chain', path(nft, 1n, 'chain=notachain'), ''],
      ['chain', path(nft, 1n, 'chain=0x539&chain=0x1'), ''],
    ];
    for (const [field, p, q] of bad) {
      const r = await s.call(`${p}&${q}`);
      expect(r.status, `${p} ${q}`).toBe(400);
      expect(r.body.details, `${p} ${q}`).toMatchObject({ field });
      expect(r.body.message).toMatch(new RegExp(`^${field}: `));
    }
    // limit=0 is the default page size (the interface allows 0).
    expect((await s.call(path(nft, 1n, 'limit=0'))).body.page_size).toBe(100);
  });

  it('is parsed by the official SDK (Moralis.EvmApi.nft.getNFTTransfers), paging with next()', async () => {
    const Moralis = await moralisFor(s.url, s.key);
    const expected = [...(await expectedOf(nft, 1n))].reverse();
    let res = await Moralis.EvmApi.nft.getNFTTransfers({ chain: '0x539', address: nft.address, tokenId: '1', limit: 4 });
    const got: Json[] = [];
    for (;;) {
      expect(res.raw.page_size).toBe(4);
      got.push(...res.result.map((t: { toJSON(): Json }) => t.toJSON()));
      if (!res.hasNext()) break;
      res = await res.next();
    }
    expect(got).toHaveLength(expected.length);
    got.forEach((t, i) => {
      const e = expected[i]!;
      expect(t).toMatchObject({
        chain: '0x539',
        tokenId: e['token_id'],
        fromAddress: e['from_address'],
        toAddress: e['to_address'],
        blockNumber: e['block_number'],
        blockHash: e['block_hash'],
        transactionHash: e['transaction_hash'],
        transactionType: e['transaction_type'],
        transactionIndex: Number(e['transaction_index']),
        logIndex: Number(e['log_index']),
        amount: Number(e['amount']),
        contractType: 'ERC721',
        possibleSpam: 'false',
        verifiedCollection: 'false',
      });
      expect(new Date(t['blockTimestamp']).toISOString()).toBe(e['block_timestamp']);
    });
    // value parses as the transaction's native amount in wei (the ether sale is the second newest transfer).
    const all = (await Moralis.EvmApi.nft.getNFTTransfers({ chain: '0x539', address: nft.address, tokenId: '1' })).result;
    expect(all[1].transactionHash).toBe(expected[1]!['transaction_hash']);
    expect(all[1].value.wei).toBe(parseEther('1.5').toString());
  });
});
