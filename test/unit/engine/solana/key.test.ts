import { randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import { describe, expect, it } from 'vitest';
import { KeyTable, SolanaKeyError, decodeKey, encodeKey } from '../../../../engine/solana/key.js';
import { fixtureBlock, keysOf } from './reader.js';

/** Random 32-byte keys, some with leading zero bytes (base58's '1's). */
function keys(n: number): Uint8Array[] {
  return Array.from({ length: n }, (_, i) => {
    const k = randomBytes(32);
    k.fill(0, 0, i % 5);
    if (i === 97) k.fill(0);
    return new Uint8Array(k);
  });
}

describe('Solana keys and base58', () => {
  it('encode and decode as bs58 does', () => {
    for (const k of keys(2_000)) {
      const text = bs58.encode(k);
      expect(encodeKey(k)).toBe(text);
      expect(decodeKey(text)).toEqual(k);
    }
    for (const k of fixtureBlock().transactions.flatMap(keysOf)) expect(encodeKey(decodeKey(k))).toBe(k);
  });

  it('refuses text that is not base58 or not 32 bytes, saying which', () => {
    const good = bs58.encode(randomBytes(32));
    for (const bad of [
      `${good.slice(0, 20)}0${good.slice(21)}`,
      good.replace(/.$/, 'l'),
      'O'.repeat(44),
      `${good.slice(0, 43)} `,
      'ü'.repeat(40),
    ]) {
      expect(() => decodeKey(bad)).toThrow(SolanaKeyError);
      expect(() => decodeKey(bad)).toThrow(/is not base58/);
    }
    for (const n of [0, 1, 31, 33, 64]) {
      const text = bs58.encode(Buffer.alloc(n, 7));
      expect(() => decodeKey(text)).toThrow(new RegExp(`is ${n} bytes of base58, not a 32-byte key`));
    }
    // 32 '1's is 32 zero bytes (previousBlockhash of a block whose parent is gone); 33 are 33 bytes.
    expect(decodeKey('1'.repeat(32))).toEqual(new Uint8Array(32));
    expect(() => decodeKey('1'.repeat(33))).toThrow(/33 bytes/);
    // The largest 44-digit text is past 2^256.
    expect(() => decodeKey('z'.repeat(44))).toThrow(/not a 32-byte key/);
  });

  it('gives each distinct key one id, in first-seen order, its bytes packed', () => {
    const table = new KeyTable();
    const ks = keys(3_000);
    ks.forEach((k, i) => expect(table.id(bs58.encode(k))).toBe(i));
    ks.forEach((k, i) => expect(table.id(bs58.encode(k))).toBe(i));
    expect(table.count).toBe(3_000);
    expect(Buffer.from(table.bytes).equals(Buffer.concat(ks))).toBe(true);
    expect(() => table.id('not a key')).toThrow(SolanaKeyError);
    expect(table.count).toBe(3_000);
  });
});
