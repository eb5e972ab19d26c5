import { allPages, devnetApi } from './data-api.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, zeroAddress } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { ServiceClock } from '../engine/clock.js';
import { DataIndexer } from '../engine/data-api/common/indexer.js';
import { nftIndex, type ContractStats, type Holding } from '../engine/data-api/nft/index/writer.js';
import { chainReads } from '../engine/evm/chain-reads.js';
import { quietLog } from './kit/quiet-log.js';
import { systemTicker } from '../app/process.js';
import { openStore } from '../storage/env.js';
import { DEV_ACCOUNTS, deploy, publicClient, write, type Deployed } from './contracts.js';
import { startChainpost, stopAndClean, indexedTo, until, type Running } from './helpers.js';
import { byPosition, scan, type Json, type Scanned } from './nft-scan.js';
import { moralisFor } from './sdk.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';

/**
 * The NFT endpoints of the Data API end to end: ERC-721 and ERC-1155 tokens
 * minted, moved (TransferBatch included), sold and burned on a real anvil, the
 * real server following it, and each answer compared with what the chain says:
 * ownerOf and balanceOf read with viem, the transfers scanned from anvil's
 * blocks and receipts. Metadata from data: URIs and from an HTTP server on
 * 127.0.0.1 (the server listens on loopback, so it may fetch there).
 */

const [K0, K1] = DEV_ACCOUNTS;
const WALLETS = [A0, A1, A2];

let anvil: Anvil;
let s: Running;
let nft: Deployed;
let multi: Deployed;
let market: Deployed;
let meta: Server;
let metaUrl: string;
/** Requests the metadata server answered, by path. */
const served = new Map<string, number>();
/** What the metadata server answers, by path. */
const docs = new Map<string, string>();

const send = (c: Deployed, functionName: string, args: readonly unknown[], account = K0, value?: bigint) =>
  write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account, ...(value === undefined ? {} : { value }) });
const rpc = <T>(method: string, params: unknown[]): Promise<T> =>
  publicClient(anvil.url).request({ method: method as never, params: params as never }) as Promise<T>;
const read = <T>(c: Deployed, functionName: string, args: readonly unknown[]): Promise<T> =>
  publicClient(anvil.url).readContract({ address: c.address, abi: c.abi, functionName, args }) as Promise<T>;
const lower = (c: Deployed): string => c.address.toLowerCase();
const api = devnetApi;

/** Whether the NFT's answer is a 200 carrying fetched metadata (any other answer, an error body included, is not yet). */
const fetched = async (server: Running, path: string): Promise<boolean> => {
  const r = await server.call(path);
  return r.status === 200 && r.body.metadata !== null;
};

/** Waits until the server has ingested anvil's head (the NFT reads then wait for the index to reach it). */
async function indexed(): Promise<void> {
  const target = Number(await publicClient(anvil.url).getBlockNumber());
  const ok = await indexedTo(s, target);
  expect(ok, `the server ingested block ${target}`).toBe(true);
}

/** Every NFT transfer on anvil, oldest first, from its blocks and receipts (viem's decoder, not the server's). */
async function chainTransfers(): Promise<Scanned[]> {
  const head = Number(await publicClient(anvil.url).getBlockNumber());
  const all: Scanned[] = [];
  for (let n = 0; n <= head; n++) {
    const tag = `0x${n.toString(16)}`;
    const [block, r] = await Promise.all([rpc<Json>('eth_getBlockByNumber', [tag, true]), rpc<Json[]>('eth_getBlockReceipts', [tag])]);
    all.push(...scan(block, r));
  }
  return all.sort(byPosition);
}

/** The token ids each contract ever moved, by the chain's own transfers. */
async function tokenIds(c: Deployed): Promise<bigint[]> {
  return [...new Set((await chainTransfers()).filter((t) => t.contract === lower(c)).map((t) => t.tokenId))].sort((a, b) =>
    a < b ? -1 : 1,
  );
}

/** What the chain says each wallet holds: ownerOf for the ERC-721, balanceOf for the ERC-1155; `contract/id/owner → amount`. */
async function chainHoldings(): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  for (const id of await tokenIds(nft)) {
    const owner = await read<string>(nft, 'ownerOf', [id]).catch(() => undefined); // burned: reverts
    if (owner !== undefined) out.set(`${lower(nft)}/${id}/${owner.toLowerCase()}`, 1n);
  }
  for (const id of await tokenIds(multi)) {
    for (const w of WALLETS) {
      const amount = await read<bigint>(multi, 'balanceOf', [w, id]);
      if (amount > 0n) out.set(`${lower(multi)}/${id}/${w}`, amount);
    }
  }
  return out;
}

const pages = (path: string, query: string): Promise<Json[]> => allPages(s, path, query);

/** The server's holdings, from every wallet's /:address/nft. */
async function servedHoldings(): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  for (const w of WALLETS)
    for (const item of await pages(`/${w}/nft`, 'limit=2'))
      out.set(`${item.token_address}/${item.token_id}/${item.owner_of}`, BigInt(item.amount));
  return out;
}

const json64 = (doc: unknown): string => `data:application/json;base64,${Buffer.from(JSON.stringify(doc)).toString('base64')}`;

beforeAll(async () => {
  meta = createServer((req, res) => {
    served.set(req.url!, (served.get(req.url!) ?? 0) + 1);
    const doc = docs.get(req.url!);
    if (doc === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(doc);
  });
  await new Promise<void>((resolve) => meta.listen(0, '127.0.0.1', resolve));
  metaUrl = `http://127.0.0.1:${(meta.address() as AddressInfo).port}`;
  docs.set(
    '/nft/3.json',
    JSON.stringify({
      name: 'Three',
      description: 'fetched',
      image: 'https://example.org/3.png',
      external_url: 'https://example.org/3',
      attributes: [{ trait_type: 'colour', value: 'red' }],
    }),
  );
  docs.set('/big.json', JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) }));
  docs.set(`/multi/${7n.toString(16).padStart(64, '0')}.json`, JSON.stringify({ name: 'Seven' }));
  anvil = await startAnvil({ chainId: 1337 });
  s = await startChainpost(serverEnv(anvil));
  [nft, multi, market] = [
    await deploy(anvil.url, 'TestNFT', ['Test NFT', 'TNFT']),
    await deploy(anvil.url, 'TestMulti'),
    await deploy(anvil.url, 'TestMarket'),
  ];
  // ERC-721: five tokens with each kind of URI; token 1 moved twice, token 2 sold for ether, token 6 burned.
  for (const [to, id] of [
    [A0, 1n],
    [A0, 2n],
    [A1, 3n],
    [A1, 4n],
    [A2, 5n],
    [A0, 6n],
  ] as const)
    await send(nft, 'mint', [to, id]);
  await send(nft, 'setTokenURI', [1n, json64({ name: 'One', attributes: [{ trait_type: 'size', value: 1, display_type: 'number' }] })]);
  await send(nft, 'setTokenURI', [2n, `data:application/json,${encodeURIComponent(JSON.stringify({ name: 'Two', image: 'ipfs://two' }))}`]);
  await send(nft, 'setTokenURI', [3n, `${metaUrl}/nft/3.json`]);
  await send(nft, 'setTokenURI', [4n, `${metaUrl}/big.json`]);
  await send(nft, 'setTokenURI', [5n, 'ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/5.json']);
  await send(nft, 'transferFrom', [A0, A1, 1n]);
  await send(nft, 'safeTransferFrom', [A1, A2, 1n], K1);
  await send(nft, 'setApprovalForAll', [market.address, true]);
  await send(market, 'buy', [nft.address, 2n, A0], K1, parseEther('0.5'));
  await send(nft, 'burn', [6n]);
  // ERC-1155: single and batch mints and moves, one batch listing id 7 twice.
  await send(multi, 'setURI', [`${metaUrl}/multi/{id}.json`]);
  await send(multi, 'mint', [A0, 7n, 10n]);
  await send(multi, 'safeTransferFrom', [A0, A1, 7n, 3n, '0x']);
  await send(multi, 'mintBatch', [A1, [7n, 8n, 7n], [1n, 2n, 4n]]);
  await send(multi, 'safeBatchTransferFrom', [A1, A0, [7n, 8n, 7n], [2n, 1n, 6n], '0x'], K1);
  await indexed();
}, 90_000);

afterAll(async () => {
  if (process.env['E2E_LOG']) console.log(s?.output());
  await stopAndClean(s);
  await anvil?.stop();
  await new Promise((r) => meta?.close(r));
});

describe('NFT ownership on anvil', () => {
  it('holds what ownerOf and balanceOf say, for every wallet (ERC-721 and ERC-1155, TransferBatch included)', async () => {
    const chain = await chainHoldings();
    expect(chain.size).toBeGreaterThan(6);
    expect(await servedHoldings()).toEqual(chain);
    // id 7: 10 minted to A0, 3 to A1, 5 batch-minted to A1, 8 batch-moved back to A0.
    expect(chain.get(`${lower(multi)}/7/${A0}`)).toBe(15n);
    expect(chain.has(`${lower(multi)}/7/${A1}`)).toBe(false);
  });

  it('answers a token, its owners and a contract’s owners as the chain has them', async () => {
    const chain = await chainHoldings();
    for (const id of await tokenIds(nft)) {
      const owner = [...chain.keys()].find((k) => k.startsWith(`${lower(nft)}/${id}/`))?.split('/')[2];
      const one = await s.call(api(`/nft/${nft.address}/${id}`));
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({
        token_address: lower(nft),
        token_id: String(id),
        contract_type: 'ERC721',
        owner_of: owner ?? null,
        name: 'Test NFT',
        symbol: 'TNFT',
        possible_spam: false,
        verified_collection: false,
      });
      const owners = await s.call(api(`/nft/${nft.address}/${id}/owners`));
      expect(owners.body.result.map((o: Json) => o.owner_of)).toEqual(owner === undefined ? [] : [owner]);
    }
    for (const id of [7n, 8n]) {
      const owners = (await s.call(api(`/nft/${multi.address}/${id}/owners`))).body.result as Json[];
      const expected = WALLETS.flatMap((w) =>
        chain.has(`${lower(multi)}/${id}/${w}`) ? [[w, String(chain.get(`${lower(multi)}/${id}/${w}`))]] : [],
      );
      expect(owners.map((o) => [o.owner_of, o.amount]).sort()).toEqual(expected.sort());
    }
    const all = await pages(`/nft/${multi.address}/owners`, 'limit=1');
    expect(all.map((o) => `${o.token_address}/${o.token_id}/${o.owner_of}`).sort()).toEqual(
      [...chain.keys()].filter((k) => k.startsWith(lower(multi))).sort(),
    );
    // The contract's tokens: those still held (the burned one is gone), minted block and minter from the mint.
    const transfers = await chainTransfers();
    const tokens = await pages(`/nft/${nft.address}`, 'limit=2');
    expect(tokens.map((t) => t.token_id)).toEqual(['1', '2', '3', '4', '5']);
    for (const t of tokens) {
      const mint = transfers.find(
        (x) => x.contract === lower(nft) && String(x.tokenId) === t.token_id && x.record['from_address'] === zeroAddress,
      )!;
      expect(t).toMatchObject({ block_number_minted: mint.record['block_number'], minter_address: A0 });
    }
    // format=hex reads and answers the id in hex.
    expect((await s.call(api(`/nft/${nft.address}/0x3`, 'format=hex'))).body).toMatchObject({ token_id: '0x3', owner_of: A1 });
    // Burned: still answered (its transfers are indexed), with no owner; a token never seen is 404.
    expect((await s.call(api(`/nft/${nft.address}/6`))).body).toMatchObject({ token_id: '6', owner_of: null, amount: '0' });
    expect((await s.call(api(`/nft/${nft.address}/77`))).status).toBe(404);
  });

  it('pages a wallet’s NFTs of several contracts one by one, ids shared between contracts neither lost nor repeated', async () => {
    await send(nft, 'mint', [A1, 8n]); // multi's id 8 is A1's too
    await indexed();
    const chain = [...(await chainHoldings()).keys()].filter((k) => k.endsWith(`/${A1}`));
    for (const order of [
      `token_addresses[]=${nft.address}&token_addresses[]=${multi.address}`,
      `token_addresses=${multi.address},${nft.address}`,
    ]) {
      const got = (await pages(`/${A1}/nft`, `${order}&limit=1`)).map((n) => `${n.token_address}/${n.token_id}/${n.owner_of}`);
      expect(got.filter((k) => k.includes('/8/'))).toHaveLength(2);
      expect([...got].sort()).toEqual([...chain].sort());
    }
  });

  it('lists collections per wallet with counts, and the contract statistics', async () => {
    const chain = await chainHoldings();
    for (const w of WALLETS) {
      const r = await s.call(api(`/${w}/nft/collections`, 'token_counts=true'));
      const expected = [lower(nft), lower(multi)].flatMap((c) => {
        const count = [...chain.keys()].filter((k) => k.startsWith(`${c}/`) && k.endsWith(`/${w}`)).length;
        return count === 0 ? [] : [{ token_address: c, count }];
      });
      expect(
        r.body.result
          .map((c: Json) => ({ token_address: c.token_address, count: c.count }))
          .sort((a: Json, b: Json) => (a.token_address < b.token_address ? -1 : 1)),
      ).toEqual(expected.sort((a, b) => (a.token_address < b.token_address ? -1 : 1)));
    }
    const transfers = await chainTransfers();
    for (const c of [nft, multi]) {
      const keys = [...chain.keys()].filter((k) => k.startsWith(`${lower(c)}/`));
      const stats = await s.call(api(`/nft/${c.address}/stats`));
      expect(stats.body).toEqual({
        total_tokens: String(new Set(keys.map((k) => k.split('/')[1])).size),
        owners: { current: String(new Set(keys.map((k) => k.split('/')[2])).size) },
        transfers: { total: String(transfers.filter((t) => t.contract === lower(c)).length) },
      });
    }
    const one = await s.call(api(`/nft/${nft.address}/1/stats`));
    expect(one.body).toEqual({
      owners: { current: '1' },
      transfers: { total: String(transfers.filter((t) => t.contract === lower(nft) && t.tokenId === 1n).length) },
    });
    const meta = await s.call(api(`/nft/${multi.address}/metadata`));
    expect(meta.body).toMatchObject({
      token_address: lower(multi),
      contract_type: 'ERC1155',
      possible_spam: false,
      verified_collection: false,
      collection_logo: null,
    });
  });
});

describe('NFT transfer lists', () => {
  it('answers a wallet’s, a contract’s, a block range’s and a block’s transfers as the receipts have them, paging to the end', async () => {
    const all = await chainTransfers();
    const records = (keep: (t: Scanned) => boolean) => all.filter(keep).map((t) => t.record);
    for (const w of WALLETS) {
      const expected = records((t) => t.record['from_address'] === w || t.record['to_address'] === w);
      expect(await pages(`/${w}/nft/transfers`, 'limit=2&order=ASC')).toEqual(expected);
      expect(await pages(`/${w}/nft/transfers`, 'limit=3')).toEqual([...expected].reverse());
      expect(await pages(`/${w}/nft/transfers`, `contract_addresses[]=${multi.address}&limit=2&order=ASC`)).toEqual(
        expected.filter((r) => r['token_address'] === lower(multi)),
      );
    }
    expect(await pages(`/nft/${multi.address}/transfers`, 'limit=2&order=ASC')).toEqual(records((t) => t.contract === lower(multi)));
    const [from, to] = [Number(all[3]!.record['block_number']), Number(all[8]!.record['block_number'])];
    expect(await pages('/nft/transfers', `from_block=${from}&to_block=${to}&limit=2&order=ASC`)).toEqual(
      records((t) => t.at[0] >= from && t.at[0] <= to),
    );
    // Dates: the blocks' own timestamps as bounds.
    const [fromDate, toDate] = [all[3]!.record['block_timestamp'], all[8]!.record['block_timestamp']];
    const byDate = records((t) => t.record['block_timestamp'] >= fromDate && t.record['block_timestamp'] <= toDate);
    expect(await pages('/nft/transfers', `from_date=${fromDate}&to_date=${toDate}&order=ASC`)).toEqual(byDate);
    const batch = all.find((t) => t.record['transaction_type'] === 'Batch')!;
    const inBlock = records((t) => t.at[0] === batch.at[0]);
    expect((await s.call(api(`/block/${batch.at[0]}/nft/transfers`, 'order=ASC'))).body).toMatchObject({
      result: inBlock,
      block_exists: true,
      index_complete: true,
    });
    expect((await s.call(api(`/block/${batch.record['block_hash']}/nft/transfers`, 'order=ASC'))).body.result).toEqual(inBlock);
    expect((await s.call(api('/block/99999999/nft/transfers'))).body).toMatchObject({ result: [], block_exists: false });
  });

  it('keeps a wallet cursor valid while new blocks arrive', async () => {
    const first = await s.call(api(`/${A1}/nft/transfers`, 'limit=2'));
    const before = (await chainTransfers())
      .filter((t) => t.record['from_address'] === A1 || t.record['to_address'] === A1)
      .map((t) => t.record)
      .reverse();
    await send(nft, 'mint', [A1, 40n]);
    await indexed();
    const rest = await s.call(api(`/${A1}/nft/transfers`, `limit=100&cursor=${first.body.cursor}`));
    expect([...first.body.result, ...rest.body.result]).toEqual(before);
  });
});

describe('NFT metadata', () => {
  it('decodes data: URIs (base64 and plain JSON) at once, normalized', async () => {
    const one = await s.call(api(`/nft/${nft.address}/1`));
    expect(one.body.token_uri).toMatch(/^data:application\/json;base64,/);
    expect(JSON.parse(one.body.metadata)).toEqual({ name: 'One', attributes: [{ trait_type: 'size', value: 1, display_type: 'number' }] });
    expect(one.body.normalized_metadata).toEqual({
      name: 'One',
      description: null,
      image: null,
      external_link: null,
      animation_url: null,
      attributes: [{ trait_type: 'size', value: 1, display_type: 'number', max_value: null, trait_count: 0, order: null }],
    });
    expect(one.body.last_metadata_sync).toEqual(expect.any(String));
    const two = await s.call(api(`/nft/${nft.address}/2`));
    expect(JSON.parse(two.body.metadata)).toEqual({ name: 'Two', image: 'ipfs://two' });
  });

  it('fetches an http document once in the background from 127.0.0.1; refuses one over 1 MiB; leaves ipfs unfetched without a gateway', async () => {
    const path = `/nft/${nft.address}/3`;
    const first = await s.call(api(path));
    expect(first.body.token_uri).toBe(`${metaUrl}/nft/3.json`);
    expect(await until(() => fetched(s, api(path)), 5_000, 20)).toBe(true);
    const three = await s.call(api(path));
    expect(JSON.parse(three.body.metadata)).toEqual(JSON.parse(docs.get('/nft/3.json')!));
    expect(three.body.normalized_metadata).toMatchObject({
      name: 'Three',
      description: 'fetched',
      image: 'https://example.org/3.png',
      external_link: 'https://example.org/3',
      attributes: [{ trait_type: 'colour', value: 'red' }],
    });
    for (let i = 0; i < 3; i++) await s.call(api(`/${A1}/nft`));
    expect(served.get('/nft/3.json')).toBe(1);
    // Too large: fetched once, no metadata. ipfs:// without CHAINPOST_IPFS_GATEWAY: never fetched.
    await until(async () => served.get('/big.json') === 1, 5_000, 20);
    expect((await s.call(api(`/nft/${nft.address}/4`))).body.metadata).toBeNull();
    expect(served.get('/big.json')).toBe(1);
    const five = await s.call(api(`/nft/${nft.address}/5`));
    expect(five.body).toMatchObject({
      token_uri: 'ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG/5.json',
      metadata: null,
      normalized_metadata: null,
    });
    // ERC-1155: uri() with {id} replaced by 64 hex digits.
    const seven = `/nft/${multi.address}/7`;
    expect((await s.call(api(seven))).body.token_uri).toBe(`${metaUrl}/multi/${7n.toString(16).padStart(64, '0')}.json`);
    expect(await until(() => fetched(s, api(seven)), 5_000, 20)).toBe(true);
  });

  it('fetches ipfs:// through CHAINPOST_IPFS_GATEWAY when one is configured', async () => {
    const cid = 'bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi';
    docs.set(`/ipfs/${cid}/50.json`, JSON.stringify({ name: 'Fifty' }));
    const gated = await startChainpost(serverEnv(anvil, { CHAINPOST_IPFS_GATEWAY: `${metaUrl}/ipfs/` }));
    try {
      await send(nft, 'mint', [A2, 50n]);
      await send(nft, 'setTokenURI', [50n, `ipfs://${cid}/50.json`]);
      const target = Number(await publicClient(anvil.url).getBlockNumber());
      expect(await indexedTo(gated, target)).toBe(true);
      const path = api(`/nft/${nft.address}/50`);
      expect(await until(() => fetched(gated, path), 5_000, 20)).toBe(true);
      const fifty = await gated.call(path);
      expect(fifty.status, JSON.stringify(fifty.body)).toBe(200);
      expect(JSON.parse(fifty.body.metadata)).toEqual({ name: 'Fifty' });
      expect(served.get(`/ipfs/${cid}/50.json`)).toBe(1);
      // The server without a gateway leaves it unfetched.
      await indexed();
      expect((await s.call(path)).body).toMatchObject({ token_uri: `ipfs://${cid}/50.json`, metadata: null });
    } finally {
      await stopAndClean(gated);
    }
  });

  it('fetches again on resync (sync mode waits for the document)', async () => {
    docs.set('/nft/3.json', JSON.stringify({ name: 'Three again' }));
    const r = await s.call(api(`/nft/${nft.address}/3/metadata/resync`, 'flag=uri&mode=sync'));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'Metadata synced' });
    expect(served.get('/nft/3.json')).toBe(2);
    expect(JSON.parse((await s.call(api(`/nft/${nft.address}/3`))).body.metadata)).toEqual({ name: 'Three again' });
    expect((await s.call(api(`/nft/${nft.address}/3/metadata/resync`))).status).toBe(202);
    const sync = await s.call(api(`/nft/${nft.address}/sync`), { method: 'PUT' });
    expect(sync.status).toBe(201);
  });

  it('answers getMultipleNFTs in the order asked, null for a token never seen, 400 beyond 25', async () => {
    const tokens = [
      { token_address: nft.address, token_id: '3' },
      { token_address: multi.address, token_id: '8' },
      { token_address: nft.address, token_id: '999' },
    ];
    const r = await s.call(api('/nft/getMultipleNFTs'), { method: 'POST', json: { tokens } });
    expect(r.status).toBe(200);
    expect(r.body.map((t: Json | null) => t && [t.token_address, t.token_id, t.contract_type])).toEqual([
      [lower(nft), '3', 'ERC721'],
      [lower(multi), '8', 'ERC1155'],
      null,
    ]);
    const many = await s.call(api('/nft/getMultipleNFTs'), {
      method: 'POST',
      json: { tokens: Array.from({ length: 26 }, (_, i) => ({ token_address: nft.address, token_id: String(i) })) },
    });
    expect(many.status).toBe(400);
    expect(many.body.details).toMatchObject({ field: 'tokens' });
  });
});

describe('NFT trades', () => {
  it('lists the ether sale by contract and by token, and as the lowest price', async () => {
    const sale = (await chainTransfers()).find(
      (t) =>
        t.contract === lower(nft) &&
        t.tokenId === 2n &&
        t.record['from_address'] === A0 &&
        t.record['to_address'] !== zeroAddress &&
        t.txValue > 0n,
    )!;
    const expected = {
      transaction_hash: sale.record['transaction_hash'],
      transaction_index: sale.record['transaction_index'],
      token_ids: ['2'],
      seller_address: A0,
      buyer_address: A1,
      token_address: lower(nft),
      marketplace_address: lower(market),
      price_token_address: null,
      price: parseEther('0.5').toString(),
      block_timestamp: sale.record['block_timestamp'],
      block_number: sale.record['block_number'],
      block_hash: sale.record['block_hash'],
    };
    expect((await s.call(api(`/nft/${nft.address}/trades`))).body).toEqual({ page: 0, page_size: 100, cursor: null, result: [expected] });
    expect((await s.call(api(`/nft/${nft.address}/2/trades`))).body.result).toEqual([expected]);
    expect((await s.call(api(`/nft/${nft.address}/1/trades`))).body.result).toEqual([]);
    expect((await s.call(api(`/nft/${nft.address}/lowestprice`, 'days=7'))).body).toEqual(expected);
    expect((await s.call(api(`/nft/${multi.address}/lowestprice`))).status).toBe(404);
    // include_prices: the sale as last_sale, on the token and on its collection.
    const lastSale = {
      transaction_hash: expected.transaction_hash,
      block_timestamp: expected.block_timestamp,
      buyer_address: A1,
      seller_address: A0,
      price: expected.price,
      price_formatted: '0.5',
      usd_price_at_sale: null,
      current_usd_value: null,
      token_address: lower(nft),
      token_id: '2',
      payment_token: {
        token_name: 'Ether',
        token_symbol: 'ETH',
        token_logo: null,
        token_decimals: '18',
        token_address: '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee',
      },
    };
    const held = (await s.call(api(`/${A1}/nft`, `include_prices=true&token_addresses=${nft.address}`))).body.result as Json[];
    expect(held.find((n) => n.token_id === '2')!.last_sale).toEqual(lastSale);
    expect(held.find((n) => n.token_id === '3')!.last_sale).toBeNull();
    const collections = (await s.call(api(`/${A1}/nft/collections`, 'include_prices=true'))).body.result as Json[];
    expect(collections.find((c) => c.token_address === lower(nft))!.last_sale).toEqual(lastSale);
    expect(collections.find((c) => c.token_address === lower(multi))!.last_sale).toBeNull();
    expect((await s.call(api(`/nft/${nft.address}/2`, 'include_prices=true'))).body.last_sale).toEqual(lastSale);
  });
});

describe('a reorg', () => {
  it('takes back ownership, counts and lists of the blocks that left the chain', async () => {
    const before = await servedHoldings();
    const statsBefore = (await s.call(api(`/nft/${nft.address}/stats`))).body;
    const snapshot = await rpc<string>('evm_snapshot', []);
    await send(nft, 'transferFrom', [A1, A0, 3n], K1);
    await send(multi, 'safeTransferFrom', [A0, A2, 7n, 5n, '0x']);
    await indexed();
    expect((await servedHoldings()).get(`${lower(nft)}/3/${A0}`)).toBe(1n);
    expect((await servedHoldings()).get(`${lower(multi)}/7/${A2}`)).toBe(5n);
    await rpc('evm_revert', [snapshot]);
    // A longer branch without those transfers.
    await rpc('anvil_mine', ['0x4']);
    await indexed();
    expect(await until(async () => (await servedHoldings()).get(`${lower(nft)}/3/${A1}`) === 1n, 10_000, 50)).toBe(true);
    expect(await servedHoldings()).toEqual(await chainHoldings());
    expect(await servedHoldings()).toEqual(before);
    expect((await s.call(api(`/nft/${nft.address}/stats`))).body).toEqual(statsBefore);
    expect((await pages(`/${A2}/nft/transfers`, 'order=ASC')).map((t) => t.transaction_hash)).toEqual(
      (await chainTransfers())
        .filter((t) => t.record['from_address'] === A2 || t.record['to_address'] === A2)
        .map((t) => t.record['transaction_hash']),
    );
  });
});

describe('bad parameters', () => {
  it('answers each 400 naming the field', async () => {
    const other = (await s.call(api(`/${A0}/nft`, 'limit=1'))).body.cursor as string;
    const bad: Array<[string, string]> = [
      ['address', api('/0x12/nft')],
      ['limit', api(`/${A0}/nft`, 'limit=101')],
      ['format', api(`/${A0}/nft`, 'format=oct')],
      ['exclude_spam', api(`/${A0}/nft`, 'exclude_spam=yes')],
      ['token_addresses.0', api(`/${A0}/nft`, 'token_addresses[]=0x1')],
      ['cursor', api(`/${A1}/nft`, `cursor=${other}`)],
      ['cursor', api(`/${A1}/nft/collections`, 'cursor=zzz')],
      ['token_counts', api(`/${A1}/nft/collections`, 'token_counts=1')],
      ['contract_addresses.0', api(`/${A1}/nft/transfers`, 'contract_addresses=nope')],
      ['from_block', api(`/${A1}/nft/transfers`, 'from_block=-1')],
      ['to_date', api('/nft/transfers', 'to_date=yesterday')],
      ['order', api(`/nft/${nft.address}/transfers`, 'order=up')],
      ['block_number_or_hash', api('/block/0xzz/nft/transfers')],
      ['block_number_or_hash', api('/block/latest/nft/transfers')],
      ['token_id', api(`/nft/${nft.address}/abc`)],
      ['token_id', api(`/nft/${nft.address}/zz/owners`, 'format=hex')],
      ['normalizeMetadata', api(`/nft/${nft.address}`, 'normalizeMetadata=maybe')],
      ['range', api(`/nft/${nft.address}`, 'range=x')],
      ['include_prices', api(`/nft/${nft.address}/metadata`, 'include_prices=2')],
      ['marketplace', api(`/nft/${nft.address}/trades`, 'marketplace=ebay')],
      ['days', api(`/nft/${nft.address}/lowestprice`, 'days=0')],
      ['flag', api(`/nft/${nft.address}/1/metadata/resync`, 'flag=all')],
      ['mode', api(`/nft/${nft.address}/1/metadata/resync`, 'mode=now')],
      ['token_id', api(`/nft/${nft.address}/-1/stats`)],
      ['token_id', api(`/nft/${nft.address}/1.5/trades`)],
      ['address', api('/nft/0xnope/stats')],
      ['address', api('/nft/0x12/owners')],
      ['limit', api(`/nft/${nft.address}/owners`, 'limit=500')],
      ['limit', api(`/nft/${nft.address}/1/owners`, 'limit=x')],
      ['from_date', api(`/nft/${nft.address}/trades`, 'from_date=someday')],
      ['to_block', api(`/nft/${nft.address}/1/trades`, 'to_block=abc')],
      ['cursor', api(`/nft/${nft.address}/trades`, 'cursor=abc')],
      ['chain', `/api/v2.2/${A0}/nft?chain=0x1`],
    ];
    for (const [field, p] of bad) {
      const r = await s.call(p);
      expect(r.status, p).toBe(400);
      expect(r.body.details, p).toMatchObject({ field });
    }
    const sync = await s.call(api('/nft/0x1234/sync'), { method: 'PUT' });
    expect([sync.status, sync.body.details]).toEqual([400, { field: 'address' }]);
    for (const body of [
      {},
      { tokens: [] },
      { tokens: [{ token_address: '0x1', token_id: '1' }] },
      { tokens: [{ token_address: nft.address, token_id: 'x' }] },
    ]) {
      const r = await s.call(api('/nft/getMultipleNFTs'), { method: 'POST', json: body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.details.field).toMatch(/^tokens/);
    }
  });
});

describe('the official SDK (Moralis.EvmApi.nft)', () => {
  it('parses every NFT call of this group with non-null answers', async () => {
    const Moralis = await moralisFor(s.url, s.key);
    const nftApi = Moralis.EvmApi.nft;
    const chain = '0x539';
    const address = nft.address;
    const wallet = await nftApi.getWalletNFTs({ chain, address: A1 });
    expect(wallet.result.map((n: { tokenId: string | number }) => String(n.tokenId)).length).toBeGreaterThan(0);
    expect(wallet.result[0].ownerOf.lowercase).toBe(A1);
    const only = await nftApi.getWalletNFTs({ chain, address: A1, tokenAddresses: [multi.address] });
    expect(only.result.map((n: { tokenAddress: { lowercase: string } }) => n.tokenAddress.lowercase)).toEqual([lower(multi)]);
    expect((await nftApi.getWalletNFTCollections({ chain, address: A1 })).result.length).toBeGreaterThan(0);
    expect((await nftApi.getWalletNFTTransfers({ chain, address: A1 })).result.length).toBeGreaterThan(0);
    expect((await nftApi.getContractNFTs({ chain, address })).result.length).toBeGreaterThan(0);
    expect((await nftApi.getNFTOwners({ chain, address })).result.length).toBeGreaterThan(0);
    expect((await nftApi.getNFTContractMetadata({ chain, address })).result.name).toBe('Test NFT');
    const multiple = await nftApi.getMultipleNFTs({ chain, tokens: [{ tokenAddress: address, tokenId: '1' }] });
    expect(multiple.result[0].tokenId).toBe('1');
    const one = await nftApi.getNFTMetadata({ chain, address, tokenId: '1' });
    expect(one.result.metadata).toMatchObject({ name: 'One' });
    expect((await nftApi.getNFTTokenIdOwners({ chain, address, tokenId: '1' })).result[0].ownerOf.lowercase).toBe(A2);
    expect((await nftApi.getNFTContractTransfers({ chain, address })).result.length).toBeGreaterThan(0);
    expect((await nftApi.getNFTTransfersFromToBlock({ chain, fromBlock: 0 })).result.length).toBeGreaterThan(0);
    const block = Number((await chainTransfers())[0]!.record['block_number']);
    expect((await nftApi.getNFTTransfersByBlock({ chain, blockNumberOrHash: String(block) })).result.length).toBeGreaterThan(0);
    expect((await nftApi.getNFTTrades({ chain, address })).result[0].price.wei).toBe(parseEther('0.5').toString());
    expect((await nftApi.getNFTLowestPrice({ chain, address })).result.price.wei).toBe(parseEther('0.5').toString());
    expect((await nftApi.getNFTTradesByToken({ chain, address, tokenId: '2' })).result[0].tokenIds).toEqual(['2']);
    expect((await nftApi.getNFTCollectionStats({ chain, address })).result.totalTokens).toEqual(expect.any(String));
    expect((await nftApi.getNFTTokenStats({ chain, address, tokenId: '1' })).result.transfers.total).toEqual(expect.any(String));
    expect((await nftApi.reSyncMetadata({ chain, address, tokenId: '1' })).result).not.toBeNull();
    expect(await nftApi.syncNFTContract({ chain, address })).not.toBeNull();
  });
});

describe('possible spam', () => {
  it('flags a collection whose name advertises a claim as possible spam, and leaves it out with exclude_spam', async () => {
    const spam = await deploy(anvil.url, 'TestNFT', ['Claim your reward at www.example.xyz', 'CLAIM']);
    await send(spam, 'mint', [A2, 1n]);
    await indexed();
    const all = (await s.call(api(`/${A2}/nft`))).body.result as Json[];
    expect(all.find((n) => n.token_address === lower(spam))).toMatchObject({
      possible_spam: true,
      name: 'Claim your reward at www.example.xyz',
    });
    expect(all.filter((n) => n.token_address !== lower(spam)).every((n) => n.possible_spam === false)).toBe(true);
    const clean = (await s.call(api(`/${A2}/nft`, 'exclude_spam=true'))).body.result as Json[];
    // The same holdings less the spam; compared by what is held, as a token's metadata may be read between the two calls.
    const held = (list: Json[]) => list.map((n) => [n.token_address, n.token_id, n.amount]);
    expect(held(clean)).toEqual(held(all.filter((n) => n.token_address !== lower(spam))));
    expect(clean.length).toBeGreaterThan(0);
    const collections = (await s.call(api(`/${A2}/nft/collections`, 'exclude_spam=true'))).body.result as Json[];
    expect(collections.map((c) => c.token_address)).not.toContain(lower(spam));
    expect((await s.call(api(`/${A2}/nft/collections`))).body.result.map((c: Json) => c.token_address)).toContain(lower(spam));
  });
});

describe('an index that starts after the tokens were created', () => {
  it('reads ERC-1155 balances at the block before a wallet is first met, so amounts and counts match balanceOf', async () => {
    // Indexing starts at `start`, after every mint: A0's and A1's earlier holdings are never seen arriving.
    const start = Number(await publicClient(anvil.url).getBlockNumber()) + 1;
    await send(multi, 'safeTransferFrom', [A0, A2, 7n, 2n, '0x']);
    await send(multi, 'safeBatchTransferFrom', [A0, A1, [7n], [1n], '0x']);
    await send(multi, 'safeTransferFrom', [A1, A2, 8n, 1n, '0x'], K1);
    await send(nft, 'transferFrom', [A1, A2, 3n], K1);
    await indexed();
    await s.stop('SIGTERM');
    // The server's own store (every block record stored), indexed again from `start` by the real index code, reading anvil.
    const store = openStore(s.dir);
    const node = jsonRpcUpstream(anvil.url);
    try {
      for (const table of [
        'nftOwners',
        'nftTokens',
        'nftCollections',
        'nftStats',
        'nftRefs',
        'nftTrades',
        'indexState',
        'indexUndo',
      ] as const) {
        await store.transactAsync(() => store.removeRange(table, { start: '', end: '\uffff', limit: 1_000_000 }));
      }
      const log = quietLog(Date.now);
      const indexer = new DataIndexer(store, [nftIndex(chainReads(() => node))], new ServiceClock(systemTicker, Date.now()), log, {
        startBlock: () => start,
      });
      indexer.wake('0x539');
      await indexer.settled();
      expect(indexer.position('0x539')).toBe(Number(await publicClient(anvil.url).getBlockNumber()));
      const holdings = new Map(
        store
          .range<Holding>('nftOwners', { start: `token/0x539/${lower(multi)}/`, end: `token/0x539/${lower(multi)}/\uffff` })
          .map((e) => [e.key.split('/').slice(3).join('/'), BigInt(e.value.amount)]),
      );
      // Every wallet a transfer after the start named, as balanceOf says now.
      for (const [id, w] of [
        [7n, A0],
        [7n, A1],
        [7n, A2],
        [8n, A1],
        [8n, A2],
      ] as const) {
        const amount = await read<bigint>(multi, 'balanceOf', [w, id]);
        expect(holdings.get(`${id.toString(16).padStart(64, '0')}/${w}`) ?? 0n, `${id} ${w}`).toBe(amount);
      }
      // A0 held id 7 long before the start: its balance was read, not counted from 0.
      expect(holdings.get(`${7n.toString(16).padStart(64, '0')}/${A0}`)).toBeGreaterThan(1n);
      expect(store.get<ContractStats>('nftStats', `0x539/${lower(multi)}`)).toMatchObject({
        complete: false,
        owners: 3,
        tokens: 2,
        transfers: 3,
      });
      // ERC-721: the token that moved has its owner; the contract is known to have had code before the start too.
      expect(store.get<Holding>('nftOwners', `token/0x539/${lower(nft)}/${3n.toString(16).padStart(64, '0')}/${A2}`)).toMatchObject({
        amount: '0x1',
      });
      expect(store.get<ContractStats>('nftStats', `0x539/${lower(nft)}`)).toMatchObject({ complete: false });
      indexer.stop();
    } finally {
      await node.close();
      await store.close();
    }
  });
});
