import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { base58check } from '../../engine/bitcoin/encoding.js';
import { ExtendedKeyError, deriveAddresses, derivePublicKeys, parseExtendedKey } from '../../engine/bitcoin/xpub.js';

const vectors = (name: string): any => JSON.parse(readFileSync(new URL(`../fixtures/bitcoin/xpub-vectors/${name}`, import.meta.url), 'utf8'));
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
/** The same key under another version (SLIP-132 versions differ only in their first 4 bytes). */
const withVersion = (text: string, version: number): string => {
  const bytes = base58check.decode(text);
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(0, version);
  return base58check.encode(bytes);
};

describe('extended public keys', () => {
  it('derive the BIP-84 zpub receive and change addresses', () => {
    const entries = vectors('bip49-84-86-vectors.parsed.json').bip84_mainnet.entries as Array<Record<string, string>>;
    const key = parseExtendedKey(entries[0]!['xpub']!);
    expect(key.type).toBe('p2wpkh');
    const at = (path: string): Record<string, string> => entries.find((e) => e['path'] === path)!;
    expect(deriveAddresses(key, 0, 0, 2)).toEqual([at("m/84'/0'/0'/0/0")['address'], at("m/84'/0'/0'/0/1")['address']]);
    expect(deriveAddresses(key, 1, 0, 1)).toEqual([at("m/84'/0'/0'/1/0")['address']]);
    // A range starting further on gives the same addresses as the whole.
    expect(deriveAddresses(key, 0, 1, 1)).toEqual([at("m/84'/0'/0'/0/1")['address']]);
    expect(hex(derivePublicKeys(key, 0, 0, 1)[0]!)).toBe(at("m/84'/0'/0'/0/0")['pubkey']);
  });

  it('derive P2SH-P2WPKH from a ypub: the BIP-49 vector (testnet upub) read as mainnet', () => {
    const entries = vectors('bip49-84-86-vectors.parsed.json').bip49_testnet.entries as Array<Record<string, string>>;
    const ypub = withVersion(entries[0]!['account0Xpub']!, 0x049d7cb2);
    const key = parseExtendedKey(ypub);
    expect(key.type).toBe('p2sh-p2wpkh');
    const first = entries[1]!;
    expect(hex(derivePublicKeys(key, 0, 0, 1)[0]!)).toBe(first['account0recvPublicKeyHex']!.slice(2));
    // The vector's script hash under the mainnet P2SH version.
    const expected = base58check.encode(Uint8Array.of(0x05, ...Buffer.from(first['addressBytes']!.slice(2), 'hex')));
    expect(deriveAddresses(key, 0, 0, 1)).toEqual([expected]);
    expect(expected.startsWith('3')).toBe(true);
  });

  it('derive the BIP-32 vectors’ non-hardened children from an xpub, and their P2PKH addresses', () => {
    let checked = 0;
    for (const v of vectors('bip32-vectors.bitcoinjs-bip32.json').valid as Array<{ network: string; children: Array<{ path: string; hardened?: boolean; base58: string; pubKey: string; identifier: string }> }>) {
      if (v.network !== 'bitcoin') continue;
      const kids = v.children;
      for (let i = 0; i + 2 < kids.length; i++) {
        // A node followed by two non-hardened steps: …/a/b from the node's xpub.
        if (kids[i + 1]!.hardened === true || kids[i + 2]!.hardened === true) continue;
        const [a, b] = kids[i + 2]!.path.split('/').slice(-2).map(Number) as [number, number];
        const key = parseExtendedKey(kids[i]!.base58);
        expect(key.type).toBe('p2pkh');
        expect(hex(derivePublicKeys(key, a, b, 1)[0]!)).toBe(kids[i + 2]!.pubKey);
        // P2PKH is base58check(0x00 ‖ HASH160(key)), the vector's identifier.
        expect(deriveAddresses(key, a as 0 | 1, b, 1)[0]).toBe(base58check.encode(Uint8Array.of(0, ...Buffer.from(kids[i + 2]!.identifier, 'hex'))));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
  });

  it('refuse testnet and private keys, bad checksums and other lengths, naming what they are', () => {
    const entries = vectors('bip49-84-86-vectors.parsed.json');
    expect(() => parseExtendedKey(entries.bip49_testnet.entries[0].account0Xpub)).toThrow(/testnet key \(upub\)/);
    expect(() => parseExtendedKey(entries.bip84_mainnet.entries[0].xpriv)).toThrow(/private key \(zprv\)/);
    const zpub = entries.bip84_mainnet.entries[0].xpub as string;
    expect(() => parseExtendedKey(`${zpub.slice(0, -1)}${zpub.endsWith('s') ? 't' : 's'}`)).toThrow(ExtendedKeyError);
    expect(() => parseExtendedKey('xpub')).toThrow(ExtendedKeyError);
    expect(() => parseExtendedKey(base58check.encode(new Uint8Array(40)))).toThrow(/40 bytes/);
  });
});
