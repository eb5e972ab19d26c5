import { decodeEventLog, toEventSelector, type AbiEvent, type Hex } from 'viem';
import { z } from 'zod';
import { badRequest } from '../../errors.js';
import { rangePage } from '../../page.js';
import { jsonValue } from '../common/abi-values.js';
import { indexedTo } from '../common/read-at.js';
import { blockSpan, spanBounds } from '../common/block-times.js';
import type { DataDeps } from '../common/deps.js';
import { pageBlocks } from '../erc20/reads.js';
import type { PageBlock } from '../common/indexed-blocks.js';
import { pos } from '../../evm/store.js';
import type { DataIndex } from '../common/indexer.js';
import type { Kv } from '../../ports.js';
import { blockNumber, blockRange, cursor, evmAddress, hash32, limit, order } from '../common/params.js';

/**
 * Logs by emitting contract: `contractLogs` holds every log of every indexed
 * block under its contract and topic0 (`chain/t/address/topic0/number/logIndex`
 * → the log), and a key per log under its contract alone (`chain/a/address/
 * number/logIndex` → its topic0; the log itself when it has no topics), so a
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

const byContract = (chain: string, address: string): string => `${chain}/a/${address}/`;
/** The key prefix of a contract's logs of one topic0 (`chain/t/address/topic0/`), each key number/logIndex → the log. */
export const byTopic0 = (chain: string, address: string, topic0: string): string => `${chain}/t/${address}/${topic0}/`;

/** The log of a contract's `a/` entry at `at` (number/logIndex): a point read under its topic0, unless the entry holds it. */
function contractEntryLog(kv: Kv, chain: string, address: string, at: string, value: ContractEntry): LogRow | undefined {
  if (typeof value !== 'string') return logRow(value);
  const log = kv.get<TopicEntry>('contractLogs', byTopic0(chain, address, value) + at);
  return log === undefined || log === 0 ? undefined : logRow(log);
}

/** The log of a `t/` entry at `at`: its value, or (a store written by schema version 5 or older) the contract's `a/` entry. */
function topicEntryLog(kv: Kv, chain: string, address: string, at: string, value: TopicEntry): LogRow | undefined {
  if (value !== 0) return logRow(value);
  const old = kv.get<ContractEntry>('contractLogs', byContract(chain, address) + at);
  return old === undefined || typeof old === 'string' ? undefined : logRow(old);
}

/** The log `address` emitted at (number, logIndex) if its topic0 is `topic0` (lower case); one read. */
export function logAt(kv: Kv, chain: string, address: string, number: number, logIndex: number, topic0: string): LogRow | undefined {
  const at = pos(number, logIndex);
  const value = kv.get<TopicEntry>('contractLogs', byTopic0(chain, address, topic0) + at);
  return value === undefined ? undefined : topicEntryLog(kv, chain, address, at, value);
}

/** A page's `t/` entries (keys under `byTopic0(chain, address, …)`) as their logs. */
export const topicEntriesLog = (kv: Kv, chain: string, address: string) => (value: TopicEntry, key: string): LogRow | undefined => topicEntryLog(kv, chain, address, key.slice(key.length - POS_LENGTH), value);
/** number/logIndex: the last characters of every `contractLogs` key. */
const POS_LENGTH = pos(0, 0).length;

export const contractLogsIndex: DataIndex = {
  name: 'contractLogs',
  apply(w, block) {
    block.record.txs.forEach((t, ti) => {
      for (const l of t.logs) {
        const address = l.address.toLowerCase();
        const at = pos(block.number, Number(l.logIndex));
        const topics = l.topics.map((x) => x.toLowerCase());
        const log: ContractLog = [String(t.tx['hash']).toLowerCase(), ti, topics, l.data];
        if (topics[0] === undefined) w.put('contractLogs', byContract(block.chain, address) + at, log satisfies ContractEntry);
        else {
          w.put('contractLogs', byContract(block.chain, address) + at, topics[0] satisfies ContractEntry);
          w.put('contractLogs', byTopic0(block.chain, address, topics[0]) + at, log satisfies TopicEntry);
        }
      }
    });
  },
};


const rangeQuery = {
  address: evmAddress,
  ...blockRange,
  limit: limit(),
  cursor,
  order,
};

export const contractLogsQuery = z
  .object({ ...rangeQuery, block_number: blockNumber.optional(), topic0: hash32.optional(), topic1: hash32.optional(), topic2: hash32.optional(), topic3: hash32.optional() })
  // block_number is one block: the range from it to it.
  .transform((q) => (q.block_number === undefined ? q : { ...q, from_block: q.block_number, to_block: q.block_number }));

type Topics = Array<string | undefined>;

/** One page of a contract's logs, optionally those of one topic0 and with topic1…3 filters; rows with their key's position. */
async function logPage(deps: Pick<DataDeps, 'kv' | 'indexer'>, chain: string, q: z.output<typeof contractLogsQuery>, topics: Topics, list: string) {
  await indexedTo(deps, chain, q.to_block);
  const bounds = blockSpan(deps.kv, chain, q);
  if (bounds === null) return { page: 0, cursor: null, rows: [] };
  const [topic0, ...rest] = topics;
  const prefix = topic0 === undefined ? byContract(chain, q.address) : byTopic0(chain, q.address, topic0);
  // Undefined only for an entry read while a reorg took its log back (each read is its own snapshot): left out.
  // Each entry's log is read once: a topic filter reads it, and the page then answers it.
  const seen = new Map<string, LogRow | undefined>();
  const rowOf = (value: unknown, key: string): LogRow | undefined => {
    if (seen.has(key)) return seen.get(key);
    const at = key.slice(prefix.length);
    const log = topic0 === undefined ? contractEntryLog(deps.kv, chain, q.address, at, value as ContractEntry) : topicEntryLog(deps.kv, chain, q.address, at, value as TopicEntry);
    seen.set(key, log);
    return log;
  };
  const filtered = rest.some((t) => t !== undefined);
  const page = rangePage<unknown>(deps.kv, 'contractLogs', prefix, {
    // The query names the list (not the blocks its dates come to: a date past the head moves with each block).
    list: `${list} ${q.order} ${q.address} ${topics.join(',')} ${[q.from_block, q.to_block, q.from_date, q.to_date].join(',')}`,
    limit: q.limit,
    reverse: q.order === 'DESC',
    cursor: q.cursor,
    ...spanBounds(bounds),
    ...(filtered ? { keep: (v: unknown, key: string) => rest.every((t, i) => t === undefined || rowOf(v, key)?.topics[i + 1] === t) } : {}),
  });
  const rows = page.rows.flatMap(({ key, value }) => {
    const [n, li] = key.slice(prefix.length).split('/') as [string, string];
    const log = rowOf(value, key);
    return log === undefined ? [] : [{ number: parseInt(n, 16), logIndex: parseInt(li, 16), log }];
  });
  return { page: page.page, cursor: page.cursor, rows };
}

/** Where a log stands, in the interface's field names (`blockOf`: the page's blocks, each read once). */
function placed(blockOf: (number: number) => PageBlock, address: string, r: { number: number; log: LogRow }) {
  const block = blockOf(r.number);
  return {
    transaction_hash: r.log.tx,
    address,
    block_timestamp: block.iso,
    block_number: String(r.number),
    block_hash: block.hash,
  };
}

/** GET /:address/logs */
export async function contractLogs(deps: Pick<DataDeps, 'kv' | 'indexer'>, chain: string, q: z.output<typeof contractLogsQuery>) {
  const page = await logPage(deps, chain, q, [q.topic0, q.topic1, q.topic2, q.topic3], 'logs');
  const blockOf = pageBlocks(deps, chain);
  const result = page.rows.map((r) => ({
    ...placed(blockOf, q.address, r),
    transaction_index: String(r.log.ti),
    log_index: String(r.logIndex),
    data: r.log.data,
    topic0: r.log.topics[0] ?? null,
    topic1: r.log.topics[1] ?? null,
    topic2: r.log.topics[2] ?? null,
    topic3: r.log.topics[3] ?? null,
  }));
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result };
}

/** `topic`: the event's topic0 as a hash, or its signature (`Transfer(address,address,uint256)`). */
const topic = z.string().transform((t, ctx) => {
  if (/^0x[0-9a-fA-F]{64}$/.test(t)) return t.toLowerCase();
  try {
    return toEventSelector(t.replace(/^event\s+/, '')).toLowerCase();
  } catch {
    ctx.addIssue({ code: 'custom', message: 'not an event topic (a 32-byte hash or a signature such as Transfer(address,address,uint256))' });
    return z.NEVER;
  }
});

export const contractEventsQuery = z.object({ ...rangeQuery, topic });

const abiItem = z.object({ type: z.string(), name: z.string().optional(), inputs: z.array(z.unknown()).optional() }).passthrough();
/** The body: the event's ABI item (the SDK sends it alone) or an ABI holding it. */
export const contractEventsBody = z.union([abiItem, z.array(abiItem)], 'an event ABI item or an ABI (array of items)');

/** The ABI's event whose topic0 is `topic`. */
function eventOf(abi: z.output<typeof contractEventsBody>, topic: string): AbiEvent {
  for (const item of Array.isArray(abi) ? abi : [abi]) {
    if (item.type !== 'event') continue;
    try {
      if (toEventSelector(item as unknown as AbiEvent).toLowerCase() === topic) return item as unknown as AbiEvent;
    } catch {
      // a malformed item: not this event
    }
  }
  throw badRequest('abi', `holds no event whose topic is ${topic}`);
}

/** POST /:address/events: the contract's logs of one event, decoded (a log the ABI does not decode, an anonymous namesake, is left out). */
export async function contractEvents(deps: Pick<DataDeps, 'kv' | 'indexer'>, chain: string, q: z.output<typeof contractEventsQuery>, abi: z.output<typeof contractEventsBody>) {
  const event = eventOf(abi, q.topic);
  const decode = (log: LogRow) => {
    try {
      return decodeEventLog({ abi: [event], topics: log.topics as [Hex, ...Hex[]], data: log.data as Hex, strict: true }).args;
    } catch {
      return undefined;
    }
  };
  const page = await logPage(deps, chain, { ...q, block_number: undefined, topic0: q.topic }, [q.topic], 'events');
  const blockOf = pageBlocks(deps, chain);
  const result = page.rows.flatMap((r) => {
    const args = decode(r.log);
    return args === undefined ? [] : [{ ...placed(blockOf, q.address, r), data: jsonValue(args) }];
  });
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result };
}
