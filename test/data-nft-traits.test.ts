import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { allPages, devnetApi as api } from './data-api.js';
import { DEV_ACCOUNTS, deploy, publicClient, write, type Deployed } from './contracts.js';
import { indexedTo, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { A0, A1, A2, serverEnv } from './streams-harness.js';

/**
 * NFT traits (GET /nft/:address/traits, /traits/paginate, /traits/resync, POST /nft/:address/nfts-by-traits) and
 * the contracts' metadata in one call (POST /nft/metadata), on a real anvil: a collection whose tokens carry their
 * attributes in data: URIs, one in a document fetched from an HTTP server on 127.0.0.1, one without a URI and one
 * burned. The expected counts are worked out here from the documents the contract was given.
 */

const [K0] = DEV_ACCOUNTS;
type Json = Record<string, any>;

let anvil: Anvil;
let s: Running;
let nft: Deployed;
let other: Deployed;
let meta: Server;

const send = (c: Deployed, functionName: string, args: readonly unknown[], account = K0) =>
  write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account });
const json64 = (doc: unknown): string => `data:application/json;base64,${Buffer.from(JSON.stringify(doc)).toString('base64')}`;
const lower = (c: Deployed): string => c.address.toLowerCase();

/** Each token's attributes as its document has them (token 5 has no URI, token 6 is burned). */
const ATTRIBUTES: Record<number, Json[]> = {
  1: [
    { trait_type: 'Background', value: 'Blue' },
    { trait_type: 'Eyes', value: 'Green' },
  ],
  2: [
    { trait_type: 'Background', value: 'Blue' },
    { trait_type: 'Eyes', value: 'Red' },
    // Listed twice: counted once.
    { trait_type: 'Eyes', value: 'Red' },
  ],
  3: [
    { trait_type: 'Background', value: 'Red' },
    { trait_type: 'Eyes', value: 'Green' },
    { trait_type: 'Level', value: 3, display_type: 'number' },
    // No type: not a trait.
    { value: 'loose' },
  ],
  4: [{ trait_type: 'Background', value: 'Blue' }],
  6: [{ trait_type: 'Background', value: 'Gold' }],
};

/** The collection's traits as the documents of tokens 1–4 say: [type, value, count], over 4 documents. */
const EXPECTED: Array<[string, string, number]> = [
  ['Background', 'Blue', 3],
  ['Eyes', 'Green', 2],
  ['Background', 'Red', 1],
  ['Eyes', 'Red', 1],
  ['Level', '3', 1],
];
const traitOf = ([trait_type, trait_value, count]: [string, string, number]) => ({
  trait_type,
  trait_value,
  count,
  percentage: (count / 4) * 100,
  rarity_label: `Top ${(count / 4) * 100}% trait`,
});

async function indexed(): Promise<void> {
  const target = Number(await publicClient(anvil.url).getBlockNumber());
  expect(await indexedTo(s, target), `the server ingested block ${target}`).toBe(true);
}

beforeAll(async () => {
  meta = createServer((req, res) => {
    if (req.url !== '/4.json') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name: 'Four', attributes: ATTRIBUTES[4] }));
  });
  await new Promise<void>((resolve) => meta.listen(0, '127.0.0.1', resolve));
  anvil = await startAnvil({ chainId: 1337 });
  s = await startChainpost(serverEnv(anvil));
  [nft, other] = [await deploy(anvil.url, 'TestNFT', ['Traits', 'TRT']), await deploy(anvil.url, 'TestNFT', ['Other', 'OTH'])];
  for (const [to, id] of [
    [A0, 1n],
    [A1, 2n],
    [A1, 3n],
    [A2, 4n],
    [A2, 5n],
    [A0, 6n],
  ] as const)
    await send(nft, 'mint', [to, id]);
  for (const id of [1, 2, 3, 6]) await send(nft, 'setTokenURI', [BigInt(id), json64({ name: `#${id}`, attributes: ATTRIBUTES[id] })]);
  await send(nft, 'setTokenURI', [4n, `http://127.0.0.1:${(meta.address() as AddressInfo).port}/4.json`]);
  await send(nft, 'burn', [6n]);
  await send(other, 'mint', [A0, 1n]);
  await indexed();
}, 90_000);

afterAll(async () => {
  await stopAndClean(s);
  await anvil?.stop();
  await new Promise((r) => meta?.close(r));
});

describe('NFT traits', () => {
  it('counts the traits of the documents the server holds, after the collection is read again by traits/resync', async () => {
    // No token asked about yet: no document held, no trait.
    expect((await s.call(api(`/nft/${nft.address}/traits`))).body).toEqual({ traits: [], result: [] });
    const resync = await s.call(api(`/nft/${nft.address}/traits/resync`));
    expect(resync.status).toBe(202);
    expect(resync.body.status).toMatch(/^Request submitted: the metadata of 5 tokens/);
    // The http document is fetched in the background: every expected value once all four documents are read.
    const counted = async () => {
      const r = await s.call(api(`/nft/${nft.address}/traits`));
      return r.body.traits.find((t: Json) => t.trait_type === 'Background')?.values[0]?.count === 3;
    };
    expect(await until(counted, 10_000, 50)).toBe(true);
    const grouped = (await s.call(api(`/nft/${nft.address}/traits`))).body;
    const byType = ['Background', 'Eyes', 'Level'].map((type) => ({
      trait_type: type,
      values: EXPECTED.filter(([t]) => t === type).map((e) => {
        const { trait_type: _t, ...value } = traitOf(e);
        return value;
      }),
    }));
    expect(grouped).toEqual({ traits: byType, result: byType });
  });

  it('pages every trait by count, most common first (DESC) or least (ASC)', async () => {
    const desc = await allPages(s, `/nft/${nft.address}/traits/paginate`, 'limit=2');
    expect(desc).toEqual(EXPECTED.map(traitOf));
    expect(await allPages(s, `/nft/${nft.address}/traits/paginate`, 'limit=3&order=ASC')).toEqual(EXPECTED.map(traitOf).reverse());
  });

  it('lists the tokens whose document has each trait type asked, with one of its values', async () => {
    const ids = async (traits: Json, query = '') =>
      (await allPages(s, `/nft/${nft.address}/nfts-by-traits`, query, { method: 'POST', json: { traits } })).map((n) => n.token_id);
    expect(await ids({ Background: 'Blue' }, 'limit=1')).toEqual(['1', '2', '4']);
    expect(await ids({ Background: 'Blue', Eyes: ['Red', 'Green'] })).toEqual(['1', '2']);
    expect(await ids({ Level: 3 })).toEqual(['3']);
    expect(await ids({ Level: '3', Eyes: 'Red' })).toEqual([]);
    // The burned token's trait is nowhere: it has no holder.
    expect(await ids({ Background: 'Gold' })).toEqual([]);
    const one = await s.call(api(`/nft/${nft.address}/nfts-by-traits`, 'normalizeMetadata=true'), {
      method: 'POST',
      json: { traits: { Level: 3 } },
    });
    expect(one.body.result[0]).toMatchObject({
      token_address: lower(nft),
      token_id: '3',
      owner_of: A1,
      name: 'Traits',
      normalized_metadata: { name: '#3' },
    });
    expect(JSON.parse(one.body.result[0].metadata).attributes).toEqual(ATTRIBUTES[3]);
  });

  it('answers 404 for a contract it has not seen, and 400 naming the field', async () => {
    const unseen = '0x00000000000000000000000000000000000000aa';
    for (const path of [`/nft/${unseen}/traits`, `/nft/${unseen}/traits/paginate`, `/nft/${unseen}/traits/resync`])
      expect((await s.call(api(path))).status, path).toBe(404);
    for (const [field, path, json] of [
      ['address', '/nft/0x12/traits', undefined],
      ['order', `/nft/${nft.address}/traits/paginate?order=UP`, undefined],
      ['cursor', `/nft/${nft.address}/traits/paginate?cursor=zz`, undefined],
      ['traits', `/nft/${nft.address}/nfts-by-traits`, { traits: {} }],
      ['traits', `/nft/${nft.address}/nfts-by-traits`, {}],
      ['traits.Eyes', `/nft/${nft.address}/nfts-by-traits`, { traits: { Eyes: [] } }],
      ['traits', `/nft/${nft.address}/nfts-by-traits`, { traits: Object.fromEntries([...Array(26).keys()].map((i) => [`t${i}`, 'x'])) }],
    ] as const) {
      const [p, q] = path.split('?') as [string, string | undefined];
      const r = await s.call(api(p, q ?? ''), json === undefined ? {} : { method: 'POST', json });
      expect([r.status, r.body.details?.field], path).toEqual([400, field]);
    }
  });
});

describe('POST /nft/metadata', () => {
  it('answers each address as GET /nft/:address/metadata does, in order, null for a contract not seen', async () => {
    const unseen = '0x00000000000000000000000000000000000000aa';
    const r = await s.call(api('/nft/metadata'), { method: 'POST', json: { addresses: [other.address, unseen, nft.address] } });
    expect(r.status).toBe(200);
    const one = async (c: Deployed) => (await s.call(api(`/nft/${c.address}/metadata`))).body;
    expect(r.body).toEqual([await one(other), null, await one(nft)]);
    expect(r.body[2]).toMatchObject({ token_address: lower(nft), name: 'Traits', symbol: 'TRT', contract_type: 'ERC721' });
  });

  it('takes up to 25 addresses (the hosted bound) and answers 400 naming addresses beyond', async () => {
    // Addresses without code (not the precompiles at 0x…01–0x…0a).
    const many = (n: number) => [...Array(n).keys()].map((i) => `0x${'ab'.repeat(19)}${i.toString(16).padStart(2, '0')}`);
    const ok = await s.call(api('/nft/metadata'), { method: 'POST', json: { addresses: [nft.address, ...many(24)] } });
    expect([ok.status, ok.body.length, ok.body[0].token_address]).toEqual([200, 25, lower(nft)]);
    for (const json of [{ addresses: many(26) }, { addresses: [] }, { addresses: ['0x12'] }, {}]) {
      const r = await s.call(api('/nft/metadata'), { method: 'POST', json });
      expect([r.status, String(r.body.details?.field)], JSON.stringify(json)).toEqual([400, expect.stringMatching(/^addresses/)]);
    }
  });
});
