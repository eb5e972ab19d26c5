import { connect } from 'node:net';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import bs58 from 'bs58';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { aptosAddressOf } from '../engine/auth/signatures.js';
import { BATCH, CHALLENGE_TEXT, MAX_BODY_BYTES, MAX_HEAD_BYTES, MAX_HEADERS, SIGNED_MESSAGE_CHARS } from '../engine/size-limits.js';
import { startChainpost, stopAndClean, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';

/** `n` distinct EVM addresses. */
const evmAddresses = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `0x${(from + i).toString(16).padStart(40, '0')}`);

/** Whether `text` holds a whole HTTP answer (its head and content-length bytes of body). */
function complete(text: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  const length = /\r\ncontent-length: (\d+)\r\n/i.exec(text);
  return end >= 0 && length !== null && text.length >= end + 4 + Number(length[1]);
}

/**
 * Sends a request head over a plain socket, whole, or in two pieces when `read` is given: the first 20 bytes,
 * then the rest once `read()` (a request answered on another connection) shows the server's event loop has
 * polled since, so uWS read the first piece alone, as a head crossing TCP segments arrives. Resolves with the
 * answer once it is whole, or every byte answered until the server closed or `quietMs` of silence, and
 * whether the server closed.
 */
function rawRequest(
  port: number,
  head: string,
  read?: () => Promise<unknown>,
  quietMs = 1000,
): Promise<{ answer: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    let answer = '';
    let closed = false;
    let quiet: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(quiet);
      socket.destroy();
      resolve({ answer, closed });
    };
    const wait = () => {
      clearTimeout(quiet);
      quiet = setTimeout(done, quietMs);
    };
    socket.on('data', (d) => {
      answer += d.toString('latin1');
      if (complete(answer)) done();
      else wait();
    });
    socket.on('close', () => {
      closed = true;
      done();
    });
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      if (read === undefined) socket.write(head);
      else {
        socket.write(head.slice(0, 20));
        void read().then(() => socket.write(head.slice(20)));
      }
      wait();
    });
  });
}

describe('documented size limits (engine/size-limits.ts), each at its limit and one past it, against the real server', () => {
  let anvil: Anvil;
  let s: Running;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  const post = (path: string, json: unknown) => s.call(path, { method: 'POST', json });
  const expectBatchRefused = (r: { status: number; body: any }, field: string, limit: number) => {
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(400);
    expect(r.body.details).toEqual({ field, limit });
    expect(r.body.message).toMatch(new RegExp(`^${field.replace('.', '\\.')}: at most ${limit.toLocaleString('en-US')} `));
  };
  /** A GET /settings with `n` header fields (Host and x-api-key among them). */
  const withFields = (n: number) => {
    const extra = Array.from({ length: n - 2 }, (_, i) => `x-h${i}: 1\r\n`).join('');
    return `GET /settings HTTP/1.1\r\nHost: x\r\nx-api-key: ${s.key}\r\n${extra}\r\n`;
  };
  /** One field too many, sent as soon as the server is up: its connection is closed only at uWS's idle timeout, meanwhile the other tests run. */
  let overHeaders: Promise<{ answer: string; closed: boolean; ms: number }>;
  const ok = (r: { status: number; body: any }, status = 200) => expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(status);

  beforeAll(async () => {
    rx = await startReceiver();
    anvil = await startAnvil({ chainId: 1337 });
    // The devnet chain followed, so the Data API's endpoints get as far as their own checks.
    s = await startChainpost({
      CHAINPOST_CHAINS: `0x539=${anvil.url}`,
      CHAINPOST_TEST_CLOCK: '1',
      CHAINPOST_NOW: '2026-11-22T12:00:00Z',
      CHAINPOST_RATE_LIMIT: '0',
    });
    const sent = performance.now();
    overHeaders = rawRequest(s.port, withFields(MAX_HEADERS + 1), undefined, 20_000).then((r) => ({ ...r, ms: performance.now() - sent }));
  }, 60_000);
  afterAll(async () => {
    await stopAndClean(s);
    await anvil?.stop();
    await rx?.close();
  });

  it('takes a JSON body of exactly MAX_BODY_BYTES and answers one byte more 413 naming body and the limit', async () => {
    const body = (size: number) => {
      const shell = JSON.stringify({ region: 'eu-central-1', pad: '' });
      return JSON.stringify({ region: 'eu-central-1', pad: 'x'.repeat(size - shell.length) });
    };
    expect(Buffer.byteLength(body(MAX_BODY_BYTES))).toBe(MAX_BODY_BYTES);
    const at = await s.call('/settings', { method: 'POST', body: body(MAX_BODY_BYTES), headers: { 'content-type': 'application/json' } });
    ok(at);
    expect(at.body).toEqual({ region: 'eu-central-1' });
    const over = await s.call('/settings', {
      method: 'POST',
      body: body(MAX_BODY_BYTES + 1),
      headers: { 'content-type': 'application/json' },
    });
    expect(over.status).toBe(413);
    expect(over.body).toEqual({
      message: `body: larger than ${MAX_BODY_BYTES} bytes, the most a request body may hold`,
      details: { field: 'body', limit: MAX_BODY_BYTES },
    });
  });

  describe("a request's head, as uWebSockets.js takes it (closed without an answer past it)", () => {
    /** Two requests answered one after the other on another connection: the server's loop has polled (and read what was waiting) since this was called. */
    const polled = async () => {
      for (let i = 0; i < 2; i++) expect((await fetch(`${s.url}/health`)).status).toBe(200);
    };
    /** A GET /settings head of exactly `total` bytes, padded in a header or in the query string. */
    const head = (total: number, where: 'header' | 'url'): string => {
      const make = (pad: string) =>
        where === 'header'
          ? `GET /settings HTTP/1.1\r\nHost: x\r\nx-api-key: ${s.key}\r\nx-pad: ${pad}\r\n\r\n`
          : `GET /settings?pad=${pad} HTTP/1.1\r\nHost: x\r\nx-api-key: ${s.key}\r\n\r\n`;
      const text = make('a'.repeat(total - make('').length));
      expect(text.length).toBe(total);
      return text;
    };

    for (const where of ['header', 'url'] as const) {
      it(`answers a head of MAX_HEAD_BYTES arriving in two pieces and closes on one byte more (padded in the ${where})`, async () => {
        const at = await rawRequest(s.port, head(MAX_HEAD_BYTES, where), polled);
        expect(at.answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
        const over = await rawRequest(s.port, head(MAX_HEAD_BYTES + 1, where), polled);
        expect(over).toEqual({ answer: '', closed: true });
      });
    }

    it('answers a longer head that arrives in one read (what a client cannot count on)', async () => {
      const r = await rawRequest(s.port, head(2 * MAX_HEAD_BYTES, 'header'));
      expect(r.answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    });
  });

  describe('batches: at the limit accepted, one more 400 naming the field and the limit', () => {
    it('streamAddresses: the address list of an address call, to add and to delete', async () => {
      const made = await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, chainIds: ['0x1'], includeNativeTxs: true } });
      ok(made);
      const path = `/streams/evm/${made.body.id}/address`;
      const list = evmAddresses(BATCH.streamAddresses);
      ok(await post(path, { address: list }));
      expectBatchRefused(await post(path, { address: evmAddresses(BATCH.streamAddresses + 1) }), 'address', BATCH.streamAddresses);
      expectBatchRefused(
        await s.call(path, { method: 'DELETE', json: { address: evmAddresses(BATCH.streamAddresses + 1) } }),
        'address',
        BATCH.streamAddresses,
      );
      ok(await s.call(path, { method: 'DELETE', json: { address: list } }));
      expect((await s.call(`/streams/evm/${made.body.id}`)).body.amountOfAddresses).toBe(0);
    });

    it('challengeResources: the resources of a sign-in challenge', async () => {
      const request = (n: number) => ({
        domain: 'example.org',
        uri: 'https://example.org/',
        chainId: 1,
        address: evmAddresses(1)[0],
        resources: Array.from({ length: n }, (_, i) => `https://example.org/${i}`),
      });
      ok(await post('/challenge/request/evm', request(BATCH.challengeResources)), 201);
      expectBatchRefused(
        await post('/challenge/request/evm', request(BATCH.challengeResources + 1)),
        'resources',
        BATCH.challengeResources,
      );
    });

    it('CHALLENGE_TEXT: each text of a sign-in challenge of every family at its length accepted, one character more 400 naming the field', async () => {
      const ed = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
      const families = {
        evm: { chainId: 1, address: evmAddresses(1)[0] },
        solana: { network: 'mainnet', address: bs58.encode(ed) },
        aptos: { network: 'mainnet', address: aptosAddressOf(`0x${bytesToHex(ed)}`), publicKey: `0x${bytesToHex(ed)}` },
      };
      const url = (n: number) => `https://example.org/${'a'.repeat(n - 'https://example.org/'.length)}`;
      const fields = (n: Record<keyof typeof CHALLENGE_TEXT, number>) => ({
        domain: 'd'.repeat(n.domain),
        uri: url(n.uri),
        statement: 's'.repeat(n.statement),
        resources: [url(n.resource)],
      });
      for (const [family, who] of Object.entries(families)) {
        ok(await post(`/challenge/request/${family}`, { ...who, ...fields(CHALLENGE_TEXT) }), 201);
        for (const field of Object.keys(CHALLENGE_TEXT) as Array<keyof typeof CHALLENGE_TEXT>) {
          const r = await post(`/challenge/request/${family}`, {
            ...who,
            ...fields({ ...CHALLENGE_TEXT, [field]: CHALLENGE_TEXT[field] + 1 }),
          });
          const name = field === 'resource' ? 'resources.0' : field;
          expect(r.status, `${family} ${field}`).toBe(400);
          expect(r.body).toEqual({
            message: `${name}: at most ${CHALLENGE_TEXT[field].toLocaleString('en-US')} characters`,
            details: { field: name },
          });
        }
      }
    });

    it('SIGNED_MESSAGE_CHARS: a challenge whose message a verify can take, and one character more refused naming resources', async () => {
      const request = (pad: number) => ({
        domain: 'example.org',
        uri: 'https://example.org/',
        chainId: 1,
        address: evmAddresses(1)[0],
        resources: [...Array(7).fill(`https://example.org/${'r'.repeat(2_000)}`), `https://example.org/${'r'.repeat(pad)}`],
      });
      const short = await post('/challenge/request/evm', request(0));
      ok(short, 201);
      const pad = SIGNED_MESSAGE_CHARS - short.body.message.length;
      const at = await post('/challenge/request/evm', request(pad));
      ok(at, 201);
      expect(at.body.message).toHaveLength(SIGNED_MESSAGE_CHARS);
      const over = await post('/challenge/request/evm', request(pad + 1));
      expect(over.status).toBe(400);
      expect(over.body).toEqual({
        message: `resources: make a message of ${SIGNED_MESSAGE_CHARS + 1} characters, more than the ${SIGNED_MESSAGE_CHARS} a verify takes`,
        details: { field: 'resources' },
      });
    });

    it('bindAddresses and bindVerifications: a bind of as many addresses as one request may name, each signed', async () => {
      const accounts = Array.from({ length: BATCH.bindAddresses + 1 }, () => privateKeyToAccount(generatePrivateKey()));
      const addresses = accounts.map((a) => ({ blockchainType: 'evm', address: a.address }));
      expectBatchRefused(await post('/bind/request', { addresses }), 'addresses', BATCH.bindAddresses);
      const req = await post('/bind/request', { addresses: addresses.slice(0, BATCH.bindAddresses) });
      ok(req, 201);
      const messages = req.body.messages as string[];
      const verifications = await Promise.all(
        messages.map(async (message, i) => ({ message, signature: await accounts[i]!.signMessage({ message }) })),
      );
      expectBatchRefused(
        await post('/bind/request/verify', { verifications: [...verifications, verifications[0]] }),
        'verifications',
        BATCH.bindVerifications,
      );
      const bound = await post('/bind/request/verify', { verifications });
      ok(bound, 201);
      expect(await s.call(`/profile/${bound.body.profileId}/addresses`)).toMatchObject({
        status: 200,
        body: accounts.slice(0, BATCH.bindAddresses).map((a) => a.address),
      });
    });

    it('rpcCalls: a JSON-RPC batch of node access', async () => {
      const batch = (n: number) => Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_chainId', params: [] }));
      const at = await post(`/rpc/0x539/${s.key}`, batch(BATCH.rpcCalls));
      ok(at);
      expect(at.body).toHaveLength(BATCH.rpcCalls);
      expect(at.body.every((a: { result?: string }) => a.result === '0x539')).toBe(true);
      const over = await post(`/rpc/0x539/${s.key}`, batch(BATCH.rpcCalls + 1));
      expect(over.status).toBe(400);
      expect(over.body).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: `request: a batch of ${BATCH.rpcCalls + 1} calls is over the limit of ${BATCH.rpcCalls} per batch`,
        },
      });
    });

    it('tokenPrices and multipleNfts: the token lists of the Data API bodies', async () => {
      const tokens = (n: number) => evmAddresses(n).map((token_address) => ({ token_address }));
      ok(await post('/api/v2.2/erc20/prices?chain=0x539', { tokens: tokens(BATCH.tokenPrices) }));
      expectBatchRefused(
        await post('/api/v2.2/erc20/prices?chain=0x539', { tokens: tokens(BATCH.tokenPrices + 1) }),
        'tokens',
        BATCH.tokenPrices,
      );
      const nfts = (n: number) => evmAddresses(n).map((token_address) => ({ token_address, token_id: '1' }));
      ok(await post('/api/v2.2/nft/getMultipleNFTs?chain=0x539', { tokens: nfts(BATCH.multipleNfts) }));
      expectBatchRefused(
        await post('/api/v2.2/nft/getMultipleNFTs?chain=0x539', { tokens: nfts(BATCH.multipleNfts + 1) }),
        'tokens',
        BATCH.multipleNfts,
      );
    });

    it('nftContracts: the addresses of POST /nft/metadata', async () => {
      ok(await post('/api/v2.2/nft/metadata?chain=0x539', { addresses: evmAddresses(BATCH.nftContracts) }));
      expectBatchRefused(
        await post('/api/v2.2/nft/metadata?chain=0x539', { addresses: evmAddresses(BATCH.nftContracts + 1) }),
        'addresses',
        BATCH.nftContracts,
      );
    });

    // Query lists: sent whole by fetch (one write), so a head past MAX_HEAD_BYTES still arrives in one read here.
    const wallet = evmAddresses(1, 0xabc)[0]!;
    const lists: Array<[string, string, number]> = [
      ['/erc20/metadata', 'addresses', BATCH.erc20Addresses],
      [`/${wallet}/erc20`, 'token_addresses', BATCH.erc20Addresses],
      [`/wallets/${wallet}/tokens`, 'token_addresses', BATCH.erc20Addresses],
      [`/${wallet}/erc20/transfers`, 'contract_addresses', BATCH.erc20Addresses],
      [`/${wallet}/nft`, 'token_addresses', BATCH.nftAddresses],
      [`/${wallet}/nft/transfers`, 'contract_addresses', BATCH.nftAddresses],
      ['/wallets/balances', 'wallet_addresses', BATCH.walletAddresses],
    ];
    for (const [path, field, limit] of lists) {
      it(`erc20Addresses, nftAddresses, walletAddresses: ${field} of GET ${path}`, async () => {
        const query = (n: number) => `/api/v2.2${path}?chain=0x539&${field}=${evmAddresses(n).join(',')}`;
        ok(await s.call(query(limit)));
        expectBatchRefused(await s.call(query(limit + 1)), field, limit);
      });
    }

    it('adminWebhooks: the test hook that hands webhooks to the delivery engine', async () => {
      const made = await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, chainIds: ['0x1'], includeNativeTxs: true } });
      ok(made);
      // Paused: what is enqueued waits, the receiver gets none of it.
      ok(await post(`/streams/evm/${made.body.id}/status`, { status: 'paused' }));
      const webhooks = (n: number) => Array.from({ length: n }, () => ({ chainId: '0x1' }));
      const at = await post(`/admin/streams/${made.body.id}/webhooks`, { webhooks: webhooks(BATCH.adminWebhooks) });
      ok(at);
      expect(at.body.results).toHaveLength(BATCH.adminWebhooks);
      expectBatchRefused(
        await post(`/admin/streams/${made.body.id}/webhooks`, { webhooks: webhooks(BATCH.adminWebhooks + 1) }),
        'webhooks',
        BATCH.adminWebhooks,
      );
    });
  });

  it('takes MAX_HEADERS header fields; on one more it never answers, and closes at its idle timeout (about 10 s)', async () => {
    expect((await rawRequest(s.port, withFields(MAX_HEADERS))).answer).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    const over = await overHeaders;
    expect({ answer: over.answer, closed: over.closed }).toEqual({ answer: '', closed: true });
    expect(over.ms).toBeGreaterThan(5_000);
  }, 30_000);

  it('has a test above for every batch of BATCH', () => {
    // The names this file proves; a batch added to size-limits.ts without a test here fails.
    const proved = [
      'streamAddresses',
      'challengeResources',
      'bindAddresses',
      'bindVerifications',
      'rpcCalls',
      'tokenPrices',
      'multipleNfts',
      'nftContracts',
      'erc20Addresses',
      'nftAddresses',
      'walletAddresses',
      'adminWebhooks',
    ];
    expect(Object.keys(BATCH).sort()).toEqual(proved.sort());
  });
});
