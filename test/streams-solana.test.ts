import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import bs58 from 'bs58';
import { describe, expect, it } from 'vitest';
import { advance, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { deliveryEnv, familyCalls, NOT_FOLLOWED, type Receiver, type Smtp } from './delivery-env.js';
import { startReceiver } from './receiver.js';

/**
 * Mainnet's System, SPL Token and Vote programs and the USDC and USDT mints
 * (public constants), and wallet keys made from fixed bytes. Each is checked
 * below to decode, by bs58, to 32 bytes.
 */
const SYSTEM = '11111111111111111111111111111111';
const TOKEN = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const VOTE = 'Vote111111111111111111111111111111111111111';
const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const USDT = 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB';
/** Has an L: lower-cased it holds an l, which base58 leaves out. */
const WALLET = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM';
const wallet = (i: number): string => bs58.encode(Uint8Array.from({ length: 32 }, (_, j) => (i * 31 + j * 7 + 1) & 0xff));
/** TOKEN lower-cased is still base58 of 32 bytes, another key. */
const TOKEN_LOWER = TOKEN.toLowerCase();

/** A Solana webhook as the matcher would hand it over, in the notes' §2.4 shape, cut short: delivery reads only its envelope. */
const webhook = (slot: number) => ({
  confirmed: false,
  chainId: 'solana_mainnet',
  network: 'mainnet',
  block: {
    slot: String(slot),
    blockHash: wallet(slot),
    blockHeight: String(slot - 20),
    blockTime: 1_795_000_000 + slot,
    parentSlot: String(slot - 1),
    previousBlockHash: wallet(slot - 1),
  },
  transactions: [
    {
      signature: bs58.encode(new Uint8Array(64).fill(slot & 0xff)),
      slot: String(slot),
      blockTime: 1_795_000_000 + slot,
      fee: '5000',
      err: null,
      accountKeys: [WALLET, SYSTEM],
      instructions: [{ programId: SYSTEM, accounts: [WALLET], data: '3Bxs4h24hBtQy9rw' }],
      innerInstructions: [],
      preTokenBalances: [],
      postTokenBalances: [],
    },
  ],
});

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const NOTHING = /^Stream matches nothing: it has no addresses, programIds or mintAddresses, and allAddresses is false\./;

describe('Solana Streams API', () => {
  let s: Running;
  let rx: Receiver;
  let smtp: Smtp;
  const { put, post, del, stream, enqueue, make, makeIn, all, stranger, addressShapes } = familyCalls(() => ({ s, rx, smtp }), 'solana', {
    description: 'sol',
    tag: 'sol-tag',
    network: ['mainnet'],
  });
  const secret = async () => (await s.call('/settings')).body.secretKey as string;

  deliveryEnv((e) => ({ s, rx, smtp } = e));

  it('uses keys that are base58 of 32 bytes (and lower-cased TOKEN is another such key; WALLET lower-cased is not base58)', () => {
    for (const k of [SYSTEM, TOKEN, VOTE, USDC, USDT, WALLET, TOKEN_LOWER, wallet(1), wallet(2)])
      expect(bs58.decode(k), k).toHaveLength(32);
    expect(bytesToHex(bs58.decode(TOKEN_LOWER))).not.toBe(bytesToHex(bs58.decode(TOKEN)));
    expect(() => bs58.decode(WALLET.toLowerCase())).toThrow();
  });

  describe('streams', () => {
    it('creates a stream after an empty-body test webhook, with the defaults, and answers the SolanaStream object', async () => {
      const before = rx.received.length;
      const r = await put({
        webhookUrl: rx.url,
        description: 'payments',
        tag: 'tag-s',
        network: ['mainnet'],
        programIds: [TOKEN],
        mintAddresses: [USDC, USDT],
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.id).toMatch(UUID_V4);
      const now = Date.parse((await s.call('/admin/clock')).body.now);
      expect(Date.parse(r.body.updatedAt)).toBeLessThanOrEqual(now);
      expect(r.body).toEqual({
        id: r.body.id,
        webhookUrl: rx.url,
        description: 'payments',
        tag: 'tag-s',
        network: ['mainnet'],
        programIds: [TOKEN],
        mintAddresses: [USDC, USDT],
        allAddresses: false,
        demo: false,
        status: 'active',
        // This server follows no chain: accepted, and said.
        statusMessage: NOT_FOLLOWED.solana,
        isErrorSince: null,
        amountOfAddresses: 0,
        updatedAt: r.body.updatedAt,
      });
      expect(Object.keys(r.body)).toEqual([
        'id',
        'webhookUrl',
        'description',
        'tag',
        'network',
        'programIds',
        'mintAddresses',
        'allAddresses',
        'demo',
        'status',
        'statusMessage',
        'isErrorSince',
        'amountOfAddresses',
        'updatedAt',
      ]);
      // The test webhook: an empty POST, signed over the empty body and the secret.
      const test = rx.received.slice(before).filter((x) => x.test);
      expect(test).toHaveLength(1);
      expect(test[0]!.raw).toBe('');
      expect(test[0]!.headers['x-signature']).toBe(`0x${bytesToHex(keccak_256(utf8ToBytes(await secret())))}`);
      expect(await stream(r.body.id)).toEqual(r.body);
      // Everything but webhookUrl may be left out; a lower-cased key is another key, kept as given.
      const other = await put({ webhookUrl: rx.url, programIds: [TOKEN_LOWER, SYSTEM], allAddresses: true, demo: true });
      expect(other.status, JSON.stringify(other.body)).toBe(200);
      expect(other.body).toMatchObject({
        network: ['mainnet'],
        programIds: [TOKEN_LOWER, SYSTEM],
        mintAddresses: [],
        allAddresses: true,
        demo: true,
        description: '',
        tag: '',
        statusMessage: NOT_FOLLOWED.solana,
      });
    });

    it('says when a stream can match nothing, until it has a selector', async () => {
      const id = await make();
      expect((await stream(id)).statusMessage).toMatch(NOTHING);
      await post(`/streams/solana/${id}/address`, { address: WALLET });
      // Left: the chain this server does not follow.
      expect((await stream(id)).statusMessage).toBe(NOT_FOLLOWED.solana);
      await del(`/streams/solana/${id}/address`, { address: WALLET });
      expect((await stream(id)).statusMessage).toMatch(NOTHING);
      for (const change of [{ programIds: [VOTE] }, { mintAddresses: [USDC] }, { allAddresses: true }]) {
        expect((await post(`/streams/solana/${id}`, change)).body.statusMessage, JSON.stringify(change)).toBe(NOT_FOLLOWED.solana);
        const back = Object.fromEntries(Object.keys(change).map((k) => [k, k === 'allAddresses' ? false : []]));
        expect((await post(`/streams/solana/${id}`, back)).body.statusMessage, JSON.stringify(change)).toMatch(NOTHING);
      }
    });

    it('refuses bad keys by index, other networks, and every EVM or Bitcoin field with 400 naming it, and stores nothing', async () => {
      const count = (await s.call('/streams/solana?limit=100')).body.total;
      const short31 = bs58.encode(new Uint8Array(31).fill(0xff));
      const long33 = bs58.encode(new Uint8Array(33).fill(1));
      const zeroAt10 = `${TOKEN.slice(0, 10)}0${TOKEN.slice(11)}`;
      const cases: Array<[Record<string, unknown>, string, RegExp?]> = [
        [{}, 'webhookUrl'],
        [{ webhookUrl: 'ftp://x' }, 'webhookUrl'],
        [{ webhookUrl: rx.url, network: ['devnet'] }, 'network', /^network: must be \["mainnet"\]: only Solana mainnet is followed$/],
        [{ webhookUrl: rx.url, network: ['mainnet', 'devnet'] }, 'network'],
        [{ webhookUrl: rx.url, network: 'mainnet' }, 'network'],
        [{ webhookUrl: rx.url, network: [] }, 'network'],
        [
          { webhookUrl: rx.url, programIds: [TOKEN, 'hello!'] },
          'programIds.1',
          /hello! is not a Solana key \(base58 of 32 bytes\): 'l' at 2 is not a base58 character/,
        ],
        [
          { webhookUrl: rx.url, programIds: [SYSTEM, VOTE, zeroAt10] },
          'programIds.2',
          new RegExp(`${zeroAt10} is not a Solana key .*'0' at 10 is not a base58 character`),
        ],
        [{ webhookUrl: rx.url, programIds: [7] }, 'programIds.0'],
        [{ webhookUrl: rx.url, programIds: TOKEN }, 'programIds'],
        [
          { webhookUrl: rx.url, mintAddresses: [USDC, short31] },
          'mintAddresses.1',
          new RegExp(`${short31} is not a Solana key .*: decodes to 31 bytes, a key has 32`),
        ],
        [{ webhookUrl: rx.url, mintAddresses: [long33] }, 'mintAddresses.0', /decodes to 33 bytes, a key has 32/],
        [{ webhookUrl: rx.url, mintAddresses: [USDC.slice(0, 20)] }, 'mintAddresses.0', /20 characters, a 32-byte key has 32 to 44/],
        [{ webhookUrl: rx.url, mintAddresses: [`${USDC}1`] }, 'mintAddresses.0', /45 characters/],
        [{ webhookUrl: rx.url, mintAddresses: [WALLET.toLowerCase()] }, 'mintAddresses.0', /'l' at \d+ is not a base58 character/],
        [{ webhookUrl: rx.url, allAddresses: null }, 'allAddresses'],
        [{ webhookUrl: rx.url, demo: 'no' }, 'demo'],
        [{ webhookUrl: rx.url, description: 7 }, 'description'],
        [{ webhookUrl: rx.url, tag: 'x'.repeat(201) }, 'tag'],
        [{ webhookUrl: rx.url, chainIds: ['0x1'] }, 'chainIds', /^chainIds: an EVM stream field: a Solana stream does not take it$/],
        [{ webhookUrl: rx.url, topic0: ['Transfer(address,address,uint256)'] }, 'topic0'],
        [{ webhookUrl: rx.url, abi: [] }, 'abi'],
        [{ webhookUrl: rx.url, includeNativeTxs: true }, 'includeNativeTxs'],
        [{ webhookUrl: rx.url, includeContractLogs: false }, 'includeContractLogs'],
        [{ webhookUrl: rx.url, includeInternalTxs: false }, 'includeInternalTxs'],
        [{ webhookUrl: rx.url, includeAllTxLogs: false }, 'includeAllTxLogs'],
        [{ webhookUrl: rx.url, triggers: null }, 'triggers'],
        [{ webhookUrl: rx.url, advancedOptions: null }, 'advancedOptions'],
        [{ webhookUrl: rx.url, getNativeBalances: [] }, 'getNativeBalances'],
        [{ webhookUrl: rx.url, filterPossibleSpamAddresses: true }, 'filterPossibleSpamAddresses'],
        [
          { webhookUrl: rx.url, includeInputs: true },
          'includeInputs',
          /^includeInputs: a Bitcoin stream field: a Solana stream does not take it$/,
        ],
        [{ webhookUrl: rx.url, includeOutputs: false }, 'includeOutputs'],
      ];
      for (const [body, field, message] of cases) {
        const r = await put(body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.details.field, JSON.stringify(body)).toBe(field);
        expect(r.body.message, JSON.stringify(body)).toMatch(message ?? new RegExp(`^${field.replace('.', '\\.')}: `));
      }
      expect(
        (await s.call('/streams/solana', { method: 'PUT', body: 'not json', headers: { 'content-type': 'application/json' } })).status,
      ).toBe(400);
      // The receiver refuses the test webhook: no stream.
      rx.state.answerTests = () => 500;
      const refused = await put({ webhookUrl: rx.url, programIds: [TOKEN] });
      expect(refused.status).toBe(400);
      expect(refused.body.details.field).toBe('webhookUrl');
      expect(refused.body.message).toMatch(/^webhookUrl: the test webhook .* was not accepted \(the receiver answered HTTP 500\)/);
      expect((await s.call('/streams/solana?limit=100')).body.total).toBe(count);
    });

    it("updates any subset after a test webhook; refuses bad keys, other families' fields and a refused test webhook, changing nothing", async () => {
      const id = await make({ programIds: [TOKEN] });
      const before = rx.received.length;
      const up = await post(`/streams/solana/${id}`, { description: 'changed', mintAddresses: [USDT], webhookUrl: `${rx.url}?v2` });
      expect(up.status, JSON.stringify(up.body)).toBe(200);
      expect(up.body).toMatchObject({
        id,
        description: 'changed',
        programIds: [TOKEN],
        mintAddresses: [USDT],
        tag: 'sol-tag',
        webhookUrl: `${rx.url}?v2`,
        network: ['mainnet'],
      });
      const tests = rx.received.slice(before).filter((x) => x.test);
      expect(tests.map((x) => x.raw)).toEqual(['']);
      const bad: Array<[Record<string, unknown>, string]> = [
        [{ chainIds: ['0x1'] }, 'chainIds'],
        [{ includeOutputs: true }, 'includeOutputs'],
        [{ network: ['devnet'] }, 'network'],
        [{ programIds: [TOKEN, VOTE, USDC, 'bad'] }, 'programIds.3'],
        [{ mintAddresses: ['0x'.padEnd(42, 'a')] }, 'mintAddresses.0'],
      ];
      for (const [body, field] of bad)
        expect((await post(`/streams/solana/${id}`, body)).body.details.field, JSON.stringify(body)).toBe(field);
      rx.state.answerTests = () => 500;
      const refused = await post(`/streams/solana/${id}`, { description: 'never' });
      expect(refused.status).toBe(400);
      expect(refused.body.details.field).toBe('webhookUrl');
      expect(await stream(id)).toEqual(up.body);
    });

    it("lists by cursor only Solana streams, and answers 404 for another family's id on every route", async () => {
      const sol = [await make(), await make(), await make()];
      const evm = await makeIn('evm');
      const btc = await makeIn('bitcoin');
      const listed = await all('/streams/solana', 2);
      expect(listed.pages).toBeGreaterThan(1);
      for (const id of sol) expect(listed.items.map((x) => x.id)).toContain(id);
      for (const id of [evm, btc]) expect(listed.items.map((x) => x.id)).not.toContain(id);
      expect(listed.items.every((x) => Array.isArray(x.programIds) && x.chainIds === undefined && x.includeInputs === undefined)).toBe(
        true,
      );
      for (const family of ['evm', 'bitcoin']) {
        const other = await all(`/streams/${family}`, 2);
        expect(other.items.map((x) => x.id)).toContain(family === 'evm' ? evm : btc);
        for (const id of sol)
          expect(
            other.items.map((x) => x.id),
            family,
          ).not.toContain(id);
      }

      const crossed: Array<[string, string, unknown?]> = [
        ['GET', `/streams/evm/${sol[0]}`],
        ['POST', `/streams/evm/${sol[0]}`, { description: 'x' }],
        ['DELETE', `/streams/evm/${sol[0]}`],
        ['POST', `/streams/evm/${sol[0]}/status`, { status: 'paused' }],
        ['POST', `/streams/evm/${sol[0]}/address`, { address: '0x'.padEnd(42, '1') }],
        ['GET', `/streams/evm/${sol[0]}/address`],
        ['GET', `/streams/bitcoin/${sol[0]}`],
        ['DELETE', `/streams/bitcoin/${sol[0]}`],
        ['POST', `/streams/bitcoin/${sol[0]}/address`, { address: '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa' }],
        ['GET', `/streams/bitcoin/${sol[0]}/xpub`],
      ];
      for (const id of [evm, btc]) {
        crossed.push(
          ['GET', `/streams/solana/${id}`],
          ['POST', `/streams/solana/${id}`, { description: 'x' }],
          ['DELETE', `/streams/solana/${id}`],
          ['POST', `/streams/solana/${id}/status`, { status: 'paused' }],
          ['POST', `/streams/solana/${id}/address`, { address: WALLET }],
          ['DELETE', `/streams/solana/${id}/address`, { address: WALLET }],
          ['GET', `/streams/solana/${id}/address`],
        );
      }
      for (const [method, path, json] of crossed) {
        const r = await s.call(path, { method, ...(json === undefined ? {} : { json }) });
        expect(r.status, `${method} ${path}`).toBe(404);
      }
      expect((await stream(sol[0]!)).status).toBe('active');
      expect((await s.call(`/streams/evm/${evm}`)).body.status).toBe('active');
      expect((await s.call(`/streams/bitcoin/${btc}`)).body.status).toBe('active');
      expect((await s.call(`/stats/${sol[0]}`)).body).toMatchObject({ streamId: sol[0], totalWebhooksDelivered: 0 });
      expect((await s.call('/streams/solana/not-a-uuid')).body.details.field).toBe('id');
      expect((await s.call('/streams/solana?limit=0')).body.details.field).toBe('limit');
      expect((await s.call('/streams/solana?cursor=bm9wZQ')).body.details.field).toBe('cursor');
    });

    it('keeps tenants apart: another key sees none of a stream or its addresses', async () => {
      const id = await make();
      await post(`/streams/solana/${id}/address`, { address: WALLET });
      const as = await stranger('sol-stranger');
      const calls: Array<[string, string, unknown?]> = [
        ['GET', `/streams/solana/${id}`],
        ['POST', `/streams/solana/${id}`, { description: 'mine now' }],
        ['DELETE', `/streams/solana/${id}`],
        ['POST', `/streams/solana/${id}/status`, { status: 'paused' }],
        ['GET', `/streams/solana/${id}/address`],
        ['POST', `/streams/solana/${id}/address`, { address: TOKEN }],
        ['DELETE', `/streams/solana/${id}/address`, { address: WALLET }],
        ['GET', `/stats/${id}`],
      ];
      for (const [method, path, json] of calls) {
        const r = await s.call(path, { ...as, method, ...(json === undefined ? {} : { json }) });
        expect(r.status, `${method} ${path}`).toBe(404);
      }
      expect((await s.call('/streams/solana', as)).body.total).toBe(0);
      // The stranger's own stream is not the first key's either.
      const theirs = (await s.call('/streams/solana', { ...as, method: 'PUT', json: { webhookUrl: rx.url, programIds: [VOTE] } })).body
        .id as string;
      expect((await s.call(`/streams/solana/${theirs}`)).status).toBe(404);
      expect((await s.call('/streams/solana?limit=100')).body.result.map((x: { id: string }) => x.id)).not.toContain(theirs);
      expect(await stream(id)).toMatchObject({ status: 'active', amountOfAddresses: 1, description: 'sol' });
      expect((await s.call(`/streams/solana/${id}/address`)).body.result).toEqual([{ address: WALLET }]);
    });

    it('pauses and resumes (an empty test webhook before resuming), refuses error and terminated, and deletes', async () => {
      const id = await make();
      const paused = await post(`/streams/solana/${id}/status`, { status: 'paused' });
      expect(paused.body).toMatchObject({ id, status: 'paused', network: ['mainnet'], programIds: [] });
      for (const status of ['error', 'terminated', 'stopped', undefined]) {
        const r = await post(`/streams/solana/${id}/status`, { status });
        expect(r.status).toBe(400);
        expect(r.body.details.field).toBe('status');
      }
      rx.state.answerTests = () => 500;
      expect((await post(`/streams/solana/${id}/status`, { status: 'active' })).body.details.field).toBe('webhookUrl');
      expect((await stream(id)).status).toBe('paused');
      rx.state.answerTests = () => 200;
      const before = rx.received.length;
      expect((await post(`/streams/solana/${id}/status`, { status: 'active' })).body.status).toBe('active');
      expect(
        rx.received
          .slice(before)
          .filter((x) => x.test)
          .map((x) => x.raw),
      ).toEqual(['']);
      expect((await post(`/streams/solana/${id}/status`, { status: 'active' })).body.status).toBe('active');
      expect(rx.received.slice(before).filter((x) => x.test)).toHaveLength(1);

      const gone = await del(`/streams/solana/${id}`);
      expect(gone.status).toBe(200);
      expect(gone.body).toMatchObject({ id, status: 'active', network: ['mainnet'] });
      expect((await s.call(`/streams/solana/${id}`)).status).toBe(404);
      expect((await del(`/streams/solana/${id}`)).status).toBe(404);
    });
  });

  describe('addresses', () => {
    it('adds one or many, lists them by pages, removes them, all case-sensitive and stored as given', async () => {
      const id = await make();
      const one = await post(`/streams/solana/${id}/address`, { address: WALLET });
      expect(one.body).toEqual({ streamId: id, address: WALLET });
      // A key and its lower-cased form are two keys.
      const both = await post(`/streams/solana/${id}/address`, { address: [TOKEN, TOKEN_LOWER] });
      expect(both.body).toEqual({ streamId: id, address: [TOKEN, TOKEN_LOWER] });
      const wallets = [1, 2, 3, 4].map(wallet);
      const many = await post(`/streams/solana/${id}/address`, { address: [...wallets, WALLET, wallets[0]] });
      expect(many.body).toEqual({ streamId: id, address: [...wallets, WALLET] });
      expect((await stream(id)).amountOfAddresses).toBe(7);
      const listed = await all(`/streams/solana/${id}/address`, 3);
      expect(listed.pages).toBe(3);
      expect(listed.items.map((x) => x.address).sort()).toEqual([WALLET, TOKEN, TOKEN_LOWER, ...wallets].sort());
      expect(listed.items.every((x) => Object.keys(x).join() === 'address')).toBe(true);

      const removed = await del(`/streams/solana/${id}/address`, { address: [TOKEN_LOWER, wallets[1]] });
      expect(removed.body).toEqual({ streamId: id, address: [TOKEN_LOWER, wallets[1]] });
      expect((await stream(id)).amountOfAddresses).toBe(5);
      const left = (await all(`/streams/solana/${id}/address`, 100)).items.map((x) => x.address);
      expect(left).toContain(TOKEN);
      expect(left).not.toContain(TOKEN_LOWER);
      // Removing one it does not hold changes nothing.
      await del(`/streams/solana/${id}/address`, { address: TOKEN_LOWER });
      expect((await stream(id)).amountOfAddresses).toBe(5);
    });

    it('refuses a key that is not base58 of 32 bytes, or too many, with 400 naming it', async () => {
      const id = await make();
      const bad: Array<[string, RegExp]> = [
        [WALLET.toLowerCase(), /'l' at \d+ is not a base58 character/],
        ['0x'.padEnd(42, 'a'), /'0' at 0 is not a base58 character/],
        ['1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa', /decodes to 25 bytes, a key has 32/],
        [bs58.encode(new Uint8Array(31).fill(0xff)), /decodes to 31 bytes/],
        [bs58.encode(new Uint8Array(64).fill(9)), /characters, a 32-byte key has 32 to 44/],
        ['hello', /'l' at 2/],
      ];
      for (const [address, why] of bad) {
        const single = await post(`/streams/solana/${id}/address`, { address });
        expect(single.status, address).toBe(400);
        expect(single.body.details.field, address).toBe('address');
        // A key longer than 64 characters is named by its first 64.
        expect(single.body.message, address).toContain(address.length > 64 ? `${address.slice(0, 64)}…` : address);
        expect(single.body.message, address).toMatch(why);
        const inList = await post(`/streams/solana/${id}/address`, { address: [WALLET, TOKEN, address] });
        expect(inList.status, address).toBe(400);
        expect(inList.body.details.field, address).toBe('address.2');
        expect(inList.body.message, address).toContain(address.slice(0, 64));
      }
      await addressShapes(id, WALLET);
    });

    it("deletes a stream's addresses with it", async () => {
      const id = await make();
      await post(`/streams/solana/${id}/address`, { address: [WALLET, TOKEN] });
      const keep = await make();
      await post(`/streams/solana/${keep}/address`, { address: WALLET });
      expect((await del(`/streams/solana/${id}`)).status).toBe(200);
      const { openStore } = await import('../storage/env.js');
      const store = openStore(s.dir, { create: false });
      try {
        const rows = (of: string) => store.range('streamAddresses', { start: `${of}/`, end: `${of}/\uffff` }).map((e) => e.key);
        expect(rows(id)).toEqual([]);
        expect(rows(keep)).toEqual([`${keep}/${WALLET}`]);
      } finally {
        await store.close();
      }
    });
  });

  describe('delivery', () => {
    it('delivers, retries and keeps history, logs, replay and stats for a Solana stream as for EVM', async () => {
      const url = `${rx.url}?sol-delivery`;
      const id = await make({ webhookUrl: url, tag: 'sol-deliver', programIds: [SYSTEM] });
      const before = rx.webhooks().length;
      let failed = false;
      rx.state.answer = (x) => (x.body.streamId === id && x.body.block.slot === '301' && !failed ? ((failed = true), 500) : 200);
      expect((await enqueue(id, [webhook(301), webhook(302)])).body.results).toEqual(['queued', 'queued']);
      await advance(s, 0);
      await advance(s, 60);
      const got = rx
        .webhooks()
        .slice(before)
        .filter((x) => x.body.streamId === id);
      expect(got.map((x) => [x.body.block.slot, x.body.retries])).toEqual([
        ['301', 0],
        ['302', 0],
        ['301', 1],
      ]);
      const key = await secret();
      for (const g of got) {
        expect(g.headers['x-signature']).toBe(`0x${bytesToHex(keccak_256(utf8ToBytes(g.raw + key)))}`);
        expect(g.body).toMatchObject({ streamId: id, tag: 'sol-deliver', chainId: 'solana_mainnet', confirmed: false });
      }
      expect(got[0]!.body.transactions).toEqual(webhook(301).transactions);
      // History and logs name the slot, its hash and time as the block.
      const h = (await s.call('/history?limit=100')).body.result.filter((x: { streamId: string }) => x.streamId === id);
      expect(h).toHaveLength(1);
      expect(h[0]).toMatchObject({
        streamId: id,
        tag: 'sol-deliver',
        webhookUrl: url,
        errorMessage: 'the receiver answered HTTP 500',
        delivered: true,
      });
      expect(h[0].payload).toMatchObject({ streamId: id, chainId: 'solana_mainnet', block: { slot: '301' } });
      expect(h[0].tinyPayload).toMatchObject({
        chainId: 'solana_mainnet',
        confirmed: false,
        block: { number: '301', hash: wallet(301), timestamp: String(1_795_000_301) },
        records: 1,
      });
      const logs = (await s.call('/history/logs?limit=100')).body.result.filter((l: { streamId: string }) => l.streamId === id);
      expect(logs.map((l: { deliveryStatus: string }) => l.deliveryStatus).sort()).toEqual(['failed', 'success', 'success']);
      expect(
        logs.every(
          (l: { chain: string; webhookUrl: string; tag: string }) =>
            l.chain === 'solana_mainnet' && l.webhookUrl === url && l.tag === 'sol-deliver',
        ),
      ).toBe(true);
      const replayed = await post(`/history/replay/${id}/${h[0].id}`);
      expect(replayed.body).toMatchObject({ id: h[0].id, streamId: id, delivered: true, status: 200 });
      expect(rx.webhooks().filter((w) => w.body.streamId === id)).toHaveLength(4);
      expect((await s.call(`/stats/${id}`)).body).toMatchObject({ streamId: id, totalWebhooksDelivered: 2, totalWebhooksFailed: 1 });
      await post(`/streams/solana/${id}/status`, { status: 'paused' });
      expect((await enqueue(id, [webhook(303)])).body.results).toEqual(['dropped']);
    });

    it('goes to error on the 31st failure in a row (below 70%), e-mails the owner, and is set active again by its owner', async () => {
      const url = `${rx.url}?sol-rate`;
      const id = await make({ webhookUrl: url, tag: 'sol-rate', allAddresses: true });
      rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
      const mails = smtp.mails.length;
      await enqueue(
        id,
        Array.from({ length: 30 }, (_, i) => webhook(400 + i)),
      );
      await advance(s, 0);
      expect((await stream(id)).status).toBe('active');
      await enqueue(id, [webhook(430)]);
      await advance(s, 0);
      const errored = await stream(id);
      expect(errored.status).toBe('error');
      expect(Date.parse((await s.call('/admin/clock')).body.now) - Date.parse(errored.isErrorSince)).toBeGreaterThanOrEqual(0);
      expect(errored.statusMessage).toMatch(/fell to 69%, below 70%/);
      expect(await until(() => smtp.mails.slice(mails).some((m) => m.data.includes(`stream ${id} is in error`)), 5_000)).toBe(true);
      expect((await post(`/streams/solana/${id}/status`, { status: 'paused' })).body.details.field).toBe('status');
      rx.state.answer = () => 200;
      const resumed = await post(`/streams/solana/${id}/status`, { status: 'active' });
      // The error's message goes; the chain this server does not follow is still said.
      expect(resumed.body).toMatchObject({ status: 'active', statusMessage: NOT_FOLLOWED.solana, isErrorSince: null });
    });
  });

  describe('store', () => {
    it('keeps Solana streams and their addresses (case as given) across a restart, the watchlist loading them with no Solana chain followed', async () => {
      const rx2 = await startReceiver();
      let r: Running | undefined = await startChainpost({ CHAINPOST_RATE_LIMIT: '0' });
      const dir = r.dir;
      try {
        const sol = (
          await r.call('/streams/solana', {
            method: 'PUT',
            json: { webhookUrl: rx2.url, tag: 'kept', programIds: [TOKEN_LOWER], mintAddresses: [USDC] },
          })
        ).body;
        await r.call(`/streams/solana/${sol.id}/address`, { method: 'POST', json: { address: [TOKEN, TOKEN_LOWER] } });
        const evm = (
          await r.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx2.url, chainIds: ['0x1'], includeNativeTxs: true } })
        ).body;
        await r.stop('SIGTERM');
        const { openStore } = await import('../storage/env.js');
        const store = openStore(dir, { create: false });
        try {
          const record = store
            .range<Record<string, unknown>>('streams')
            .map((e) => e.value)
            .find((x) => x['id'] === sol.id);
          expect(record).toMatchObject({ family: 'solana', network: ['mainnet'], programIds: [TOKEN_LOWER], mintAddresses: [USDC] });
        } finally {
          await store.close();
        }
        r = await startChainpost({ CHAINPOST_RATE_LIMIT: '0' }, dir);
        expect((await r.call(`/streams/solana/${sol.id}`)).body).toMatchObject({
          id: sol.id,
          tag: 'kept',
          amountOfAddresses: 2,
          programIds: [TOKEN_LOWER],
        });
        expect((await r.call(`/streams/solana/${sol.id}/address`)).body.result.map((x: { address: string }) => x.address).sort()).toEqual(
          [TOKEN, TOKEN_LOWER].sort(),
        );
        expect((await r.call('/streams/solana')).body.result.map((x: { id: string }) => x.id)).toEqual([sol.id]);
        expect((await r.call('/streams/evm')).body.result.map((x: { id: string }) => x.id)).toEqual([evm.id]);
        expect((await r.call('/health')).status).toBe(200);
      } finally {
        await stopAndClean(r);
        await rx2.close();
      }
    });
  });
});
