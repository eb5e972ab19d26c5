import { ripemd160 } from '@noble/hashes/legacy.js';
import { sha256 } from '@noble/hashes/sha2.js';

/** RIPEMD-160 of SHA-256: the 20-byte hash of P2PKH, P2SH and P2WPKH. */
export const hash160 = (bytes: Uint8Array): Uint8Array => ripemd160(sha256(bytes));

/** SHA-256 twice: block and transaction ids, base58check checksums. */
export const sha256d = (bytes: Uint8Array): Uint8Array => sha256(sha256(bytes));
