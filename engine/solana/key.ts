import bs58 from 'bs58';
import { base58Decode32Into } from './key-base58.js';

/**
 * Solana's 32-byte keys (accounts, programs, mints, block hashes) and their
 * base58 text, case-sensitive as written.
 */
export const KEY_BYTES = 32;

export class SolanaKeyError extends Error {
  override name = 'SolanaKeyError';
}

/** The 32 bytes of a base58 key; a SolanaKeyError saying why for text that is not base58 or not 32 bytes. */
export function decodeKey(text: string): Uint8Array {
  const out = new Uint8Array(KEY_BYTES);
  if (base58Decode32Into(text, out, 0)) return out;
  // The slow decoder only to say which of the two it is, and only on a short text (a signature's 64 bytes take 88): it is quadratic in the length.
  if (text.length > 128)
    throw new SolanaKeyError(`${JSON.stringify(text.slice(0, 64))}… is ${text.length} characters, a 32-byte key has 32 to 44`);
  const bytes = bs58.decodeUnsafe(text);
  if (bytes === undefined) throw new SolanaKeyError(`${JSON.stringify(text)} is not base58`);
  throw new SolanaKeyError(`${JSON.stringify(text)} is ${bytes.length} bytes of base58, not a 32-byte key`);
}

/** The base58 text of a 32-byte key. */
export function encodeKey(key: Uint8Array): string {
  if (key.length !== KEY_BYTES) throw new RangeError(`a key of ${key.length} bytes, not ${KEY_BYTES}`);
  return bs58.encode(key);
}

/**
 * The distinct keys of a block, each decoded once (a mainnet slot names ~30,000 keys, a third of them
 * distinct: the fee payers, programs and sysvars repeat): ids in first-seen order, bytes packed 32 each.
 */
export class KeyTable {
  private readonly ids = new Map<string, number>();
  private buf = new Uint8Array(KEY_BYTES * 1024);
  count = 0;

  /** The key's id, decoding it the first time; a SolanaKeyError for text that is not a key. */
  id(text: string): number {
    const known = this.ids.get(text);
    if (known !== undefined) return known;
    if ((this.count + 1) * KEY_BYTES > this.buf.length) {
      const grown = new Uint8Array(this.buf.length * 2);
      grown.set(this.buf);
      this.buf = grown;
    }
    if (!base58Decode32Into(text, this.buf, this.count * KEY_BYTES)) decodeKey(text);
    this.ids.set(text, this.count);
    return this.count++;
  }

  /** The packed keys (a view: the table's until the next id()). */
  get bytes(): Uint8Array {
    return this.buf.subarray(0, this.count * KEY_BYTES);
  }
}
