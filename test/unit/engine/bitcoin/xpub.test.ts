import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { ripemd160 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { describe, expect, it } from 'vitest';
import { base58check, bech32 } from '../../../../engine/bitcoin/encoding.js';
import * as F from '../../../../engine/bitcoin/secp256k1-field.js';
import { tweakedKeys } from '../../../../engine/bitcoin/secp256k1-derive.js';
import {
  ExtendedKeyError,
  deriveAddresses,
  derivePublicKeys,
  parseExtendedKey,
  type ExtendedKey,
} from '../../../../engine/bitcoin/xpub.js';
import { base58check as fastBase58check, segwitV0 } from '../../../../engine/bitcoin/address-encoding.js';
import { ripemd160Short, sha256Short } from '../../../../engine/bitcoin/xpub-hash.js';
import { nobleDeriveAddresses, nobleDerivePublicKeys } from '../../../../engine/bitcoin/xpub-noble.js';

const vectors = (name: string): any =>
  JSON.parse(readFileSync(new URL(`../../../fixtures/bitcoin/xpub-vectors/${name}`, import.meta.url), 'utf8'));
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
    for (const v of vectors('bip32-vectors.bitcoinjs-bip32.json').valid as Array<{
      network: string;
      children: Array<{ path: string; hardened?: boolean; base58: string; pubKey: string; identifier: string }>;
    }>) {
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
        expect(deriveAddresses(key, a as 0 | 1, b, 1)[0]).toBe(
          base58check.encode(Uint8Array.of(0, ...Buffer.from(kids[i + 2]!.identifier, 'hex'))),
        );
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

const P = 2n ** 256n - 2n ** 32n - 977n;
const N = secp256k1.Point.Fn.ORDER;
const mod = (v: bigint): bigint => ((v % P) + P) % P;
const toHex32 = (v: bigint): Uint8Array => Uint8Array.from(Buffer.from(v.toString(16).padStart(64, '0'), 'hex'));
const big = (b: Uint8Array): bigint => BigInt(`0x${hex(b) || '0'}`);
/** noble's tweak·G + K, the reference (undefined where BIP-32 calls the child invalid). */
const reference = (parent: Uint8Array, tweak: bigint): string | undefined => {
  if (tweak >= N) return undefined;
  const K = secp256k1.Point.fromBytes(parent);
  const sum = tweak === 0n ? K : secp256k1.Point.BASE.multiply(tweak).add(K);
  return sum.equals(secp256k1.Point.ZERO) ? undefined : hex(sum.toBytes(true));
};

describe('secp256k1 field without BigInt', () => {
  it('matches BigInt arithmetic mod p on random and edge values, limbs loose up to 2^24 + 2^22', () => {
    const edges = [0n, 1n, P - 1n, P, P + 1n, 2n ** 256n - 1n, 2n ** 256n, 2n * P, 2n ** 264n - 1n];
    const a = F.fe(),
      b = F.fe(),
      out = F.fe();
    const loose = (fe: Float64Array): void => fe.forEach((_, k) => (fe[k] = Math.floor(Math.random() * (2 ** 24 + 2 ** 22))));
    for (let t = 0; t < 3000; t++) {
      if (t < edges.length ** 2) {
        F.fromBigInt(a, edges[t % edges.length]!);
        F.fromBigInt(b, edges[Math.floor(t / edges.length)]!);
      } else if (t % 2 === 0) {
        loose(a);
        loose(b);
      } else {
        F.fromBigInt(a, big(randomBytes(33)));
        F.fromBigInt(b, big(randomBytes(33)));
      }
      const x = F.toBigInt(a),
        y = F.toBigInt(b);
      const check = (got: Float64Array, want: bigint): void => {
        expect(mod(F.toBigInt(got))).toBe(mod(want));
        expect(got.every((limb) => limb >= 0 && limb < 2 ** 24 + 2 ** 22)).toBe(true);
      };
      F.mul(out, a, b), check(out, x * y);
      F.sqr(out, a), check(out, x * x);
      F.add(out, a, b), check(out, x + y);
      F.sub(out, a, b), check(out, x - y);
      F.mulSmall(out, a, 8), check(out, 8n * x);
      F.canonical(out, a);
      expect(F.toBigInt(out)).toBe(mod(x));
      if (mod(x) !== 0n && t % 10 === 0) {
        F.inv(out, a);
        expect(mod(F.toBigInt(out) * x)).toBe(1n);
      }
    }
  });
});

describe('public derivation without BigInt', () => {
  const parent = secp256k1.Point.BASE.multiply(big(randomBytes(32)) % N).toBytes(true);

  it('gives noble’s tweak·G + K for thousands of random tweaks and dense or sparse ones', () => {
    const special = [1n, 2n, 3n, 4095n, 4096n, 2n ** 255n + 3n, N - 1n, N - 2n, (N - 1n) / 2n, 2n ** 252n - 1n, 2n ** 200n - 1n];
    const tweaks = [...special.map(toHex32), ...Array.from({ length: 2000 }, () => randomBytes(32))];
    const got = tweakedKeys(parent, tweaks);
    expect(got.map((k) => k && hex(k))).toEqual(tweaks.map((t) => reference(parent, big(t))));
  });

  it('skips what BIP-32 calls invalid (I_L ≥ n, the point at infinity) and still meets K = I_L·G (a doubling) and I_L = 0', () => {
    const t = big(randomBytes(32)) % N;
    const tG = secp256k1.Point.BASE.multiply(t);
    const cases: Array<[Uint8Array, bigint]> = [
      [tG.negate().toBytes(true), t], // −t·G + t·G: infinity
      [tG.toBytes(true), t], // t·G + t·G: the addition formula meets a doubling
      [parent, 0n],
      [parent, N],
      [parent, N + 1n],
      [parent, 2n ** 256n - 1n],
    ];
    for (const [K, tweak] of cases) {
      // Among ordinary children, whose batch the odd one must not disturb: a few (each child's comb in
      // Jacobian coordinates) and 200 (all children's combs together in affine coordinates).
      for (const others of [2, 200]) {
        const tweaks: Uint8Array[] = Array.from({ length: others }, () => randomBytes(32));
        tweaks.splice(1, 0, toHex32(tweak));
        const got = tweakedKeys(K, tweaks);
        expect(got.map((k) => k && hex(k))).toEqual(tweaks.map((tw) => reference(K, big(tw))));
      }
    }
    expect(tweakedKeys(tG.negate().toBytes(true), [toHex32(t)])).toEqual([undefined]);
  });

  it('derives what the noble path derives, key for key, across batch boundaries and up to index 2^31 − 1', () => {
    for (let round = 0; round < 4; round++) {
      const key = { publicKey: secp256k1.Point.BASE.multiply(big(randomBytes(32)) % N).toBytes(true), chainCode: randomBytes(32) };
      const [from, count] = (
        [
          [0, 300],
          [1_000_000, 5],
          [0x7fffffff - 2, 3],
          [Math.floor(Math.random() * 1e9), 40],
        ] as Array<[number, number]>
      )[round]!;
      const fast = derivePublicKeys(key, round % 2, from, count);
      expect(fast.map(hex)).toEqual(nobleDerivePublicKeys(key, round % 2, from, count).map(hex));
    }
    expect(() =>
      derivePublicKeys(parseExtendedKey(vectors('bip49-84-86-vectors.parsed.json').bip84_mainnet.entries[0].xpub), 0, 0x7fffffff, 2),
    ).toThrow(RangeError);
  });

  it('encodes the addresses of each script type as @scure/base does', () => {
    const entries = vectors('bip49-84-86-vectors.parsed.json');
    const zpub = parseExtendedKey(entries.bip84_mainnet.entries[0].xpub);
    for (const type of ['p2pkh', 'p2sh-p2wpkh', 'p2wpkh'] as const) {
      const key: ExtendedKey = { ...zpub, type };
      expect(deriveAddresses(key, 1, 7, 50)).toEqual(nobleDeriveAddresses(key, 1, 7, 50));
    }
    // Past deriveAddresses' slice of 2,048: in order, the same as smaller ranges, index 2,048 as noble's.
    const many = deriveAddresses(zpub, 0, 0, 2100);
    expect(many).toEqual([...deriveAddresses(zpub, 0, 0, 1000), ...deriveAddresses(zpub, 0, 1000, 1100)]);
    expect(many.slice(2047, 2050)).toEqual(nobleDeriveAddresses(zpub, 0, 2047, 3));
    for (let i = 0; i < 500; i++) {
      const bytes = randomBytes(i % 40);
      bytes.fill(0, 0, i % 4); // leading zero bytes are '1's
      expect(fastBase58check(bytes)).toBe(base58check.encode(bytes));
      const program = randomBytes(20);
      expect(segwitV0('bc', program)).toBe(bech32.encode('bc', [0, ...bech32.toWords(program)]));
    }
  });

  it('hashes one-block messages (0 … 55 bytes) as @noble/hashes does, and refuses longer ones', () => {
    const out = new Uint8Array(32);
    for (let length = 0; length <= 55; length++) {
      for (let k = 0; k < 5; k++) {
        const msg = randomBytes(length);
        sha256Short(msg, out);
        expect(hex(out)).toBe(hex(sha256(msg)));
        ripemd160Short(msg, out, 12);
        expect(hex(out.subarray(12))).toBe(hex(ripemd160(msg)));
      }
    }
    expect(() => sha256Short(new Uint8Array(56), out)).toThrow(RangeError);
  });
});
