/**
 * The node of bench:data's synthetic chain (test/kit/data-chain.ts), on 127.0.0.1: a chain that has reached its
 * head and stays there, so the server follows it (the Data API answers only for followed chains) without
 * ingesting anything while the endpoints are measured. It answers eth_chainId, eth_blockNumber,
 * eth_getBlockByNumber (the synthetic headers, no transactions), eth_getBlockReceipts and
 * debug_traceBlockByNumber (empty: the blocks' bodies are not served), and eth_call as the chain's contracts
 * would: an NFT's tokenURI/uri is a small data: JSON document (read once per token by the server, on its first
 * request; no fetch), any other call returns nothing (the token names are in the dataset); anything else is -32601.
 *
 *   node dist-bench/bench/data-node.js HEAD   prints {"msg":"listening","port":N}
 */
import { createServer } from 'node:http';
import { encodeAbiParameters } from 'viem';
import { syntheticHash, syntheticTime } from '../test/kit/data-chain.js';

const head = Number(process.argv[2]);
if (!Number.isSafeInteger(head) || head < 0) throw new Error('usage: data-node.js HEAD');

const quantity = (n: number): string => `0x${n.toString(16)}`;

/** tokenURI(uint256) and uri(uint256): the token's metadata as a data: URI. */
const URI_SELECTORS = new Set(['0xc87b56dd', '0x0e89341c']);
function call(params: unknown[]): string {
  const data = String(
    (params[0] as { data?: string; input?: string } | undefined)?.data ?? (params[0] as { input?: string } | undefined)?.input ?? '',
  );
  if (!URI_SELECTORS.has(data.slice(0, 10))) return '0x';
  const id = BigInt(`0x${data.slice(10, 74) || '0'}`);
  const doc = Buffer.from(JSON.stringify({ name: `Token #${id}`, image: `data:image/svg+xml,<svg/>` })).toString('base64');
  return encodeAbiParameters([{ type: 'string' }], [`data:application/json;base64,${doc}`]);
}

function answer(method: string, params: unknown[]): unknown {
  if (method === 'eth_chainId') return '0x1';
  if (method === 'eth_blockNumber') return quantity(head);
  if (method === 'eth_getBlockReceipts' || method === 'debug_traceBlockByNumber') return [];
  if (method === 'eth_call') return call(params);
  if (method === 'eth_getBlockByNumber') {
    const tag = params[0];
    const n = tag === 'latest' || tag === 'finalized' || tag === 'safe' ? head : Number(tag);
    if (!Number.isSafeInteger(n) || n < 0 || n > head) return null;
    return {
      number: quantity(n),
      hash: syntheticHash(n),
      parentHash: n === 0 ? `0x${'0'.repeat(64)}` : syntheticHash(n - 1),
      timestamp: quantity(syntheticTime(n)),
      transactions: [],
    };
  }
  throw Object.assign(new Error(`the method ${method} does not exist/is not available`), { code: -32601 });
}

const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    const one = (call: { id?: unknown; method?: string; params?: unknown[] }) => {
      try {
        return { jsonrpc: '2.0', id: call.id ?? null, result: answer(String(call.method), call.params ?? []) };
      } catch (err) {
        return {
          jsonrpc: '2.0',
          id: call.id ?? null,
          error: { code: (err as { code?: number }).code ?? -32603, message: (err as Error).message },
        };
      }
    };
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      // Not JSON-RPC (a WebSocket upgrade for newHeads, say): refused; the follower then polls.
      res.statusCode = 400;
      res.end();
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(Array.isArray(parsed) ? parsed.map(one) : one(parsed as never)));
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(JSON.stringify({ msg: 'listening', port: typeof address === 'object' && address !== null ? address.port : 0 }));
});
// Bounded: the bench stops it; this is the guard should the bench die first.
setTimeout(() => process.exit(0), 10 * 60_000).unref();
process.on('SIGTERM', () => process.exit(0));
