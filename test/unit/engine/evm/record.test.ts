import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { readProbe, buildProbe } from '../../../../engine/evm/probe.js';
import { decodeRecord, encodeRecord, normalizeBlock, rpcBlock, rpcReceipts } from '../../../../engine/evm/record.js';
import { TRANSFER, TRANSFER_BATCH, TRANSFER_SINGLE, writeBlock } from '../../../../engine/evm/store.js';
import { blockKey, pruneBlock } from '../../../../engine/ingest/chain-store.js';
import { openStore } from '../../../../storage/env.js';
import { decodeRpc, decodeRpcAt, encodeRpc, skipValue, wireFields, wireItems } from '../../../../engine/evm/codec.js';
import { RecordView } from '../../../../engine/evm/record-view.js';
import { FIXTURE_BLOCKS, bundle } from '../../../kit/fixtures.js';

// The fixture README's table: transactions, logs, and ERC-20 / ERC-721 / ERC-1155 Transfer logs per block.
const EXPECTED: Record<number, [txs: number, logs: number, erc20: number, erc721: number, erc1155: number]> = {
  4370006: [64, 113, 55, 0, 0],
  4404763: [95, 70, 22, 0, 0],
  7280016: [91, 77, 40, 0, 0],
  11098450: [185, 263, 131, 2, 1],
  13998626: [7, 15, 6, 0, 0],
  15753009: [210, 400, 138, 47, 0],
  16899757: [147, 520, 204, 42, 3],
  17053184: [125, 216, 74, 13, 1],
};

describe.each(FIXTURE_BLOCKS)('mainnet block %i', (n) => {
  const b = bundle(n);
  const record = normalizeBlock(b.block, b.receipts, b.traces);

  it('keeps every transaction and log, as the fixture README counts them', () => {
    const logs = record.txs.flatMap((t) => t.logs);
    const erc20 = logs.filter((l) => l.topics[0] === TRANSFER && l.topics.length === 3).length;
    const erc721 = logs.filter((l) => l.topics[0] === TRANSFER && l.topics.length === 4).length;
    const erc1155 = logs.filter((l) => l.topics[0] === TRANSFER_SINGLE || l.topics[0] === TRANSFER_BATCH).length;
    expect([record.txs.length, logs.length, erc20, erc721, erc1155]).toEqual(EXPECTED[n]);
  });

  it("rebuilds the node's block and receipts exactly, logsBloom included", () => {
    expect(rpcBlock(record)).toEqual(b.block);
    expect(rpcReceipts(record)).toEqual(b.receipts);
  });

  it('round-trips the stored record byte for byte', () => {
    const bytes = encodeRecord(record);
    const back = decodeRecord(bytes);
    expect(back).toEqual(record);
    expect(Buffer.from(encodeRecord(back)).equals(Buffer.from(bytes))).toBe(true);
  });

  it('flattens every internal call of the call tracer with its trace address', () => {
    const count = (f: Record<string, unknown>): number =>
      ((f['calls'] ?? []) as Array<Record<string, unknown>>).reduce((a, c) => a + 1 + count(c), 0);
    expect(record.internal).toHaveLength(b.traces.reduce((a, t) => a + count(t), 0));
    for (const c of record.internal!) expect(c.traceAddress.length).toBeGreaterThan(0);
  });

  it('reads each item in place as the whole decode gives it, decoding only what is asked', () => {
    const bytes = encodeRecord(record);
    const flat = record.txs.flatMap((t, txIndex) => t.logs.map((log) => ({ log, txIndex })));
    const view = RecordView.of(bytes);
    expect([view.txCount, view.logCount, view.traced]).toEqual([record.txs.length, flat.length, true]);
    // One log, its transaction's hash, the header: three items decoded, whatever the block's size.
    const last = flat.length - 1;
    expect(view.log(last)).toEqual(flat[last]!.log);
    expect(view.tx(view.logTx(last))['hash']).toBe(record.txs[flat[last]!.txIndex]!.tx['hash']);
    expect(view.header).toEqual(record.header);
    expect(view.log(last)).toBe(view.log(last));
    expect(view.decoded).toBe(3);
    // Every item, as the whole decode has it.
    record.txs.forEach((t, i) => {
      expect([view.tx(i), view.receipt(i)]).toEqual([t.tx, t.receipt]);
      const [first, end] = view.logsOf(i);
      expect(Array.from({ length: end - first }, (_, k) => view.log(first + k))).toEqual(t.logs);
    });
    flat.forEach((f, o) => expect(view.logTx(o)).toBe(f.txIndex));
    record.internal!.forEach((c, i) => expect(view.internal(i)).toEqual(c));
    expect(() => view.log(flat.length)).toThrow(RangeError);
    expect(() => view.internal(record.internal!.length)).toThrow(RangeError);
    // The view keeps its own copy: the store may reuse the buffer it read into.
    bytes.fill(0);
    expect(view.receipt(0)).toEqual(record.txs[0]!.receipt);
  });

  it('reads one field of the header or of a transaction alone, without decoding the rest', () => {
    const view = RecordView.of(encodeRecord(record));
    const last = record.txs.length - 1;
    expect([view.headerField('hash'), view.headerField('number'), view.headerField('nope')]).toEqual([
      record.header['hash'],
      record.header['number'],
      undefined,
    ]);
    expect([view.txField(last, 'hash'), view.txField(last, 'input')]).toEqual([
      record.txs[last]!.tx['hash'],
      record.txs[last]!.tx['input'],
    ]);
    expect(view.txField(last, 'hash')).toBe(view.txField(last, 'hash'));
    // Four fields decoded, each once: not the header, not the transaction.
    expect(view.decoded).toBe(4);
    // Once the whole item is decoded, its fields come from it.
    expect(view.tx(0)['hash']).toBe(view.txField(0, 'hash'));
    expect(view.decoded).toBe(5);
    expect(() => view.txField(record.txs.length, 'hash')).toThrow(RangeError);
  });

  it('puts every address and topic0 in the probe column, with the item it came from', () => {
    const p = readProbe(buildProbe(record));
    const hex = (at: number, len: number) => `0x${Buffer.from(p.bytes.subarray(at, at + len)).toString('hex')}`;
    const addresses = new Set(Array.from({ length: p.addressCount }, (_, i) => hex(p.addressesAt + i * 20, 20)));
    const topics = Array.from({ length: p.topicCount }, (_, i) => hex(p.topicsAt + i * 32, 32));
    // A plain scan of the node's JSON finds the same things.
    for (const tx of b.block['transactions'] as Array<Record<string, string | null>>) {
      expect(addresses.has(tx['from']!)).toBe(true);
      if (tx['to'] !== null) expect(addresses.has(tx['to']!)).toBe(true);
    }
    const logs = b.receipts.flatMap((r) => r['logs'] as Array<{ address: string; topics: string[] }>);
    for (const l of logs) expect(addresses.has(l.address)).toBe(true);
    expect(topics).toEqual(logs.filter((l) => l.topics.length > 0).map((l) => l.topics[0]));
    for (const l of logs.filter((x) => x.topics[0] === TRANSFER))
      for (const t of l.topics.slice(1, 3)) expect(addresses.has(`0x${t.slice(26)}`)).toBe(true);
  });
});

describe('the record codec', () => {
  const roundTrip = (v: unknown): unknown => decodeRpc(encodeRpc(v));
  it.each([
    ['lower-case hex of every length', ['0x', '0x00', '0xff', `0x${'ab'.repeat(300)}`, `0x${'cd'.repeat(70_000)}`]],
    [
      'quantities',
      ['0x0', '0x1', '0xf', '0x10', '0x1fffffffffffff', '0x20000000000000', '0xfffffffffffffffffffffffff', `0x1${'0'.repeat(40)}`],
    ],
    [
      'what only looks like hex',
      ['0xABCD', '0xAbc', '0x0abc', '0xzz', '0x1g', '0x1fffffffffffffg', `0x1${'0'.repeat(40)}g`, '0X12', '0x 1', '0x12 ', ''],
    ],
    ['other strings', ['CALL', 'execution reverted: ünïcödé ✓', 'x'.repeat(40), 'y'.repeat(300), 'z'.repeat(70_000)]],
    ['numbers, booleans and null', [0, 1, -1, 1.5, 2 ** 60, true, false, null]],
    ['arrays that start like the wire markers', [['\u0000o', 1], ['\u0000a'], [], [[]]]],
    ['objects with known and unknown keys', [{ hash: '0x01', somethingNew: '0x02', nested: { logs: [], ü: 'v' } }, {}]],
  ])('keeps %s exactly', (_, values) => {
    expect(roundTrip(values)).toEqual(values);
  });
  it('keeps a field name that falls right at the end of the encoder buffer', async () => {
    // A fresh module, so its 1 MiB buffer has not grown yet: the value ends exactly at its end
    // (5 bytes of array header, object marker and key, 5 of bin32 header, then the bytes).
    vi.resetModules();
    const fresh = await import('../../../../engine/evm/codec.js');
    const v = { input: `0x${'ab'.repeat((1 << 20) - 10)}`, to: '0x01' };
    expect(fresh.decodeRpc(fresh.encodeRpc(v))).toEqual(v);
  });
  it('reads stored objects and arrays in place', () => {
    const value = { hash: '0x01', somethingNew: ['\u0000o', 1, { logs: [] }], ü: null, big: `0x${'ab'.repeat(70_000)}` };
    const bytes = encodeRpc(value);
    expect(skipValue(bytes, 0)).toBe(bytes.length);
    const { fields, end } = wireFields(bytes, 0);
    expect(end).toBe(bytes.length);
    expect([...fields.keys()]).toEqual(Object.keys(value));
    for (const [k, range] of fields) expect(decodeRpcAt(bytes, range)).toEqual(value[k as keyof typeof value]);
    // An array that starts with a marker string is read past its escape.
    const items = wireItems(bytes, fields.get('somethingNew')!.start)!.items;
    expect(items.map((r) => decodeRpcAt(bytes, r))).toEqual(value.somethingNew);
    expect(wireItems(bytes, fields.get('ü')!.start)).toBeNull();
    expect(() => wireFields(bytes, fields.get('hash')!.start)).toThrow(RangeError);
    expect(() => skipValue(bytes.subarray(0, bytes.length - 1), 0)).toThrow(RangeError);
    expect(() => skipValue(Uint8Array.of(0xc1), 0)).toThrow(RangeError);
  });
  it('reads a record without a call tracer in place', () => {
    const b = bundle(FIXTURE_BLOCKS[0]!);
    const view = RecordView.of(encodeRecord(normalizeBlock(b.block, b.receipts, null)));
    expect(view.traced).toBe(false);
    expect(() => view.internal(0)).toThrow(RangeError);
  });
  it('refuses what JSON cannot carry', () => {
    expect(() => encodeRpc({ f: () => 1 })).toThrow(TypeError);
  });
});

describe('pruning a block out of the retention window', () => {
  it('drops its record and probe column and keeps its transfer indexes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chainpost-prune-'));
    const store = openStore(dir);
    try {
      const n = 16899757;
      const b = bundle(n);
      store.transact(() => writeBlock(store, '0x1', normalizeBlock(b.block, b.receipts, b.traces)));
      const transfers = store.count('transfers', { start: '', end: '~' });
      expect(transfers).toBeGreaterThan(0);
      store.transact(() => pruneBlock(store, '0x1', n));
      expect([store.has('blocks', blockKey('0x1', n)), store.has('probes', blockKey('0x1', n))]).toEqual([false, false]);
      expect(store.count('transfers', { start: '', end: '~' })).toBe(transfers);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
