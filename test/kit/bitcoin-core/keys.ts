import { base58check } from '../../../engine/bitcoin/encoding.js';
import { derivePublicKeys, parseExtendedKey } from '../../../engine/bitcoin/xpub.js';

/** Extended keys the Bitcoin tests share: BIP-32 vector 1's master key, and the BIP-84 vector's account zpub. */
export const XPUB = 'xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8';
export const BIP84_ZPUB = 'zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs';
export const XPRV = 'xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi';

/** The same key under another SLIP-132 version (they differ only in their first 4 bytes). */
export const withVersion = (text: string, version: number): string => {
  const bytes = base58check.decode(text);
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(0, version);
  return base58check.encode(bytes);
};

/** `n` distinct mainnet xpubs (each key a child public key of XPUB's, so a point of the curve): streams holding many keys. */
export const manyXpubs = (n: number): string[] => {
  const parent = base58check.decode(XPUB);
  return derivePublicKeys(parseExtendedKey(XPUB), 0, 0, n).map((publicKey, i) => {
    const bytes = parent.slice();
    bytes[4] = 2; // depth: …/0/i
    new DataView(bytes.buffer, bytes.byteOffset).setUint32(9, i);
    bytes.set(publicKey, 45);
    return base58check.encode(bytes);
  });
};
