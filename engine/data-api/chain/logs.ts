import { decodeEventLog, toEventSelector } from 'viem/utils';
import type { AbiEvent, Hex } from 'viem';
import { z } from 'zod';
import { badRequest } from '../../errors.js';
import { rangePage } from '../../page.js';
import { jsonValue } from '../common/abi-values.js';
import { indexedTo } from '../common/read-at.js';
import { blockSpan, spanBounds } from '../common/block-times.js';
import type { DataDeps } from '../common/deps.js';
import { pageBlocks } from '../common/pages.js';
import type { PageBlock } from '../common/indexed-blocks.js';
import { blockNumber, blockRange, cursor, evmAddress, hash32, limit, order } from '../common/params.js';
import { pageAnswer } from '../common/answer-parts.js';
import {
  byContract,
  byTopic0,
  contractEntryLog,
  contractLogReads,
  topicEntryLog,
  type ContractEntry,
  type LogRow,
  type TopicEntry,
} from './index/logs.js';

/** GET /:address/logs and POST /:address/events: a contract's logs from the `contractLogs` rows (index/logs.ts). */

const rangeQuery = {
  address: evmAddress,
  ...blockRange,
  limit: limit(),
  cursor,
  order,
};

export const contractLogsQuery = z
  .object({
    ...rangeQuery,
    block_number: blockNumber.optional(),
    topic0: hash32.optional(),
    topic1: hash32.optional(),
    topic2: hash32.optional(),
    topic3: hash32.optional(),
  })
  // block_number is one block: the range from it to it.
  .transform((q) => (q.block_number === undefined ? q : { ...q, from_block: q.block_number, to_block: q.block_number }));

type Topics = Array<string | undefined>;

/** One page of a contract's logs, optionally those of one topic0 and with topic1…3 filters; rows with their key's position. */
async function logPage(
  deps: Pick<DataDeps, 'kv' | 'indexer'>,
  chain: string,
  q: z.output<typeof contractLogsQuery>,
  topics: Topics,
  list: string,
) {
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
    const log =
      topic0 === undefined
        ? contractEntryLog(deps.kv, chain, q.address, at, value as ContractEntry)
        : topicEntryLog(deps.kv, chain, q.address, at, value as TopicEntry);
    seen.set(key, log);
    return log;
  };
  const filtered = rest.some((t) => t !== undefined);
  const page = rangePage<unknown>(contractLogReads(deps.kv), 'contractLogs', prefix, {
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

/** Where a log stands (`placed`). */
const placedAnswer = {
  transaction_hash: z.string(),
  address: z.string(),
  block_timestamp: z.string(),
  block_number: z.string(),
  block_hash: z.string(),
};
const topicAnswer = z.string().nullable();

/** GET /:address/logs */
export const contractLogsAnswer = pageAnswer(
  z.object({
    ...placedAnswer,
    transaction_index: z.string(),
    log_index: z.string(),
    data: z.string(),
    topic0: topicAnswer.meta({ description: 'null for an anonymous event without topics' }),
    topic1: topicAnswer,
    topic2: topicAnswer,
    topic3: topicAnswer,
  }),
);

/** POST /:address/events: `data` is the event's arguments as the ABI decodes them. */
export const contractEventsAnswer = pageAnswer(
  z.object({
    ...placedAnswer,
    data: z
      .union([z.record(z.string(), z.unknown()), z.array(z.unknown())])
      .meta({ description: "The event's arguments by name (by position when the ABI names none): integers as decimal strings" }),
  }),
);

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
    ctx.addIssue({
      code: 'custom',
      message: 'not an event topic (a 32-byte hash or a signature such as Transfer(address,address,uint256))',
    });
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
export async function contractEvents(
  deps: Pick<DataDeps, 'kv' | 'indexer'>,
  chain: string,
  q: z.output<typeof contractEventsQuery>,
  abi: z.output<typeof contractEventsBody>,
) {
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
