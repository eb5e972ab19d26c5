import { encode } from '@msgpack/msgpack';
import { JetStreamApiCodes, JetStreamApiError, jetstream, type JetStreamClient, type PubAck } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { ChainFamily } from '../engine/chains/registry.js';
import type { StartState } from '../engine/ingest/chain-start.js';
import {
  applyBlock,
  applyReorg,
  type ApplyOutcome,
  type BlockStores,
  type PublishedBlock,
  type PublishedReorg,
} from '../engine/ingest/commit.js';
import type { ChainEvents } from '../engine/ingest/follow.js';
import { randomAlphanumeric } from '../engine/random.js';
import type { Kv } from '../engine/ports.js';
import type { BusConnection } from './connect.js';
import { formatHeaders, readFormatted } from './format.js';

/**
 * The chains' blocks on a cluster: the node holding a chain's lease stores each block as the single process does,
 * then publishes it here as stored (its prepared record, probe column and index rows: no node prepares it again), and
 * each reorg; every other node writes them into its own store with the same code (engine/ingest/commit.ts).
 *
 * One message per block, never split: a block is applied in one transaction from one message, de-duplicated by one
 * id. A block over the server's max_payload is refused before it is sent, with an error naming the setting; the
 * documented server config (max_payload: 32MB; checked at start by checkMaxPayload: 8 MB, 32 MB for Bitcoin) holds
 * a full mainnet block as stored.
 */

/**
 * The format of the block messages this version writes and reads. 2: an EVM record's probe column may be of version
 * 2 (each key's hash lanes beside it, engine/evm/probe.ts), which a node before it cannot read; it reads format 1.
 */
export const BLOCKS_FORMAT = 2;

/** The subject of a chain's blocks and reorgs, in the order its follower stored them. */
export function blocksSubject(chain: string): string {
  // A subject's tokens are split at dots, and `*` and `>` are wildcards.
  if (!/^[A-Za-z0-9_-]+$/.test(chain)) throw new Error(`chain ${JSON.stringify(chain)} cannot name a NATS subject`);
  return `chainpost.blocks.${chain}`;
}

/** A stored block as published: `<chain>:<height>:<hash>` is its message id. */
export interface BlockMessage {
  v: number;
  kind: 'block';
  chain: string;
  height: number;
  hash: string;
  /** The control log's sequence the publishing node had applied: a node matches the block once it has applied as much. */
  controlSeq: number;
  family: ChainFamily;
  /** The family's prepared block, as stored. */
  block: unknown;
  /** The chain's state before and after the block, as the publishing node saved it. */
  before: StartState;
  after: StartState;
}

/** A reorg as published: blocks `height` (whose hash was `hash`) to `to` taken back. Its message id is random, chosen once. */
export interface ReorgMessage {
  v: number;
  kind: 'reorg';
  chain: string;
  height: number;
  hash: string;
  to: number;
  controlSeq: number;
  family: ChainFamily;
  after: StartState;
}

/** Room left in a message for its headers (the format, the message id): under a kilobyte. */
const HEADERS_ROOM = 1024;

/** A block (or reorg) the NATS server would not take: over its max_payload. */
export class BlockTooLargeError extends Error {}

export interface BlockPublisherOptions {
  /** How long a publish waits for JetStream's acknowledgement before it is sent again (same message id), ms. */
  publishTimeoutMs?: number;
}

/**
 * Publishes what a chain's follower stored, in the order it stored it: call it once each unit is durable. A publish
 * whose acknowledgement was lost is sent again with the same id, which JetStream appends once.
 */
export class BlockPublisher {
  private readonly js: JetStreamClient;
  private readonly publishTimeoutMs: number;
  /** Per chain, the sequence of the last reorg published: a block published before it and again since is new. */
  private readonly reorgSeq = new Map<string, number>();

  constructor(
    private readonly bus: BusConnection,
    options: BlockPublisherOptions = {},
  ) {
    this.js = jetstream(bus.nc);
    this.publishTimeoutMs = options.publishTimeoutMs ?? 5_000;
  }

  /**
   * Publishes a stored block. `after`: the sequence of the chain's last message as this node knows it; JetStream
   * refuses the publish (10071) when another came since (another node published the chain: this one is stale).
   */
  async publishBlock(family: ChainFamily, published: PublishedBlock, controlSeq: number, after?: number): Promise<PubAck> {
    const { chain, block } = published;
    const message: BlockMessage = {
      v: BLOCKS_FORMAT,
      kind: 'block',
      chain,
      height: block.number,
      hash: block.hash,
      controlSeq,
      family,
      block,
      before: published.before,
      after: published.after,
    };
    const id = `${chain}:${block.number}:${block.hash}`;
    const ack = await this.publish(message, id, after);
    // JetStream keeps ids two minutes: a block back on the canonical chain within them (a reorg there and back)
    // would be taken for the copy the reorg removed. Published again under an id of its own.
    const reorg = this.reorgSeq.get(chain);
    if (ack.duplicate && reorg !== undefined && ack.seq < reorg) return this.publish(message, `${id}:${reorg}`, after);
    return ack;
  }

  async publishReorg(family: ChainFamily, reorg: PublishedReorg, controlSeq: number, after?: number): Promise<PubAck> {
    const message: ReorgMessage = {
      v: BLOCKS_FORMAT,
      kind: 'reorg',
      chain: reorg.chain,
      height: reorg.from,
      hash: reorg.hash,
      to: reorg.to,
      controlSeq,
      family,
      after: reorg.after,
    };
    const ack = await this.publish(message, `${reorg.chain}:reorg:${randomAlphanumeric(22)}`, after);
    this.reorgSeq.set(reorg.chain, ack.seq);
    return ack;
  }

  private async publish(message: BlockMessage | ReorgMessage, id: string, after?: number): Promise<PubAck> {
    const { data, headers } = blocksMessage(message);
    const max = this.bus.nc.info?.max_payload;
    if (max !== undefined && data.byteLength + HEADERS_ROOM > max)
      throw new BlockTooLargeError(
        `block ${message.height} of ${message.chain} is ${data.byteLength} bytes as stored, over the NATS server's max_payload of ${max} bytes: ` +
          'set max_payload: 32MB in its configuration',
      );
    const subject = blocksSubject(message.chain);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.js.publish(subject, data, {
          msgID: id,
          headers,
          timeout: this.publishTimeoutMs,
          ...(after === undefined ? {} : { expect: { lastSubjectSequence: after } }),
        });
      } catch (err) {
        if (attempt >= 3 || !this.bus.up() || isStale(err)) throw err;
      }
    }
  }
}

/** JetStream's refusal of a publish whose expected last sequence of the subject is not the last: another came since. */
export const isStale = (err: unknown): boolean =>
  err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence;

/** A message's bytes and headers. */
export function blocksMessage(message: BlockMessage | ReorgMessage): { data: Uint8Array; headers: MsgHdrs } {
  // Absent fields stay absent (msgpack would write undefined as nil, read back as null).
  return { data: encode(message, { ignoreUndefined: true }), headers: formatHeaders(BLOCKS_FORMAT) };
}

/** What reading and applying a message gave. */
export type BlockApplied =
  | (ApplyOutcome & { kind: 'block' | 'reorg'; chain: string; height: number; hash: string; controlSeq: number })
  | { newer: number }
  | { malformed: string };

/**
 * Writes a published block or reorg into this node's store, in one transaction, as the publishing node's commit
 * wrote it; `events` are this node's listeners (told `committed` once it is durable). Idempotent by (chain,
 * height, hash): a message applied twice (a consumer started again, a publish retried past JetStream's de-dup
 * window) changes nothing the second time. `stores`: each family's part of the commit path, by the family a
 * message names (app/ derives them from the server's families). `inside` runs in the same transaction, applied or
 * not (a consumer's position).
 */
export async function applyBlockMessage(
  kv: Kv,
  m: { data: Uint8Array; headers?: MsgHdrs | undefined },
  events: ChainEvents,
  stores: BlockStores,
  inside?: () => void,
): Promise<BlockApplied> {
  const read = readFormatted(m, BLOCKS_FORMAT);
  if (!('body' in read)) return read;
  const { kind, chain, height, hash, controlSeq, family, after } = read.body;
  if (
    (kind !== 'block' && kind !== 'reorg') ||
    typeof chain !== 'string' ||
    typeof height !== 'number' ||
    typeof hash !== 'string' ||
    typeof controlSeq !== 'number' ||
    typeof after !== 'object' ||
    after === null
  )
    return { malformed: 'not a block or a reorg' };
  const store = typeof family === 'string' && Object.hasOwn(stores, family) ? stores[family as ChainFamily] : undefined;
  if (store === undefined) return { malformed: `family ${String(family)} has no stored blocks here` };
  let apply: () => ApplyOutcome;
  try {
    if (kind === 'reorg') {
      const to = read.body['to'];
      if (typeof to !== 'number') throw new Error('a reorg without its last block');
      const reorg: PublishedReorg = { chain, from: height, hash, to, after: after as StartState };
      apply = () => applyReorg(kv, store, reorg, events);
    } else {
      const before = read.body['before'];
      if (typeof before !== 'object' || before === null) throw new Error('a block without the state before it');
      const block = store.received(read.body['block']);
      if (block.number !== height || block.hash !== hash)
        throw new Error(`it holds block ${block.number} ${block.hash}, not ${height} ${hash}`);
      const published: PublishedBlock = { chain, block, before: before as StartState, after: after as StartState };
      apply = () => applyBlock(kv, store, published, events);
    }
  } catch (err) {
    return { malformed: err instanceof Error ? err.message : String(err) };
  }
  const outcome = await kv.transactAsync(() => {
    const done = apply();
    inside?.();
    return done;
  });
  if (outcome.applied) events.committed?.(chain);
  return { ...outcome, kind, chain, height, hash, controlSeq };
}
