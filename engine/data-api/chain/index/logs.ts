import type { Kv } from '../../../ports.js';
import { pos } from '../../../evm/store.js';
import { groupedEntry, groupedReads } from '../../common/block-groups.js';

/**
 * Logs by emitting contract: `contractLogs` holds every log of every indexed
 * block under its contract and topic0 (`chain/t/address/topic0/number/logIndex`
 * → the log), and under its contract alone a row per block (`chain/a/address/
 * number` → each log's index and topic0, the log itself when it has no topics;
 * read as an entry per log, `number/logIndex`: contractLogReads), so a
 * page of one event of a contract (a token's Transfers) reads its logs in the
 * page's range, and a page of all its logs a point read per log besides.
 * The rows stay when the block record is pruned. The row is the only stored
 * copy of an ERC-20 Transfer (engine/data-api/erc20/index/log.ts reads it as one).
 * GET /:address/logs answers them raw, POST /:address/events decoded with the
 * event's ABI (viem's decodeEventLog).
 */

/**
 * A stored log: its transaction's hash and index in the block, its topics (lower case) and data. The block's time
 * is `blockTimes`' (kept once per block). The hash stays in the row: the transaction summary has it too, but
 * reading it there costs a whole summary's decode per log, on lists that answer many logs.
 */
export type ContractLog = [tx: string, ti: number, topics: string[], data: string];
/** A log as a store written before 2026-11-24 holds it (still read): an object, with its block's time too. */
export interface OldContractLog {
  tx: string;
  ti: number;
  ts: number;
  topics: string[];
  data: string;
}
export type StoredContractLog = ContractLog | OldContractLog;
/**
 * An `a/` value: the log's topic0 (the log is under its topic0 key), or the log itself (a log without topics; in
 * a store written by schema version 5 or older every log, beside a `t/` value 0).
 */
export type ContractEntry = string | StoredContractLog;
/** A `t/` value: the log; 0 in a store written by schema version 5 or older (the log is its `a/` value). */
export type TopicEntry = ContractLog | 0;

/** A log row of either form, as its readers take it (the old form's `ts` is `blockTimes`' too). */
export interface LogRow {
  tx: string;
  ti: number;
  topics: string[];
  data: string;
}
export const logRow = (v: StoredContractLog): LogRow => (Array.isArray(v) ? { tx: v[0], ti: v[1], topics: v[2], data: v[3] } : v);

export const byContract = (chain: string, address: string): string => `${chain}/a/${address}/`;

/**
 * Where the prefix of a contract's `a/` list ends in a key of it (`chain/a/address/`), −1 for any other key: the
 * list is kept a row per block (common/block-groups.ts groupedReads), `number → [[logIndex, entry], …]`.
 */
export function contractListEnd(key: string): number {
  const chainEnd = key.indexOf('/');
  if (chainEnd < 0 || !key.startsWith('a/', chainEnd + 1)) return -1;
  const addressEnd = key.indexOf('/', chainEnd + 3);
  return addressEnd < 0 ? -1 : addressEnd + 1;
}

/** `kv` reading each contract's `a/` list an entry per log (`chain/a/address/number/logIndex`). */
export const contractLogReads = (kv: Kv): Kv => groupedReads(kv, 'contractLogs', contractListEnd);
/** The key prefix of a contract's logs of one topic0 (`chain/t/address/topic0/`), each key number/logIndex → the log. */
export const byTopic0 = (chain: string, address: string, topic0: string): string => `${chain}/t/${address}/${topic0}/`;

/** The log of a contract's `a/` entry at `at` (number/logIndex): a point read under its topic0, unless the entry holds it. */
export function contractEntryLog(kv: Kv, chain: string, address: string, at: string, value: ContractEntry): LogRow | undefined {
  if (typeof value !== 'string') return logRow(value);
  const log = kv.get<TopicEntry>('contractLogs', byTopic0(chain, address, value) + at);
  return log === undefined || log === 0 ? undefined : logRow(log);
}

/**
 * The log of a `t/` entry at `at`: its value, or (a store written by schema version 5 or older) the contract's `a/`
 * entry, in its own row or (grouped by the migration to schema 13) its block's.
 */
export function topicEntryLog(kv: Kv, chain: string, address: string, at: string, value: TopicEntry): LogRow | undefined {
  if (value !== 0) return logRow(value);
  const old = groupedEntry<ContractEntry>(kv, 'contractLogs', byContract(chain, address), at);
  return old === undefined || typeof old === 'string' ? undefined : logRow(old);
}

/** The log `address` emitted at (number, logIndex) if its topic0 is `topic0` (lower case); one read. */
export function logAt(kv: Kv, chain: string, address: string, number: number, logIndex: number, topic0: string): LogRow | undefined {
  const at = pos(number, logIndex);
  const value = kv.get<TopicEntry>('contractLogs', byTopic0(chain, address, topic0) + at);
  return value === undefined ? undefined : topicEntryLog(kv, chain, address, at, value);
}

/** A page's `t/` entries (keys under `byTopic0(chain, address, …)`) as their logs. */
export const topicEntriesLog =
  (kv: Kv, chain: string, address: string) =>
  (value: TopicEntry, key: string): LogRow | undefined =>
    topicEntryLog(kv, chain, address, key.slice(key.length - POS_LENGTH), value);
/** number/logIndex: the last characters of every `contractLogs` key. */
const POS_LENGTH = pos(0, 0).length;
