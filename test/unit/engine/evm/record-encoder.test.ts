import { describe, expect, it } from 'vitest';
import { FIXTURE_BLOCKS, bundle } from '../../../kit/fixtures.js';
import { checkedTxs, encodeRecord, flattenCalls, normalizeBlock, type Json } from '../../../../engine/evm/record.js';
import { encodeNodeRecord } from '../../../../engine/evm/record-encoder.js';

/** The schema encoder against the generic one: the same bytes, for every block. */
const direct = (block: Json, receipts: Json[], traces: Json[] | null): Uint8Array =>
  encodeNodeRecord(block, checkedTxs(block, receipts, traces), receipts, traces === null ? null : flattenCalls(traces));
const generic = (block: Json, receipts: Json[], traces: Json[] | null): Uint8Array => encodeRecord(normalizeBlock(block, receipts, traces));
const same = (block: Json, receipts: Json[], traces: Json[] | null): void => {
  expect(Buffer.from(direct(block, receipts, traces)).equals(Buffer.from(generic(block, receipts, traces)))).toBe(true);
};

describe('the record encoder made for the block schema', () => {
  it.each(FIXTURE_BLOCKS)('writes mainnet block %i byte for byte as the generic encoder, with and without traces', (n) => {
    const b = bundle(n);
    same(b.block, b.receipts, b.traces);
    same(b.block, b.receipts, null);
  });

  const tx = (hash: string, extra: Json = {}): Json => ({
    blockHash: '0xaa',
    blockNumber: '0x1',
    hash,
    from: '0x01',
    to: null,
    transactionIndex: '0x0',
    value: '0x0',
    ...extra,
  });
  const receipt = (hash: string, extra: Json = {}): Json => ({
    blockHash: '0xaa',
    transactionHash: hash,
    transactionIndex: '0x0',
    logsBloom: '0x00',
    from: '0x01',
    to: null,
    status: '0x1',
    ...extra,
  });
  it.each<[string, Json, Json[], Json[] | null]>([
    ['an empty block', { number: '0x1', hash: '0xaa', transactions: [] }, [], []],
    ['a block without transactions field', { number: '0x1', hash: '0xaa' }, [], null],
    [
      'odd, big odd, upper-case and leading-zero quantities',
      {
        number: '0x1',
        hash: '0xAA',
        difficulty: '0xfffffffffffffffffffffffff',
        baseFeePerGas: '0x0abc',
        gasUsed: '0xABC',
        transactions: [tx('0x11', { value: `0x1${'0'.repeat(40)}`, gas: '0x5208', nonce: '0X1' })],
      },
      [
        receipt('0x11', {
          cumulativeGasUsed: '0x1fffffffffffff',
          effectiveGasPrice: '0x20000000000000',
          logs: [{ address: '0x02', topics: ['0x03'], data: '0x', logIndex: '0x0', removed: false, blockHash: '0xaa' }],
        }),
      ],
      [
        {
          type: 'CALL',
          from: '0x01',
          to: '0x02',
          calls: [{ type: 'STATICCALL', from: '0x02', to: '0x03', gas: '0x1', gasUsed: '0x1', value: '0x0' }],
        },
      ],
    ],
    [
      'missing, null, unknown and numeric fields',
      {
        number: 1,
        hash: '0xaa',
        somethingNew: { nested: ['\u0000o', 1.5] },
        transactions: [tx('0x11', { to: null, input: undefined, newField: 'text ü' })],
      },
      [receipt('0x11', { logs: null, contractAddress: null, weird: [true, false, null] })],
      [{ result: { type: 'CREATE', from: '0x01', calls: [{ type: 'CREATE2', from: '0x02', error: 'out of gas' }] } }],
    ],
    ['a receipt without logs', { number: '0x2', hash: '0xbb', transactions: [tx('0x22')] }, [receipt('0x22')], null],
  ])('writes %s as the generic encoder', (_, block, receipts, traces) => same(block, receipts, traces));
});
