import { keccak_256 } from '@noble/hashes/sha3.js';

/** The yellow-paper logs bloom: each address and topic sets 3 of 2048 bits chosen by its keccak256 (0x hex in, 0x hex out). */
export function logsBloom(logs: readonly { address: string; topics: readonly string[] }[]): string {
  const bloom = new Uint8Array(256);
  const add = (hex: string): void => {
    const h = keccak_256(Buffer.from(hex.slice(2), 'hex'));
    for (let i = 0; i < 6; i += 2) {
      const bit = ((h[i]! << 8) | h[i + 1]!) & 2047;
      bloom[255 - (bit >> 3)]! |= 1 << (bit & 7);
    }
  };
  for (const l of logs) {
    add(l.address);
    for (const t of l.topics) add(t);
  }
  return `0x${Buffer.from(bloom).toString('hex')}`;
}
