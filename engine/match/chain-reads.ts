import { NodeError, type Upstream } from '../ports.js';
import type { ChainCall } from './token-metadata.js';

/**
 * The node reads a webhook needs (token metadata, triggers, native balances),
 * on the chain's own upstream. A call the node refuses (a revert) answers null;
 * a node that cannot be reached throws, and the block is matched again later.
 */
export function chainReads(upstreamOf: (chain: string) => Upstream | undefined): { call: ChainCall; balance(chain: string, address: string, block: number): Promise<bigint> } {
  const node = (chain: string): Upstream => {
    const u = upstreamOf(chain);
    if (u === undefined) throw new Error(`chain ${chain} has no upstream node`);
    return u;
  };
  const tag = (block: number | 'latest'): string => (block === 'latest' ? block : `0x${block.toString(16)}`);
  return {
    async call(chain, to, data, block, from) {
      try {
        return await node(chain).call<`0x${string}`>('eth_call', [{ to, data, ...(from === undefined ? {} : { from }) }, tag(block)]);
      } catch (err) {
        if (err instanceof NodeError) return null;
        throw err;
      }
    },
    async balance(chain, address, block) {
      return BigInt(await node(chain).call<string>('eth_getBalance', [address, tag(block)]));
    },
  };
}
