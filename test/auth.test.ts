import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import bs58 from 'bs58';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aptosAddressOf } from '../engine/auth/signatures.js';
import { openStore } from '../storage/env.js';
import { advance, cliInProcess, startChainpost, stopAndClean, type Running } from './helpers.js';

const evm = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');
const evm2 = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');

/** An ed25519 key pair as Solana and Aptos use it. */
function edKey() {
  const secret = ed25519.utils.randomSecretKey();
  const pub = ed25519.getPublicKey(secret);
  return {
    sign: (text: string) => ed25519.sign(new TextEncoder().encode(text), secret),
    solanaAddress: bs58.encode(pub),
    publicKeyHex: `0x${bytesToHex(pub)}`,
    aptosAddress: aptosAddressOf(`0x${bytesToHex(pub)}`),
  };
}

const REQUEST = { domain: 'defi.finance', uri: 'https://defi.finance/login', statement: 'Please confirm', timeout: 120 };

// One server for the file: each test's challenges, profiles and tenants are its own. Both describes sign messages
// dated an hour after the clock's start, which only moves on: the one that moves it by seconds alone runs first.
let s: Running;
beforeAll(async () => {
  s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-11-22T12:00:00Z', CHAINPOST_RATE_LIMIT: '0' });
});
afterAll(() => stopAndClean(s));

describe('Authentication API: hostile and edge input', () => {
  const post = (path: string, json: unknown) => s.call(path, { method: 'POST', json });

  it('refuses a huge base58 string at once instead of decoding it', async () => {
    const started = Date.now();
    const r = await post('/challenge/request/solana', { ...REQUEST, network: 'mainnet', address: '2'.repeat(500_000) });
    expect(r.status).toBe(400);
    expect(r.body.details.field).toBe('address');
    expect((await post('/bind/request', { addresses: [{ blockchainType: 'solana', address: 'z'.repeat(500_000) }] })).status).toBe(400);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('answers 400, never 500, for malformed Aptos keys and odd types', async () => {
    const k = edKey();
    for (const publicKey of ['zz', ' ', '0x', `0x${'g'.repeat(64)}`, 42, null, ['0x']]) {
      const r = await post('/challenge/request/aptos', { ...REQUEST, network: 'mainnet', address: k.aptosAddress, publicKey });
      expect(r.status, JSON.stringify(publicKey)).toBe(400);
    }
    for (const body of [
      { ...REQUEST, chainId: 1, address: evm.address, domain: 7 },
      { ...REQUEST, chainId: {}, address: evm.address },
      { ...REQUEST, chainId: 1, address: [evm.address] },
      { ...REQUEST, chainId: 1, address: evm.address, resources: [1, 2] },
    ]) {
      expect((await post('/challenge/request/evm', body)).status, JSON.stringify(body)).toBe(400);
    }
  });

  it('refuses a leap-second time, which Date cannot read', async () => {
    const r = await post('/challenge/request/evm', {
      ...REQUEST,
      chainId: 1,
      address: evm.address,
      expirationTime: '2026-12-31T23:59:60Z',
    });
    expect(r.status).toBe(400);
    expect(r.body.details.field).toBe('expirationTime');
  });

  it('writes an empty statement as none, times as toISOString does, and accepts an 0X prefix', async () => {
    const r = await post('/challenge/request/evm', {
      ...REQUEST,
      statement: '',
      chainId: 1,
      address: `0X${evm.address.slice(2)}`,
      expirationTime: '2026-11-22T14:00:00+01:00',
    });
    expect(r.status).toBe(201);
    expect(r.body.message).toContain(`${evm.address}\n\n\nURI: `);
    expect(r.body.message).toContain('\nExpiration Time: 2026-11-22T13:00:00.000Z');
    const v = await post('/challenge/verify/evm', {
      message: r.body.message,
      signature: await evm.signMessage({ message: r.body.message }),
    });
    expect(v.status).toBe(201);
    expect(v.body.statement).toBeUndefined();
  });

  it('stops accepting a message exactly at expirationTime plus the allowance', async () => {
    const now = Date.parse((await s.call('/admin/clock')).body.now);
    const exp = new Date(now + 10_000).toISOString();
    const a = await post('/challenge/request/evm', { ...REQUEST, timeout: 600, chainId: 1, address: evm.address, expirationTime: exp });
    const b = await post('/challenge/request/evm', { ...REQUEST, timeout: 600, chainId: 1, address: evm.address, expirationTime: exp });
    const signed = { message: a.body.message, signature: await evm.signMessage({ message: a.body.message }) };
    const nowAfter = Date.parse((await s.call('/admin/clock')).body.now);
    // The service clock runs on at real speed between these calls: a second of margin for a busy machine.
    await advance(s, (Date.parse(exp) + 30_000 - nowAfter - 1_000) / 1000); // a second before the edge
    const ok = await post('/challenge/verify/evm', signed);
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    // Past its expirationTime, within the allowance: the token lives to the allowance's end, not expired at issue.
    const issuedAt = new Date((await s.call('/admin/clock')).body.now);
    const jwks = createLocalJWKSet((await s.call('/.well-known/jwks.json')).body);
    const { payload } = await jwtVerify(ok.body.token, jwks, { currentDate: issuedAt });
    expect(payload.exp).toBe(Math.ceil((Date.parse(exp) + 30_000) / 1000));
    expect(payload.exp).toBeGreaterThan(payload.iat!);
    await advance(s, 1.05); // 50 ms past the edge at least
    const late = await post('/challenge/verify/evm', {
      message: b.body.message,
      signature: await evm.signMessage({ message: b.body.message }),
    });
    expect(late.status).toBe(400);
    expect(late.body.message).toBe(`expirationTime: the message expired at ${exp}`);
  });

  it('lets only one of many concurrent verifies of a challenge through', async () => {
    const r = await post('/challenge/request/evm', { ...REQUEST, chainId: 1, address: evm.address });
    const signature = await evm.signMessage({ message: r.body.message });
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => post('/challenge/verify/evm', { message: r.body.message, signature })),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 404)).toHaveLength(9);
  });

  it('issues Solana and Aptos tokens that check against the served keys, expiring after 1 h by default', async () => {
    const k = edKey();
    const req = await post('/challenge/request/solana', { ...REQUEST, network: 'testnet', address: k.solanaAddress });
    expect(req.body.message).toContain('\nNetwork: testnet\n');
    const ok = await post('/challenge/verify/solana', { message: req.body.message, signature: bs58.encode(k.sign(req.body.message)) });
    const now = Date.parse((await s.call('/admin/clock')).body.now);
    const jwks = createLocalJWKSet((await s.call('/.well-known/jwks.json')).body);
    const { payload } = await jwtVerify(ok.body.token, jwks, { currentDate: new Date(now) });
    expect(payload).toMatchObject({ sub: ok.body.profileId, address: k.solanaAddress, network: 'testnet' });
    expect(payload.exp! - payload.iat!).toBe(3600);
    const a = edKey();
    const areq = await post('/challenge/request/aptos', {
      ...REQUEST,
      network: 'mainnet',
      address: a.aptosAddress,
      publicKey: a.publicKeyHex,
    });
    expect(areq.body.message).toContain('\nChain ID: 1\n');
    const aok = await post('/challenge/verify/aptos', { message: areq.body.message, signature: bytesToHex(a.sign(areq.body.message)) });
    expect((await jwtVerify(aok.body.token, jwks, { currentDate: new Date(now) })).payload).toMatchObject({
      network: 'mainnet',
      address: a.aptosAddress,
    });
  });
});

describe('Authentication API', () => {
  const post = (path: string, json: unknown, key?: string) =>
    s.call(path, { method: 'POST', json, ...(key ? { headers: { 'x-api-key': key } } : {}) });
  /** Rows of a table, read from the server's own LMDB environment by this process. */
  const rows = (table: 'challenges' | 'binds' | 'expiries' | 'profiles' | 'accounts') => {
    const store = openStore(s.dir);
    try {
      return store.range(table).length;
    } finally {
      void store.close();
    }
  };

  describe('EVM', () => {
    it('issues an EIP-4361 challenge, verifies it once, and answers the verified challenge with a token', async () => {
      const req = await post('/challenge/request/evm', {
        ...REQUEST,
        chainId: 137,
        address: evm.address.toLowerCase(),
        expirationTime: '2026-11-22T13:00:00.000Z',
        notBefore: '2026-11-22T11:00:00.000Z',
        resources: ['https://docs.moralis.io/', 'ipfs://Qme7ss3ARVgxv6rXqVPiikMJ8u2NLgmgszg13pYrDKEoiu'],
      });
      expect(req.status).toBe(201);
      expect(req.body.id).toMatch(/^[a-zA-Z0-9]{17}$/);
      expect(req.body.profileId).toMatch(/^0x[0-9a-f]{64}$/);
      const nonce = /\nNonce: ([A-Za-z0-9]+)\n/.exec(req.body.message)![1]!;
      expect(nonce).toMatch(/^[A-Za-z0-9]{17}$/);
      const issuedAt = /\nIssued At: (\S+)\n/.exec(req.body.message)![1]!;
      expect(req.body.message).toBe(
        [
          'defi.finance wants you to sign in with your Ethereum account:',
          evm.address,
          '',
          'Please confirm',
          '',
          'URI: https://defi.finance/login',
          'Version: 1',
          'Chain ID: 137',
          `Nonce: ${nonce}`,
          `Issued At: ${issuedAt}`,
          'Expiration Time: 2026-11-22T13:00:00.000Z',
          'Not Before: 2026-11-22T11:00:00.000Z',
          'Resources:',
          '- https://docs.moralis.io/',
          '- ipfs://Qme7ss3ARVgxv6rXqVPiikMJ8u2NLgmgszg13pYrDKEoiu',
        ].join('\n'),
      );
      expect(Date.parse(issuedAt)).toBeGreaterThanOrEqual(Date.parse('2026-11-22T12:00:00Z'));

      const signature = await evm.signMessage({ message: req.body.message });
      const ok = await post('/challenge/verify/evm', { message: req.body.message, signature });
      expect(ok.status).toBe(201);
      expect(ok.body).toMatchObject({
        id: req.body.id,
        domain: 'defi.finance',
        uri: 'https://defi.finance/login',
        version: '1',
        nonce,
        profileId: req.body.profileId,
        chainId: 137,
        address: evm.address,
        statement: 'Please confirm',
        expirationTime: '2026-11-22T13:00:00.000Z',
        notBefore: '2026-11-22T11:00:00.000Z',
        resources: ['https://docs.moralis.io/', 'ipfs://Qme7ss3ARVgxv6rXqVPiikMJ8u2NLgmgszg13pYrDKEoiu'],
      });

      // The token is an EdDSA JWT that anyone can check against the served keys.
      const jwks = await s.call('/.well-known/jwks.json', { headers: { 'x-no-key': '1' } });
      expect(jwks.status).toBe(200);
      const { payload, protectedHeader } = await jwtVerify(ok.body.token, createLocalJWKSet(jwks.body), {
        currentDate: new Date('2026-11-22T12:30:00Z'),
      });
      expect(protectedHeader.alg).toBe('EdDSA');
      expect(ok.body.tokenIssuer).toMatch(/^chainpost\/tenants\/t_[0-9a-f]{16}$/);
      expect(payload).toMatchObject({
        sub: req.body.profileId,
        address: evm.address,
        chain: '0x89',
        iss: ok.body.tokenIssuer,
        aud: 'defi.finance',
        exp: Date.parse('2026-11-22T13:00:00Z') / 1000,
      });

      // Single use.
      const again = await post('/challenge/verify/evm', { message: req.body.message, signature });
      expect(again.status).toBe(404);
    });

    it('takes chainId as a number, a decimal string or a hex string, and the address in any case', async () => {
      for (const chainId of [1, '1', '0x1', '0X1', 8453, '0x2105']) {
        const r = await post('/challenge/request/evm', { ...REQUEST, chainId, address: evm.address.toUpperCase().replace('0X', '0x') });
        expect(r.status, String(chainId)).toBe(201);
        expect(r.body.message).toContain(`\n${evm.address}\n`);
      }
    });

    it('keeps the profileId of an address stable across challenges', async () => {
      const a = await post('/challenge/request/evm', { ...REQUEST, chainId: 1, address: evm2.address });
      const b = await post('/challenge/request/evm', { ...REQUEST, chainId: 56, address: evm2.address.toLowerCase() });
      expect(a.body.profileId).toBe(b.body.profileId);
      const verified = await post('/challenge/verify/evm', {
        message: b.body.message,
        signature: await evm2.signMessage({ message: b.body.message }),
      });
      expect(verified.body.profileId).toBe(a.body.profileId);
    });

    it('answers every bad request field 400 naming it, and stores nothing', async () => {
      const good = { ...REQUEST, chainId: 1, address: evm.address };
      const before = rows('challenges');
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ ...good, domain: undefined }, 'domain'],
        [{ ...good, domain: 'not a domain' }, 'domain'],
        [{ ...good, domain: 'https://defi.finance/x' }, 'domain'],
        [{ ...good, uri: undefined }, 'uri'],
        [{ ...good, uri: 'no scheme here' }, 'uri'],
        [{ ...good, timeout: 14 }, 'timeout'],
        [{ ...good, timeout: 12016 }, 'timeout'],
        [{ ...good, timeout: 15.5 }, 'timeout'],
        [{ ...good, timeout: 'soon' }, 'timeout'],
        [{ ...good, chainId: undefined }, 'chainId'],
        [{ ...good, chainId: 2 }, 'chainId'],
        [{ ...good, chainId: 'eth' }, 'chainId'],
        [{ ...good, address: undefined }, 'address'],
        [{ ...good, address: '0x1234' }, 'address'],
        [{ ...good, address: 'FVen3X669xLzsi6N2V91DoiyzHzg1uAgqiT8jZ9nS96Z' }, 'address'],
        [{ ...good, statement: 'two\nlines' }, 'statement'],
        [{ ...good, statement: 'percent % sign' }, 'statement'],
        [{ ...good, expirationTime: 'tomorrow' }, 'expirationTime'],
        [{ ...good, expirationTime: '2026-02-31T00:00:00Z' }, 'expirationTime'],
        [{ ...good, expirationTime: '2020-01-01T00:00:00Z' }, 'expirationTime'],
        [{ ...good, notBefore: '2026-11-22 12:00' }, 'notBefore'],
        [{ ...good, expirationTime: '2026-11-23T00:00:00Z', notBefore: '2026-11-24T00:00:00Z' }, 'notBefore'],
        [{ ...good, resources: 'https://one' }, 'resources'],
        [{ ...good, resources: ['https://ok', 'not a uri'] }, 'resources.1'],
      ];
      for (const [body, field] of cases) {
        const r = await post('/challenge/request/evm', body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.details.field, JSON.stringify(body)).toBe(field);
        expect(r.body.message.startsWith(`${field}: `)).toBe(true);
      }
      for (const raw of ['[]', 'null', '"text"', '{']) {
        const r = await s.call('/challenge/request/evm', { method: 'POST', body: raw });
        expect(r.status, raw).toBe(400);
      }
      expect(rows('challenges')).toBe(before);
    });

    it('refuses a verify that is malformed, altered, signed by another key, or for another tenant', async () => {
      const req = await post('/challenge/request/evm', { ...REQUEST, chainId: 1, address: evm.address });
      const message: string = req.body.message;
      const signature = await evm.signMessage({ message });
      const expect400 = async (body: unknown, field: string) => {
        const r = await post('/challenge/verify/evm', body);
        expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
        expect(r.body.details.field).toBe(field);
      };
      await expect400({ signature }, 'message');
      await expect400({ message }, 'signature');
      await expect400({ message: 'hello', signature }, 'message');
      await expect400({ message: message.replace('Please confirm', 'Please confirm!'), signature }, 'message');
      await expect400({ message, signature: '0x1234' }, 'signature');
      await expect400({ message, signature: await evm2.signMessage({ message }) }, 'signature');
      // Another tenant cannot use this tenant's challenge.
      const other = (await cliInProcess(['keys', 'create', '--name', 'other-tenant'], s.dir)).stdout.trim().split('\n').at(-1)!;
      expect((await post('/challenge/verify/evm', { message, signature }, other)).status).toBe(404);
      // The challenge survived all of that and still verifies once, v as 0/1 too.
      const v = parseInt(signature.slice(-2), 16);
      const zeroOne = `${signature.slice(0, -2)}${(v - 27).toString(16).padStart(2, '0')}`;
      expect((await post('/challenge/verify/evm', { message, signature: zeroOne })).status).toBe(201);
    });

    it('expires a challenge exactly `timeout` seconds after issue, and purges it', async () => {
      const inTime = await post('/challenge/request/evm', { ...REQUEST, timeout: 15, chainId: 1, address: evm.address });
      const req = await post('/challenge/request/evm', { ...REQUEST, timeout: 15, chainId: 1, address: evm.address });
      const signature = await evm.signMessage({ message: req.body.message });
      await advance(s, 14);
      expect(
        (
          await post('/challenge/verify/evm', {
            message: inTime.body.message,
            signature: await evm.signMessage({ message: inTime.body.message }),
          })
        ).status,
      ).toBe(201);
      await advance(s, 1.5);
      const late = await post('/challenge/verify/evm', { message: req.body.message, signature });
      expect(late.status).toBe(400);
      expect(late.body.message).toMatch(/the challenge expired at/);
      const before = rows('challenges');
      await advance(s, 120); // the purge runs every minute of service time
      expect(rows('challenges')).toBeLessThan(before);
      expect((await post('/challenge/verify/evm', { message: req.body.message, signature })).status).toBe(404);
    });

    it('enforces expirationTime and notBefore with the 30 s skew allowance', async () => {
      const now = Date.parse((await s.call('/admin/clock')).body.now);
      const at = (ms: number) => new Date(now + ms).toISOString();
      const exp = await post('/challenge/request/evm', {
        ...REQUEST,
        timeout: 600,
        chainId: 1,
        address: evm.address,
        expirationTime: at(60_000),
      });
      const nb = await post('/challenge/request/evm', {
        ...REQUEST,
        timeout: 600,
        chainId: 1,
        address: evm.address,
        notBefore: at(100_000),
      });
      const sign = (m: string) => evm.signMessage({ message: m });
      const early = await post('/challenge/verify/evm', { message: nb.body.message, signature: await sign(nb.body.message) });
      expect(early.status).toBe(400);
      expect(early.body.details.field).toBe('notBefore');
      await advance(s, 80); // 20 s before notBefore: inside the allowance; 20 s past expirationTime: inside too
      expect((await post('/challenge/verify/evm', { message: nb.body.message, signature: await sign(nb.body.message) })).status).toBe(201);
      const exp2 = await post('/challenge/request/evm', {
        ...REQUEST,
        timeout: 600,
        chainId: 1,
        address: evm.address,
        expirationTime: at(90_000),
      });
      await advance(s, 45); // now +125 s: 65 s past the first expirationTime, 35 s past the second
      const gone = await post('/challenge/verify/evm', { message: exp.body.message, signature: await sign(exp.body.message) });
      expect(gone.status).toBe(400);
      expect(gone.body.details.field).toBe('expirationTime');
      expect(
        (await post('/challenge/verify/evm', { message: exp2.body.message, signature: await sign(exp2.body.message) })).body.details.field,
      ).toBe('expirationTime');
    });
  });

  describe('Solana', () => {
    it('signs in with an ed25519 key: base58 address and signature, Network line', async () => {
      const k = edKey();
      const req = await post('/challenge/request/solana', { ...REQUEST, network: 'devnet', address: k.solanaAddress });
      expect(req.status).toBe(201);
      expect(req.body.message).toMatch(
        new RegExp(
          `^defi\\.finance wants you to sign in with your Solana account:\\n${k.solanaAddress}\\n\\nPlease confirm\\n\\nURI: https://defi\\.finance/login\\nVersion: 1\\nNetwork: devnet\\nNonce: [A-Za-z0-9]{17}\\nIssued At: \\S+$`,
        ),
      );
      const ok = await post('/challenge/verify/solana', { message: req.body.message, signature: bs58.encode(k.sign(req.body.message)) });
      expect(ok.status).toBe(201);
      expect(ok.body).toMatchObject({ network: 'devnet', address: k.solanaAddress, profileId: req.body.profileId, domain: 'defi.finance' });
      expect(ok.body.chainId).toBeUndefined();
      expect(typeof ok.body.token).toBe('string');
    });

    it('refuses bad Solana input', async () => {
      const k = edKey();
      expect(
        (await post('/challenge/request/solana', { ...REQUEST, network: 'mainnet', address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' }))
          .body.details.field,
      ).toBe('address');
      expect((await post('/challenge/request/solana', { ...REQUEST, network: 'moon', address: k.solanaAddress })).body.details.field).toBe(
        'network',
      );
      const req = await post('/challenge/request/solana', { ...REQUEST, network: 'mainnet', address: k.solanaAddress });
      const bad = await post('/challenge/verify/solana', {
        message: req.body.message,
        signature: bs58.encode(edKey().sign(req.body.message)),
      });
      expect(bad.status).toBe(400);
      expect(bad.body.details.field).toBe('signature');
      expect((await post('/challenge/verify/solana', { message: req.body.message, signature: 'not-base58!' })).body.details.field).toBe(
        'signature',
      );
      // An EVM verify of a Solana challenge is not a thing.
      expect((await post('/challenge/verify/evm', { message: req.body.message, signature: '0x' + '1'.repeat(130) })).status).toBe(400);
    });
  });

  describe('Aptos', () => {
    it('signs in with the message itself or the wallet full message, and answers the Aptos form', async () => {
      type Wrap = (m: string, nonce: string, address: string) => string;
      const wraps: Wrap[] = [
        (m) => m,
        (m, nonce) => `APTOS\nmessage: ${m}\nnonce: ${nonce}`,
        (m, nonce, address) => `APTOS\naddress: ${address}\napplication: https://defi.finance\nchainId: 2\nmessage: ${m}\nnonce: ${nonce}`,
      ];
      for (const wrap of wraps) {
        const k = edKey();
        const req = await post('/challenge/request/aptos', {
          ...REQUEST,
          network: 'testnet',
          address: k.aptosAddress,
          publicKey: k.publicKeyHex,
        });
        expect(req.status).toBe(201);
        expect(req.body.message).toContain(`with your Aptos account:\n${k.aptosAddress}\n`);
        expect(req.body.message).toContain('\nChain ID: 2\n');
        const nonce = /\nNonce: (\S+)/.exec(req.body.message)![1]!;
        const ok = await post('/challenge/verify/aptos', {
          message: req.body.message,
          signature: `0x${bytesToHex(k.sign(wrap(req.body.message, nonce, k.aptosAddress)))}`,
        });
        expect(ok.status, ok.body.message).toBe(201);
        expect(ok.body).toMatchObject({
          network: 'testnet',
          address: k.aptosAddress,
          publicKey: k.publicKeyHex,
          profileId: req.body.profileId,
        });
      }
    });

    it('requires the address to belong to the public key', async () => {
      const k = edKey();
      const r = await post('/challenge/request/aptos', {
        ...REQUEST,
        network: 'mainnet',
        address: edKey().aptosAddress,
        publicKey: k.publicKeyHex,
      });
      expect(r.status).toBe(400);
      expect(r.body.details.field).toBe('address');
      expect((await post('/challenge/request/aptos', { ...REQUEST, network: 'mainnet', address: k.aptosAddress })).body.details.field).toBe(
        'publicKey',
      );
      expect(
        (await post('/challenge/request/aptos', { ...REQUEST, network: 'devnet', address: k.aptosAddress, publicKey: k.publicKeyHex })).body
          .details.field,
      ).toBe('network');
    });
  });

  describe('bind and unbind', () => {
    it('binds an EVM, a Solana and an Aptos address into one profile, then unbinds one', async () => {
      const sol = edKey();
      const apt = edKey();
      const req = await post('/bind/request', {
        addresses: [
          { blockchainType: 'evm', address: evm2.address.toLowerCase() },
          { blockchainType: 'solana', address: sol.solanaAddress },
          { blockchainType: 'aptos', address: apt.aptosAddress, publicKey: apt.publicKeyHex },
        ],
      });
      expect(req.status).toBe(201);
      expect(req.body.messages).toHaveLength(3);
      const [mEvm, mSol, mApt] = req.body.messages as string[];
      expect(mEvm).toMatch(new RegExp(`^Please sign this message to bind:\\nAddress: ${evm2.address}\\n`));
      const verifications = [
        { message: mEvm!, signature: await evm2.signMessage({ message: mEvm! }) },
        { message: mSol!, signature: bs58.encode(sol.sign(mSol!)) },
        { message: mApt!, signature: bytesToHex(apt.sign(mApt!)) },
      ];
      // Every address must sign.
      const partial = await post('/bind/request/verify', { verifications: verifications.slice(0, 2) });
      expect(partial.status).toBe(400);
      expect(partial.body.message).toMatch(/1 signature\(s\) missing/);
      const wrong = await post('/bind/request/verify', {
        verifications: [verifications[0], { ...verifications[1], signature: bs58.encode(edKey().sign(mSol!)) }, verifications[2]],
      });
      expect(wrong.status).toBe(400);
      expect(wrong.body.details.field).toBe('verifications.1.signature');

      const bound = await post('/bind/request/verify', { verifications });
      expect(bound.status).toBe(201);
      const { profileId } = bound.body;
      expect(profileId).toMatch(/^0x[0-9a-f]{64}$/);
      const addrs = await s.call(`/profile/${profileId}/addresses`);
      expect(addrs.status).toBe(200);
      expect(addrs.body).toEqual([evm2.address, sol.solanaAddress, apt.aptosAddress]);
      // A sign-in by any of them now names the shared profile.
      const ch = await post('/challenge/request/solana', { ...REQUEST, network: 'mainnet', address: sol.solanaAddress });
      expect(ch.body.profileId).toBe(profileId);

      const rm = await post('/bind/remove', { blockchainType: 'solana', address: sol.solanaAddress, profileId });
      expect(rm.status).toBe(201);
      expect(rm.body.message).toMatch(
        new RegExp(
          `^Please sign this message to unbind:\\nAddress: ${sol.solanaAddress}\\nfrom\\nProfile Id:\\n- ${profileId}\\nNonce: [A-Za-z0-9]{17}$`,
        ),
      );
      const bad = await post('/bind/remove/verify', { message: rm.body.message, signature: bs58.encode(edKey().sign(rm.body.message)) });
      expect(bad.status).toBe(400);
      const done = await post('/bind/remove/verify', { message: rm.body.message, signature: bs58.encode(sol.sign(rm.body.message)) });
      expect(done.status).toBe(201);
      expect(done.body).toEqual({ profileId });
      expect((await s.call(`/profile/${profileId}/addresses`)).body).toEqual([evm2.address, apt.aptosAddress]);
      const own = await post('/challenge/request/solana', { ...REQUEST, network: 'mainnet', address: sol.solanaAddress });
      expect(own.body.profileId).not.toBe(profileId);
      expect(
        (await post('/bind/remove/verify', { message: rm.body.message, signature: bs58.encode(sol.sign(rm.body.message)) })).status,
      ).toBe(404);
    });

    it('answers /bind/remove 400 for a missing field, 404 for an unknown profile or an address not in it', async () => {
      const profileId = `0x${'ab'.repeat(32)}`;
      for (const [body, field] of [
        [{ address: evm.address, profileId }, 'blockchainType'],
        [{ blockchainType: 'evm', profileId }, 'address'],
        [{ blockchainType: 'evm', address: evm.address }, 'profileId'],
        [{ blockchainType: 'evm', address: evm.address, profileId: '0x1234' }, 'profileId'],
        [{ blockchainType: 'bitcoin', address: evm.address, profileId }, 'blockchainType'],
        [{ blockchainType: 'aptos', address: edKey().aptosAddress, profileId }, 'publicKey'],
      ] as const) {
        const r = await post('/bind/remove', body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.details.field).toBe(field);
      }
      expect((await post('/bind/remove', { blockchainType: 'evm', address: evm.address, profileId })).status).toBe(404);
      const mine = (await post('/challenge/request/evm', { ...REQUEST, chainId: 1, address: evm.address })).body.profileId;
      const stranger = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a');
      const r = await post('/bind/remove', { blockchainType: 'evm', address: stranger.address, profileId: mine });
      expect(r.status).toBe(404);
      expect(r.body.message).toMatch(/is not bound to profile/);
      expect((await s.call(`/profile/${profileId}/addresses`)).status).toBe(404);
      expect((await s.call('/profile/nope/addresses')).status).toBe(400);
    });

    it('answers bad bind requests 400 naming the field, storing nothing', async () => {
      const before = rows('binds');
      const cases: Array<[unknown, string]> = [
        [{}, 'addresses'],
        [{ addresses: [] }, 'addresses'],
        [{ addresses: [{ blockchainType: 'evm' }] }, 'addresses.0.address'],
        [{ addresses: [{ blockchainType: 'tron', address: 'T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb' }] }, 'addresses.0.blockchainType'],
        [
          {
            addresses: [
              { blockchainType: 'evm', address: evm.address },
              { blockchainType: 'evm', address: evm.address.toLowerCase() },
            ],
          },
          'addresses.1.address',
        ],
        [{ addresses: [{ blockchainType: 'aptos', address: edKey().aptosAddress }] }, 'addresses.0.publicKey'],
        [{ addresses: [{ blockchainType: 'solana', address: '0xnotbase58' }] }, 'addresses.0.address'],
        [{ addresses: [{ blockchainType: 'evm', address: evm.address, publicKey: `0x04${'ab'.repeat(127)}` }] }, 'addresses.0.publicKey'],
      ];
      for (const [body, field] of cases) {
        const r = await post('/bind/request', body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.details.field, JSON.stringify(body)).toBe(field);
      }
      expect(rows('binds')).toBe(before);
      for (const [body, field] of [
        [{}, 'verifications'],
        [{ verifications: [] }, 'verifications'],
        [{ verifications: [{ message: 'hello' }] }, 'verifications.0.signature'],
        [{ verifications: [{ message: 'hello', signature: '0x00' }] }, 'verifications.0.message'],
      ] as const) {
        const r = await post('/bind/request/verify', body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.details.field).toBe(field);
      }
      expect(
        (await post('/bind/request/verify', { verifications: [{ message: 'Please sign\nNonce: AAAAAAAAAAAAAAAAA', signature: '0x00' }] }))
          .status,
      ).toBe(404);
    });

    it('keeps profiles per tenant', async () => {
      const other = (await cliInProcess(['keys', 'create', '--name', 'third-tenant'], s.dir)).stdout.trim().split('\n').at(-1)!;
      const mine = await post('/challenge/request/evm', { ...REQUEST, chainId: 1, address: evm.address });
      expect((await s.call(`/profile/${mine.body.profileId}/addresses`)).status).toBe(200);
      expect((await s.call(`/profile/${mine.body.profileId}/addresses`, { headers: { 'x-api-key': other } })).status).toBe(404);
      const theirs = await post('/challenge/request/evm', { ...REQUEST, chainId: 1, address: evm.address }, other);
      expect(theirs.body.profileId).not.toBe(mine.body.profileId);
    });

    it('purges unsigned bind messages when their time runs out', async () => {
      await post('/bind/request', { addresses: [{ blockchainType: 'evm', address: evm.address }] });
      expect(rows('binds')).toBeGreaterThan(0);
      await advance(s, 16 * 60);
      expect(rows('binds')).toBe(0);
    });
  });

  it('caps a sign-in token at 24 h from its issue on the service clock, whatever the message lets it live', async () => {
    const jwks = createLocalJWKSet((await s.call('/.well-known/jwks.json', { headers: { 'x-no-key': '1' } })).body);
    const k = edKey();
    // A message valid for a year, SIWE and SIWS: the token still ends a day after the verify.
    const far = '2027-11-22T12:00:00.000Z';
    const flows = [
      async () => {
        const req = await post('/challenge/request/evm', { ...REQUEST, chainId: 1, address: evm2.address, expirationTime: far });
        return post('/challenge/verify/evm', {
          message: req.body.message,
          signature: await evm2.signMessage({ message: req.body.message }),
        });
      },
      async () => {
        const req = await post('/challenge/request/solana', {
          ...REQUEST,
          network: 'mainnet',
          address: k.solanaAddress,
          expirationTime: far,
        });
        return post('/challenge/verify/solana', { message: req.body.message, signature: bs58.encode(k.sign(req.body.message)) });
      },
    ];
    for (const flow of flows) {
      // Moved on first, so the issue time is the service clock's, not the machine's.
      const now = Date.parse(await advance(s, 3600));
      const ok = await flow();
      expect(ok.status).toBe(201);
      expect(ok.body.expirationTime).toBe(far);
      const { payload } = await jwtVerify(ok.body.token, jwks, { currentDate: new Date(now) });
      // Issued on the service clock (hours ahead of the machine's), which goes on ticking while the flow runs.
      expect(payload.iat).toBeGreaterThanOrEqual(Math.floor(now / 1000));
      expect(payload.iat).toBeLessThan(Math.floor(now / 1000) + 60);
      expect(payload.exp).toBe(payload.iat! + 86_400);
      await jwtVerify(ok.body.token, jwks, { currentDate: new Date((payload.exp! - 1) * 1000) });
      await expect(jwtVerify(ok.body.token, jwks, { currentDate: new Date(payload.exp! * 1000) })).rejects.toThrow(
        '"exp" claim timestamp check failed',
      );
    }
  });

  it('binds a token to its tenant and domain: the verification a backend does (issuer and audience pinned) refuses one minted through another tenant for the same domain', async () => {
    const jwks = createLocalJWKSet((await s.call('/.well-known/jwks.json', { headers: { 'x-no-key': '1' } })).body);
    const signIn = async (domain: string, key?: string) => {
      const req = await post('/challenge/request/evm', { ...REQUEST, domain, chainId: 1, address: evm.address }, key);
      const ok = await post(
        '/challenge/verify/evm',
        { message: req.body.message, signature: await evm.signMessage({ message: req.body.message }) },
        key,
      );
      expect(ok.status, JSON.stringify(ok.body)).toBe(201);
      return { token: ok.body.token as string, issuer: ok.body.tokenIssuer as string };
    };
    const b = (await cliInProcess(['keys', 'create', '--name', 'tenant-b-tokens'], s.dir)).stdout.trim().split('\n').at(-1)!;
    const mine = await signIn('defi.finance');
    const theirs = await signIn('defi.finance', b);
    const elsewhere = await signIn('other.example');
    expect(theirs.issuer).not.toBe(mine.issuer);
    expect(elsewhere.issuer).toBe(mine.issuer);
    const currentDate = new Date((await s.call('/admin/clock')).body.now);
    // docs/api.md, Authentication API: what A's backend runs, its issuer and its domain pinned.
    const verifyAt = (token: string, issuer: string) =>
      jwtVerify(token, jwks, { issuer, audience: 'defi.finance', algorithms: ['EdDSA'], currentDate });
    expect((await verifyAt(mine.token, mine.issuer)).payload).toMatchObject({
      address: evm.address,
      iss: mine.issuer,
      aud: 'defi.finance',
    });
    await expect(verifyAt(theirs.token, mine.issuer)).rejects.toThrow('unexpected "iss" claim value');
    expect((await verifyAt(theirs.token, theirs.issuer)).payload).toMatchObject({ iss: theirs.issuer, aud: 'defi.finance' });
    await expect(verifyAt(elsewhere.token, mine.issuer)).rejects.toThrow('unexpected "aud" claim value');
  });

  it('needs the API key on every endpoint but the key set', async () => {
    for (const path of [
      '/challenge/request/evm',
      '/challenge/verify/solana',
      '/bind/request',
      '/bind/remove',
      '/bind/remove/verify',
      '/bind/request/verify',
    ]) {
      expect((await s.call(path, { method: 'POST', json: {}, headers: { 'x-no-key': '1' } })).status, path).toBe(401);
    }
    expect((await s.call(`/profile/0x${'1'.repeat(64)}/addresses`, { headers: { 'x-no-key': '1' } })).status).toBe(401);
  });
});
