import type { Dispatcher } from '../delivery/dispatcher.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { blockKey } from '../ingest/chain-store.js';
import { FilterSet } from '../match/filter-set.js';
import type { BuildWebhook } from '../match/matcher.js';
import type { Kv } from '../ports.js';
import { compileBitcoinFilter, walkBitcoinProbe } from './filter.js';
import type { BitcoinChainState } from './follower.js';
import { findChain } from '../chains/registry.js';
import { BITCOIN_CHAIN, type BitcoinStreamRecord } from './stream.js';
import type { XpubWindows } from './xpub-windows.js';

/**
 * A stored block's webhook on demand: POST /streams/bitcoin/:chainId/block/:n
 * answers the body a definition (tag, allAddresses, includeInputs,
 * includeOutputs, addresses) would get for block n; …/block-to-webhook/:n/:id
 * sends a stream the body its addresses and xpubs get. Matched and built as a
 * delivery is (the family's filter and builder), confirmed when the follower
 * announced the block confirmed.
 */
export interface BlockRequest {
  tag: string;
  allAddresses: boolean;
  includeInputs: boolean;
  includeOutputs: boolean;
  /** Stored forms (decoded by the schema). */
  addresses: string[];
}


export class BitcoinBlocks {
  constructor(
    private readonly kv: Kv,
    private readonly build: BuildWebhook<BitcoinStreamRecord>,
    private readonly windows: XpubWindows,
    private readonly dispatcher: Pick<Dispatcher, 'enqueueBatch'>,
  ) {}

  /** The body block `number` gives the definition; null when nothing in it matches. */
  body(chainId: string, number: number, req: BlockRequest): Promise<Record<string, unknown> | null> {
    checkChain(chainId);
    // A stream of no id: the definition alone (no xpubs).
    const stream = { id: '', tag: req.tag, includeInputs: req.includeInputs, includeOutputs: req.includeOutputs, allAddresses: req.allAddresses } as BitcoinStreamRecord;
    return this.bodyFor(number, stream, req.addresses);
  }

  /** Enqueues the body the stream gets for block `number` (a webhook as any other: retries, history). */
  async toWebhook(chainId: string, number: number, stream: BitcoinStreamRecord): Promise<{ streamId: string; blockNumber: number; transactions: number; result: string }> {
    checkChain(chainId);
    const addresses = this.kv.range('streamAddresses', { start: `${stream.id}/`, end: `${stream.id}/\uffff` }).map((e) => e.key.slice(stream.id.length + 1));
    const payload = await this.bodyFor(number, stream, addresses);
    if (payload === null) throw new ApiError(404, `block ${number} has no transaction for stream ${stream.id}`);
    const [result] = this.dispatcher.enqueueBatch([{ streamId: stream.id, payload }]);
    return { streamId: stream.id, blockNumber: number, transactions: (payload['transactions'] as unknown[]).length, result: result! };
  }

  private async bodyFor(number: number, stream: BitcoinStreamRecord, addresses: string[]): Promise<Record<string, unknown> | null> {
    const key = blockKey(BITCOIN_CHAIN, number);
    const record = this.kv.getRaw('blocks', key);
    if (record === undefined) throw notFound(`block ${number} is not stored (not followed yet, or pruned)`);
    const bytes = Uint8Array.prototype.slice.call(record);
    const probe = this.kv.getRaw('probes', key)!;
    const set = new FilterSet(compileBitcoinFilter(0, [{ index: 0, addresses, derived: this.windows.keysOf(stream.id), allAddresses: stream.allAddresses }]), walkBitcoinProbe);
    const refs = set.match(probe).get(0) ?? [];
    const confirmed = number <= (this.kv.get<BitcoinChainState>('chainState', BITCOIN_CHAIN)?.confirmed ?? -1);
    return this.build({ chain: BITCOIN_CHAIN, number, bytes, confirmed }, stream, refs);
  }
}

/**
 * The path's chainId: Bitcoin mainnet by any of its registry names, or `mainnet` as the hosted service's
 * examples write it (a name the registry gives Ethereum, so it is taken here, under /streams/bitcoin only).
 */
function checkChain(chainId: string): void {
  if (chainId.toLowerCase() !== 'mainnet' && findChain(chainId)?.key !== BITCOIN_CHAIN) throw badRequest('chainId', `${chainId} is not Bitcoin mainnet (mainnet, bitcoin, btc, btc-mainnet or bitcoin-mainnet): only Bitcoin mainnet is followed`);
}
