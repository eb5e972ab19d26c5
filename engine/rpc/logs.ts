import { ProbeKind, readProbe } from '../evm/probe.js';
import { rpcLog } from '../evm/record.js';
import { KeySet, buildKeySet } from '../match/key-set.js';
import { LIMIT_EXCEEDED, type RpcError } from './envelope.js';
import type { Held } from './held.js';
import { isHash } from './methods.js';
import { Lru } from './share.js';

/**
 * eth_getLogs from the store. The probe column of each block lists every log's
 * emitter and topic0 with the log's ordinal, so an address or topic0 filter
 * finds its logs without decoding the block; only the logs found are decoded
 * (RecordView), serialized once as the node's JSON and kept with their topics
 * and the block's probe column (BlockLogs), so a later query over the same
 * blocks reads one key per block and joins text.
 */
const MAX_BLOCK_RANGE = 10_000;
export const MAX_RESULTS = 10_000;

const rangeTooLarge: RpcError = { code: LIMIT_EXCEEDED, message: `query exceeds max block range ${MAX_BLOCK_RANGE}` };
export const tooManyResults: RpcError = { code: LIMIT_EXCEEDED, message: `query returned more than ${MAX_RESULTS} results` };

/**
 * How the node treats a filter's topic positions beyond a log's own topics,
 * where nodes differ: anvil (alloy) lets wildcard positions there match
 * (`match`), geth requires the log to have every position (`mismatch`).
 * Unknown: a filter with trailing wildcards goes to the node.
 */
export type TopicsBeyondLog = 'match' | 'mismatch' | undefined;

interface LogQuery {
  from: number;
  to: number;
  addresses: KeySet | null;
  topic0: KeySet | null;
  /** Per position: the topics allowed (lower case), or null for any. */
  topics: ReadonlyArray<ReadonlySet<string> | null>;
  /** A log with fewer topics than this does not match. */
  minTopics: number;
}

/** What log queries read of one block: its probe column, and the logs they needed (by ordinal) as the node's JSON text, with their topics. */
export interface BlockLogs {
  probe: Uint8Array;
  texts: ReadonlyArray<string | undefined>;
  topics: ReadonlyArray<readonly string[] | undefined>;
  /** Bytes of the probe column and characters of the texts. */
  size: number;
}

/** Blocks already read, by Held.blockId, bounded by their size. */
export const blockLogs = (maxSize: number): Lru<BlockLogs> => new Lru<BlockLogs>(1_000_000, maxSize, (b) => b.size);

/** The matching logs as JSON text, the limit error, or undefined when the store cannot answer exactly (the node does). */
export function logsFromStore(
  held: Held,
  params: readonly unknown[],
  beyond: TopicsBeyondLog,
  seen: Lru<BlockLogs>,
): string[] | RpcError | undefined {
  const q = logQuery(held, params, beyond);
  if (q === undefined || 'code' in q) return q;
  const out: string[] = [];
  for (let n = q.from; n <= q.to; n++) {
    const id = held.blockId(n);
    let block = seen.get(id);
    if (block === undefined) {
      const probe = held.probe(n);
      if (probe === undefined) return undefined;
      block = { probe: Uint8Array.prototype.slice.call(probe), texts: [], topics: [], size: probe.byteLength };
      seen.set(id, block);
    }
    const found = candidates(block.probe, q);
    if (found.length === 0) continue;
    const logs = readLogs(held, n, id, block, found, seen);
    if (logs === undefined) return undefined;
    for (const ordinal of found) {
      if (!topicsMatch(logs.topics[ordinal]!, q)) continue;
      if (out.length === MAX_RESULTS) return tooManyResults;
      out.push(logs.texts[ordinal]!);
    }
  }
  return out;
}

/** The block's logs with these ordinals: those not read before are decoded from the record, and kept. */
function readLogs(
  held: Held,
  n: number,
  id: string,
  known: BlockLogs,
  ordinals: readonly number[],
  seen: Lru<BlockLogs>,
): BlockLogs | undefined {
  const missing = ordinals.filter((o) => known.texts[o] === undefined);
  if (missing.length === 0) return known;
  const view = held.record(n);
  if (view === undefined) return undefined;
  const hash = view.headerField('hash') as string;
  const number = view.headerField('number') as string;
  const texts = [...known.texts];
  const topics = [...known.topics];
  let size = known.size;
  for (const ordinal of missing) {
    const log = view.log(ordinal);
    const txIndex = view.logTx(ordinal);
    const text = JSON.stringify(rpcLog(log, hash, number, view.txField(txIndex, 'hash') as string, `0x${txIndex.toString(16)}`));
    texts[ordinal] = text;
    topics[ordinal] = log.topics;
    size += text.length;
  }
  const logs = { probe: known.probe, texts, topics, size };
  seen.set(id, logs);
  return logs;
}

/**
 * The limit error for a range known to be too large before anything is read,
 * wherever the call is answered. A tag the store cannot place counts as
 * unknown; "latest" is at least the store's head (the store follows the node).
 */
function rangeLimit(held: Held, params: readonly unknown[]): RpcError | undefined {
  const f = params[0] as { fromBlock?: unknown; toBlock?: unknown; blockHash?: unknown } | undefined;
  if (typeof f !== 'object' || f === null || f.blockHash !== undefined) return undefined;
  const at = (p: unknown): number | undefined =>
    p === undefined || p === 'latest' || p === 'pending' ? Math.max(held.latest ?? -1, held.head) : held.number(p);
  const from = at(f.fromBlock);
  const to = at(f.toBlock);
  return from !== undefined && to !== undefined && to >= 0 && to - from + 1 > MAX_BLOCK_RANGE ? rangeTooLarge : undefined;
}

function logQuery(held: Held, params: readonly unknown[], beyond: TopicsBeyondLog): LogQuery | RpcError | undefined {
  const f = params[0];
  if (params.length !== 1 || typeof f !== 'object' || f === null || Array.isArray(f)) return undefined;
  const { fromBlock, toBlock, blockHash, address, topics, ...other } = f as Record<string, unknown>;
  if (Object.keys(other).length > 0) return undefined;
  let from: number | undefined;
  let to: number | undefined;
  if (blockHash !== undefined) {
    if (fromBlock !== undefined || toBlock !== undefined || !isHash(blockHash)) return undefined;
    from = to = held.numberOf(blockHash);
  } else {
    const limit = rangeLimit(held, params);
    if (limit !== undefined) return limit;
    from = held.number(fromBlock ?? 'latest');
    to = held.number(toBlock ?? 'latest');
  }
  if (from === undefined || to === undefined || !held.holds(from, to)) return undefined;
  const addresses = addressSet(address);
  const positions = topicSets(topics);
  if (addresses === undefined || positions === undefined) return undefined;
  // Trailing wildcards change the answer only by the node's rule for positions beyond a log's topics.
  let last = positions.length - 1;
  while (last >= 0 && positions[last] === null) last--;
  if (last < positions.length - 1 && beyond === undefined) return undefined;
  const first = positions[0];
  return {
    from,
    to,
    addresses: addresses.length === 0 ? null : keySet(20, addresses),
    topic0: first === null || first === undefined ? null : keySet(32, [...first]),
    topics: positions,
    minTopics: beyond === 'mismatch' ? positions.length : last + 1,
  };
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** The filter's addresses (lower case, distinct; empty for any), or undefined when malformed. */
function addressSet(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  if (!list.every((a): a is string => typeof a === 'string' && ADDRESS.test(a))) return undefined;
  return [...new Set(list.map((a) => a.toLowerCase()))];
}

/** Per position the allowed topics, null for a wildcard (null or []); undefined when malformed. */
function topicSets(v: unknown): Array<Set<string> | null> | undefined {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > 4) return undefined;
  const out: Array<Set<string> | null> = [];
  for (const p of v) {
    const list = p === null ? [] : Array.isArray(p) ? p : [p];
    if (!list.every(isHash)) return undefined;
    out.push(list.length === 0 ? null : new Set(list.map((t) => t.toLowerCase())));
  }
  return out;
}

const keySet = (width: 20 | 32, keys: readonly string[]): KeySet =>
  new KeySet(
    buildKeySet(
      width,
      keys.map((k) => ({ key: Buffer.from(k.slice(2), 'hex'), streams: [0] })),
    ),
  );

/** The ordinals of the block's logs that pass the address and topic0 filters, ascending, read from the probe column alone. */
function candidates(probe: Uint8Array, q: LogQuery): number[] {
  const p = readProbe(probe);
  const dv = new DataView(probe.buffer, probe.byteOffset, probe.byteLength);
  let byAddress: number[] | undefined;
  if (q.addresses !== null || q.topic0 === null) {
    byAddress = [];
    for (let i = 0; i < p.addressCount; i++) {
      const ref = dv.getUint32(p.addressRefsAt + i * 4, true);
      if (ref >>> 24 !== ProbeKind.LogEmitter) continue;
      if (q.addresses === null || q.addresses.find(dv, p.addressesAt + i * 20) !== 0) byAddress.push(ref & 0xffffff);
    }
  }
  if (q.topic0 === null) return byAddress!;
  const byTopic: number[] = [];
  for (let i = 0; i < p.topicCount; i++) {
    if (q.topic0.find(dv, p.topicsAt + i * 32) !== 0) byTopic.push(dv.getUint32(p.topicRefsAt + i * 4, true) & 0xffffff);
  }
  return byAddress === undefined ? byTopic : intersect(byAddress, byTopic);
}

function intersect(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0, j = 0; i < a.length && j < b.length; ) {
    if (a[i]! < b[j]!) i++;
    else if (a[i]! > b[j]!) j++;
    else {
      out.push(a[i]!);
      i++;
      j++;
    }
  }
  return out;
}

function topicsMatch(topics: readonly string[], q: LogQuery): boolean {
  if (topics.length < q.minTopics) return false;
  for (let i = 0; i < q.topics.length; i++) {
    const allowed = q.topics[i];
    if (allowed === null || allowed === undefined) continue;
    if (i >= topics.length || !allowed.has(topics[i]!.toLowerCase())) return false;
  }
  return true;
}
