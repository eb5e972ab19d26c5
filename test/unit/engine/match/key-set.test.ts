import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildProbe, readProbe } from '../../../../engine/evm/probe.js';
import { encodeRecord, normalizeBlock } from '../../../../engine/evm/record.js';
import { RecordView } from '../../../../engine/evm/record-view.js';
import { TRANSFER } from '../../../../engine/evm/store.js';
import { EvmFilterSet, compileFilterSet, type WatchedStream } from '../../../../engine/evm/filter.js';
import { addRef } from '../../../../engine/match/filter-set.js';
import { KeySet, buildKeySet, writeKeyLanes, type KeySetInput } from '../../../../engine/match/key-set.js';
import type { TokenMetadata } from '../../../../engine/evm/token-metadata.js';
import { webhookBuilder } from '../../../../engine/evm/webhook-builder.js';
import { createStream } from '../../../../engine/streams/schemas.js';
import { FIXTURE_BLOCKS, bundle } from '../../../kit/fixtures.js';

const view = (b: Uint8Array): DataView => new DataView(b.buffer, b.byteOffset, b.byteLength);
const keySet = (width: 20 | 32, entries: KeySetInput[]): KeySet => new KeySet(buildKeySet(width, entries));
const filterSet = (streams: WatchedStream[]): EvmFilterSet => new EvmFilterSet(compileFilterSet(1, streams));
const hex = (h: string): Uint8Array => Buffer.from(h.slice(2), 'hex');

describe('KeySet', () => {
  it.each([20, 32] as const)('finds every %i-byte key with its streams, and nothing else', (width) => {
    const keys = randomBytes(5_000 * width);
    const ks = keySet(
      width,
      Array.from({ length: 5_000 }, (_, i) => ({ key: keys.subarray(i * width, (i + 1) * width), streams: [i, i + 7] })),
    );
    for (let i = 0; i < 5_000; i++) expect(Array.from(ks.lookup(view(keys), i * width))).toEqual([i, i + 7]);
    const others = randomBytes(20_000 * width);
    let found = 0;
    let passed = 0;
    for (let i = 0; i < 20_000; i++) {
      found += ks.lookup(view(others), i * width).length;
      if (ks.mayContain(view(others), i * width)) passed++;
    }
    expect(found).toBe(0);
    // 16 bits per key: well under 1 % of strangers get past the bloom filter.
    expect(passed / 20_000).toBeLessThan(0.01);
  });

  it.each([20, 32] as const)(
    'answers for a column of %i-byte keys, with its lanes or without, exactly what find answers key by key',
    (width) => {
      const keys = randomBytes(4_000 * width);
      const ks = keySet(
        width,
        Array.from({ length: 4_000 }, (_, i) => ({ key: keys.subarray(i * width, (i + 1) * width), streams: [i] })),
      );
      // Watched keys and strangers interleaved, 9 bytes in (a probe column's header), then the lanes of each: more
      // keys than one chunk of the column pass, and a count that is not a multiple of it.
      const count = 7_999;
      const column = Buffer.alloc(9 + count * (width + 8));
      const strangers = randomBytes(count * width);
      for (let i = 0; i < count; i++)
        (i % 2 === 0 ? keys : strangers).copy(column, 9 + i * width, (i >> 1) * width, ((i >> 1) + 1) * width);
      const lanesAt = 9 + count * width;
      for (let i = 0; i < count; i++) writeKeyLanes(view(column), 9 + i * width, width, view(column), lanesAt + i * 8);
      const expected = Array.from({ length: count }, (_, i) => [i, ks.find(view(column), 9 + i * width)]).filter(([, p]) => p !== 0);
      expect(expected).toHaveLength(4_000);
      for (const at of [lanesAt, -1]) {
        const n = ks.probeColumn(view(column), 9, count, at);
        const pairs = Array.from({ length: n }, (_, k) => [ks.columnHits[3 * k]!, ks.columnHits[3 * k + 1]!]);
        expect(pairs).toEqual(expected);
      }
    },
  );

  it('matches any column as a plain Set of the watched keys does (property)', () => {
    // Small key spaces make repeats common; columns of up to 300 keys span several chunks of the column pass.
    const key = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((k) => (k[0]! < 128 ? k.map((b) => b & 3) : k));
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { selector: (k) => Buffer.from(k).toString('hex'), maxLength: 200, size: 'max' }),
        fc.array(key, { maxLength: 300, size: 'max' }),
        fc.boolean(),
        (watched, probed, withLanes) => {
          const ks = keySet(
            20,
            watched.map((k, i) => ({ key: k, streams: [i, i + 1_000] })),
          );
          const plain = new Map(watched.map((k, i) => [Buffer.from(k).toString('hex'), i]));
          // Half the column drawn from the watched keys, half from anywhere (one byte flipped now and then).
          const column = Buffer.alloc(9 + probed.length * 28);
          probed.forEach((k, i) => {
            const from = i % 2 === 0 && watched.length > 0 ? Buffer.from(watched[i % watched.length]!) : Buffer.from(k);
            if (i % 7 === 0) from[k[1]! % 20]! ^= 1;
            from.copy(column, 9 + i * 20);
          });
          const lanesAt = 9 + probed.length * 20;
          for (let i = 0; i < probed.length; i++) writeKeyLanes(view(column), 9 + i * 20, 20, view(column), lanesAt + i * 8);
          const n = ks.probeColumn(view(column), 9, probed.length, withLanes ? lanesAt : -1);
          const got = Array.from({ length: n }, (_, k) => {
            const p = ks.columnHits[3 * k + 1]!;
            return [ks.columnHits[3 * k]!, ...ks.postings.subarray(p, p + ks.postings[p - 1]!)];
          });
          const expected = probed.flatMap((_, i) => {
            const s = plain.get(column.toString('hex', 9 + i * 20, 9 + (i + 1) * 20));
            return s === undefined ? [] : [[i, s, s + 1_000]];
          });
          expect(got).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps vanity addresses that share a long prefix apart', () => {
    const vanity = (i: number): Buffer =>
      Buffer.concat([Buffer.alloc(16), Buffer.from([i >>> 24, (i >> 16) & 255, (i >> 8) & 255, i & 255])]);
    const keys = Array.from({ length: 5_000 }, (_, i) => vanity(i));
    const ks = keySet(
      20,
      keys.map((key, i) => ({ key, streams: [i] })),
    );
    keys.forEach((k, i) => expect(Array.from(ks.lookup(view(k), 0))).toEqual([i]));
    // Strangers with the same prefix are stopped by the bloom filter as often as random ones.
    let passed = 0;
    for (let i = 5_000; i < 25_000; i++) if (ks.mayContain(view(vanity(i * 7919)), 0)) passed++;
    expect(passed / 20_000).toBeLessThan(0.01);
  });

  it('refuses a key of the wrong width and a key listed twice', () => {
    expect(() => keySet(20, [{ key: new Uint8Array(19), streams: [0] }])).toThrow(RangeError);
    expect(() =>
      keySet(20, [
        { key: new Uint8Array(20), streams: [0] },
        { key: new Uint8Array(20), streams: [1] },
      ]),
    ).toThrow(/twice/);
  });

  it('an empty set matches nothing', () => {
    expect(keySet(20, []).lookup(view(randomBytes(20)), 0).length).toBe(0);
  });
});

describe.each(FIXTURE_BLOCKS)('probing the column of mainnet block %i', (n) => {
  it('finds exactly the places a plain scan of the node JSON finds for the same addresses', () => {
    const b = bundle(n);
    const r = normalizeBlock(b.block, b.receipts, b.traces);
    // Watch every third distinct sender, plus addresses nobody uses.
    const senders = [...new Set((b.block['transactions'] as Array<{ from: string }>).map((t) => t.from))].filter((_, i) => i % 3 === 0);
    const watched = [...senders, ...Array.from({ length: 100 }, () => `0x${randomBytes(20).toString('hex')}`)];
    const ks = keySet(
      20,
      watched.map((a, i) => ({ key: hex(a), streams: [i] })),
    );
    const p = readProbe(buildProbe(r));
    const dv = view(p.bytes);
    const found: string[] = [];
    for (let i = 0; i < p.addressCount; i++) {
      const hit = ks.lookup(dv, p.addressesAt + i * 20);
      if (hit.length > 0) found.push(`${watched[hit[0]!]}@${dv.getUint32(p.addressRefsAt + i * 4, true)}`);
    }
    // The plain scan: the same fields, from the JSON the node sent.
    const set = new Set(watched);
    const expected: string[] = [];
    const at = (kind: number, index: number) => (kind << 24) | index;
    const txs = b.block['transactions'] as Array<{ from: string; to: string | null }>;
    let log = 0;
    txs.forEach((t, i) => {
      if (set.has(t.from)) expected.push(`${t.from}@${at(0, i)}`);
      if (t.to !== null && set.has(t.to)) expected.push(`${t.to}@${at(1, i)}`);
      const receipt = b.receipts[i] as { contractAddress: string | null; logs: Array<{ address: string; topics: string[] }> };
      if (receipt.contractAddress !== null && set.has(receipt.contractAddress)) expected.push(`${receipt.contractAddress}@${at(2, i)}`);
      for (const l of receipt.logs) {
        if (set.has(l.address)) expected.push(`${l.address}@${at(3, log)}`);
        for (const topic of l.topics.slice(1)) {
          const a = `0x${topic.slice(26)}`;
          if (topic.startsWith('0x000000000000000000000000') && set.has(a)) expected.push(`${a}@${at(4, log)}`);
        }
        log++;
      }
    });
    r.internal!.forEach((c, i) => {
      if (c.from !== null && set.has(c.from)) expected.push(`${c.from}@${at(5, i)}`);
      if (c.to !== null && set.has(c.to)) expected.push(`${c.to}@${at(6, i)}`);
    });
    expect(found.sort()).toEqual(expected.sort());
    expect(found.length).toBeGreaterThan(0);
  });
});

describe.each(FIXTURE_BLOCKS)('the filter set over mainnet block %i', (n) => {
  it('gives each stream the items a plain scan gives it: watched addresses, and allAddresses topic0', () => {
    const b = bundle(n);
    const r = normalizeBlock(b.block, b.receipts, b.traces);
    const txs = b.block['transactions'] as Array<{ from: string; to: string | null }>;
    const watched = [...new Set(txs.map((t) => t.to).filter((a): a is string => a !== null))].filter((_, i) => i % 4 === 0);
    const set = filterSet([
      { index: 0, addresses: watched, allAddresses: false, topic0: [] },
      { index: 1, addresses: [], allAddresses: true, topic0: [TRANSFER] },
      // The same addresses in upper case, one listed twice: the same items, once each.
      { index: 2, addresses: [...watched.map((a) => `0x${a.slice(2).toUpperCase()}`), watched[0]!], allAddresses: false, topic0: [] },
      // topic0 alone does nothing without allAddresses (it filters an address stream's logs later).
      { index: 3, addresses: [], allAddresses: false, topic0: [TRANSFER] },
    ]);
    const got = set.match(buildProbe(r));
    // Plain scan of the JSON: transfers by log ordinal; watched addresses as receiver, emitter, topic or internal party.
    const logs = b.receipts.flatMap((x) => x['logs'] as Array<{ address: string; topics: string[] }>);
    const transfers = logs.flatMap((l, i) => (l.topics[0] === TRANSFER ? [(7 << 24) | i] : []));
    const w = new Set(watched);
    const expected: number[] = [];
    txs.forEach((t, i) => {
      if (w.has(t.from)) expected.push(i);
      if (t.to !== null && w.has(t.to)) expected.push((1 << 24) | i);
    });
    logs.forEach((l, i) => {
      if (w.has(l.address)) expected.push((3 << 24) | i);
      for (const topic of l.topics.slice(1))
        if (topic.startsWith('0x000000000000000000000000') && w.has(`0x${topic.slice(26)}`)) expected.push((4 << 24) | i);
    });
    r.internal!.forEach((c, i) => {
      if (c.from !== null && w.has(c.from)) expected.push((5 << 24) | i);
      if (c.to !== null && w.has(c.to)) expected.push((6 << 24) | i);
    });
    const sorted = (a: number[] | undefined) => [...(a ?? [])].sort((x, y) => x - y);
    expect(sorted(got.get(0))).toEqual(sorted(expected));
    expect(sorted(got.get(1))).toEqual(transfers);
    expect(sorted(got.get(2))).toEqual(sorted(expected));
    expect(got.has(3)).toBe(false);
    // The column as version 1 wrote it (no lanes: each key hashed when matched) matches the same, in the same order.
    const v2 = buildProbe(r);
    const v1 = Uint8Array.prototype.slice.call(v2, 0, readProbe(v2).lanesAt);
    v1[0] = 1;
    expect(readProbe(v1).lanesAt).toBe(-1);
    expect([...set.match(v1)]).toEqual([...got]);
  });
});

describe.each(FIXTURE_BLOCKS)('the webhook of mainnet block %i', (n) => {
  it('holds the transactions and internal transactions a plain scan finds, decoding only those from the record', async () => {
    const b = bundle(n);
    const r = normalizeBlock(b.block, b.receipts, b.traces);
    const txs = b.block['transactions'] as Array<{ hash: string; from: string; to: string | null }>;
    const watched = [...new Set(txs.map((t) => t.to).filter((a): a is string => a !== null))].filter((_, i) => i % 10 === 0);
    const refs =
      filterSet([{ index: 0, addresses: watched, allAddresses: false, topic0: [] }])
        .match(buildProbe(r))
        .get(0) ?? [];
    const def = createStream.parse({
      webhookUrl: 'http://127.0.0.1/hook',
      chainIds: ['0x1'],
      includeNativeTxs: true,
      includeInternalTxs: true,
    });
    const stream = {
      ...def,
      id: 's',
      tenantId: 't',
      status: 'active' as const,
      statusMessage: '',
      createdAt: 0,
      updatedAt: 0,
      amountOfAddresses: watched.length,
    };
    // Neither logs nor spam checks nor balances are asked for: a node read would be a mistake.
    const unreachable = (): never => {
      throw new Error('no node read expected');
    };
    const build = webhookBuilder({
      tokens: { get: unreachable } as unknown as TokenMetadata,
      call: unreachable,
      gasCap: unreachable,
      balance: unreachable,
      watches: (_id, a) => watched.includes(a),
    });
    const bytes = encodeRecord(r);
    const record = RecordView.shared(bytes);
    const body = (await build({ chain: '0x1', number: n, bytes, confirmed: true }, stream, refs))!;
    // The plain scan of the node's JSON.
    const w = new Set(watched);
    const hashOf = new Map(txs.map((t, i) => [i, t.hash]));
    expect((body['txs'] as Array<{ hash: string }>).map((t) => t.hash)).toEqual(
      txs
        .filter((t, i) => w.has(t.from) || (t.to !== null && w.has(t.to)) || w.has(String(b.receipts[i]!['contractAddress'])))
        .map((t) => t.hash),
    );
    const calls = r.internal!.filter((c) => (w.has(c.from ?? '') || w.has(c.to ?? '')) && BigInt(c.value) > 0n && c.error === undefined);
    expect(body['txsInternal']).toEqual(
      calls.map((c) => ({
        from: c.from,
        to: c.to,
        value: BigInt(c.value).toString(),
        transactionHash: hashOf.get(c.txIndex),
        gas: BigInt(c.gas).toString(),
      })),
    );
    // Three header fields, and per ref at most its item and its transaction's hash; the whole block is many more.
    const items = 1 + 2 * r.txs.length + record.logCount + r.internal!.length;
    expect(record.decoded).toBeLessThanOrEqual(3 + 2 * refs.length);
    expect(2 * refs.length).toBeLessThan(items / 2);
  });
});

describe('the filter set', () => {
  it('refuses a malformed key, naming it', () => {
    expect(() => filterSet([{ index: 0, addresses: ['0x1234'], allAddresses: false, topic0: [] }])).toThrow(/0x1234/);
  });

  it('gives each block its own refs when two blocks are matched turn by turn, whatever the stream numbers', () => {
    // Streams 0 and 5,000 (past addRef's table as first grown) watch one key each; the key appears in both blocks.
    const postings = new Uint32Array([2, 0, 5_000]);
    const a = new Map<number, number[]>();
    const b = new Map<number, number[]>();
    addRef(a, postings, 1, 10);
    addRef(b, postings, 1, 20);
    addRef(a, postings, 1, 11);
    addRef(a, postings, 1, 12);
    addRef(b, postings, 1, 21);
    expect([...a]).toEqual([
      [0, [10, 11, 12]],
      [5_000, [10, 11, 12]],
    ]);
    expect([...b]).toEqual([
      [0, [20, 21]],
      [5_000, [20, 21]],
    ]);
  });
});
