import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_BLOCKS, bundle } from '../../../../../kit/fixtures.js';
import { ServiceClock } from '../../../../../../engine/clock.js';
import { blockTime, type BlockTimeRow } from '../../../../../../engine/data-api/common/block-times.js';
import { contractEvents, contractEventsQuery, contractLogs, contractLogsQuery } from '../../../../../../engine/data-api/chain/logs.js';
import type { DataDeps } from '../../../../../../engine/data-api/common/deps.js';
import { erc20TransferAt } from '../../../../../../engine/data-api/erc20/index/log.js';
import {
  tokenTransfers,
  tokenTransfersQuery,
  walletTransfers,
  walletTransfersQuery,
} from '../../../../../../engine/data-api/erc20/transfers.js';
import { DataIndexer, IndexWriter, indexedBlock, type IndexState } from '../../../../../../engine/data-api/common/indexer.js';
import { dataIndexes } from '../../../../../../engine/data-api/indexes.js';
import { summaryKey } from '../../../../../../engine/data-api/transactions/index/writer.js';
import { historyQuery, walletHistory } from '../../../../../../engine/data-api/transactions/wallet.js';
import { normalizeBlock } from '../../../../../../engine/evm/record.js';
import { erc20TransferKey, writeBlock } from '../../../../../../engine/evm/store.js';
import { TokenMetadata } from '../../../../../../engine/evm/token-metadata.js';
import { blockKey } from '../../../../../../engine/ingest/chain-store.js';
import { IN_PLACE_TABLES, openStore, type Store } from '../../../../../../storage/env.js';
import { counting } from '../../../../../kit/counting-kv.js';
import { tempDir } from '../../../../../helpers.js';
import {
  contractListEnd,
  type ContractLog,
  type OldContractLog,
  type TopicEntry,
} from '../../../../../../engine/data-api/chain/index/logs.js';
import { groupEntries, regroup, type GroupRow } from '../../../../../../engine/data-api/common/block-groups.js';
import { noNode } from '../../../../../kit/no-node.js';
import { quietLog } from '../../../../../kit/quiet-log.js';

/**
 * An ERC-20 transfer stored once, as its `contractLogs` row: the mainnet fixture blocks written as the follower
 * writes them and indexed by every Data API index in a real LMDB store, then every ERC-20 Transfer of a plain
 * scan of the fixtures' JSON read back through erc20TransferAt and the endpoints (a token's list, a wallet's,
 * wallet history, a contract's logs and events); the same answers from rows in the form a store written before
 * 2026-11-24 holds (`{tx, ti, ts, topics, data}`, beside the follower's old `transfers` rows).
 */

type Json = Record<string, any>;
const CHAIN = '0x1';
const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';
const APPROVAL = '0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925';

interface Scanned {
  block: number;
  logIndex: number;
  contract: string;
  from: string;
  to: string;
  value: string;
  hash: string;
  ti: number;
}

/** What no mainnet node here can answer: every read null (token metadata, balances before a pair's first transfer). */

let dir: string;
let store: Store;
let deps: DataDeps;
const scanned: Scanned[] = [];
/** Logs at their places that are no ERC-20 Transfer: [contract, block, logIndex, what]. */
const others: Array<[string, number, number, string]> = [];
const tokens = new Map<string, Scanned[]>();
const wallets = new Map<string, Scanned[]>();

const push = <T>(m: Map<string, T[]>, k: string, v: T): void => void m.set(k, [...(m.get(k) ?? []), v]);
const busiest = (m: Map<string, Scanned[]>): [string, Scanned[]] => [...m].sort((a, b) => b[1].length - a[1].length)[0]!;
/** Newest first, as the lists answer by default. */
const newestFirst = (list: Scanned[]): Scanned[] => [...list].sort((a, b) => b.block - a.block || b.logIndex - a.logIndex);

beforeAll(async () => {
  dir = tempDir();
  store = openStore(dir);
  const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, Date.parse('2026-11-24T00:00:00Z'));
  const tokenMeta = new TokenMetadata(store, noNode.call);
  const indexes = dataIndexes({ reads: noNode, tokens: tokenMeta });
  const indexer = new DataIndexer(
    store,
    indexes,
    clock,
    quietLog(() => clock.now()),
  );
  deps = { kv: store, tokens: tokenMeta, reads: noNode, indexer, follower: () => undefined };
  for (const n of FIXTURE_BLOCKS) {
    const b = bundle(n);
    const record = normalizeBlock(b.block, b.receipts, b.traces);
    const block = indexedBlock(CHAIN, n, String(b.block['hash']), record);
    // The fixtures are not consecutive blocks: each is applied as the indexer applies a batch's block.
    const prepared = await Promise.all(indexes.map((index) => index.prepare?.([block], store)));
    store.transact(() => {
      writeBlock(store, CHAIN, record);
      const w = new IndexWriter(store, null);
      indexes.forEach((index, i) => index.apply(w, block, prepared[i]));
    });
    for (const r of b.receipts as Json[]) {
      for (const l of r['logs'] as Json[]) {
        const topics = (l['topics'] as string[]).map((t) => t.toLowerCase());
        const at = { contract: String(l['address']).toLowerCase(), block: n, logIndex: Number(l['logIndex']) };
        if (topics[0] === TRANSFER && topics.length === 3 && String(l['data']).length >= 66) {
          const s: Scanned = {
            ...at,
            from: `0x${topics[1]!.slice(26)}`,
            to: `0x${topics[2]!.slice(26)}`,
            value: BigInt(String(l['data']).slice(0, 66)).toString(),
            hash: String(r['transactionHash']).toLowerCase(),
            ti: Number(r['transactionIndex']),
          };
          scanned.push(s);
          push(tokens, s.contract, s);
          for (const w of new Set([s.from, s.to])) push(wallets, w, s);
        } else
          others.push([
            at.contract,
            n,
            at.logIndex,
            topics[0] === TRANSFER ? 'an NFT Transfer' : topics[0] === APPROVAL ? 'an Approval' : 'another log',
          ]);
      }
    }
  }
  const [first, last] = [FIXTURE_BLOCKS[0], FIXTURE_BLOCKS.at(-1)!];
  store.transact(() => {
    store.put('indexState', CHAIN, {
      number: last,
      hash: store.get<string>('canon', blockKey(CHAIN, last))!,
      start: first,
    } satisfies IndexState);
    store.put('chainState', CHAIN, { head: last, confirmed: last, tracer: null, pruned: -1 });
  });
}, 60_000);

afterAll(async () => {
  await store?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Every page of a list (limit 5), each read through a counting store: range entries at most limit + 2, every page but the last full. */
async function allPages<T>(run: (d: DataDeps, cursor?: string) => Promise<{ cursor: string | null; result: T[] }>): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  do {
    const c = counting(store);
    const page = await run({ ...deps, kv: c.kv }, cursor);
    expect(c.ranges()).toBeLessThanOrEqual(5 + 2);
    if (page.cursor !== null) expect(page.result.length).toBe(5);
    out.push(...page.result);
    cursor = page.cursor ?? undefined;
  } while (cursor !== undefined);
  return out;
}

const asListed = (s: Scanned) => ({
  address: s.contract,
  from_address: s.from,
  to_address: s.to,
  value: s.value,
  transaction_hash: s.hash,
  transaction_index: s.ti,
  block_number: String(s.block),
  log_index: s.logIndex,
});
const listed = (r: Json) => ({
  address: r['address'],
  from_address: r['from_address'],
  to_address: r['to_address'],
  value: r['value'],
  transaction_hash: r['transaction_hash'],
  transaction_index: r['transaction_index'],
  block_number: r['block_number'],
  log_index: r['log_index'],
});
const tokenList = (token: string) =>
  allPages((d, cursor) =>
    tokenTransfers(d, CHAIN, tokenTransfersQuery.parse({ address: token, limit: '5', ...(cursor === undefined ? {} : { cursor }) })),
  );
const walletList = (wallet: string) =>
  allPages((d, cursor) =>
    walletTransfers(d, CHAIN, walletTransfersQuery.parse({ address: wallet, limit: '5', ...(cursor === undefined ? {} : { cursor }) }), []),
  );
async function history(wallet: string) {
  const out: unknown[][] = [];
  let cursor: string | null = null;
  do {
    const page: Awaited<ReturnType<typeof walletHistory>> = await walletHistory(
      deps,
      CHAIN,
      historyQuery.parse({ address: wallet, limit: '100', ...(cursor === null ? {} : { cursor }) }),
    );
    out.push(
      ...page.result.flatMap((i) => i.erc20_transfers.map((e) => [i.hash, e.address, e.from_address, e.to_address, e.value, e.log_index])),
    );
    cursor = page.cursor;
  } while (cursor !== null);
  return out;
}
const historyOf = (wallet: string) => newestFirst(wallets.get(wallet)!).map((s) => [s.hash, s.contract, s.from, s.to, s.value, s.logIndex]);
/** A token with Approval logs besides its transfers, and more transfers than a page. */
const approvedToken = (): string =>
  [...tokens].find(([t, list]) => list.length > 5 && others.some(([c, , , what]) => c === t && what === 'an Approval'))![0];

/** The transfer's hash as erc20TransferAt reads it while its transaction's summary is removed. */
function hashWithoutSummary(s: Scanned): string | undefined {
  const key = summaryKey(CHAIN, s.block, s.ti);
  const summary = store.get('nativeTxs', key);
  store.transact(() => store.remove('nativeTxs', key));
  try {
    return erc20TransferAt(store, CHAIN, s.contract, s.block, s.logIndex)?.transactionHash;
  } finally {
    store.transact(() => store.put('nativeTxs', key, summary));
  }
}

/** What every reader answers, to compare a store's forms. */
async function answers() {
  const [token] = busiest(tokens);
  const [wallet] = busiest(wallets);
  const logs = await contractLogs(deps, CHAIN, contractLogsQuery.parse({ address: token, limit: '100' }));
  const events = await contractEvents(
    deps,
    CHAIN,
    contractEventsQuery.parse({ address: token, topic: 'Transfer(address,address,uint256)', limit: '100' }),
    [
      {
        type: 'event',
        name: 'Transfer',
        inputs: [
          { type: 'address', name: 'from', indexed: true },
          { type: 'address', name: 'to', indexed: true },
          { type: 'uint256', name: 'value', indexed: false },
        ],
      },
    ],
  );
  return {
    token: await tokenList(token),
    approved: await tokenList(approvedToken()),
    wallet: await walletList(wallet),
    history: await history(wallet),
    logs,
    events,
  };
}

describe('ERC-20 transfers as their log rows, over the mainnet fixture blocks', () => {
  let compact: Awaited<ReturnType<typeof answers>>;

  it('writes no ERC-20 `transfers` rows at ingest, and a compact log row for each ERC-20 Transfer', () => {
    expect(scanned.length).toBeGreaterThan(100);
    expect(store.count('transfers', { start: 'erc20/', end: 'erc20/\uffff' })).toBe(0);
    expect(store.count('transfers', { start: 'nft/', end: 'nft/\uffff' })).toBeGreaterThan(0);
    const s = scanned[0]!;
    const at = `${s.block.toString(16).padStart(12, '0')}/${s.logIndex.toString(16).padStart(6, '0')}`;
    expect(store.get<ContractLog>('contractLogs', `${CHAIN}/t/${s.contract}/${TRANSFER}/${at}`)).toEqual([
      s.hash,
      s.ti,
      expect.any(Array),
      expect.any(String),
    ]);
    // Under the contract alone, in its block's row: its topic0.
    expect(store.get<GroupRow>('contractLogs', `${CHAIN}/a/${s.contract}/${at.slice(0, 12)}`)).toContainEqual([s.logIndex, TRANSFER]);
  });

  it('reads every scanned ERC-20 Transfer back with erc20TransferAt, and nothing at a place holding another log', () => {
    for (const s of scanned) {
      expect(erc20TransferAt(store, CHAIN, s.contract, s.block, s.logIndex), `${s.block}/${s.logIndex}`).toEqual({
        contract: s.contract,
        from: s.from,
        to: s.to,
        value: `0x${BigInt(s.value).toString(16)}`,
        transactionHash: s.hash,
        transactionIndex: s.ti,
      });
    }
    expect(new Set(others.map((o) => o[3]))).toEqual(new Set(['an NFT Transfer', 'an Approval', 'another log']));
    for (const [contract, block, logIndex, what] of others)
      expect(erc20TransferAt(store, CHAIN, contract, block, logIndex), what).toBeUndefined();
    expect(erc20TransferAt(store, CHAIN, scanned[0]!.contract, scanned[0]!.block + 1, 0)).toBeUndefined();
  });

  it("lists a token's transfers over its Transfer keys (limit + 2 entries a page, its Approvals not read), a wallet's and its history as the scan does", async () => {
    compact = await answers();
    const [token, list] = busiest(tokens);
    expect(compact.token.map(listed), token).toEqual(newestFirst(list).map(asListed));
    expect(compact.approved.map(listed)).toEqual(newestFirst(tokens.get(approvedToken())!).map(asListed));
    const [wallet, mine] = busiest(wallets);
    expect(compact.wallet.map(listed), wallet).toEqual(newestFirst(mine).map(asListed));
    expect(compact.history).toEqual(historyOf(wallet));
    expect(compact.logs.result.length).toBeGreaterThan(0);
    expect(compact.logs.result.map((l) => l.transaction_hash)).toEqual(expect.arrayContaining([list.at(-1)!.hash]));
    const decoded = (d: unknown) => Object.fromEntries(Object.entries(d as Record<string, string>).map(([k, v]) => [k, v.toLowerCase()]));
    expect(compact.events.result.map((e) => [e.transaction_hash, decoded(e.data)])).toEqual(
      newestFirst(list)
        .slice(0, 100)
        .map((s) => [s.hash, { from: s.from, to: s.to, value: s.value }]),
    );
  });

  it("keeps a wallet history row only for a transaction not in its address's tx/ list (the history reads both)", () => {
    const rows = store.keys('addressTxs', { start: 'hist/', end: 'hist/\uffff' });
    expect(rows.length).toBeGreaterThan(0);
    // The tx/ lists' entries (a row per address and block), as the history reads them.
    const tx = new Set(
      store
        .range<GroupRow>('addressTxs', { start: 'tx/', end: 'tx/\uffff' })
        .flatMap((r) => groupEntries(r.value).map(([i]) => `${r.key}/${i.toString(16).padStart(6, '0')}`)),
    );
    expect(tx.size).toBeGreaterThan(rows.length);
    expect(rows.filter((k) => tx.has(`tx/${k.slice('hist/'.length)}`))).toEqual([]);
  });

  it("holds no byte array in any value of the tables whose ranges are decoded in place; a range's values stay as read", () => {
    const bytesIn = (v: unknown): boolean =>
      v instanceof Uint8Array || (typeof v === 'object' && v !== null && Object.values(v).some(bytesIn));
    let values = 0;
    for (const table of IN_PLACE_TABLES) {
      const rows = store.range(table);
      values += rows.length;
      expect(
        rows.filter((r) => bytesIn(r.value)).map((r) => r.key),
        table,
      ).toEqual([]);
      // Read again after other reads (lmdb-js reuses its buffer): each value as a fresh get decodes it.
      const again = JSON.stringify(rows);
      for (const r of rows.slice(0, 50)) store.get(table, r.key);
      expect(JSON.stringify(rows), table).toBe(again);
      for (const r of rows.slice(0, 200)) expect(store.get(table, r.key), r.key).toEqual(r.value);
    }
    expect(values).toBeGreaterThan(1000);
  });

  it("reads a transfer's hash from its row, not its transaction's summary", () => {
    expect(hashWithoutSummary(scanned[0]!)).toBe(scanned[0]!.hash);
  });

  /** Every other fixture block's rows put back as a version-5 store kept them (a store upgraded while it was being indexed). */
  function toVersion5(): void {
    const older = new Set(FIXTURE_BLOCKS.filter((_, i) => i % 2 === 0).map((n) => n.toString(16).padStart(12, '0')));
    const rows = store
      .range<TopicEntry>('contractLogs', { start: `${CHAIN}/t/`, end: `${CHAIN}/t/\uffff` })
      .filter((r) => older.has(r.key.split('/').at(-2)!));
    expect(rows.length).toBeGreaterThan(10);
    expect(older.size).toBeLessThan(FIXTURE_BLOCKS.length);
    // Those blocks' rows under their contract alone, as that store kept them: a row per log, not one per block.
    const groups = store
      .range<GroupRow>('contractLogs', { start: `${CHAIN}/a/`, end: `${CHAIN}/a/\uffff` })
      .filter((r) => older.has(r.key.split('/').at(-1)!));
    expect(groups.length).toBeGreaterThan(10);
    store.transact(() => {
      for (const { key, value } of groups) {
        store.remove('contractLogs', key);
        // A log without topics is its own entry (the others are put below).
        for (const [li, entry] of groupEntries(value))
          if (typeof entry !== 'string') store.put('contractLogs', `${key}/${li.toString(16).padStart(6, '0')}`, entry);
      }
      for (const { key, value } of rows) {
        const [, , contract, , n, li] = key.split('/');
        store.put('contractLogs', `${CHAIN}/a/${contract}/${n}/${li}`, value);
        store.put('contractLogs', key, 0);
      }
    });
  }

  it('reads the rows a version-5 store holds (each log under its contract, 0 under its topic0) the same, in a store holding both forms', async () => {
    // The migration to schema 13 leaves them so in the blocks that have undo rows.
    toVersion5();
    expect(await answers()).toEqual(compact);
  });

  it('reads the rows a store written before 2026-11-24 holds (each log an object, with its block time; block times without hashes) the same, without its old `transfers` rows', async () => {
    const prefix = `${CHAIN}/a/`;
    const rows = store
      .range<ContractLog | string>('contractLogs', { start: prefix, end: `${prefix}\uffff` })
      // A log as its own row (contract/number/logIndex), not a block's row of a contract (contract/number).
      .filter((r) => Array.isArray(r.value) && r.key.slice(prefix.length).split('/').length === 3) as Array<{
      key: string;
      value: ContractLog;
    }>;
    const times = store.range<BlockTimeRow>('blockTimes', { start: `${CHAIN}/`, end: `${CHAIN}/\uffff` });
    expect(times.map((t) => t.value)).toEqual(
      FIXTURE_BLOCKS.map((n) => [expect.any(Number), store.get<string>('canon', blockKey(CHAIN, n))]),
    );
    store.transact(() => {
      for (const { key, value } of rows) {
        const n = parseInt(key.slice(prefix.length).split('/')[1]!, 16);
        const [tx, ti, topics, data] = value;
        store.put('contractLogs', key, { tx, ti, ts: blockTime(store, CHAIN, n)!, topics, data } satisfies OldContractLog);
      }
      for (const { key, value } of times) store.put('blockTimes', key, (value as [number, string])[0]);
      // The follower's rows of that store: never read.
      for (const s of scanned)
        store.put('transfers', erc20TransferKey(CHAIN, s.contract, s.block, s.logIndex), {
          kind: 'erc20',
          contract: s.contract,
          from: '0x0',
          to: '0x0',
          value: '0x0',
          transactionHash: '0x0',
          transactionIndex: 0,
        });
    });
    expect(Array.isArray(store.get('contractLogs', rows[0]!.key))).toBe(false);
    expect(await answers()).toEqual(compact);
    expect(hashWithoutSummary(scanned.at(-1)!)).toBe(scanned.at(-1)!.hash);
  });

  it("reads the older stores' rows of the two tests above the same once the migration to schema 13 has grouped them (a topic0's 0 read from its block's row)", async () => {
    expect(store.range('contractLogs', { start: `${CHAIN}/t/`, end: `${CHAIN}/t/\uffff` }).some((r) => r.value === 0)).toBe(true);
    expect(regroup(store, 'contractLogs', '', contractListEnd, () => false)).toBeGreaterThan(10);
    expect(await answers()).toEqual(compact);
  });
});
