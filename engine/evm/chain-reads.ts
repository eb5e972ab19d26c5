import { NodeError, type Upstream } from '../ports.js';
import { NodeUnavailable } from '../match/build.js';
import type { ChainCall } from './token-metadata.js';

/**
 * The node reads a webhook needs (token metadata, triggers, native balances),
 * on the chain's own upstream. What the node answers with an error (a revert,
 * state it does not keep) is an answer: null. What may pass (the node cannot be
 * reached, or asks to slow down) throws NodeUnavailable, and the block is
 * matched again later.
 */

/** JSON-RPC codes of a node asking the caller to come back later (limit exceeded, rate limited). */
const TRANSIENT_CODES = new Set([-32005, 429]);

export interface ChainReads {
  call: ChainCall;
  /** eth_getBalance at a block (wei); null when the node cannot say (no state kept for that block). */
  balance(chain: string, address: string, block: number | 'latest'): Promise<bigint | null>;
  /** eth_getBlockByNumber without transactions: where the block stands; null when the node has no such block. */
  header(chain: string, block: number): Promise<BlockHeader | null>;
  /** Any read-only JSON-RPC call (a pruned block's body, receipts, traces); null when the node answers an error. */
  rpc<T>(chain: string, method: string, params: unknown[]): Promise<T | null>;
  /** eth_getCode at a block ('0x' for an account without code); null when the node cannot say. */
  code(chain: string, address: string, block: number | 'latest'): Promise<`0x${string}` | null>;
}

export interface BlockHeader {
  number: number;
  hash: string;
  parentHash: string;
  /** Unix seconds. */
  timestamp: number;
}

export function chainReads(upstreamOf: (chain: string) => Upstream | undefined): ChainReads {
  const tag = (block: number | 'latest'): string => (block === 'latest' ? block : `0x${block.toString(16)}`);
  const ask = async <T>(chain: string, method: string, params: unknown[]): Promise<T | null> => {
    const node = upstreamOf(chain);
    if (node === undefined) throw new NodeUnavailable(`chain ${chain} has no upstream node`);
    try {
      return await node.call<T>(method, params);
    } catch (err) {
      if (err instanceof NodeError && !TRANSIENT_CODES.has(err.code)) return null;
      throw new NodeUnavailable(`${method} on chain ${chain}: ${(err as Error).message}`);
    }
  };
  return {
    call: (chain, to, data, block, from, gas) =>
      ask<`0x${string}`>(chain, 'eth_call', [
        { to, data, ...(from === undefined ? {} : { from }), ...(gas === undefined ? {} : { gas: `0x${gas.toString(16)}` }) },
        tag(block),
      ]),
    async balance(chain, address, block) {
      const wei = await ask<string>(chain, 'eth_getBalance', [address, tag(block)]);
      return wei === null ? null : BigInt(wei);
    },
    async header(chain, block) {
      const b = await ask<{ number: string; hash: string; parentHash: string; timestamp: string } | null>(chain, 'eth_getBlockByNumber', [
        tag(block),
        false,
      ]);
      return b === null ? null : { number: Number(b.number), hash: b.hash, parentHash: b.parentHash, timestamp: Number(b.timestamp) };
    },
    rpc: (chain, method, params) => ask(chain, method, params),
    code: (chain, address, block) => ask<`0x${string}`>(chain, 'eth_getCode', [address, tag(block)]),
  };
}
