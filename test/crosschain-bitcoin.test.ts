import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveAddresses, parseExtendedKey } from '../engine/bitcoin/xpub.js';
import { mineBlock, payTo } from './kit/bitcoin-core/build.js';
import { prunedChain } from './kit/bitcoin-core/fixtures.js';
import { BIP84_ZPUB, XPRV, XPUB, withVersion } from './kit/bitcoin-core/keys.js';
import { startBitcoinCore, type BitcoinCore } from './kit/bitcoin-core/server.js';
import { startChainpost, stopAndClean, until, type Running } from './helpers.js';

/**
 * The cross-chain API over the Bitcoin Core stand-in: GET /v1/chains/bitcoin/wallets/:publicKey/addresses
 * lists a wallet's derived addresses with their paths and transaction counts, up to the gap past the last
 * used index of each branch. The BIP-84 account's first addresses are the BIP's own vectors (test/fixtures).
 */
const GAP = 3;
const vectors = JSON.parse(
  readFileSync(new URL('./fixtures/bitcoin/xpub-vectors/bip49-84-86-vectors.parsed.json', import.meta.url), 'utf8'),
) as { bip84_mainnet: { entries: Array<{ path: string; address?: string }> } };
const bip84 = (path: string): string => vectors.bip84_mainnet.entries.find((e) => e.path === path)!.address!;

let core: BitcoinCore;
let s: Running;

const caughtUp = async (): Promise<void> => {
  const head = async () =>
    ((await s.call('/health')).body.chains as Array<{ chain: string; head: number }>).find((c) => c.chain === 'bitcoin')?.head;
  expect(await until(async () => (await head()) === core.chain.height, 20_000)).toBe(true);
};
/** Mines a block whose coinbase pays `address`. */
const pay = (address: string): void => void mineBlock(core.chain, [], payTo(address, 0).script);

beforeAll(async () => {
  // A pruned node above block 880,000: the server starts at its best block, and the windows still begin at index 0.
  core = await startBitcoinCore({ chain: prunedChain() });
  s = await startChainpost({
    CHAINPOST_BITCOIN_RPC: core.url,
    CHAINPOST_BITCOIN_POLL_MS: '50',
    CHAINPOST_BITCOIN_GAP: String(GAP),
    CHAINPOST_RATE_LIMIT: '0',
  });
  await caughtUp();
});

afterAll(async () => {
  await stopAndClean(s);
  await core.close();
});

describe('GET /v1/chains/:chainAlias/wallets/:publicKey/addresses', () => {
  const addresses = (key: string, alias = 'bitcoin') => s.call(`/v1/chains/${alias}/wallets/${encodeURIComponent(key)}/addresses`);

  it('lists each branch up to the gap past its last used address, with BIP-84 paths and transaction counts', async () => {
    const none = await addresses(BIP84_ZPUB);
    expect(none.status, JSON.stringify(none.body)).toBe(200);
    // Nothing used yet: the first GAP addresses of each branch.
    expect(none.body.addresses.map((a: { path: string }) => a.path)).toEqual(
      ['0/0', '0/1', '0/2', '1/0', '1/1', '1/2'].map((p) => `m/84'/0'/0'/${p}`),
    );
    expect(none.body.addresses[0]).toEqual({ address: bip84("m/84'/0'/0'/0/0"), path: "m/84'/0'/0'/0/0", transfers: 0 });

    // Receive 0 is paid twice and receive 2 once (moving the window to 2 + GAP); change 0 once.
    const zpub = parseExtendedKey(BIP84_ZPUB);
    const receive = deriveAddresses(zpub, 0, 0, 6);
    expect(receive.slice(0, 2)).toEqual([bip84("m/84'/0'/0'/0/0"), bip84("m/84'/0'/0'/0/1")]);
    pay(receive[0]!);
    pay(receive[0]!);
    pay(receive[2]!);
    pay(bip84("m/84'/0'/0'/1/0"));
    await caughtUp();
    const used = await addresses(BIP84_ZPUB);
    expect(used.body.addresses).toEqual([
      ...receive.map((address, i) => ({ address, path: `m/84'/0'/0'/0/${i}`, transfers: i === 0 ? 2 : i === 2 ? 1 : 0 })),
      ...deriveAddresses(zpub, 1, 0, 4).map((address, i) => ({ address, path: `m/84'/0'/0'/1/${i}`, transfers: i === 0 ? 1 : 0 })),
    ]);
    expect(used.body.addresses[6].address).toBe(bip84("m/84'/0'/0'/1/0"));
    expect(used.body.meta).toEqual({ syncedAt: { bitcoin: core.chain.height } });
  });

  it("writes a master key's paths from m, and takes the Universal aliases of Bitcoin", async () => {
    const r = await addresses(XPUB, 'bitcoin-mainnet');
    expect(r.status).toBe(200);
    expect(r.body.addresses.slice(0, 2).map((a: { path: string }) => a.path)).toEqual(['m/0/0', 'm/0/1']);
  });

  it('refuses a private, testnet or broken key naming publicKey, and a chain other than Bitcoin naming chainAlias', async () => {
    for (const key of [XPRV, withVersion(XPUB, 0x043587cf), `${BIP84_ZPUB.slice(0, -1)}x`, 'hello', '%E0%A4%A']) {
      const r = await s.call(`/v1/chains/bitcoin/wallets/${key.startsWith('%') ? key : encodeURIComponent(key)}/addresses`);
      expect(r.status, key).toBe(400);
      expect(r.body.details.field, key).toBe('publicKey');
    }
    for (const alias of ['eth', 'sol', 'all', 'nowhere']) {
      const r = await addresses(BIP84_ZPUB, alias);
      expect(r.status, alias).toBe(400);
      expect(r.body.details.field, alias).toBe('chainAlias');
    }
  });
});

describe('GET /v1/chains/bitcoin/tokens/native/price, /timeseries and /sparkline with no wrapped bitcoin followed', () => {
  it('answers a null price and empty series: Bitcoin is priced only as a followed EVM chain’s wrapped bitcoin', async () => {
    // This server follows Bitcoin alone: no EVM chain, so no pricing lists a wrapped bitcoin.
    const meta = { syncedAt: { bitcoin: core.chain.height } };
    for (const token of ['native', 'btc']) {
      const price = await s.call(`/v1/chains/bitcoin/tokens/${token}/price`);
      expect(price.status, JSON.stringify(price.body)).toBe(200);
      expect(price.body).toMatchObject({
        chain: 'bitcoin',
        tokenSymbol: 'BTC',
        tokenDecimals: 8,
        usdPrice: null,
        '24hrChangeUsd': null,
        '24hrChangePercent': null,
        updatedAt: null,
        dexInformation: null,
        meta,
      });
    }
    for (const interval of ['5m', 'daily']) {
      const series = await s.call(`/v1/chains/bitcoin/tokens/native/price/timeseries?interval=${interval}&forwardFill=true`);
      expect(series.status, JSON.stringify(series.body)).toBe(200);
      expect(series.body).toMatchObject({ chain: 'bitcoin', interval, result: [], cursor: null, meta });
    }
    for (const range of ['24h', '1y']) {
      const line = await s.call(`/v1/chains/bitcoin/tokens/native/price/sparkline?range=${range}`);
      expect(line.status, JSON.stringify(line.body)).toBe(200);
      expect(line.body).toMatchObject({ chain: 'bitcoin', range, result: [], cursor: null, meta });
    }
  });
});
