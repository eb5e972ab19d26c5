import { namehash as viemNamehash } from 'viem/ens';
import { describe, expect, it } from 'vitest';
import { namehash } from '../../../../../engine/data-api/chain/ens.js';

describe('ENS namehash', () => {
  it("hashes a normalized name as EIP-137 and viem's namehash do: the root, a TLD, names, a reverse node, a non-ASCII label", () => {
    // EIP-137's published values.
    expect(namehash('')).toBe(`0x${'00'.repeat(32)}`);
    expect(namehash('eth')).toBe('0x93cdeb708b7545dc668eb9280176169d1c33cfd8ed6f04690a0bcc88a93fc4ae');
    expect(namehash('foo.eth')).toBe('0xde9b09fd7c5f901e23a3f19fecc54828e9c848539801e86591bd9801b019f84f');
    for (const name of ['alice.eth', 'a.b.c.eth', 'f39fd6e51aad88f6f4ce6ab8827279cfffb92266.addr.reverse', 'ünicode.eth', '💩.eth'])
      expect(namehash(name), name).toBe(viemNamehash(name));
  });
});
