import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_BLOCKS, bundle } from './kit/fixtures.js';
import { ServiceClock } from '../engine/clock.js';
import { IndexWriter, DataIndexer, indexedBlock, type IndexedBlock } from '../engine/data-api/common/indexer.js';
import { blockTimesIndex } from '../engine/data-api/chain/index/writer.js';
import {
  activityKey,
  addressPrefix,
  addressTxReads,
  nativeTxIndex,
  positionOf,
  type Activity,
} from '../engine/data-api/transactions/index/writer.js';
import type { GroupRow } from '../engine/data-api/common/block-groups.js';
import { summaryOf } from '../engine/data-api/transactions/source.js';
import { addressPage } from '../engine/data-api/transactions/txs.js';
import type { DataDeps } from '../engine/data-api/common/deps.js';
import { normalizeBlock } from '../engine/evm/record.js';
import { writeBlock } from '../engine/evm/store.js';
import { TokenMetadata } from '../engine/evm/token-metadata.js';
import { openStore, type Store } from '../storage/env.js';
import { counting } from './kit/counting-kv.js';
import { tempDir } from './helpers.js';
import { quietLog } from './kit/quiet-log.js';

/**
 * The native transactions index over the real mainnet fixture blocks (with their call traces), in a real
 * LMDB store: every address's list, every summary and every activity row equal a plain scan of the
 * fixtures' JSON; a page of a long list reads limit + 2 index entries, one summary per item and one block hash
 * (`canon`) per block of its items.
 */

type Json = Record<string, any>;
const CHAIN = '0x1';

interface Scanned {
  block: number;
  index: number;
  tx: Json;
  receipt: Json;
  /** Value-moving and other internal calls, depth first. */
  calls: Json[];
  parties: Set<string>;
}

const framesOf = (f: Json): Json[] => ((f['calls'] ?? []) as Json[]).flatMap((c) => [c, ...framesOf(c)]);

describe('the native transactions index over the mainnet fixture blocks', () => {
  let dir: string;
  let store: Store;
  const scanned: Scanned[] = [];

  beforeAll(() => {
    dir = tempDir();
    store = openStore(dir);
    for (const n of FIXTURE_BLOCKS) {
      const b = bundle(n);
      const record = normalizeBlock(b.block, b.receipts, b.traces);
      const block: IndexedBlock = indexedBlock(CHAIN, n, String(b.block['hash']), record);
      store.transact(() => {
        writeBlock(store, CHAIN, record);
        // The block's time and hash, where a summary's block hash is read.
        blockTimesIndex.apply(new IndexWriter(store, []), block, undefined);
        nativeTxIndex.apply(new IndexWriter(store, []), block, undefined);
      });
      (b.block['transactions'] as Json[]).forEach((tx, index) => {
        const receipt = b.receipts[index]!;
        const calls = framesOf(b.traces[index]!);
        const parties = new Set(
          [tx['from'], tx['to'], receipt['contractAddress'], ...calls.flatMap((c) => [c['from'], c['to']])]
            .filter((a): a is string => typeof a === 'string')
            .map((a) => a.toLowerCase()),
        );
        scanned.push({ block: n, index, tx, receipt, calls, parties });
      });
    }
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Addresses → their transactions, in (block, index) order, by the plain scan. */
  const byAddress = (): Map<string, Scanned[]> => {
    const out = new Map<string, Scanned[]>();
    for (const s of scanned) for (const a of s.parties) out.set(a, [...(out.get(a) ?? []), s]);
    return out;
  };

  it('lists each address under exactly the transactions it sent, received, created or was called in', () => {
    expect(scanned.length).toBeGreaterThan(900);
    const all = byAddress();
    expect(all.size).toBeGreaterThan(900);
    for (const [a, list] of all) {
      const keys = addressTxReads(store)
        .range('addressTxs', { start: addressPrefix('tx', CHAIN, a), end: `${addressPrefix('tx', CHAIN, a)}\uffff` })
        .map((e) => positionOf(e.key));
      expect(keys, a).toEqual(list.map((s) => ({ block: s.block, index: s.index })));
      const row = store.get<Activity>('activity', activityKey(a, CHAIN))!;
      expect(row.txs, a).toBe(list.length);
    }
    // No address beyond those: every `tx/` entry is one of the scan's, a row per (address, block).
    const rows = store.range<GroupRow>('addressTxs', { start: `tx/${CHAIN}/`, end: `tx/${CHAIN}/\uffff` });
    expect(rows.reduce((n, r) => n + r.value.length, 0)).toBe([...all.values()].reduce((n, l) => n + l.length, 0));
    expect(rows.length).toBe(new Set(scanned.flatMap((s) => [...s.parties].map((a) => `${a}/${s.block}`))).size);
  });

  it('keeps a summary of every transaction, found by its hash, with its internal calls', () => {
    for (const s of scanned) {
      const got = summaryOf({ kv: store }, CHAIN, s.tx['hash'])!;
      expect(got, s.tx['hash']).toMatchObject({
        blockNumber: s.block,
        index: s.index,
        from: s.tx['from'].toLowerCase(),
        to: s.tx['to']?.toLowerCase() ?? null,
        value: s.tx['value'],
        nonce: s.tx['nonce'],
        input: s.tx['input'],
        gasUsed: s.receipt['gasUsed'],
        status: Number(s.receipt['status']),
        contractAddress: s.receipt['contractAddress']?.toLowerCase() ?? null,
      });
      expect(got.internal.map((c) => [c.type, c.from, c.to, c.value ?? '0x0'])).toEqual(
        s.calls.map((c) => [c['type'], c['from']?.toLowerCase() ?? null, c['to']?.toLowerCase() ?? null, c['value'] ?? '0x0']),
      );
    }
  });

  it('pages the longest list reading limit + 2 index entries, one summary per item and one block hash per block, to the end', async () => {
    const [address, list] = [...byAddress()].sort((a, b) => b[1].length - a[1].length)[0]!;
    expect(list.length).toBeGreaterThan(50);
    const c = counting(store);
    const log = quietLog();
    const deps: DataDeps = {
      kv: c.kv,
      tokens: new TokenMetadata(store, async () => null),
      reads: undefined as never,
      indexer: new DataIndexer(store, [], new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, 0), log),
      follower: () => undefined,
    };
    const seen: string[] = [];
    let cursor: string | null = null;
    const limit = 7;
    do {
      c.reset();
      const page = await addressPage(deps, CHAIN, 'tx', { address, cursor, order: 'DESC', limit });
      // Index entries: limit + 2 at most; then a summary per item and its block's hash once per block; then the chain state the read checks.
      const blocks = new Set(page.items.map((s) => s.blockNumber)).size;
      expect(c.reads()).toBeLessThanOrEqual(limit + 2 + page.items.length + blocks + 1);
      seen.push(...page.items.map((s) => s.hash));
      cursor = page.cursor;
    } while (cursor !== null);
    expect(seen).toEqual([...list].reverse().map((s) => s.tx['hash'].toLowerCase()));
  });
});
