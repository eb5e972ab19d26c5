import { describe, expect, it } from 'vitest';
import type { BtcBlock } from '../../../../engine/bitcoin/block.js';
import { blockFromRaw, parseBlock } from '../../../kit/bitcoin-core/raw.js';
import { BtcRecordView, RecordFormatError, encodeRecord } from '../../../../engine/bitcoin/record.js';
import { blockFromCore, RAW_BLOCKS, coreBlock200000v3, prevouts200000 } from '../../../bitcoin-fixtures.js';
import { bigBlock } from '../../../kit/bitcoin-core/fixtures.js';

/** Block 200000 serialized again from Core's JSON: its header fields, then each transaction's hex. */
function rawBlock200000(): Buffer {
  const core = coreBlock200000v3();
  const head = Buffer.alloc(80);
  head.writeInt32LE(core.version, 0);
  Buffer.from(core.previousblockhash!, 'hex').reverse().copy(head, 4);
  Buffer.from(core.merkleroot, 'hex').reverse().copy(head, 36);
  head.writeUInt32LE(core.time, 68);
  head.writeUInt32LE(Number.parseInt(core.bits, 16), 72);
  head.writeUInt32LE(core.nonce, 76);
  const count = Buffer.of(0xfd, core.tx.length & 0xff, core.tx.length >> 8);
  return Buffer.concat([head, count, ...core.tx.map((t) => Buffer.from(t.hex!, 'hex'))]);
}

/** Every transaction read back from the record of `block`. */
function roundTrip(block: BtcBlock): { view: BtcRecordView; txs: BtcBlock['txs'] } {
  const view = BtcRecordView.of(encodeRecord(block));
  return { view, txs: Array.from({ length: view.txCount }, (_, i) => view.tx(i)) };
}

describe('Bitcoin block records', () => {
  it('are the same bytes for block 200000 from Core’s JSON (verbosity 3) and from the serialized block with its prevouts', () => {
    const fromJson = blockFromCore(coreBlock200000v3());
    const known = prevouts200000();
    const raw = parseBlock(rawBlock200000());
    expect(raw.header.hash).toBe(fromJson.header.hash);
    const fromRaw = blockFromRaw(raw, 200000, (txid, vout) => known.get(`${txid}:${vout}`));
    expect(fromRaw.header).toEqual(fromJson.header);
    expect(Buffer.from(encodeRecord(fromRaw)).equals(Buffer.from(encodeRecord(fromJson)))).toBe(true);
    const { view, txs } = roundTrip(fromJson);
    expect(view.header).toEqual(fromJson.header);
    expect(view.difficulty).toBe(2864140.507810974);
    expect(txs).toEqual(fromJson.txs);
    expect(txs.every((t) => t.isCoinbase || t.vin.every((i) => i.prevout !== undefined))).toBe(true);
  });

  it('give back every transaction of blocks 277647 and 574200, witnesses and all, prevouts unknown', () => {
    for (const b of RAW_BLOCKS) {
      const block = blockFromRaw(parseBlock(bigBlock(b.height)), b.height);
      const { view, txs } = roundTrip(block);
      expect(view.header).toEqual(block.header);
      expect(txs).toEqual(block.txs);
      // Only inputs spending an earlier transaction of the block have a prevout: the block holds it.
      const own = new Set(block.txs.map((t) => t.txid));
      // One comparison of the inputs named `spender input`, not an expect per input (thousands of them).
      const named = (keep: (t: BtcBlock['txs'][number], i: BtcBlock['txs'][number]['vin'][number]) => boolean) =>
        txs.flatMap((t) => t.vin.filter((i) => keep(t, i)).map((i) => `${t.txid} ${i.txid}:${i.vout}`));
      expect(named((_, i) => i.prevout !== undefined)).toEqual(named((t, i) => !t.isCoinbase && own.has(i.txid)));
    }
  });

  it('decode one transaction by index without the others, and txids without decoding', () => {
    const block = blockFromRaw(parseBlock(bigBlock(574200)), 574200);
    const bytes = encodeRecord(block);
    const view = BtcRecordView.of(bytes);
    expect(view.txCount).toBe(3315);
    expect(view.txid(3314)).toBe(block.txs[3314]!.txid);
    expect(view.decoded).toBe(0);
    expect(view.tx(2000)).toEqual(block.txs[2000]);
    expect(view.decoded).toBe(1);
    // The view copied the bytes: the store may reuse its buffer.
    bytes.fill(0);
    expect(view.tx(1).txid).toBe(block.txs[1]!.txid);
    expect(() => view.tx(3315)).toThrow(RangeError);
    expect(() => view.tx(-1)).toThrow(RangeError);
  });

  it('refuse another version or a cut record', () => {
    const bytes = encodeRecord(blockFromRaw(parseBlock(bigBlock(277647)), 277647));
    const other = Uint8Array.prototype.slice.call(bytes);
    other[0] = 2;
    expect(() => BtcRecordView.of(other)).toThrow(RecordFormatError);
    expect(() => BtcRecordView.of(bytes.subarray(0, 100))).toThrow(RecordFormatError);
    expect(() => BtcRecordView.of(bytes.subarray(0, bytes.length - 1))).toThrow(RecordFormatError);
  });
});
