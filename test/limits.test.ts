import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import bs58 from 'bs58';
import { privateKeyToAccount } from 'viem/accounts';
import { aptosAddressOf } from '../engine/auth/signatures.js';
import { advance, cliInProcess, startChainpost, stopAndClean, tempDir, type Running } from './helpers.js';
import { manyXpubs } from './kit/bitcoin-core/keys.js';
import { startReceiver } from './receiver.js';

/** Addresses each family takes (valid by its parser). */
const EVM = (i: number) => `0x${(i + 1).toString(16).padStart(40, '0')}`;
const BITCOIN = [
  '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa',
  '31h1vYVSYuKP6AhS86fbRdMw9XHieotbST',
  '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy',
  'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4',
  'bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3',
];
const SOLANA = [
  '11111111111111111111111111111111',
  'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
  'Vote111111111111111111111111111111111111111',
  'So11111111111111111111111111111111111111112',
  'EPjFWdd5AufqSSqeM2qN1xyybapC8G4wEGGkZwyTDt1v',
];
const ADDRESSES = { evm: [0, 1, 2, 3, 4].map(EVM), bitcoin: BITCOIN, solana: SOLANA };

const MAX_STREAMS = 3;
const MAX_ADDRESSES = 4;
const MAX_TRIGGERS = 2;
const MAX_XPUBS = 2;
const MAX_PENDING = 3;

// One server for the file: the stream limits are counted on the tenants' streams, the pending-message one on their challenges.
let s: Running;
beforeAll(async () => {
  s = await startChainpost({
    CHAINPOST_RATE_LIMIT: '0',
    CHAINPOST_TEST_CLOCK: '1',
    CHAINPOST_NOW: '2026-11-22T12:00:00Z',
    CHAINPOST_MAX_STREAMS: String(MAX_STREAMS),
    CHAINPOST_MAX_ADDRESSES: String(MAX_ADDRESSES),
    CHAINPOST_MAX_TRIGGERS: String(MAX_TRIGGERS),
    CHAINPOST_MAX_XPUBS: String(MAX_XPUBS),
    CHAINPOST_MAX_PENDING_CHALLENGES: String(MAX_PENDING),
  });
});
afterAll(() => stopAndClean(s));

describe('per-tenant limits (CHAINPOST_MAX_STREAMS, CHAINPOST_MAX_ADDRESSES, CHAINPOST_MAX_TRIGGERS, CHAINPOST_MAX_XPUBS)', () => {
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  type Family = 'evm' | 'bitcoin' | 'solana';
  const create = (family: Family, headers?: Record<string, string>) =>
    s.call(`/streams/${family}`, {
      method: 'PUT',
      json: { webhookUrl: rx.url, ...(family === 'evm' ? { chainIds: ['0x1'], includeNativeTxs: true } : {}) },
      ...(headers ? { headers } : {}),
    });
  const total = async (headers?: Record<string, string>) => {
    let n = 0;
    for (const f of ['evm', 'bitcoin', 'solana'] as const)
      n += (await s.call(`/streams/${f}?limit=100`, headers ? { headers } : {})).body.total as number;
    return n;
  };
  const addresses = (family: Family, id: string, address: string[]) =>
    s.call(`/streams/${family}/${id}/address`, { method: 'POST', json: { address } });
  const expectStreamsLimit = (r: { status: number; body: any }) => {
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.details).toEqual({ field: 'streams', limit: MAX_STREAMS, variable: 'CHAINPOST_MAX_STREAMS' });
    expect(r.body.message).toBe(`streams: a tenant holds at most ${MAX_STREAMS} (CHAINPOST_MAX_STREAMS)`);
  };

  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(() => rx.close());

  it('counts the streams of every family together, per tenant, and names the limit when it is reached', async () => {
    const ids: string[] = [];
    for (const f of ['evm', 'bitcoin', 'solana'] as const) {
      const r = await create(f);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      ids.push(r.body.id as string);
    }
    for (const f of ['evm', 'bitcoin', 'solana'] as const) expectStreamsLimit(await create(f));
    expect(await total()).toBe(MAX_STREAMS);

    // Another tenant has its own count.
    const other = { 'x-api-key': (await cliInProcess(['keys', 'create', '--name', 'other'], s.dir)).stdout.trim().split('\n').at(-1)! };
    expect((await create('solana', other)).status).toBe(200);
    expect(await total(other)).toBe(1);

    // A deleted stream frees its place.
    expect((await s.call(`/streams/bitcoin/${ids[1]}`, { method: 'DELETE' })).status).toBe(200);
    const again = await create('bitcoin');
    expect(again.status).toBe(200);
    expectStreamsLimit(await create('evm'));
  });

  it('lets one of several creates racing for the last place through, however long their test webhooks take', async () => {
    const { result } = (await s.call('/streams/evm?limit=100')).body;
    expect((await s.call(`/streams/evm/${result[0].id}`, { method: 'DELETE' })).status).toBe(200);
    expect(await total()).toBe(MAX_STREAMS - 1);
    // Every create waits on its test webhook at the same time: a count taken before that wait would let all through.
    rx.state.delay = () => 300;
    try {
      const answers = await Promise.all((['evm', 'bitcoin', 'solana', 'evm', 'solana', 'bitcoin'] as const).map((f) => create(f)));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
      for (const a of answers.filter((x) => x.status !== 200)) expectStreamsLimit(a);
    } finally {
      rx.state.delay = () => 0;
    }
    expect(await total()).toBe(MAX_STREAMS);
  });

  it('caps the addresses of a stream of each family, a request past it changes nothing, and racing adds cannot pass it', async () => {
    // Room for fresh streams: this tenant's are all deleted.
    for (const f of ['evm', 'bitcoin', 'solana'] as const) {
      for (const x of (await s.call(`/streams/${f}?limit=100`)).body.result)
        expect((await s.call(`/streams/${f}/${x.id}`, { method: 'DELETE' })).status).toBe(200);
    }
    for (const f of ['evm', 'bitcoin', 'solana'] as const) {
      const id = (await create(f)).body.id as string;
      const all = ADDRESSES[f];
      expect((await addresses(f, id, all.slice(0, 3))).status).toBe(200);
      // Two more is one too many: refused whole, naming the limit.
      const over = await addresses(f, id, all.slice(3, 5));
      expect(over.status, f).toBe(400);
      expect(over.body.details).toEqual({ field: 'address', limit: MAX_ADDRESSES, variable: 'CHAINPOST_MAX_ADDRESSES' });
      expect(over.body.message).toBe(`address: a stream holds at most ${MAX_ADDRESSES} (CHAINPOST_MAX_ADDRESSES)`);
      expect((await s.call(`/streams/${f}/${id}`)).body.amountOfAddresses).toBe(3);
      expect((await s.call(`/streams/${f}/${id}/address?limit=100`)).body.total).toBe(3);
      // Ones already there do not count again; the last place is taken, then none is left.
      expect((await addresses(f, id, [...all.slice(0, 3), all[3]!])).status).toBe(200);
      expect((await addresses(f, id, [all[4]!])).status, f).toBe(400);
      expect((await s.call(`/streams/${f}/${id}`)).body.amountOfAddresses).toBe(MAX_ADDRESSES);
    }

    const id = (await s.call('/streams/evm?limit=1')).body.result[0].id as string;
    await s.call(`/streams/evm/${id}/address`, { method: 'DELETE', json: { address: ADDRESSES.evm.slice(0, 4) } });
    expect((await s.call(`/streams/evm/${id}`)).body.amountOfAddresses).toBe(0);
    const racing = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => addresses('evm', id, [EVM(10 + 2 * i), EVM(11 + 2 * i)])));
    expect(racing.filter((r) => r.status === 200)).toHaveLength(MAX_ADDRESSES / 2);
    expect((await s.call(`/streams/evm/${id}/address?limit=100`)).body.total).toBe(MAX_ADDRESSES);
  });

  it('caps the triggers of an EVM stream on create and on update, naming the limit; a stream at the limit is taken', async () => {
    const headers = {
      'x-api-key': (await cliInProcess(['keys', 'create', '--name', 'triggers'], s.dir)).stdout.trim().split('\n').at(-1)!,
    };
    const trigger = {
      type: 'tx',
      contractAddress: '$toAddress',
      functionAbi: { type: 'function', name: 'f', stateMutability: 'view', inputs: [], outputs: [{ name: 'v', type: 'uint256' }] },
    };
    const triggers = (n: number) => Array.from({ length: n }, () => trigger);
    const expectTriggersLimit = (r: { status: number; body: any }) => {
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.details).toEqual({ field: 'triggers', limit: MAX_TRIGGERS, variable: 'CHAINPOST_MAX_TRIGGERS' });
      expect(r.body.message).toBe(`triggers: a stream runs at most ${MAX_TRIGGERS} (CHAINPOST_MAX_TRIGGERS)`);
    };
    const put = (n: number) =>
      s.call('/streams/evm', {
        method: 'PUT',
        headers,
        json: { webhookUrl: rx.url, chainIds: ['0x1'], includeNativeTxs: true, triggers: triggers(n) },
      });
    expectTriggersLimit(await put(MAX_TRIGGERS + 1));
    expect(await total(headers)).toBe(0);
    const made = await put(MAX_TRIGGERS);
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expectTriggersLimit(
      await s.call(`/streams/evm/${made.body.id}`, { method: 'POST', headers, json: { triggers: triggers(MAX_TRIGGERS + 1) } }),
    );
    expect((await s.call(`/streams/evm/${made.body.id}`, { headers })).body.triggers).toHaveLength(MAX_TRIGGERS);
  });

  it('caps the xpubs of a Bitcoin stream: the same key again takes no place, racing adds cannot pass it, a removed key frees its place', async () => {
    for (const f of ['evm', 'bitcoin', 'solana'] as const) {
      for (const x of (await s.call(`/streams/${f}?limit=100`)).body.result)
        expect((await s.call(`/streams/${f}/${x.id}`, { method: 'DELETE' })).status).toBe(200);
    }
    const id = (await create('bitcoin')).body.id as string;
    const keys = manyXpubs(7);
    const add = (xpub: string) => s.call(`/streams/bitcoin/${id}/xpub`, { method: 'POST', json: { xpub } });
    const expectXpubsLimit = (r: { status: number; body: any }) => {
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body).toEqual({
        message: `xpub: a stream holds at most ${MAX_XPUBS} (CHAINPOST_MAX_XPUBS)`,
        details: { field: 'xpub', limit: MAX_XPUBS, variable: 'CHAINPOST_MAX_XPUBS' },
      });
    };
    const first = (await add(keys[0]!)).body;
    expect((await add(keys[0]!)).body).toEqual(first);
    const racing = await Promise.all(keys.slice(1, 6).map(add));
    expect(racing.filter((r) => r.status === 200)).toHaveLength(MAX_XPUBS - 1);
    for (const r of racing.filter((x) => x.status !== 200)) expectXpubsLimit(r);
    expect((await s.call(`/streams/bitcoin/${id}/xpub?limit=100`)).body.total).toBe(MAX_XPUBS);
    expect((await add(keys[0]!)).body).toEqual(first);
    expect((await s.call(`/streams/bitcoin/${id}/xpub/${first.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await add(keys[6]!)).status).toBe(200);
    expectXpubsLimit(await add(keys[0]!));
    // Another stream has its own count.
    const other = (await create('bitcoin')).body.id as string;
    expect((await s.call(`/streams/bitcoin/${other}/xpub`, { method: 'POST', json: { xpub: keys[0] } })).status).toBe(200);
  });

  it('refuses to start on a bad limit, naming the variable', async () => {
    for (const [name, value] of [
      ['CHAINPOST_MAX_STREAMS', 'many'],
      ['CHAINPOST_MAX_STREAMS', '0'],
      ['CHAINPOST_MAX_ADDRESSES', '-5'],
      ['CHAINPOST_MAX_ADDRESSES', '1e6'],
      ['CHAINPOST_MAX_PENDING_CHALLENGES', '0'],
      ['CHAINPOST_MAX_TRIGGERS', 'all'],
      ['CHAINPOST_MAX_XPUBS', '0'],
    ] as const) {
      const dir = tempDir();
      try {
        await expect(startChainpost({ [name]: value }, dir)).rejects.toThrow(`${name}: expected`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});

describe('messages waiting for a signature per tenant (CHAINPOST_MAX_PENDING_CHALLENGES)', () => {
  const evm = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');
  const ed = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
  const SIGN_IN = { domain: 'example.org', uri: 'https://example.org/login', timeout: 15 };
  const REQUESTS = {
    evm: { ...SIGN_IN, chainId: 1, address: evm.address },
    solana: { ...SIGN_IN, network: 'mainnet', address: bs58.encode(ed) },
    aptos: { ...SIGN_IN, network: 'mainnet', address: aptosAddressOf(`0x${bytesToHex(ed)}`), publicKey: `0x${bytesToHex(ed)}` },
  };
  const post = (path: string, json: unknown, key?: string) =>
    s.call(path, { method: 'POST', json, ...(key === undefined ? {} : { headers: { 'x-api-key': key } }) });
  const challenge = (family: keyof typeof REQUESTS, key?: string) => post(`/challenge/request/${family}`, REQUESTS[family], key);
  const bind = (n: number) =>
    post('/bind/request', {
      addresses: Array.from({ length: n }, (_, i) => ({ blockchainType: 'evm', address: `0x${(i + 1).toString(16).padStart(40, '0')}` })),
    });
  const expectLimit = (r: { status: number; body: any; headers: Headers }) => {
    expect(r.status, JSON.stringify(r.body)).toBe(429);
    expect(r.body.details).toEqual({ field: 'challenges', limit: MAX_PENDING, variable: 'CHAINPOST_MAX_PENDING_CHALLENGES' });
    expect(r.body.message).toMatch(/^challenges: a tenant has at most 3 messages waiting for a signature/);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  };

  it('counts challenges of every family and bind messages together, per tenant; a verified or expired one frees its place', async () => {
    const first = await challenge('evm');
    expect(first.status).toBe(201);
    expect((await challenge('solana')).status).toBe(201);
    expect((await challenge('aptos')).status).toBe(201);
    for (const family of ['evm', 'solana', 'aptos'] as const) expectLimit(await challenge(family));
    expectLimit(await bind(1));

    // Another tenant has its own count.
    const other = (await cliInProcess(['keys', 'create', '--name', 'other-pending'], s.dir)).stdout.trim().split('\n').at(-1)!;
    expect((await challenge('evm', other)).status).toBe(201);

    // A verified challenge frees its place, for a bind message too.
    const message = first.body.message as string;
    expect((await post('/challenge/verify/evm', { message, signature: await evm.signMessage({ message }) })).status).toBe(201);
    expectLimit(await bind(2));
    expect((await bind(1)).status).toBe(201);
    expectLimit(await challenge('evm'));

    // Past their timeout the two challenges count no more, before the minute's purge has run; the bind message (15 min) still does.
    await advance(s, 16);
    expect((await challenge('evm')).status).toBe(201);
    expect((await challenge('solana')).status).toBe(201);
    expectLimit(await challenge('aptos'));
  });
});
