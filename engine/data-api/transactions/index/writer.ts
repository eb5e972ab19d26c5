import { pos, posAt, type Transfer } from '../../../evm/store.js';
import type { Kv } from '../../../ports.js';
import type { DataIndex, IndexedBlock, IndexWriter } from '../../common/indexer.js';
import { groupedReads, groupKey, groupRow } from '../../common/block-groups.js';
import { nativeParties, summarize, summaryRow } from './summary.js';

/**
 * Native transactions and activity (storage/README.md, "Native transactions and activity"):
 *   nativeTxs   h/chain/hash                           [block number, index]: where a transaction is
 *               s/chain/number(12 hex)/index(6 hex)    SummaryRow (a TxSummary as a tuple): what its item shows, kept past pruning
 *               b/chain/number(12 hex)                 the block's timestamp (dates → blocks)
 *   addressTxs  tx/chain/address/number                the block's transactions the address sent, received, created or took part in
 *                                                      by an internal call: a row per (address, block) (common/block-groups.ts), read as
 *                                                      tx/chain/address/number/index entries (txListEnd)
 *               hist/chain/address/number/index        one of its history not in its tx/ list: it moved the address's tokens or NFTs or
 *                                                      approved for it (the wallet history is both lists, by position: historyPrefixes)
 *   activity    address/chain                          Activity: first and last transaction, counters
 * Every write goes through the IndexWriter, so a reorg takes it back.
 */

/**
 * A transaction's place: block, index in it, block time (unix seconds). Its hash is its `nativeTxs` summary's
 * (kept apart: an activity row is read and written for every party of every transaction, and stays small).
 */
export type Moment = [block: number, index: number, timestamp: number];
/** A moment as a store written before 2026-11-24 holds it (still read; kept as the row's first). */
export interface StoredMoment {
  block: number;
  timestamp: number;
  hash: string;
}

/** Any transaction of the address's history: sent, received, an internal call's party, or moving its tokens. */
export interface Activity {
  first: Moment | StoredMoment;
  last: Moment | StoredMoment;
  /** Transactions in the address's `tx/` list. */
  txs: number;
  /** ERC-20 transfers from or to the address. */
  erc20: number;
  /** ERC-721 and ERC-1155 transfers (one per id of a batch) from or to the address. */
  nft: number;
}

/** A transaction's place in key order: block number (12 hex) / index in the block (6 hex), written as pos() writes a log's. */
export const txPosition = (block: number, index: number): string => pos(block, index);
export const hashKey = (chain: string, hash: string): string => `h/${chain}/${hash.toLowerCase()}`;
export const summaryKey = (chain: string, block: number, index: number): string => `s/${chain}/${txPosition(block, index)}`;
/** The key prefix of an address's list: `tx` (native) or `hist` (wallet history). */
export const addressPrefix = (list: 'tx' | 'hist', chain: string, address: string): string => `${list}/${chain}/${address.toLowerCase()}/`;
export const activityKey = (address: string, chain: string): string => `${chain}/${address.toLowerCase()}`;

/**
 * An address's wallet history: its `tx/` list and its `hist/` rows (the rest of its history), read as one list by
 * position. Since schema version 11 no transaction is in both: a native party's `hist/` row would repeat its `tx/`
 * one (a sixth of a mainnet block's index rows).
 */
export const historyPrefixes = (chain: string, address: string): [string, string] => [
  addressPrefix('tx', chain, address),
  addressPrefix('hist', chain, address),
];

/** The position just past `at` (a txPosition) in the list's order, for mergeRanges; undefined past either end. */
export function nextPosition(at: string, reverse: boolean): string | undefined {
  const { blockNumber: block, logIndex: index } = posAt(at);
  if (reverse) return index > 0 ? txPosition(block, index - 1) : block > 0 ? txPosition(block - 1, MAX_INDEX) : undefined;
  return index < MAX_INDEX ? txPosition(block, index + 1) : txPosition(block + 1, 0);
}
/** The largest index a position's six hex digits hold. */
const MAX_INDEX = 0xff_ffff;

/**
 * Where the prefix of an address's `tx/` list ends in a key of it (`tx/chain/address/`), −1 for any other key: the
 * list is kept a row per block (common/block-groups.ts groupedReads).
 */
export function txListEnd(key: string): number {
  if (!key.startsWith('tx/')) return -1;
  const chainEnd = key.indexOf('/', 3);
  const addressEnd = chainEnd < 0 ? -1 : key.indexOf('/', chainEnd + 1);
  return addressEnd < 0 ? -1 : addressEnd + 1;
}

/** `kv` reading each address's `tx/` list an entry per transaction (`tx/chain/address/number/index`). */
export const addressTxReads = (kv: Kv): Kv => groupedReads(kv, 'addressTxs', txListEnd);

/** Whether an `addressTxs` row is a `hist/` row repeating its address's `tx/` row (as before schema version 11): the upgrade drops it. */
export const repeatsTx = (kv: Pick<Kv, 'has'>, key: string): boolean =>
  key.startsWith('hist/') && kv.has('addressTxs', `tx/${key.slice('hist/'.length)}`);

/** The block and index of an `addressTxs` key (its last two segments, txPosition's). */
export function positionOf(key: string): { block: number; index: number } {
  const { blockNumber, logIndex } = posAt(key);
  return { block: blockNumber, index: logIndex };
}

type Counter = 'txs' | 'erc20' | 'nft';

/**
 * A block's activity, gathered per address before it is written: one read and one write per address and block
 * (a busy contract is a party of many of a block's transactions).
 */
class BlockActivity {
  private readonly rows = new Map<string, Activity>();

  touch(address: string, at: Moment, counter: Counter): void {
    const a = address.toLowerCase();
    const row = this.rows.get(a) ?? { first: at, last: at, txs: 0, erc20: 0, nft: 0 };
    row.last = at;
    row[counter] += 1;
    this.rows.set(a, row);
  }

  /** Adds the block's counts to each address's row; blocks are applied in order, so a row's first activity is the first written. */
  write(w: IndexWriter, chain: string): void {
    for (const [address, b] of this.rows) {
      const key = activityKey(address, chain);
      const was = w.get<Activity>('activity', key);
      w.put(
        'activity',
        key,
        was === undefined ? b : { first: was.first, last: b.last, txs: was.txs + b.txs, erc20: was.erc20 + b.erc20, nft: was.nft + b.nft },
      );
    }
  }
}

/** Transactions written per step of a block (DataIndex.steps): a busy mainnet block's rows are some 5 ms of the event loop. */
const STEP_TXS = 64;

function* applyBlock(w: IndexWriter, block: IndexedBlock): Generator<void> {
  const { chain } = block;
  const all = block.transfers;
  const summaries = summarize(block.record, all);
  if (summaries.length > STEP_TXS) yield;
  const transfers: Transfer[][] = summaries.map(() => []);
  for (const t of all) transfers[t.transactionIndex]?.push(t);
  const activity = new BlockActivity();
  /** Each native party's transactions of the block, in order: its `tx/` row. */
  const txs = new Map<string, Array<[number, 1]>>();
  // Transaction by transaction, so the activity rows' last moment is the block's last transaction of each address.
  for (let i = 0; i < summaries.length; i++) {
    if (i > 0 && i % STEP_TXS === 0) yield;
    const s = summaries[i]!;
    w.put('nativeTxs', hashKey(chain, s.hash), [s.blockNumber, s.index]);
    w.put('nativeTxs', summaryKey(chain, s.blockNumber, s.index), summaryRow(s));
    const at = txPosition(s.blockNumber, s.index);
    const moment: Moment = [s.blockNumber, s.index, s.timestamp];
    const native = nativeParties(s);
    for (const a of native) {
      const list = txs.get(a);
      if (list === undefined) txs.set(a, [[s.index, 1]]);
      else list.push([s.index, 1]);
      activity.touch(a, moment, 'txs');
    }
    const tokenParties = new Set<string>();
    for (const t of transfers[i]!) {
      // A transfer to oneself counts once.
      for (const a of new Set([t.from.toLowerCase(), t.to.toLowerCase()])) {
        tokenParties.add(a);
        activity.touch(a, moment, t.kind === 'erc20' ? 'erc20' : 'nft');
      }
    }
    // The rest of the history: its native parties have it in their `tx/` list.
    for (const a of new Set([...tokenParties, ...s.approvals.map((x) => x.owner)]))
      if (!native.has(a)) w.put('addressTxs', `${addressPrefix('hist', chain, a)}${at}`, 1);
  }
  if (summaries.length > STEP_TXS) yield;
  for (const [a, list] of txs) w.put('addressTxs', groupKey(addressPrefix('tx', chain, a), block.number), groupRow(list));
  activity.write(w, chain);
}

export const nativeTxIndex: DataIndex<void> = {
  name: 'native-transactions',
  apply(w, block) {
    for (const _ of applyBlock(w, block));
  },
  steps: (w, block) => applyBlock(w, block),
};
