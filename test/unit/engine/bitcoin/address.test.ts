import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AddressError, decodeAddress } from '../../../../engine/bitcoin/address.js';
import { base58checkDecode } from '../../../../engine/bitcoin/address-encoding.js';
import { base58check, bech32m } from '../../../../engine/bitcoin/encoding.js';

interface Standard {
  network: string;
  base58check?: string;
  bech32?: string;
  script: string;
}
const fixture = JSON.parse(readFileSync(new URL('../../../fixtures/bitcoin/bitcoinjs-lib/address.json', import.meta.url), 'utf8')) as {
  standard: Standard[];
  invalid: {
    bech32: Array<{ address: string }>;
    fromBase58Check: Array<{ address: string }>;
    toOutputScript: Array<{ address: string; network?: unknown }>;
  };
};

/** A script in bitcoinjs-lib's ASM (opcodes by name, pushes as hex), enough for output scripts. */
const NAMES: Record<number, string> = {
  0x00: 'OP_0',
  0x76: 'OP_DUP',
  0xa9: 'OP_HASH160',
  0x88: 'OP_EQUALVERIFY',
  0xac: 'OP_CHECKSIG',
  0x87: 'OP_EQUAL',
};
function asm(script: Uint8Array): string {
  const out: string[] = [];
  for (let i = 0; i < script.length; ) {
    const op = script[i++]!;
    if (op >= 1 && op <= 75) {
      out.push(Buffer.from(script.subarray(i, i + op)).toString('hex'));
      i += op;
    } else out.push(NAMES[op] ?? (op >= 0x51 && op <= 0x60 ? `OP_${op - 0x50}` : `0x${op.toString(16)}`));
  }
  return out.join(' ');
}

describe('Bitcoin mainnet addresses', () => {
  it('read every mainnet address of bitcoinjs-lib’s fixtures into the script bitcoinjs-lib gives', () => {
    const mainnet = fixture.standard.filter((s) => s.network === 'bitcoin');
    const types: string[] = [];
    for (const s of mainnet) {
      const text = (s.base58check ?? s.bech32)!;
      // Witness versions 2–16 have no output type yet: refused, as a stream could never see one paid.
      if (/^bc1/i.test(text) && !/^bc1[qp]/i.test(text)) {
        expect(() => decodeAddress(text)).toThrow(/no defined output type/);
        continue;
      }
      const d = decodeAddress(text);
      expect(asm(d.script), text).toBe(s.script);
      types.push(d.type);
    }
    expect(types.sort()).toEqual(['p2pkh', 'p2sh', 'p2tr', 'p2tr', 'p2wpkh']);
    expect(decodeAddress('BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4').address).toBe('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4');
  });

  it('read a P2WSH address (32-byte version 0 program)', () => {
    // BIP-173's mainnet P2WSH example.
    const d = decodeAddress('bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3');
    expect(d.type).toBe('p2wsh');
    expect(asm(d.script)).toBe('OP_0 1863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262');
  });

  it('refuse testnet, regtest and other networks’ addresses, naming the address', () => {
    for (const s of fixture.standard.filter((x) => x.network === 'testnet' || x.network === 'regtest')) {
      const text = (s.base58check ?? s.bech32)!;
      expect(() => decodeAddress(text)).toThrow(new RegExp(`${text}.*testnet`));
    }
    for (const s of fixture.standard.filter((x) => x.network === 'litecoin'))
      expect(() => decodeAddress(s.base58check!)).toThrow(AddressError);
  });

  it('refuse every invalid address of the fixtures: checksums, padding, case, lengths, versions, off-curve Taproot keys', () => {
    const invalid = [
      ...fixture.invalid.bech32,
      ...fixture.invalid.fromBase58Check,
      ...fixture.invalid.toOutputScript.filter((x) => x.network === undefined),
    ];
    expect(invalid.length).toBeGreaterThan(25);
    for (const { address } of invalid) expect(() => decodeAddress(address), address).toThrow(AddressError);
  });

  it("skip the Taproot key's curve check only when asked (addresses checked when they were taken), nothing else", () => {
    // A bech32m version 1 program of 32 bytes whose x (all 0xff bytes: above p) is no point of the curve.
    const offCurve = bech32m.encode('bc', [1, ...bech32m.toWords(new Uint8Array(32).fill(0xff))]);
    expect(() => decodeAddress(offCurve)).toThrow(/not a point of secp256k1/);
    expect(decodeAddress(offCurve, { checkTaprootKey: false })).toMatchObject({ type: 'p2tr', address: offCurve });
    expect(() => decodeAddress(`${offCurve.slice(0, -1)}q`, { checkTaprootKey: false })).toThrow(/checksum/);
  });

  it('read base58check as @scure/base does, for payloads of every length up to 80 bytes (an extended key is 78) and leading zeros', () => {
    for (let n = 1; n <= 80; n++) {
      for (const lead of [0, 1, 3]) {
        const payload = Uint8Array.from({ length: n }, (_, i) => (i < lead ? 0 : (i * 97 + n * 31) & 255));
        const text = base58check.encode(payload);
        expect(base58checkDecode(text), text).toEqual(payload);
        // One character changed: a wrong checksum (or not base58 at all), never another payload.
        const other = text.slice(0, -1) + (text.endsWith('2') ? '3' : '2');
        expect(base58checkDecode(other)).toBeUndefined();
      }
    }
    expect(base58checkDecode('1A1zP1eP5QGefi2DMPTfTL5SLmv7Div0Na')).toBeUndefined(); // 0 is not base58
  });
});
