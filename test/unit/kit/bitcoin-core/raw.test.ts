import { describe, expect, it } from 'vitest';
import { sha256d } from '../../../../engine/bitcoin/hash.js';
import { RawFormatError, displayHash, merkleRoot, parseBlock, parseTransaction } from '../../../kit/bitcoin-core/raw.js';
import { RAW_BLOCKS, btcFixture } from '../../../bitcoin-fixtures.js';
import { bigBlock } from '../../../kit/bitcoin-core/fixtures.js';

describe('raw Bitcoin blocks', () => {
  it('read into header and transactions whose txids give the header’s merkle root and hash', () => {
    for (const b of RAW_BLOCKS) {
      const block = parseBlock(bigBlock(b.height));
      expect(block.header.hash).toBe(b.hash);
      expect(block.size).toBe(b.bytes);
      expect([block.tx.length, block.tx.reduce((n, t) => n + t.vin.length, 0), block.tx.reduce((n, t) => n + t.vout.length, 0)]).toEqual([
        b.txs,
        b.inputs,
        b.outputs,
      ]);
      expect(merkleRoot(block.tx.map((t) => t.txid))).toBe(block.header.merkleroot);
      expect(block.tx.map((t) => t.isCoinbase)).toEqual(block.tx.map((_, i) => i === 0));
    }
  });

  it('give segwit transactions the wtxids the coinbase’s witness commitment commits to (BIP-141)', () => {
    const block = parseBlock(bigBlock(574200));
    const segwit = block.tx.filter((t) => t.hash !== t.txid);
    expect(segwit.length).toBeGreaterThan(100);
    for (const t of segwit) expect(t.weight).toBeLessThan(4 * t.size);
    // The witness root takes the coinbase's wtxid as zero; the commitment is an OP_RETURN aa21a9ed output.
    const root = merkleRoot(['0'.repeat(64), ...block.tx.slice(1).map((t) => t.hash)]);
    const reserved = block.tx[0]!.vin[0]!.witness[0]!;
    const commitment = sha256d(Buffer.concat([Buffer.from(root, 'hex').reverse(), reserved]));
    const out = block.tx[0]!.vout.map((o) => Buffer.from(o.script).toString('hex'))
      .filter((s) => s.startsWith('6a24aa21a9ed'))
      .at(-1)!;
    expect(out.slice(12)).toBe(Buffer.from(commitment).toString('hex'));
    expect(block.weight).toBeLessThanOrEqual(4_000_000);
    expect(block.weight).toBe(block.strippedsize * 3 + block.size);
  });

  it('read each transaction of block 200000 as Bitcoin Core’s getblock (verbosity 2) shows it', () => {
    const core = JSON.parse(btcFixture('rpc/getblock-v2-200000.json').toString()) as {
      merkleroot: string;
      size: number;
      weight: number;
      tx: Array<{
        txid: string;
        hash: string;
        version: number;
        size: number;
        vsize: number;
        weight: number;
        locktime: number;
        hex: string;
        vin: Array<{ txid?: string; vout?: number; coinbase?: string; scriptSig?: { hex: string }; sequence: number }>;
        vout: Array<{ value: number; n: number; scriptPubKey: { hex: string } }>;
      }>;
    };
    for (const c of core.tx) {
      const t = parseTransaction(Buffer.from(c.hex, 'hex'));
      expect({
        txid: t.txid,
        hash: t.hash,
        version: t.version,
        size: t.size,
        vsize: t.vsize,
        weight: t.weight,
        locktime: t.locktime,
      }).toEqual({ txid: c.txid, hash: c.hash, version: c.version, size: c.size, vsize: c.vsize, weight: c.weight, locktime: c.locktime });
      expect(
        t.vin.map((i) =>
          t.isCoinbase
            ? { coinbase: Buffer.from(i.scriptSig).toString('hex'), sequence: i.sequence }
            : { txid: i.txid, vout: i.vout, scriptSig: { hex: Buffer.from(i.scriptSig).toString('hex') }, sequence: i.sequence },
        ),
      ).toEqual(
        c.vin.map((i) =>
          i.coinbase !== undefined
            ? { coinbase: i.coinbase, sequence: i.sequence }
            : { txid: i.txid, vout: i.vout, scriptSig: { hex: i.scriptSig!.hex }, sequence: i.sequence },
        ),
      );
      expect(t.vout.map((o, n) => ({ value: o.value, n, hex: Buffer.from(o.script).toString('hex') }))).toEqual(
        c.vout.map((o) => ({ value: Math.round(o.value * 1e8), n: o.n, hex: o.scriptPubKey.hex })),
      );
    }
    expect(merkleRoot(core.tx.map((t) => t.txid))).toBe(core.merkleroot);
  });

  it('refuse truncated or trailing bytes, and counts larger than what is left', () => {
    const tx = Buffer.from(JSON.parse(btcFixture('rpc/getblock-v2-200000.json').toString()).tx[1].hex, 'hex');
    expect(() => parseTransaction(tx.subarray(0, tx.length - 1))).toThrow(RawFormatError);
    expect(() => parseTransaction(Buffer.concat([tx, Buffer.of(0)]))).toThrow(/after the transaction/);
    // An input count of 2^32 - 1 in a short buffer.
    expect(() => parseTransaction(Buffer.from('01000000feffffffff00', 'hex'))).toThrow(/exceeds what is left/);
    expect(displayHash(Buffer.from('0102', 'hex'))).toBe('0201');
  });
});
