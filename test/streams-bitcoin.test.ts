import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { BIP84_ZPUB, XPRV, XPUB, withVersion } from './kit/bitcoin-core/keys.js';
import { advance, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { deliveryEnv, familyCalls, NOT_FOLLOWED, type Receiver, type Smtp } from './delivery-env.js';
import { startReceiver } from './receiver.js';

/** Mainnet addresses of every kind a stream takes (BIP-173 and BIP-350 vectors, the genesis and BIP-13 ones). */
const P2PKH = '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa';
const P2SH = '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy';
const P2WPKH = 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4';
const P2WSH = 'bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3';
const P2TR = 'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0';

const ZPUB = BIP84_ZPUB;
const TPUB = withVersion(XPUB, 0x043587cf);

/** A Bitcoin webhook as the matcher would hand it over, in the body's shape (engine/bitcoin/body.ts), cut short: delivery reads only its envelope. */
const webhook = (height: number) => ({
  confirmed: false,
  chainId: 'btc-mainnet',
  network: 'mainnet',
  block: { hash: height.toString(16).padStart(64, '0'), height: String(height), timestamp: String(1_795_000_000 + height) },
  transactions: [
    { txid: 'ab'.repeat(32), vin: [], vout: [{ n: 0, value: 0.5, scriptPubKeyAddress: P2WPKH, scriptPubKeyType: 'witness_v0_keyhash' }] },
  ],
});

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('Bitcoin Streams API', () => {
  let s: Running;
  let rx: Receiver;
  let smtp: Smtp;
  const { put, post, del, stream, enqueue, make, makeIn, all, stranger, addressShapes } = familyCalls(() => ({ s, rx, smtp }), 'bitcoin', {
    description: 'btc',
    tag: 'btc-tag',
    network: ['mainnet'],
  });

  deliveryEnv((e) => ({ s, rx, smtp } = e));

  describe('streams', () => {
    it('creates a stream after a test webhook, with the defaults, and answers the BitcoinStream object', async () => {
      const before = rx.received.length;
      const r = await put({ webhookUrl: rx.url, description: 'payments', tag: 'tag-b', network: ['mainnet'] });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.id).toMatch(UUID_V4);
      const now = Date.parse((await s.call('/admin/clock')).body.now);
      expect(Date.parse(r.body.updatedAt)).toBeLessThanOrEqual(now);
      expect(r.body).toEqual({
        id: r.body.id,
        webhookUrl: rx.url,
        description: 'payments',
        tag: 'tag-b',
        network: ['mainnet'],
        includeInputs: true,
        includeOutputs: true,
        allAddresses: false,
        demo: false,
        status: 'active',
        // This server follows no chain: accepted, and said.
        statusMessage: NOT_FOLLOWED.bitcoin,
        isErrorSince: null,
        amountOfAddresses: 0,
        updatedAt: r.body.updatedAt,
      });
      const test = rx.received.slice(before).filter((x) => x.test);
      expect(test).toHaveLength(1);
      const emptyBlock = {
        hash: '',
        height: '',
        timestamp: '',
        previousblockhash: '',
        merkleroot: '',
        difficulty: '',
        nTx: '',
        size: '',
        weight: '',
      };
      expect(test[0]!.body).toEqual({
        confirmed: true,
        chainId: '',
        network: 'mainnet',
        streamId: r.body.id,
        tag: 'tag-b',
        retries: 0,
        block: emptyBlock,
        transactions: [],
      });
      const { secretKey } = (await s.call('/settings')).body;
      expect(test[0]!.headers['x-signature']).toBe(`0x${bytesToHex(keccak_256(utf8ToBytes(test[0]!.raw + secretKey)))}`);
      expect(await stream(r.body.id)).toEqual(r.body);
      // network may be left out (mainnet is the only one); the flags are kept as given.
      const other = await put({ webhookUrl: rx.url, includeInputs: false, includeOutputs: false, allAddresses: true, demo: true });
      expect(other.body).toMatchObject({
        network: ['mainnet'],
        includeInputs: false,
        includeOutputs: false,
        allAddresses: true,
        demo: true,
        description: '',
        tag: '',
      });
    });

    it('refuses bad fields and every EVM-only field with 400 naming it, and stores nothing', async () => {
      const count = (await s.call('/streams/bitcoin?limit=100')).body.total;
      const cases: Array<[Record<string, unknown>, string]> = [
        [{}, 'webhookUrl'],
        [{ webhookUrl: 'ftp://x' }, 'webhookUrl'],
        [{ webhookUrl: rx.url, network: ['testnet'] }, 'network'],
        [{ webhookUrl: rx.url, network: 'mainnet' }, 'network'],
        [{ webhookUrl: rx.url, network: [] }, 'network'],
        [{ webhookUrl: rx.url, network: ['mainnet', 'testnet'] }, 'network'],
        [{ webhookUrl: rx.url, includeInputs: 'yes' }, 'includeInputs'],
        [{ webhookUrl: rx.url, includeOutputs: 1 }, 'includeOutputs'],
        [{ webhookUrl: rx.url, allAddresses: null }, 'allAddresses'],
        [{ webhookUrl: rx.url, demo: 'no' }, 'demo'],
        [{ webhookUrl: rx.url, description: 7 }, 'description'],
        [{ webhookUrl: rx.url, tag: 'x'.repeat(201) }, 'tag'],
        [{ webhookUrl: rx.url, chainIds: ['0x1'] }, 'chainIds'],
        [{ webhookUrl: rx.url, topic0: ['Transfer(address,address,uint256)'] }, 'topic0'],
        [{ webhookUrl: rx.url, abi: [] }, 'abi'],
        [{ webhookUrl: rx.url, includeNativeTxs: true }, 'includeNativeTxs'],
        [{ webhookUrl: rx.url, includeContractLogs: false }, 'includeContractLogs'],
        [{ webhookUrl: rx.url, triggers: null }, 'triggers'],
        [{ webhookUrl: rx.url, advancedOptions: null }, 'advancedOptions'],
        [{ webhookUrl: rx.url, getNativeBalances: [] }, 'getNativeBalances'],
        [{ webhookUrl: rx.url, filterPossibleSpamAddresses: true }, 'filterPossibleSpamAddresses'],
      ];
      for (const [body, field] of cases) {
        const r = await put(body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.details.field, JSON.stringify(body)).toBe(field);
        expect(r.body.message, JSON.stringify(body)).toMatch(new RegExp(`^${field}: `));
      }
      expect((await put({ webhookUrl: rx.url, abi: [] })).body.message).toBe('abi: an EVM stream field: a Bitcoin stream does not take it');
      expect((await put({ webhookUrl: rx.url, network: ['testnet'] })).body.message).toBe(
        'network: must be ["mainnet"]: only Bitcoin mainnet is followed',
      );
      expect(
        (await s.call('/streams/bitcoin', { method: 'PUT', body: 'not json', headers: { 'content-type': 'application/json' } })).status,
      ).toBe(400);
      // The receiver refuses the test webhook: no stream.
      rx.state.answerTests = () => 500;
      const refused = await put({ webhookUrl: rx.url });
      expect(refused.status).toBe(400);
      expect(refused.body.details.field).toBe('webhookUrl');
      expect(refused.body.message).toMatch(/^webhookUrl: the test webhook .* was not accepted \(the receiver answered HTTP 500\)/);
      expect((await s.call('/streams/bitcoin?limit=100')).body.total).toBe(count);
    });

    it('updates any subset after a test webhook; refuses EVM fields and a refused test webhook, changing nothing', async () => {
      const id = await make();
      const before = rx.received.length;
      const up = await post(`/streams/bitcoin/${id}`, { description: 'changed', includeInputs: false, webhookUrl: `${rx.url}?v2` });
      expect(up.status, JSON.stringify(up.body)).toBe(200);
      expect(up.body).toMatchObject({
        id,
        description: 'changed',
        includeInputs: false,
        includeOutputs: true,
        tag: 'btc-tag',
        webhookUrl: `${rx.url}?v2`,
      });
      expect(
        rx.received
          .slice(before)
          .filter((x) => x.test)
          .map((x) => x.body.streamId),
      ).toEqual([id]);
      expect((await post(`/streams/bitcoin/${id}`, { chainIds: ['0x1'] })).body.details.field).toBe('chainIds');
      expect((await post(`/streams/bitcoin/${id}`, { network: ['testnet'] })).body.details.field).toBe('network');
      expect((await post(`/streams/bitcoin/${id}`, { includeOutputs: 'no' })).body.details.field).toBe('includeOutputs');
      rx.state.answerTests = () => 500;
      const refused = await post(`/streams/bitcoin/${id}`, { description: 'never' });
      expect(refused.status).toBe(400);
      expect(refused.body.details.field).toBe('webhookUrl');
      expect(await stream(id)).toEqual(up.body);
    });

    it("lists by cursor only Bitcoin streams, and answers 404 for another family's id on every route", async () => {
      const btc = [await make(), await make(), await make()];
      const evm = [await makeIn('evm'), await makeIn('evm')];
      const listed = await all('/streams/bitcoin', 2);
      expect(listed.pages).toBeGreaterThan(1);
      for (const id of btc) expect(listed.items.map((x) => x.id)).toContain(id);
      for (const id of evm) expect(listed.items.map((x) => x.id)).not.toContain(id);
      expect(listed.items.every((x) => Array.isArray(x.network) && x.chainIds === undefined)).toBe(true);
      expect((await s.call('/streams/bitcoin?limit=2')).body).toMatchObject({ page: 0, page_size: 2 });
      const evmListed = await all('/streams/evm', 2);
      for (const id of evm) expect(evmListed.items.map((x) => x.id)).toContain(id);
      for (const id of btc) expect(evmListed.items.map((x) => x.id)).not.toContain(id);

      const crossed: Array<[string, string, unknown?]> = [
        ['GET', `/streams/evm/${btc[0]}`],
        ['POST', `/streams/evm/${btc[0]}`, { description: 'x' }],
        ['DELETE', `/streams/evm/${btc[0]}`],
        ['POST', `/streams/evm/${btc[0]}/status`, { status: 'paused' }],
        ['POST', `/streams/evm/${btc[0]}/address`, { address: '0x'.padEnd(42, '1') }],
        ['GET', `/streams/evm/${btc[0]}/address`],
        ['GET', `/streams/bitcoin/${evm[0]}`],
        ['POST', `/streams/bitcoin/${evm[0]}`, { description: 'x' }],
        ['DELETE', `/streams/bitcoin/${evm[0]}`],
        ['POST', `/streams/bitcoin/${evm[0]}/status`, { status: 'paused' }],
        ['POST', `/streams/bitcoin/${evm[0]}/address`, { address: P2PKH }],
        ['DELETE', `/streams/bitcoin/${evm[0]}/address`, { address: P2PKH }],
        ['GET', `/streams/bitcoin/${evm[0]}/address`],
        ['POST', `/streams/bitcoin/${evm[0]}/xpub`, { xpub: XPUB }],
        ['GET', `/streams/bitcoin/${evm[0]}/xpub`],
      ];
      for (const [method, path, json] of crossed) {
        const r = await s.call(path, { method, ...(json === undefined ? {} : { json }) });
        expect(r.status, `${method} ${path}`).toBe(404);
      }
      // Both still there and unchanged.
      expect((await stream(btc[0]!)).status).toBe('active');
      expect((await s.call(`/streams/evm/${evm[0]}`)).body.status).toBe('active');
      // Stats of a stream are the tenant's whatever its family.
      expect((await s.call(`/stats/${btc[0]}`)).body).toMatchObject({ streamId: btc[0], totalWebhooksDelivered: 0 });
      expect((await s.call('/streams/bitcoin/not-a-uuid')).body.details.field).toBe('id');
      expect((await s.call('/streams/bitcoin?limit=0')).body.details.field).toBe('limit');
      expect((await s.call('/streams/bitcoin?cursor=bm9wZQ')).body.details.field).toBe('cursor');
    });

    it('keeps tenants apart: another key sees none of a stream, its addresses or xpubs', async () => {
      const id = await make();
      await post(`/streams/bitcoin/${id}/address`, { address: P2PKH });
      const xpub = (await post(`/streams/bitcoin/${id}/xpub`, { xpub: XPUB })).body;
      const as = await stranger('btc-stranger');
      const calls: Array<[string, string, unknown?]> = [
        ['GET', `/streams/bitcoin/${id}`],
        ['POST', `/streams/bitcoin/${id}`, { description: 'mine now' }],
        ['DELETE', `/streams/bitcoin/${id}`],
        ['POST', `/streams/bitcoin/${id}/status`, { status: 'paused' }],
        ['GET', `/streams/bitcoin/${id}/address`],
        ['POST', `/streams/bitcoin/${id}/address`, { address: P2SH }],
        ['DELETE', `/streams/bitcoin/${id}/address`, { address: P2PKH }],
        ['GET', `/streams/bitcoin/${id}/xpub`],
        ['POST', `/streams/bitcoin/${id}/xpub`, { xpub: ZPUB }],
        ['DELETE', `/streams/bitcoin/${id}/xpub/${xpub.id}`],
        ['GET', `/stats/${id}`],
      ];
      for (const [method, path, json] of calls) {
        const r = await s.call(path, { ...as, method, ...(json === undefined ? {} : { json }) });
        expect(r.status, `${method} ${path}`).toBe(404);
      }
      expect((await s.call('/streams/bitcoin', as)).body.total).toBe(0);
      expect(await stream(id)).toMatchObject({ status: 'active', amountOfAddresses: 1, description: 'btc' });
      expect((await s.call(`/streams/bitcoin/${id}/xpub`)).body.total).toBe(1);
    });

    it('pauses and resumes (a test webhook before resuming), refuses error and terminated, and deletes', async () => {
      const id = await make();
      const paused = await post(`/streams/bitcoin/${id}/status`, { status: 'paused' });
      expect(paused.body).toMatchObject({ id, status: 'paused', network: ['mainnet'] });
      for (const status of ['error', 'terminated', 'stopped', undefined]) {
        const r = await post(`/streams/bitcoin/${id}/status`, { status });
        expect(r.status).toBe(400);
        expect(r.body.details.field).toBe('status');
      }
      // Resuming needs the receiver to take the test webhook.
      rx.state.answerTests = () => 500;
      expect((await post(`/streams/bitcoin/${id}/status`, { status: 'active' })).body.details.field).toBe('webhookUrl');
      expect((await stream(id)).status).toBe('paused');
      rx.state.answerTests = () => 200;
      const before = rx.received.length;
      expect((await post(`/streams/bitcoin/${id}/status`, { status: 'active' })).body.status).toBe('active');
      expect(rx.received.slice(before).filter((x) => x.test && x.body.streamId === id)).toHaveLength(1);
      // Already active: no test webhook.
      expect((await post(`/streams/bitcoin/${id}/status`, { status: 'active' })).body.status).toBe('active');
      expect(rx.received.slice(before).filter((x) => x.test && x.body.streamId === id)).toHaveLength(1);

      const gone = await del(`/streams/bitcoin/${id}`);
      expect(gone.status).toBe(200);
      expect(gone.body).toMatchObject({ id, status: 'active', network: ['mainnet'] });
      expect((await s.call(`/streams/bitcoin/${id}`)).status).toBe(404);
      expect((await del(`/streams/bitcoin/${id}`)).status).toBe(404);
    });
  });

  describe('addresses', () => {
    it('takes every mainnet address kind, one or many, bech32 stored lower-case and base58 as given', async () => {
      const id = await make();
      const one = await post(`/streams/bitcoin/${id}/address`, { address: P2PKH });
      expect(one.body).toEqual({ streamId: id, address: P2PKH });
      const upper = await post(`/streams/bitcoin/${id}/address`, { address: P2WPKH.toUpperCase() });
      expect(upper.body).toEqual({ streamId: id, address: P2WPKH });
      const many = await post(`/streams/bitcoin/${id}/address`, { address: [P2SH, P2WSH, P2TR, P2WPKH, P2PKH] });
      expect(many.body).toEqual({ streamId: id, address: [P2SH, P2WSH, P2TR, P2WPKH, P2PKH] });
      expect((await stream(id)).amountOfAddresses).toBe(5);
      const listed = await all(`/streams/bitcoin/${id}/address`, 2);
      expect(listed.items.map((x) => x.address).sort()).toEqual([P2PKH, P2SH, P2WPKH, P2WSH, P2TR].sort());
      expect(listed.items.every((x) => Object.keys(x).join() === 'address')).toBe(true);

      const removed = await del(`/streams/bitcoin/${id}/address`, { address: [P2TR, P2WSH.toUpperCase()] });
      expect(removed.body).toEqual({ streamId: id, address: [P2TR, P2WSH] });
      expect((await stream(id)).amountOfAddresses).toBe(3);
      // Removing one it does not hold changes nothing.
      await del(`/streams/bitcoin/${id}/address`, { address: P2TR });
      expect((await stream(id)).amountOfAddresses).toBe(3);
    });

    it('refuses a bad checksum, testnet, garbage, an EVM address or too many with 400 naming the address', async () => {
      const id = await make();
      const bad: Array<[string, RegExp]> = [
        ['1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb', /bad base58 or checksum/],
        ['3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLz', /bad base58 or checksum/],
        ['bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5', /bad bech32 checksum/],
        ['bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj1', /checksum/],
        ['tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', /testnet/],
        ['mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn', /testnet/],
        ['2MzQwSSnBHWHqSAqtTVQ6v47XtaisrJa1Vc', /testnet/],
        ['hello', /not a Bitcoin address/],
        ['0x'.padEnd(42, 'a'), /not a Bitcoin address/],
      ];
      for (const [address, why] of bad) {
        const single = await post(`/streams/bitcoin/${id}/address`, { address });
        expect(single.status, address).toBe(400);
        expect(single.body.details.field, address).toBe('address');
        expect(single.body.message, address).toContain(address);
        expect(single.body.message, address).toMatch(why);
        const inList = await post(`/streams/bitcoin/${id}/address`, { address: [P2PKH, address] });
        expect(inList.status, address).toBe(400);
        expect(inList.body.details.field, address).toBe('address.1');
        expect(inList.body.message, address).toContain(address);
      }
      await addressShapes(id, P2TR);
    });
  });

  describe('xpubs', () => {
    it('adds, lists by cursor and deletes xpubs and zpubs; the same key twice answers its record', async () => {
      const id = await make();
      const added = await post(`/streams/bitcoin/${id}/xpub`, { xpub: XPUB });
      expect(added.status, JSON.stringify(added.body)).toBe(200);
      expect(added.body).toEqual({
        id: added.body.id,
        streamId: id,
        xpub: XPUB,
        createdAt: added.body.createdAt,
        updatedAt: added.body.createdAt,
      });
      expect(added.body.id).toMatch(UUID_V4);
      expect(new Date(added.body.createdAt).toISOString()).toBe(added.body.createdAt);
      await advance(s, 5);
      expect((await post(`/streams/bitcoin/${id}/xpub`, { xpub: XPUB })).body).toEqual(added.body);
      const z = (await post(`/streams/bitcoin/${id}/xpub`, { xpub: ZPUB })).body;
      expect(z).toMatchObject({ streamId: id, xpub: ZPUB });
      expect(z.id).not.toBe(added.body.id);
      const listed = await all(`/streams/bitcoin/${id}/xpub`, 1);
      expect(listed.pages).toBe(2);
      expect(listed.items.sort((a, b) => a.xpub.localeCompare(b.xpub))).toEqual(
        [added.body, z].sort((a, b) => a.xpub.localeCompare(b.xpub)),
      );
      // Xpubs are not the stream's addresses.
      expect((await stream(id)).amountOfAddresses).toBe(0);

      const gone = await del(`/streams/bitcoin/${id}/xpub/${added.body.id}`);
      expect(gone.status).toBe(200);
      expect(gone.body).toBe(true);
      expect((await del(`/streams/bitcoin/${id}/xpub/${added.body.id}`)).status).toBe(404);
      expect((await del(`/streams/bitcoin/${id}/xpub/not-an-id`)).body.details.field).toBe('xpubId');
      expect((await s.call(`/streams/bitcoin/${id}/xpub`)).body).toMatchObject({ total: 1, result: [z] });
    });

    it('refuses testnet and private keys, bad checksums and anything else with 400 naming xpub', async () => {
      const id = await make();
      const bad: Array<[unknown, RegExp]> = [
        [TPUB, /testnet key \(tpub\)/],
        [withVersion(XPUB, 0x044a5262), /testnet key \(upub\)/],
        [XPRV, /private key \(xprv\)/],
        [`${XPUB.slice(0, -1)}9`, /checksum/],
        ['hello', /not an extended public key/],
        [P2PKH, /not an extended public key/],
        [7, /extended public key/],
        [undefined, /extended public key/],
      ];
      for (const [xpub, why] of bad) {
        const r = await post(`/streams/bitcoin/${id}/xpub`, { xpub });
        expect(r.status, String(xpub)).toBe(400);
        expect(r.body.details.field, String(xpub)).toBe('xpub');
        expect(r.body.message, String(xpub)).toMatch(why);
      }
      expect((await s.call(`/streams/bitcoin/${id}/xpub`)).body.total).toBe(0);
    });

    it("deletes a stream's addresses and xpubs with it", async () => {
      const id = await make();
      await post(`/streams/bitcoin/${id}/address`, { address: [P2PKH, P2TR] });
      await post(`/streams/bitcoin/${id}/xpub`, { xpub: XPUB });
      const keep = await make();
      await post(`/streams/bitcoin/${keep}/address`, { address: P2PKH });
      await post(`/streams/bitcoin/${keep}/xpub`, { xpub: XPUB });
      expect((await del(`/streams/bitcoin/${id}`)).status).toBe(200);
      const { openStore } = await import('../storage/env.js');
      const store = openStore(s.dir, { create: false });
      try {
        const rows = (table: 'streamAddresses' | 'streamXpubs' | 'xpubKeys', of: string) =>
          store.range(table, { start: `${of}/`, end: `${of}/\uffff` }).length;
        expect([rows('streamAddresses', id), rows('streamXpubs', id), rows('xpubKeys', id)]).toEqual([0, 0, 0]);
        // xpubKeys: the key's entry and the stream's count.
        expect([rows('streamAddresses', keep), rows('streamXpubs', keep), rows('xpubKeys', keep)]).toEqual([1, 1, 2]);
      } finally {
        await store.close();
      }
    });
  });

  describe('delivery', () => {
    it('delivers, retries and keeps history, logs, replay and stats for a Bitcoin stream as for EVM', async () => {
      const url = `${rx.url}?btc-delivery`;
      const id = await make({ webhookUrl: url, tag: 'btc-deliver' });
      const before = rx.webhooks().length;
      let failed = false;
      rx.state.answer = (x) => (x.body.streamId === id && x.body.block.height === '1' && !failed ? ((failed = true), 500) : 200);
      expect((await enqueue(id, [webhook(1), webhook(2)])).body.results).toEqual(['queued', 'queued']);
      await advance(s, 0);
      await advance(s, 60);
      const got = rx
        .webhooks()
        .slice(before)
        .filter((x) => x.body.streamId === id);
      expect(got.map((x) => [x.body.block.height, x.body.retries])).toEqual([
        ['1', 0],
        ['2', 0],
        ['1', 1],
      ]);
      const { secretKey } = (await s.call('/settings')).body;
      for (const g of got) {
        expect(g.headers['x-signature']).toBe(`0x${bytesToHex(keccak_256(utf8ToBytes(g.raw + secretKey)))}`);
        expect(g.raw).toBe(JSON.stringify(g.body));
        expect(g.body).toMatchObject({
          streamId: id,
          tag: 'btc-deliver',
          chainId: 'btc-mainnet',
          confirmed: false,
          transactions: webhook(1).transactions,
        });
      }
      // The failed first try is in history (delivered on its retry) and in the delivery log.
      const h = (await s.call('/history?limit=100')).body.result.filter((x: { streamId: string }) => x.streamId === id);
      expect(h).toHaveLength(1);
      expect(h[0]).toMatchObject({
        streamId: id,
        tag: 'btc-deliver',
        webhookUrl: url,
        errorMessage: 'the receiver answered HTTP 500',
        delivered: true,
      });
      expect(h[0].payload).toMatchObject({ streamId: id, chainId: 'btc-mainnet', block: { height: '1' } });
      const logs = (await s.call('/history/logs?limit=100')).body.result.filter((l: { streamId: string }) => l.streamId === id);
      expect(logs.map((l: { deliveryStatus: string }) => l.deliveryStatus).sort()).toEqual(['failed', 'success', 'success']);
      expect(
        logs.every(
          (l: { chain: string; webhookUrl: string; tag: string }) =>
            l.chain === 'btc-mainnet' && l.webhookUrl === url && l.tag === 'btc-deliver',
        ),
      ).toBe(true);
      const replayed = await post(`/history/replay/${id}/${h[0].id}`);
      expect(replayed.body).toMatchObject({ id: h[0].id, streamId: id, delivered: true, status: 200 });
      expect(rx.webhooks().filter((w) => w.body.streamId === id)).toHaveLength(4);
      expect((await s.call(`/stats/${id}`)).body).toMatchObject({ streamId: id, totalWebhooksDelivered: 2, totalWebhooksFailed: 1 });
      expect((await s.call('/stats')).body.totalWebhooksDelivered).toBeGreaterThanOrEqual(2);
      // Paused: new webhooks are dropped, as for EVM.
      await post(`/streams/bitcoin/${id}/status`, { status: 'paused' });
      expect((await enqueue(id, [webhook(3)])).body.results).toEqual(['dropped']);
    });

    it('goes to error on the 31st failure in a row (below 70%), e-mails the owner, and is set active again by its owner', async () => {
      const url = `${rx.url}?btc-rate`;
      const id = await make({ webhookUrl: url, tag: 'btc-rate' });
      rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
      const mails = smtp.mails.length;
      await enqueue(
        id,
        Array.from({ length: 30 }, (_, i) => webhook(100 + i)),
      );
      await advance(s, 0);
      expect((await stream(id)).status).toBe('active'); // 70%
      await enqueue(id, [webhook(130)]);
      await advance(s, 0);
      const errored = await stream(id);
      expect(errored.status).toBe('error');
      const since = Date.parse((await s.call('/admin/clock')).body.now) - Date.parse(errored.isErrorSince);
      expect(since).toBeGreaterThanOrEqual(0);
      expect(since).toBeLessThan(60_000);
      expect(errored.statusMessage).toMatch(/fell to 69%, below 70%/);
      expect(await until(() => smtp.mails.slice(mails).some((m) => m.data.includes(`stream ${id} is in error`)), 5_000)).toBe(true);
      expect(smtp.mails.slice(mails).filter((m) => m.data.includes(`stream ${id} is in error`))).toHaveLength(1);
      expect((await enqueue(id, [webhook(131)])).body.results).toEqual(['history']);
      expect((await post(`/streams/bitcoin/${id}/status`, { status: 'paused' })).body.details.field).toBe('status');
      rx.state.answer = () => 200;
      const resumed = await post(`/streams/bitcoin/${id}/status`, { status: 'active' });
      // The error's message goes; the chain this server does not follow is still said.
      expect(resumed.body).toMatchObject({ status: 'active', statusMessage: NOT_FOLLOWED.bitcoin, isErrorSince: null });
    });
  });

  describe('store', () => {
    it('keeps Bitcoin streams, addresses and xpubs across a restart beside EVM streams, whose records carry no family', async () => {
      const rx2 = await startReceiver();
      let r: Running | undefined = await startChainpost({ CHAINPOST_RATE_LIMIT: '0' });
      const dir = r.dir;
      try {
        const btc = (await r.call('/streams/bitcoin', { method: 'PUT', json: { webhookUrl: rx2.url, tag: 'kept' } })).body;
        await r.call(`/streams/bitcoin/${btc.id}/address`, { method: 'POST', json: { address: [P2PKH, P2TR] } });
        const xpub = (await r.call(`/streams/bitcoin/${btc.id}/xpub`, { method: 'POST', json: { xpub: ZPUB } })).body;
        const evm = (
          await r.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx2.url, chainIds: ['0x1'], includeNativeTxs: true } })
        ).body;
        await r.stop('SIGTERM');
        const { openStore } = await import('../storage/env.js');
        const store = openStore(dir, { create: false });
        try {
          const records = store.range<Record<string, unknown>>('streams').map((e) => e.value);
          expect(records.find((x) => x['id'] === evm.id)).not.toHaveProperty('family');
          expect(records.find((x) => x['id'] === btc.id)).toMatchObject({ family: 'bitcoin', network: ['mainnet'] });
        } finally {
          await store.close();
        }
        r = await startChainpost({ CHAINPOST_RATE_LIMIT: '0' }, dir);
        expect((await r.call(`/streams/bitcoin/${btc.id}`)).body).toMatchObject({ id: btc.id, tag: 'kept', amountOfAddresses: 2 });
        expect((await r.call(`/streams/bitcoin/${btc.id}/xpub`)).body.result).toEqual([xpub]);
        expect((await r.call('/streams/bitcoin')).body.result.map((x: { id: string }) => x.id)).toEqual([btc.id]);
        expect((await r.call('/streams/evm')).body.result.map((x: { id: string }) => x.id)).toEqual([evm.id]);
      } finally {
        await stopAndClean(r);
        await rx2.close();
      }
    });
  });
});
