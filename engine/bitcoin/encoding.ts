import { sha256 } from '@noble/hashes/sha2.js';
import { base58check as base58checkWith, bech32 as bech32Codec, bech32m as bech32mCodec } from '@scure/base';

/** Base58check (version byte + payload + 4-byte double-SHA-256 checksum): legacy addresses and extended keys. */
export const base58check = base58checkWith(sha256);
/** BIP-173 (segwit v0) and BIP-350 (v1+, Taproot) address codecs. */
export const bech32 = bech32Codec;
export const bech32m = bech32mCodec;
