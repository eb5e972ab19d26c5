import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_BLOCKS, bundle } from '../../../kit/fixtures.js';
import { normalizeBlock, rpcReceipts, type BlockRecord, type Json } from '../../../../engine/evm/record.js';
import { writeBlock } from '../../../../engine/evm/store.js';
import { Held } from '../../../../engine/rpc/held.js';
import { blockLogs, logsFromStore as fromStore, type TopicsBeyondLog } from '../../../../engine/rpc/logs.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';

/**
 * eth_getLogs from the store, over the real mainnet blocks of the fixtures in a
 * real LMDB store: for filters drawn from each block's own logs, the logs the
 * probe column finds are exactly those a plain filter over all the block's
 * logs keeps, under either node rule for topic positions beyond a log's topics.
 */
type Filter = { address?: string | string[]; topics?: Array<string | string[] | null> };
type Log = { address: string; topics: string[]; transactionHash?: string };

const CHAIN = '0x1';
/** Logs read before stay, by block hash: every block is read twice below, once with nothing kept and once with what was. */
let seen = blockLogs(64 * 1024 * 1024);
/** The store's answer, parsed (it comes as the node's JSON text of each log). */
const logsFromStore = (held: Held, params: unknown[], beyond: TopicsBeyondLog): unknown => {
  const found = fromStore(held, params, beyond, seen);
  return Array.isArray(found) ? found.map((t) => JSON.parse(t) as unknown) : found;
};
const hex = (n: number): string => `0x${n.toString(16)}`;

/** The filter as a node applies it, over every log. */
function plain(logs: Log[], f: Filter, beyond: 'match' | 'mismatch'): Log[] {
  const addresses = (f.address === undefined ? [] : Array.isArray(f.address) ? f.address : [f.address]).map((a) => a.toLowerCase());
  const topics = f.topics ?? [];
  return logs.filter((l) => {
    if (addresses.length > 0 && !addresses.includes(l.address)) return false;
    if (beyond === 'mismatch' && topics.length > l.topics.length) return false;
    return topics.every((p, i) => {
      const allowed = p === null ? [] : (Array.isArray(p) ? p : [p]).map((t) => t.toLowerCase());
      return allowed.length === 0 || (i < l.topics.length && allowed.includes(l.topics[i]!));
    });
  });
}

/** Filters drawn from a block's logs: emitters, topic0s, later topics, alone and together. */
function filtersFor(logs: Log[]): Array<[string, Filter]> {
  const count = new Map<string, number>();
  for (const l of logs) count.set(l.address, (count.get(l.address) ?? 0) + 1);
  const [top, second] = [...count].sort((a, b) => b[1] - a[1]).map(([a]) => a);
  const withTwo = logs.find((l) => l.topics.length >= 3) ?? logs[0]!;
  const t0s = [...new Set(logs.map((l) => l.topics[0]).filter((t): t is string => t !== undefined))];
  return [
    ['every log', {}],
    ['the busiest emitter', { address: top! }],
    ['two emitters, one in upper case', { address: [top!.toUpperCase().replace('0X', '0x'), second ?? top!] }],
    ['a topic0', { topics: [t0s[0]!] }],
    ['two topic0s', { topics: [[t0s[0]!, t0s[1] ?? t0s[0]!]] }],
    ['a second topic alone', { topics: [null, withTwo.topics[1] ?? null] }],
    ['topic0 and a third topic', { topics: [withTwo.topics[0]!, null, withTwo.topics[2] ?? null] }],
    ['trailing wildcards', { topics: [t0s[0]!, null, null, null] }],
    ['emitter and topic0', { address: withTwo.address, topics: [withTwo.topics[0]!] }],
    ['nothing', { address: '0x000000000000000000000000000000000000dead' }],
  ];
}

describe('logsFromStore over mainnet blocks', () => {
  let dir: string;
  let store: Store;
  const records = new Map<number, BlockRecord>();
  const top = Math.max(...FIXTURE_BLOCKS);
  const held = (): Held => new Held(store, CHAIN, { head: top, confirmed: top, tracer: true, pruned: -1 }, top, 0);

  beforeAll(() => {
    dir = tempDir();
    store = openStore(dir);
    for (const n of FIXTURE_BLOCKS) {
      const b = bundle(n);
      const record = normalizeBlock(b.block, b.receipts, b.traces);
      store.transact(() => writeBlock(store, CHAIN, record));
      records.set(n, record);
    }
  });
  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(FIXTURE_BLOCKS)('block %i: every filter finds exactly the logs a plain filter keeps', (n) => {
    const all = rpcReceipts(records.get(n)!).flatMap((r) => r['logs'] as Json[]) as unknown as Log[];
    expect(all.length).toBeGreaterThan(0);
    for (const fresh of [true, false]) {
      if (fresh) seen = blockLogs(64 * 1024 * 1024);
      for (const [name, f] of filtersFor(all)) {
        for (const beyond of ['match', 'mismatch'] as const) {
          const found = logsFromStore(held(), [{ fromBlock: hex(n), toBlock: hex(n), ...f }], beyond);
          expect(found, `${name} (${beyond}, ${fresh ? 'nothing kept' : 'kept'})`).toEqual(plain(all, f, beyond));
        }
      }
    }
    // By hash, the same block.
    expect(logsFromStore(held(), [{ blockHash: records.get(n)!.header['hash'] }], 'match')).toEqual(all);
  });

  it("keeps each chain's blocks apart in memory, the same number on two chains being two blocks", () => {
    const [a, b] = [FIXTURE_BLOCKS[0], FIXTURE_BLOCKS[1]];
    // Another chain whose block `a` is mainnet's block `b`.
    const other = bundle(b);
    const record = normalizeBlock({ ...other.block, number: hex(a) }, other.receipts, other.traces);
    store.transact(() => writeBlock(store, '0x2', record));
    const onOther = new Held(store, '0x2', { head: a, confirmed: a, tracer: true, pruned: -1 }, a, 0);
    const query = [{ fromBlock: hex(a), toBlock: hex(a) }];
    const mainnet = logsFromStore(held(), query, 'match') as Log[];
    const theirs = (fromStore(onOther, query, 'match', seen) as string[]).map((t) => JSON.parse(t) as Log);
    expect(theirs.map((l) => l.transactionHash)).toEqual(
      rpcReceipts(record).flatMap((r) => (r['logs'] as Log[]).map((l) => l.transactionHash)),
    );
    expect(theirs[0]!.transactionHash).not.toBe(mainnet[0]!.transactionHash);
  });

  it('leaves to the node what it cannot answer exactly', () => {
    const n = FIXTURE_BLOCKS[0];
    const f = (more: Record<string, unknown>, beyond: TopicsBeyondLog = 'match') =>
      logsFromStore(held(), [{ fromBlock: hex(n), toBlock: hex(n), ...more }], beyond);
    const unknownRule = (more: Record<string, unknown>) =>
      logsFromStore(held(), [{ fromBlock: hex(n), toBlock: hex(n), ...more }], undefined);
    const count = (v: unknown): number => (v as unknown[]).length;
    // Trailing wildcards when the node's rule is not known; without them the rules agree.
    expect(unknownRule({ topics: [null] })).toBeUndefined();
    expect(unknownRule({ topics: [`0x${'0'.repeat(64)}`] })).toEqual([]);
    expect(count(unknownRule({}))).toBe(rpcReceipts(records.get(n)!).flatMap((r) => r['logs'] as Json[]).length);
    // Malformed values and unknown fields: the node has its own words for them.
    expect(f({ address: '0x12' })).toBeUndefined();
    expect(f({ topics: ['0x12'] })).toBeUndefined();
    expect(f({ topics: [null, null, null, null, null] })).toBeUndefined();
    expect(f({ blockHash: `0x${'00'.repeat(32)}` })).toBeUndefined();
    expect(f({ extra: 1 })).toBeUndefined();
    // A range with blocks the store does not hold (the fixtures are far apart), and an unknown hash.
    expect(logsFromStore(held(), [{ fromBlock: hex(n), toBlock: hex(n + 1) }], 'match')).toBeUndefined();
    expect(logsFromStore(held(), [{ blockHash: `0x${'ab'.repeat(32)}` }], 'match')).toBeUndefined();
    // Above the head, and pruned.
    expect(
      logsFromStore(
        new Held(store, CHAIN, { head: n - 1, confirmed: n - 1, tracer: true, pruned: -1 }, n - 1, 0),
        [{ fromBlock: hex(n), toBlock: hex(n) }],
        'match',
      ),
    ).toBeUndefined();
    expect(
      logsFromStore(
        new Held(store, CHAIN, { head: top, confirmed: top, tracer: true, pruned: n }, top, 0),
        [{ fromBlock: hex(n), toBlock: hex(n) }],
        'match',
      ),
    ).toBeUndefined();
  });

  it('refuses a range over 10,000 blocks before reading anything, "latest" being at least the head', () => {
    const over = { code: -32005, message: 'query exceeds max block range 10000' };
    expect(logsFromStore(held(), [{ fromBlock: '0x0', toBlock: hex(10_000) }], 'match')).toEqual(over);
    expect(logsFromStore(held(), [{ fromBlock: hex(top - 10_000) }], 'match')).toEqual(over);
    // Without a known latest, the head stands for it.
    expect(
      logsFromStore(
        new Held(store, CHAIN, { head: top, confirmed: top, tracer: true, pruned: -1 }, undefined, 0),
        [{ fromBlock: hex(top - 10_000), toBlock: 'latest' }],
        'match',
      ),
    ).toEqual(over);
    // 10,000 blocks are allowed (here not all held: the node answers).
    expect(logsFromStore(held(), [{ fromBlock: hex(top - 9_999) }], 'match')).toBeUndefined();
  });
});
