import { chainReads } from '../../evm/chain-reads.js';
import { TokenMetadata } from '../../evm/token-metadata.js';
import type { Kv, Upstream } from '../../ports.js';
import type { DataDeps } from './deps.js';

/** The Data API's reads of the chains' nodes (eth_call, eth_getBalance, eth_getCode at a block), and the token metadata read through them and kept in the store. */
export function dataReads(kv: Kv, upstreamOf: (chain: string) => Upstream | undefined): Pick<DataDeps, 'reads' | 'tokens'> {
  const reads = chainReads(upstreamOf);
  return { reads, tokens: new TokenMetadata(kv, reads.call, reads.code) };
}
