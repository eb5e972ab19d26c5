import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import bs58 from 'bs58';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aptosAddressOf } from '../engine/auth/signatures.js';
import { startChainpost, stopAndClean, type Running } from './helpers.js';
import { moralisFor } from './sdk.js';

describe('the Moralis SDK (moralis@2.27.2) against the Auth API', () => {
  let s: Running;
  let Moralis: any;
  beforeAll(async () => {
    s = await startChainpost({ CHAINPOST_RATE_LIMIT: '0' });
    Moralis = await moralisFor(s.url, s.key);
  });
  afterAll(() => stopAndClean(s));

  const common = { domain: 'defi.finance', uri: 'https://defi.finance', statement: 'Please confirm', timeout: 60 };

  it('signs in with an EVM wallet', async () => {
    const account = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');
    const req = await Moralis.Auth.requestMessage({
      ...common,
      networkType: 'evm',
      chain: '0x1',
      address: account.address,
      expirationTime: '2099-01-01T00:00:00.000Z',
    });
    const { id, profileId, message } = req.raw;
    expect(id).toMatch(/^[a-zA-Z0-9]{17}$/);
    expect(message).toContain(`with your Ethereum account:\n${account.address}\n`);
    const verified = await Moralis.Auth.verify({ networkType: 'evm', message, signature: await account.signMessage({ message }) });
    expect(verified.raw).toMatchObject({ id, profileId, chainId: 1, address: account.address, domain: 'defi.finance' });
    expect(verified.result.chain.hex).toBe('0x1');
    expect(verified.result.address.checksum).toBe(account.address);
    expect(verified.result.expirationTime.toISOString()).toBe('2099-01-01T00:00:00.000Z');
  });

  it('signs in with a Solana wallet', async () => {
    const secret = ed25519.utils.randomSecretKey();
    const address = bs58.encode(ed25519.getPublicKey(secret));
    const req = await Moralis.Auth.requestMessage({ ...common, networkType: 'solana', solNetwork: 'devnet', address });
    const message: string = req.raw.message;
    expect(message).toContain('\nNetwork: devnet\n');
    const signature = bs58.encode(ed25519.sign(new TextEncoder().encode(message), secret));
    const verified = await Moralis.Auth.verify({ networkType: 'solana', message, signature });
    expect(verified.raw).toMatchObject({ profileId: req.raw.profileId, network: 'devnet', address });
    expect(verified.result.solNetwork.network).toBe('devnet');
    expect(verified.result.address.address).toBe(address);
  });

  it('signs in with an Aptos wallet', async () => {
    const secret = ed25519.utils.randomSecretKey();
    const publicKey = `0x${bytesToHex(ed25519.getPublicKey(secret))}`;
    const address = aptosAddressOf(publicKey);
    const req = await Moralis.Auth.requestMessage({ ...common, networkType: 'aptos', network: 'mainnet', address, publicKey });
    const message: string = req.raw.message;
    const nonce = /\nNonce: (\S+)/.exec(message)![1];
    // As Petra signs: the full message around the challenge.
    const full = `APTOS\nmessage: ${message}\nnonce: ${nonce}`;
    const signature = `0x${bytesToHex(ed25519.sign(new TextEncoder().encode(full), secret))}`;
    const verified = await Moralis.Auth.verify({ networkType: 'aptos', message, signature });
    expect(verified.raw).toMatchObject({ profileId: req.raw.profileId, network: 'mainnet', address, publicKey });
    expect(verified.result.address.address).toBe(address);
  });

  it('surfaces a refusal as an SDK error carrying the server message', async () => {
    await expect(
      Moralis.Auth.requestMessage({
        ...common,
        networkType: 'evm',
        chain: '0x1',
        address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
        timeout: 5,
      }),
    ).rejects.toThrow(/timeout: at least 15 seconds/);
  });
});
