import * as ecc from '@bitcoinerlab/secp256k1';
import { address as bjsAddress, Block, initEccLib, networks } from 'bitcoinjs-lib';
import { describe, expect, it } from 'vitest';
import { decodeAddress } from '../../../../engine/bitcoin/address.js';
import { classifyScript, scriptType, type ScriptType } from '../../../../engine/bitcoin/script.js';
import { RAW_BLOCKS } from '../../../bitcoin-fixtures.js';
import { bigBlock } from '../../../kit/bitcoin-core/fixtures.js';

initEccLib(ecc);

const script = (hex: string): Uint8Array => Buffer.from(hex, 'hex');
/** bitcoinjs-lib's address of an output script, undefined where it has none. */
function bitcoinjsAddress(s: Uint8Array): string | undefined {
  try {
    return bjsAddress.fromOutputScript(s, networks.bitcoin);
  } catch {
    return undefined;
  }
}

describe('output scripts', () => {
  it('give every output of blocks 277647 and 574200 the address bitcoinjs-lib gives, and the README’s type counts', () => {
    const types = new Map<ScriptType, number>();
    for (const b of RAW_BLOCKS) {
      for (const tx of Block.fromBuffer(bigBlock(b.height)).transactions!) {
        for (const o of tx.outs) {
          const info = classifyScript(o.script);
          expect(info.address, Buffer.from(o.script).toString('hex')).toBe(bitcoinjsAddress(o.script));
          // An address read back pays the same script.
          if (info.address !== undefined) expect(decodeAddress(info.address).script).toEqual(new Uint8Array(o.script));
          if (b.height === 574200) types.set(info.type, (types.get(info.type) ?? 0) + 1);
        }
      }
    }
    // The shared README: 4,035 P2PKH, 2,601 P2SH, 442 P2WPKH, 58 P2WSH, 976 OP_RETURN, 38 other.
    expect(Object.fromEntries(types)).toMatchObject({
      pubkeyhash: 4035,
      scripthash: 2601,
      witness_v0_keyhash: 442,
      witness_v0_scripthash: 58,
      nulldata: 976,
    });
    expect(
      [...types]
        .filter(([t]) => !['pubkeyhash', 'scripthash', 'witness_v0_keyhash', 'witness_v0_scripthash', 'nulldata'].includes(t))
        .reduce((n, [, c]) => n + c, 0),
    ).toBe(38);
  });

  it('name the types as Core does, with mainnet addresses for the witness versions', () => {
    const taproot = 'bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297';
    expect(classifyScript(decodeAddress(taproot).script)).toEqual({ type: 'witness_v1_taproot', address: taproot });
    expect(bitcoinjsAddress(decodeAddress(taproot).script)).toBe(taproot);
    // A future witness version (BIP-350's test vector), and a version 1 program of another length: witness_unknown, bech32m.
    expect(classifyScript(script('5210751e76e8199196d454941c45d1b3a323'))).toEqual({
      type: 'witness_unknown',
      address: 'bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs',
    });
    expect(classifyScript(script('5102abcd')).type).toBe('witness_unknown');
    expect(classifyScript(script('51024e73'))).toEqual({ type: 'anchor', address: 'bc1pfeessrawgf' });
    // Version 0 programs of other lengths are no witness output Core knows.
    expect(classifyScript(script('0003abcdef'))).toEqual({ type: 'nonstandard', address: undefined });
    const key = `02${'11'.repeat(32)}`;
    expect(scriptType(script(`21${key}ac`))).toBe('pubkey');
    expect(scriptType(script(`41${'04'}${'22'.repeat(64)}ac`))).toBe('pubkey');
    expect(scriptType(script(`21${'05'}${'11'.repeat(32)}ac`))).toBe('nonstandard');
    expect(scriptType(script(`5121${key}21${key}52ae`))).toBe('multisig');
    expect(scriptType(script(`5221${key}51ae`))).toBe('nonstandard');
    expect(scriptType(script('6a'))).toBe('nulldata');
    expect(scriptType(script('6a04deadbeef4c0100'))).toBe('nulldata');
    // OP_RETURN followed by a non-push, or a truncated push, is not nulldata.
    expect(scriptType(script('6a76'))).toBe('nonstandard');
    expect(scriptType(script('6a05dead'))).toBe('nonstandard');
    expect(scriptType(new Uint8Array(0))).toBe('nonstandard');
    for (const t of ['multisig', 'pubkey', 'nulldata', 'nonstandard'] as const)
      expect(
        classifyScript(script(t === 'pubkey' ? `21${key}ac` : t === 'multisig' ? `5121${key}51ae` : t === 'nulldata' ? '6a' : '00'))
          .address,
      ).toBeUndefined();
  });
});
