import type { Dispatcher } from '../delivery/dispatcher.js';
import { ApiError, notFound } from '../errors.js';
import { blockKey } from '../ingest/chain-store.js';
import type { FilterSet } from './filter-set.js';
import type { BuildWebhook } from './build.js';
import type { Kv } from '../ports.js';
import type { StoredStream } from '../streams/model.js';

/**
 * A stored block's webhook on demand, for the families whose streams take the
 * hosted service's block endpoints (Bitcoin, Solana): POST
 * /streams/:family/:chainId/block/:n answers the body a definition would get
 * for block (slot) n; …/block-to-webhook/:n/:id sends a stream the body its
 * addresses get. Matched and built as a delivery is (the family's filter set
 * and webhook builder), confirmed when the follower announced the block
 * confirmed.
 */
export interface ReplayFamily<S extends StoredStream> {
  /** The store's chain key. */
  chain: string;
  /** Throws a 400 naming chainId when it is not the family's chain. */
  checkChain(chainId: string): void;
  /** The family's filter set of one stream (index 0) with its addresses. */
  filter(stream: S, addresses: string[]): FilterSet;
  build: BuildWebhook<S>;
}

export class BlockReplay<S extends StoredStream> {
  constructor(
    private readonly kv: Kv,
    private readonly family: ReplayFamily<S>,
    private readonly dispatcher: Pick<Dispatcher, 'enqueueBatch'>,
  ) {}

  /** The body block `number` gives the definition (a stream of no id) and its addresses; null when nothing in it matches. */
  body(chainId: string, number: number, definition: S, addresses: string[]): Promise<Record<string, unknown> | null> {
    this.family.checkChain(chainId);
    return this.bodyFor(number, definition, addresses);
  }

  /** Enqueues the body the stream gets for block `number` (a webhook as any other: retries, history). */
  async toWebhook(
    chainId: string,
    number: number,
    stream: S,
  ): Promise<{ streamId: string; blockNumber: number; transactions: number; result: string }> {
    this.family.checkChain(chainId);
    const addresses = this.kv
      .range('streamAddresses', { start: `${stream.id}/`, end: `${stream.id}/\uffff` })
      .map((e) => e.key.slice(stream.id.length + 1));
    const payload = await this.bodyFor(number, stream, addresses);
    if (payload === null) throw new ApiError(404, `block ${number} has no transaction for stream ${stream.id}`);
    const [result] = await this.dispatcher.enqueueBatch([{ streamId: stream.id, payload }]);
    return { streamId: stream.id, blockNumber: number, transactions: (payload['transactions'] as unknown[]).length, result: result! };
  }

  private async bodyFor(number: number, stream: S, addresses: string[]): Promise<Record<string, unknown> | null> {
    const { chain } = this.family;
    const key = blockKey(chain, number);
    const record = this.kv.getRaw('blocks', key);
    if (record === undefined) throw notFound(`block ${number} is not stored (not followed yet, skipped, or pruned)`);
    const bytes = Uint8Array.prototype.slice.call(record);
    const probe = this.kv.getRaw('probes', key)!;
    const refs = this.family.filter(stream, addresses).match(probe).get(0) ?? [];
    const confirmed = number <= (this.kv.get<{ confirmed: number }>('chainState', chain)?.confirmed ?? -1);
    return this.family.build({ chain, number, bytes, confirmed }, stream, refs);
  }
}
