import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import bs58 from 'bs58';
import { describe, expect, it } from 'vitest';
import { BIP84_ZPUB, XPRV, XPUB, withVersion } from './kit/bitcoin-core/keys.js';
import { advance, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { deliveryEnv, familyCalls, NOT_FOLLOWED, type Receiver, type Smtp } from './delivery-env.js';
import { startReceiver, type Received } from './receiver.js';
import { openStore, type Store } from '../storage/env.js';

/**
 * The Streams API of each family beside EVM's (`/streams/bitcoin`, `/streams/solana`): one suite run for each
 * family over its descriptor (its route, sample addresses, its own resources, the fields it refuses), then each
 * family's own cases. One server (test clock, no chain followed) serves every family's suite.
 */

/** Mainnet addresses of every kind a Bitcoin stream takes (BIP-173 and BIP-350 vectors, the genesis and BIP-13 ones). */
const P2PKH = '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa';
const P2SH = '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy';
const P2WPKH = 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4';
const P2WSH = 'bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3';
const P2TR = 'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0';
const ZPUB = BIP84_ZPUB;
const TPUB = withVersion(XPUB, 0x043587cf);

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

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const NOTHING = /^Stream matches nothing: it has no addresses, programIds or mintAddresses, and allAddresses is false\./;
/** The signature of every webhook: keccak-256 over the raw body and the tenant's secret. */
const signed = (raw: string, secret: string): string => `0x${bytesToHex(keccak_256(utf8ToBytes(raw + secret)))}`;

type Call = [method: string, path: string, json?: unknown];
type Family = 'evm' | 'bitcoin' | 'solana';
type Calls = ReturnType<typeof familyCalls>;
/** What a family's hooks are given: calls on the family's API and on the suite's server. */
type Ctx = Calls & { call: Running['call'] };

/** Every route of a stream of `family` with id `id` (with a sample body where it takes one), including the family's own resources. */
function routes(family: Family, id: string): Call[] {
  const base = `/streams/${family}/${id}`;
  const address = { evm: '0x'.padEnd(42, '1'), bitcoin: P2PKH, solana: WALLET }[family];
  return [
    ['GET', base],
    ['POST', base, { description: 'x' }],
    ['DELETE', base],
    ['POST', `${base}/status`, { status: 'paused' }],
    ['POST', `${base}/address`, { address }],
    ...(family === 'evm' ? [] : ([['DELETE', `${base}/address`, { address }]] as Call[])),
    ['GET', `${base}/address`],
    ...(family === 'bitcoin'
      ? ([
          ['POST', `${base}/xpub`, { xpub: XPUB }],
          ['GET', `${base}/xpub`],
        ] as Call[])
      : []),
  ];
}

/** A family's suite: what differs between Bitcoin's and Solana's Streams API, and the checks only one of them has. */
interface FamilySuite {
  name: 'bitcoin' | 'solana';
  title: 'Bitcoin' | 'Solana';
  /** What `make` creates a stream with. */
  defaults: Record<string, unknown>;
  /** A selector a stream is made with where a test wants one that matches something. */
  selector: Record<string, unknown>;
  /** The network the family does not follow. */
  otherNetwork: string;
  /** Valid addresses, stored as given; `address` is the one a test adds. */
  address: string;
  /** The create test: the family's fields given and as answered (between network and allAddresses, in the answer's order). */
  created: { json: Record<string, unknown>; fields: Record<string, unknown> };
  /** A second create leaving out what may be left out: what it gives, and what the answer holds. */
  minimal: { json: Record<string, unknown>; answer: Record<string, unknown> };
  /** Checks the test webhook sent before a create, update or resume of the stream. */
  testWebhook(t: Received, stream: { id: string; tag: string }, secret: string): void;
  /** Refused at create, beyond what every family refuses: [body without webhookUrl, field, message]. */
  refused: Array<[Record<string, unknown>, string, RegExp?]>;
  /** An update's change and what the answer then holds; refused changes beyond every family's. */
  update: { json: Record<string, unknown>; answer: Record<string, unknown>; refused: Array<[Record<string, unknown>, string]> };
  /** Whether a listed item has the family's shape. */
  listed(item: Record<string, unknown>): boolean;
  /** The answer's family fields while paused (a stream made with the defaults). */
  paused: Record<string, unknown>;
  /** Addresses refused, with why; `before` valid ones put ahead of each in a list. */
  badAddresses: { before: string[]; cases: Array<[string, RegExp]> };
  /** The family's own resources of a stream beside its addresses: added (answering the routes that reach them), then checked unchanged. */
  ownResources?: { name: string; add(c: Ctx, id: string): Promise<Call[]>; kept(c: Ctx, id: string): Promise<void> };
  /** After a stream with addresses [address, second] (and its own resources) was deleted beside `keep`: the store's rows. */
  deleted: { second: string; check(store: Store, id: string, keep: string): void };
  /** A webhook as the matcher would hand it over, cut short: delivery reads only its envelope. */
  webhook(n: number): Record<string, unknown>;
  /** The first block (or slot) number the delivery tests use. */
  firstBlock: number;
  /** A webhook body's block number (Bitcoin's height, Solana's slot), and the block a history entry's payload holds. */
  blockOf(body: any): string;
  blockRef(n: number): Record<string, unknown>;
  chainId: string;
  /** A history entry's checks beyond every family's. */
  history?(h: any, n: number): void;
  /** The store test: the stream kept, its addresses, what its record and answer hold; its own resources added, then checked after the restart. */
  kept: {
    json: Record<string, unknown>;
    addresses: string[];
    record: Record<string, unknown>;
    answer: Record<string, unknown>;
    add?(r: Running, id: string): Promise<unknown>;
    check?(r: Running, id: string, added: unknown): Promise<void>;
  };
}

/** The shared rules of every stream's store records. */
const rowsOf = (store: Store, table: 'streamAddresses' | 'streamXpubs' | 'xpubKeys', of: string) =>
  store.range(table, { start: `${of}/`, end: `${of}/\uffff` }).map((e) => e.key);

const BITCOIN: FamilySuite = {
  name: 'bitcoin',
  title: 'Bitcoin',
  defaults: { description: 'btc', tag: 'btc-tag', network: ['mainnet'] },
  selector: {},
  otherNetwork: 'testnet',
  address: P2PKH,
  created: { json: {}, fields: { includeInputs: true, includeOutputs: true } },
  minimal: {
    // network may be left out (mainnet is the only one); the flags are kept as given.
    json: { includeInputs: false, includeOutputs: false, allAddresses: true, demo: true },
    answer: { network: ['mainnet'], includeInputs: false, includeOutputs: false, allAddresses: true, demo: true, description: '', tag: '' },
  },
  testWebhook(t, stream, secret) {
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
    expect(t.body).toEqual({
      confirmed: true,
      chainId: '',
      network: 'mainnet',
      streamId: stream.id,
      tag: stream.tag,
      retries: 0,
      block: emptyBlock,
      transactions: [],
    });
    expect(t.headers['x-signature']).toBe(signed(t.raw, secret));
  },
  refused: [
    [{ includeInputs: 'yes' }, 'includeInputs'],
    [{ includeOutputs: 1 }, 'includeOutputs'],
  ],
  update: {
    json: { includeInputs: false },
    answer: { includeInputs: false, includeOutputs: true },
    refused: [[{ includeOutputs: 'no' }, 'includeOutputs']],
  },
  listed: (x) => Array.isArray(x['network']) && x['chainIds'] === undefined,
  paused: {},
  badAddresses: {
    before: [P2PKH],
    cases: [
      ['1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb', /bad base58 or checksum/],
      ['3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLz', /bad base58 or checksum/],
      ['bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5', /bad bech32 checksum/],
      ['bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj1', /checksum/],
      ['tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', /testnet/],
      ['mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn', /testnet/],
      ['2MzQwSSnBHWHqSAqtTVQ6v47XtaisrJa1Vc', /testnet/],
      ['hello', /not a Bitcoin address/],
      ['0x'.padEnd(42, 'a'), /not a Bitcoin address/],
    ],
  },
  ownResources: {
    name: 'xpubs',
    async add({ post }, id) {
      const xpub = (await post(`/streams/bitcoin/${id}/xpub`, { xpub: XPUB })).body;
      return [
        ['POST', `/streams/bitcoin/${id}/xpub`, { xpub: ZPUB }],
        ['DELETE', `/streams/bitcoin/${id}/xpub/${xpub.id}`],
      ];
    },
    async kept({ call }, id) {
      expect((await call(`/streams/bitcoin/${id}/xpub`)).body.total).toBe(1);
    },
  },
  deleted: {
    second: P2TR,
    check(store, id, keep) {
      const counts = (of: string) => (['streamAddresses', 'streamXpubs', 'xpubKeys'] as const).map((t) => rowsOf(store, t, of).length);
      expect(counts(id)).toEqual([0, 0, 0]);
      // xpubKeys: the key's entry and the stream's count.
      expect(counts(keep)).toEqual([1, 1, 2]);
    },
  },
  webhook: (height) => ({
    confirmed: false,
    chainId: 'btc-mainnet',
    network: 'mainnet',
    block: { hash: height.toString(16).padStart(64, '0'), height: String(height), timestamp: String(1_795_000_000 + height) },
    transactions: [
      { txid: 'ab'.repeat(32), vin: [], vout: [{ n: 0, value: 0.5, scriptPubKeyAddress: P2WPKH, scriptPubKeyType: 'witness_v0_keyhash' }] },
    ],
  }),
  firstBlock: 1,
  blockOf: (body) => body.block.height,
  blockRef: (n) => ({ height: String(n) }),
  chainId: 'btc-mainnet',
  kept: {
    json: {},
    addresses: [P2PKH, P2TR],
    record: {},
    answer: {},
    add: async (r, id) => (await r.call(`/streams/bitcoin/${id}/xpub`, { method: 'POST', json: { xpub: ZPUB } })).body,
    async check(r, id, xpub) {
      expect((await r.call(`/streams/bitcoin/${id}/xpub`)).body.result).toEqual([xpub]);
    },
  },
};

const SOLANA: FamilySuite = {
  name: 'solana',
  title: 'Solana',
  defaults: { description: 'sol', tag: 'sol-tag', network: ['mainnet'] },
  selector: { programIds: [TOKEN] },
  otherNetwork: 'devnet',
  address: WALLET,
  created: { json: { programIds: [TOKEN], mintAddresses: [USDC, USDT] }, fields: { programIds: [TOKEN], mintAddresses: [USDC, USDT] } },
  minimal: {
    // Everything but webhookUrl may be left out; a lower-cased key is another key, kept as given.
    json: { programIds: [TOKEN_LOWER, SYSTEM], allAddresses: true, demo: true },
    answer: {
      network: ['mainnet'],
      programIds: [TOKEN_LOWER, SYSTEM],
      mintAddresses: [],
      allAddresses: true,
      demo: true,
      description: '',
      tag: '',
      statusMessage: NOT_FOLLOWED.solana,
    },
  },
  testWebhook(t, _stream, secret) {
    // An empty POST, signed over the empty body and the secret.
    expect(t.raw).toBe('');
    expect(t.headers['x-signature']).toBe(signed('', secret));
  },
  refused: (() => {
    const short31 = bs58.encode(new Uint8Array(31).fill(0xff));
    const long33 = bs58.encode(new Uint8Array(33).fill(1));
    const zeroAt10 = `${TOKEN.slice(0, 10)}0${TOKEN.slice(11)}`;
    return [
      [
        { programIds: [TOKEN, 'hello!'] },
        'programIds.1',
        /hello! is not a Solana key \(base58 of 32 bytes\): 'l' at 2 is not a base58 character/,
      ],
      [
        { programIds: [SYSTEM, VOTE, zeroAt10] },
        'programIds.2',
        new RegExp(`${zeroAt10} is not a Solana key .*'0' at 10 is not a base58 character`),
      ],
      [{ programIds: [7] }, 'programIds.0'],
      [{ programIds: TOKEN }, 'programIds'],
      [
        { mintAddresses: [USDC, short31] },
        'mintAddresses.1',
        new RegExp(`${short31} is not a Solana key .*: decodes to 31 bytes, a key has 32`),
      ],
      [{ mintAddresses: [long33] }, 'mintAddresses.0', /decodes to 33 bytes, a key has 32/],
      [{ mintAddresses: [USDC.slice(0, 20)] }, 'mintAddresses.0', /20 characters, a 32-byte key has 32 to 44/],
      [{ mintAddresses: [`${USDC}1`] }, 'mintAddresses.0', /45 characters/],
      [{ mintAddresses: [WALLET.toLowerCase()] }, 'mintAddresses.0', /'l' at \d+ is not a base58 character/],
      [{ includeInputs: true }, 'includeInputs', /^includeInputs: a Bitcoin stream field: a Solana stream does not take it$/],
      [{ includeOutputs: false }, 'includeOutputs'],
    ] as Array<[Record<string, unknown>, string, RegExp?]>;
  })(),
  update: {
    json: { mintAddresses: [USDT] },
    answer: { programIds: [TOKEN], mintAddresses: [USDT], network: ['mainnet'] },
    refused: [
      [{ includeOutputs: true }, 'includeOutputs'],
      [{ programIds: [TOKEN, VOTE, USDC, 'bad'] }, 'programIds.3'],
      [{ mintAddresses: ['0x'.padEnd(42, 'a')] }, 'mintAddresses.0'],
    ],
  },
  listed: (x) => Array.isArray(x['programIds']) && x['chainIds'] === undefined && x['includeInputs'] === undefined,
  paused: { programIds: [] },
  badAddresses: {
    before: [WALLET, TOKEN],
    cases: [
      [WALLET.toLowerCase(), /'l' at \d+ is not a base58 character/],
      ['0x'.padEnd(42, 'a'), /'0' at 0 is not a base58 character/],
      ['1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa', /decodes to 25 bytes, a key has 32/],
      [bs58.encode(new Uint8Array(31).fill(0xff)), /decodes to 31 bytes/],
      [bs58.encode(new Uint8Array(64).fill(9)), /characters, a 32-byte key has 32 to 44/],
      ['hello', /'l' at 2/],
    ],
  },
  deleted: {
    second: TOKEN,
    check(store, id, keep) {
      expect(rowsOf(store, 'streamAddresses', id)).toEqual([]);
      expect(rowsOf(store, 'streamAddresses', keep)).toEqual([`${keep}/${WALLET}`]);
    },
  },
  webhook: (slot) => ({
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
  }),
  firstBlock: 301,
  blockOf: (body) => body.block.slot,
  blockRef: (n) => ({ slot: String(n) }),
  chainId: 'solana_mainnet',
  history(h, n) {
    // History names the slot, its hash and time as the block.
    expect(h.tinyPayload).toMatchObject({
      chainId: 'solana_mainnet',
      confirmed: false,
      block: { number: String(n), hash: wallet(n), timestamp: String(1_795_000_000 + n) },
      records: 1,
    });
  },
  kept: {
    json: { programIds: [TOKEN_LOWER], mintAddresses: [USDC] },
    addresses: [TOKEN, TOKEN_LOWER],
    record: { programIds: [TOKEN_LOWER], mintAddresses: [USDC] },
    answer: { programIds: [TOKEN_LOWER] },
  },
};

const FAMILIES = [BITCOIN, SOLANA];

describe('the Streams API of each family beside EVM', () => {
  let s: Running;
  let rx: Receiver;
  let smtp: Smtp;
  deliveryEnv((e) => ({ s, rx, smtp } = e));
  const secret = async () => (await s.call('/settings')).body.secretKey as string;
  const calls = (f: FamilySuite): Ctx => ({
    ...familyCalls(() => ({ s, rx, smtp }), f.name, f.defaults),
    call: (path, init) => s.call(path, init),
  });
  // Another tenant's key, made once (a run of the CLI) for every family's suite.
  let strangerKey: ReturnType<Calls['stranger']> | undefined;
  const stranger = () => (strangerKey ??= calls(BITCOIN).stranger('stranger'));

  describe.each(FAMILIES)('$title Streams API', (f) => {
    const c = calls(f);
    const { put, post, del, stream, enqueue, make, makeIn, all, addressShapes } = c;
    const route = `/streams/${f.name}`;

    describe('streams', () => {
      it(`creates a stream after a test webhook, with the defaults, and answers the ${f.title}Stream object, its fields in order`, async () => {
        const before = rx.received.length;
        const r = await put({ webhookUrl: rx.url, description: 'payments', tag: 'tag-x', network: ['mainnet'], ...f.created.json });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body.id).toMatch(UUID_V4);
        const now = Date.parse((await s.call('/admin/clock')).body.now);
        expect(Date.parse(r.body.updatedAt)).toBeLessThanOrEqual(now);
        const expected = {
          id: r.body.id,
          webhookUrl: rx.url,
          description: 'payments',
          tag: 'tag-x',
          network: ['mainnet'],
          ...f.created.fields,
          allAddresses: false,
          demo: false,
          status: 'active',
          // This server follows no chain: accepted, and said.
          statusMessage: NOT_FOLLOWED[f.name],
          isErrorSince: null,
          amountOfAddresses: 0,
          updatedAt: r.body.updatedAt,
        };
        expect(r.body).toEqual(expected);
        expect(Object.keys(r.body)).toEqual(Object.keys(expected));
        const test = rx.received.slice(before).filter((x) => x.test);
        expect(test).toHaveLength(1);
        f.testWebhook(test[0]!, { id: r.body.id, tag: 'tag-x' }, await secret());
        expect(await stream(r.body.id)).toEqual(r.body);
        const other = await put({ webhookUrl: rx.url, ...f.minimal.json });
        expect(other.status, JSON.stringify(other.body)).toBe(200);
        expect(other.body).toMatchObject(f.minimal.answer);
      });

      it(`refuses bad fields, other networks, and every other family's field with 400 naming it, and stores nothing`, async () => {
        const count = (await s.call(`${route}?limit=100`)).body.total;
        const network = new RegExp(`^network: must be \\["mainnet"\\]: only ${f.title} mainnet is followed$`);
        const cases: Array<[Record<string, unknown>, string, RegExp?]> = [
          [{}, 'webhookUrl'],
          [{ webhookUrl: 'ftp://x' }, 'webhookUrl'],
          [{ webhookUrl: rx.url, network: [f.otherNetwork] }, 'network', network],
          [{ webhookUrl: rx.url, network: ['mainnet', f.otherNetwork] }, 'network'],
          [{ webhookUrl: rx.url, network: 'mainnet' }, 'network'],
          [{ webhookUrl: rx.url, network: [] }, 'network'],
          [{ webhookUrl: rx.url, allAddresses: null }, 'allAddresses'],
          [{ webhookUrl: rx.url, demo: 'no' }, 'demo'],
          [{ webhookUrl: rx.url, description: 7 }, 'description'],
          [{ webhookUrl: rx.url, tag: 'x'.repeat(201) }, 'tag'],
          [
            { webhookUrl: rx.url, chainIds: ['0x1'] },
            'chainIds',
            new RegExp(`^chainIds: an EVM stream field: a ${f.title} stream does not take it$`),
          ],
          [{ webhookUrl: rx.url, topic0: ['Transfer(address,address,uint256)'] }, 'topic0'],
          [{ webhookUrl: rx.url, abi: [] }, 'abi', new RegExp(`^abi: an EVM stream field: a ${f.title} stream does not take it$`)],
          [{ webhookUrl: rx.url, includeNativeTxs: true }, 'includeNativeTxs'],
          [{ webhookUrl: rx.url, includeContractLogs: false }, 'includeContractLogs'],
          [{ webhookUrl: rx.url, includeInternalTxs: false }, 'includeInternalTxs'],
          [{ webhookUrl: rx.url, includeAllTxLogs: false }, 'includeAllTxLogs'],
          [{ webhookUrl: rx.url, triggers: null }, 'triggers'],
          [{ webhookUrl: rx.url, advancedOptions: null }, 'advancedOptions'],
          [{ webhookUrl: rx.url, getNativeBalances: [] }, 'getNativeBalances'],
          [{ webhookUrl: rx.url, filterPossibleSpamAddresses: true }, 'filterPossibleSpamAddresses'],
          ...f.refused.map(([body, field, message]): [Record<string, unknown>, string, RegExp?] => [
            { webhookUrl: rx.url, ...body },
            field,
            message,
          ]),
        ];
        for (const [body, field, message] of cases) {
          const r = await put(body);
          expect(r.status, JSON.stringify(body)).toBe(400);
          expect(r.body.details.field, JSON.stringify(body)).toBe(field);
          expect(r.body.message, JSON.stringify(body)).toMatch(message ?? new RegExp(`^${field.replace('.', '\\.')}: `));
        }
        expect((await s.call(route, { method: 'PUT', body: 'not json', headers: { 'content-type': 'application/json' } })).status).toBe(
          400,
        );
        // The receiver refuses the test webhook: no stream.
        rx.state.answerTests = () => 500;
        const refused = await put({ webhookUrl: rx.url, ...f.selector });
        expect(refused.status).toBe(400);
        expect(refused.body.details.field).toBe('webhookUrl');
        expect(refused.body.message).toMatch(/^webhookUrl: the test webhook .* was not accepted \(the receiver answered HTTP 500\)/);
        expect((await s.call(`${route}?limit=100`)).body.total).toBe(count);
      });

      it("updates any subset after a test webhook; refuses other families' fields, its own bad ones and a refused test webhook, changing nothing", async () => {
        const id = await make(f.selector);
        const before = rx.received.length;
        const up = await post(`${route}/${id}`, { description: 'changed', webhookUrl: `${rx.url}?v2`, ...f.update.json });
        expect(up.status, JSON.stringify(up.body)).toBe(200);
        expect(up.body).toMatchObject({
          id,
          description: 'changed',
          tag: f.defaults['tag'],
          webhookUrl: `${rx.url}?v2`,
          ...f.update.answer,
        });
        const tests = rx.received.slice(before).filter((x) => x.test);
        expect(tests).toHaveLength(1);
        f.testWebhook(tests[0]!, { id, tag: f.defaults['tag'] as string }, await secret());
        const bad: Array<[Record<string, unknown>, string]> = [
          [{ chainIds: ['0x1'] }, 'chainIds'],
          [{ network: [f.otherNetwork] }, 'network'],
          ...f.update.refused,
        ];
        for (const [body, field] of bad) expect((await post(`${route}/${id}`, body)).body.details.field, JSON.stringify(body)).toBe(field);
        rx.state.answerTests = () => 500;
        const refused = await post(`${route}/${id}`, { description: 'never' });
        expect(refused.status).toBe(400);
        expect(refused.body.details.field).toBe('webhookUrl');
        expect(await stream(id)).toEqual(up.body);
      });

      it(`lists by cursor only ${f.title} streams, and answers 404 for another family's id on every route`, async () => {
        const own = [await make(), await make(), await make()];
        const others = (['evm', 'bitcoin', 'solana'] as const).filter((o) => o !== f.name);
        // Two EVM streams, one of the third family.
        const other: Array<[Family, string]> = [];
        for (const o of others) for (let k = o === 'evm' ? 2 : 1; k > 0; k--) other.push([o, await makeIn(o)]);
        const listed = await all(route, 2);
        expect(listed.pages).toBeGreaterThan(1);
        for (const id of own) expect(listed.items.map((x) => x.id)).toContain(id);
        for (const [, id] of other) expect(listed.items.map((x) => x.id)).not.toContain(id);
        expect(listed.items.every(f.listed)).toBe(true);
        expect((await s.call(`${route}?limit=2`)).body).toMatchObject({ page: 0, page_size: 2 });
        for (const o of others) {
          const theirs = (await all(`/streams/${o}`, 2)).items.map((x) => x.id);
          for (const [, id] of other.filter(([family]) => family === o)) expect(theirs, o).toContain(id);
          for (const id of own) expect(theirs, o).not.toContain(id);
        }

        // The family's id on every other family's route, and theirs on every route of the family.
        const crossed: Call[] = [];
        for (const o of others) crossed.push(...routes(o, own[0]!));
        for (const o of others) crossed.push(...routes(f.name, other.find(([family]) => family === o)![1]));
        for (const [method, path, json] of crossed) {
          const r = await s.call(path, { method, ...(json === undefined ? {} : { json }) });
          expect(r.status, `${method} ${path}`).toBe(404);
        }
        // All still there and unchanged.
        expect((await stream(own[0]!)).status).toBe('active');
        for (const [o, id] of other) expect((await s.call(`/streams/${o}/${id}`)).body.status, o).toBe('active');
        // Stats of a stream are the tenant's whatever its family.
        expect((await s.call(`/stats/${own[0]}`)).body).toMatchObject({ streamId: own[0], totalWebhooksDelivered: 0 });
        expect((await s.call(`${route}/not-a-uuid`)).body.details.field).toBe('id');
        expect((await s.call(`${route}?limit=0`)).body.details.field).toBe('limit');
        expect((await s.call(`${route}?cursor=bm9wZQ`)).body.details.field).toBe('cursor');
      });

      it(`keeps tenants apart: another key sees none of a stream, its addresses${f.ownResources ? ` or ${f.ownResources.name}` : ''}`, async () => {
        const id = await make();
        await post(`${route}/${id}/address`, { address: f.address });
        const mine = (await f.ownResources?.add(c, id)) ?? [];
        const as = await stranger();
        for (const [method, path, json] of [...routes(f.name, id), ...mine, ['GET', `/stats/${id}`] as Call]) {
          const r = await s.call(path, { ...as, method, ...(json === undefined ? {} : { json }) });
          expect(r.status, `${method} ${path}`).toBe(404);
        }
        expect((await s.call(route, as)).body.total).toBe(0);
        // The stranger's own stream is not the first key's either.
        const theirs = (await s.call(route, { ...as, method: 'PUT', json: { webhookUrl: rx.url, ...f.selector } })).body.id as string;
        expect((await s.call(`${route}/${theirs}`)).status).toBe(404);
        expect((await s.call(`${route}?limit=100`)).body.result.map((x: { id: string }) => x.id)).not.toContain(theirs);
        expect(await stream(id)).toMatchObject({ status: 'active', amountOfAddresses: 1, description: f.defaults['description'] });
        expect((await s.call(`${route}/${id}/address`)).body.result).toEqual([{ address: f.address }]);
        await f.ownResources?.kept(c, id);
      });

      it('pauses and resumes (a test webhook before resuming), refuses error and terminated, and deletes', async () => {
        const id = await make();
        const paused = await post(`${route}/${id}/status`, { status: 'paused' });
        expect(paused.body).toMatchObject({ id, status: 'paused', network: ['mainnet'], ...f.paused });
        for (const status of ['error', 'terminated', 'stopped', undefined]) {
          const r = await post(`${route}/${id}/status`, { status });
          expect(r.status).toBe(400);
          expect(r.body.details.field).toBe('status');
        }
        // Resuming needs the receiver to take the test webhook.
        rx.state.answerTests = () => 500;
        expect((await post(`${route}/${id}/status`, { status: 'active' })).body.details.field).toBe('webhookUrl');
        expect((await stream(id)).status).toBe('paused');
        rx.state.answerTests = () => 200;
        const before = rx.received.length;
        expect((await post(`${route}/${id}/status`, { status: 'active' })).body.status).toBe('active');
        const tests = () => rx.received.slice(before).filter((x) => x.test);
        expect(tests()).toHaveLength(1);
        f.testWebhook(tests()[0]!, { id, tag: f.defaults['tag'] as string }, await secret());
        // Already active: no test webhook.
        expect((await post(`${route}/${id}/status`, { status: 'active' })).body.status).toBe('active');
        expect(tests()).toHaveLength(1);

        const gone = await del(`${route}/${id}`);
        expect(gone.status).toBe(200);
        expect(gone.body).toMatchObject({ id, status: 'active', network: ['mainnet'] });
        expect((await s.call(`${route}/${id}`)).status).toBe(404);
        expect((await del(`${route}/${id}`)).status).toBe(404);
      });
    });

    describe('addresses', () => {
      it('refuses what is not an address of the family, or too many, with 400 naming it', async () => {
        const id = await make();
        const { before, cases } = f.badAddresses;
        for (const [address, why] of cases) {
          const single = await post(`${route}/${id}/address`, { address });
          expect(single.status, address).toBe(400);
          expect(single.body.details.field, address).toBe('address');
          // An address longer than 64 characters is named by its first 64.
          expect(single.body.message, address).toContain(address.length > 64 ? `${address.slice(0, 64)}…` : address);
          expect(single.body.message, address).toMatch(why);
          const inList = await post(`${route}/${id}/address`, { address: [...before, address] });
          expect(inList.status, address).toBe(400);
          expect(inList.body.details.field, address).toBe(`address.${before.length}`);
          expect(inList.body.message, address).toContain(address.slice(0, 64));
        }
        await addressShapes(id, f.address);
      });

      it(`deletes a stream's addresses${f.ownResources ? ` and ${f.ownResources.name}` : ''} with it`, async () => {
        const id = await make();
        await post(`${route}/${id}/address`, { address: [f.address, f.deleted.second] });
        await f.ownResources?.add(c, id);
        const keep = await make();
        await post(`${route}/${keep}/address`, { address: f.address });
        await f.ownResources?.add(c, keep);
        expect((await del(`${route}/${id}`)).status).toBe(200);
        const store = openStore(s.dir, { create: false });
        try {
          f.deleted.check(store, id, keep);
        } finally {
          await store.close();
        }
      });
    });

    describe('delivery', () => {
      it(`delivers, retries and keeps history, logs, replay and stats for a ${f.title} stream as for EVM`, async () => {
        const url = `${rx.url}?${f.name}-delivery`;
        const tag = `${f.name}-deliver`;
        const id = await make({ webhookUrl: url, tag, ...f.selector });
        const [n1, n2, n3] = [f.firstBlock, f.firstBlock + 1, f.firstBlock + 2];
        const before = rx.webhooks().length;
        let failed = false;
        rx.state.answer = (x) => (x.body.streamId === id && f.blockOf(x.body) === String(n1) && !failed ? ((failed = true), 500) : 200);
        expect((await enqueue(id, [f.webhook(n1), f.webhook(n2)])).body.results).toEqual(['queued', 'queued']);
        await advance(s, 0);
        await advance(s, 60);
        const got = rx
          .webhooks()
          .slice(before)
          .filter((x) => x.body.streamId === id);
        expect(got.map((x) => [f.blockOf(x.body), x.body.retries])).toEqual([
          [String(n1), 0],
          [String(n2), 0],
          [String(n1), 1],
        ]);
        const key = await secret();
        for (const g of got) {
          expect(g.headers['x-signature']).toBe(signed(g.raw, key));
          expect(g.raw).toBe(JSON.stringify(g.body));
          expect(g.body).toMatchObject({ streamId: id, tag, chainId: f.chainId, confirmed: false });
          expect(g.body.transactions).toEqual(f.webhook(Number(f.blockOf(g.body))).transactions);
        }
        // The failed first try is in history (delivered on its retry) and in the delivery log.
        const h = (await s.call('/history?limit=100')).body.result.filter((x: { streamId: string }) => x.streamId === id);
        expect(h).toHaveLength(1);
        expect(h[0]).toMatchObject({ streamId: id, tag, webhookUrl: url, errorMessage: 'the receiver answered HTTP 500', delivered: true });
        expect(h[0].payload).toMatchObject({ streamId: id, chainId: f.chainId, block: f.blockRef(n1) });
        f.history?.(h[0], n1);
        const logs = (await s.call('/history/logs?limit=100')).body.result.filter((l: { streamId: string }) => l.streamId === id);
        expect(logs.map((l: { deliveryStatus: string }) => l.deliveryStatus).sort()).toEqual(['failed', 'success', 'success']);
        expect(
          logs.every(
            (l: { chain: string; webhookUrl: string; tag: string }) => l.chain === f.chainId && l.webhookUrl === url && l.tag === tag,
          ),
        ).toBe(true);
        const replayed = await post(`/history/replay/${id}/${h[0].id}`);
        expect(replayed.body).toMatchObject({ id: h[0].id, streamId: id, delivered: true, status: 200 });
        expect(rx.webhooks().filter((w) => w.body.streamId === id)).toHaveLength(4);
        expect((await s.call(`/stats/${id}`)).body).toMatchObject({ streamId: id, totalWebhooksDelivered: 2, totalWebhooksFailed: 1 });
        expect((await s.call('/stats')).body.totalWebhooksDelivered).toBeGreaterThanOrEqual(2);
        // Paused: new webhooks are dropped, as for EVM.
        await post(`${route}/${id}/status`, { status: 'paused' });
        expect((await enqueue(id, [f.webhook(n3)])).body.results).toEqual(['dropped']);
      });

      it('goes to error on the 31st failure in a row (below 70%), e-mails the owner, and is set active again by its owner', async () => {
        const url = `${rx.url}?${f.name}-rate`;
        const id = await make({ webhookUrl: url, tag: `${f.name}-rate`, ...f.selector });
        const first = f.firstBlock + 99;
        rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
        const mails = smtp.mails.length;
        await enqueue(
          id,
          Array.from({ length: 30 }, (_, i) => f.webhook(first + i)),
        );
        await advance(s, 0);
        expect((await stream(id)).status).toBe('active'); // 70%
        await enqueue(id, [f.webhook(first + 30)]);
        await advance(s, 0);
        const errored = await stream(id);
        expect(errored.status).toBe('error');
        const since = Date.parse((await s.call('/admin/clock')).body.now) - Date.parse(errored.isErrorSince);
        expect(since).toBeGreaterThanOrEqual(0);
        expect(since).toBeLessThan(60_000);
        expect(errored.statusMessage).toMatch(/fell to 69%, below 70%/);
        const alerts = () => smtp.mails.slice(mails).filter((m) => m.data.includes(`stream ${id} is in error`));
        expect(await until(() => alerts().length > 0, 5_000)).toBe(true);
        expect(alerts()).toHaveLength(1);
        expect((await enqueue(id, [f.webhook(first + 31)])).body.results).toEqual(['history']);
        expect((await post(`${route}/${id}/status`, { status: 'paused' })).body.details.field).toBe('status');
        rx.state.answer = () => 200;
        const resumed = await post(`${route}/${id}/status`, { status: 'active' });
        // The error's message goes; the chain this server does not follow is still said.
        expect(resumed.body).toMatchObject({ status: 'active', statusMessage: NOT_FOLLOWED[f.name], isErrorSince: null });
      });
    });
  });

  describe('Bitcoin only', () => {
    const { post, del, stream, make, all } = calls(BITCOIN);

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
  });

  describe('Solana only', () => {
    const { post, del, stream, make, all } = calls(SOLANA);

    it('uses keys that are base58 of 32 bytes (and lower-cased TOKEN is another such key; WALLET lower-cased is not base58)', () => {
      for (const k of [SYSTEM, TOKEN, VOTE, USDC, USDT, WALLET, TOKEN_LOWER, wallet(1), wallet(2)])
        expect(bs58.decode(k), k).toHaveLength(32);
      expect(bytesToHex(bs58.decode(TOKEN_LOWER))).not.toBe(bytesToHex(bs58.decode(TOKEN)));
      expect(() => bs58.decode(WALLET.toLowerCase())).toThrow();
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
  });

  describe('store', () => {
    it("keeps each family's streams, addresses (as given) and own resources across a restart beside EVM streams, whose records carry no family; the watchlist loads them with no Bitcoin or Solana chain followed", async () => {
      const rx2 = await startReceiver();
      let r: Running | undefined = await startChainpost({ CHAINPOST_RATE_LIMIT: '0' });
      const dir = r.dir;
      try {
        const kept: Array<{ f: FamilySuite; id: string; added: unknown }> = [];
        for (const f of FAMILIES) {
          const made = await r.call(`/streams/${f.name}`, { method: 'PUT', json: { webhookUrl: rx2.url, tag: 'kept', ...f.kept.json } });
          expect(made.status, JSON.stringify(made.body)).toBe(200);
          const id = made.body.id as string;
          await r.call(`/streams/${f.name}/${id}/address`, { method: 'POST', json: { address: f.kept.addresses } });
          kept.push({ f, id, added: await f.kept.add?.(r, id) });
        }
        const evm = (
          await r.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx2.url, chainIds: ['0x1'], includeNativeTxs: true } })
        ).body;
        await r.stop('SIGTERM');
        const store = openStore(dir, { create: false });
        try {
          const records = store.range<Record<string, unknown>>('streams').map((e) => e.value);
          expect(records.find((x) => x['id'] === evm.id)).not.toHaveProperty('family');
          for (const { f, id } of kept)
            expect(records.find((x) => x['id'] === id)).toMatchObject({ family: f.name, network: ['mainnet'], ...f.kept.record });
        } finally {
          await store.close();
        }
        r = await startChainpost({ CHAINPOST_RATE_LIMIT: '0' }, dir);
        for (const { f, id, added } of kept) {
          const route = `/streams/${f.name}`;
          expect((await r.call(`${route}/${id}`)).body).toMatchObject({ id, tag: 'kept', amountOfAddresses: 2, ...f.kept.answer });
          expect((await r.call(`${route}/${id}/address`)).body.result.map((x: { address: string }) => x.address).sort()).toEqual(
            [...f.kept.addresses].sort(),
          );
          await f.kept.check?.(r, id, added);
          expect((await r.call(route)).body.result.map((x: { id: string }) => x.id)).toEqual([id]);
        }
        expect((await r.call('/streams/evm')).body.result.map((x: { id: string }) => x.id)).toEqual([evm.id]);
        expect((await r.call('/health')).status).toBe(200);
      } finally {
        await stopAndClean(r);
        await rx2.close();
      }
    });
  });
});
