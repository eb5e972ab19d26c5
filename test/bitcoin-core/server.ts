/**
 * A stand-in Bitcoin Core JSON-RPC server on node:http, speaking Core's legacy (1.0) wire as `httprpc.cpp`
 * does up to v27: basic auth (401, empty body), single and batch requests, errors as HTTP 500 (-32600 → 400,
 * -32601 → 404) for single requests and inside an HTTP 200 array for batches. For tests and benchmarks:
 * it must not import vitest.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { type BitcoinChain } from './chain.js';
import { mainnetChain } from './fixtures.js';
import { RpcError, renderedTxs, runMethod, type RpcContext } from './rpc.js';

export interface BitcoinCoreOptions {
  /** The chain to serve (default: genesis and mainnet blocks 1..255). */
  chain?: BitcoinChain;
  user?: string;
  password?: string;
  /** 0 (default) picks a free port. */
  port?: number;
  /** false: a node before v23, where getblock 3 answers verbosity 2's shape with no prevout and no fee. Default true. */
  verbosity3?: boolean;
  /** Core's -txindex: getrawtransaction finds mined transactions without a block hash. Default false. */
  txindex?: boolean;
  /** getblock verbosities (1-3) to render for every active block before listening, so benchmarks time chainpost, not this. */
  prerender?: number[];
}

export interface BitcoinCore {
  /** `http://user:pass@127.0.0.1:PORT` */
  url: string;
  port: number;
  chain: BitcoinChain;
  /** Calls per method, batch members included (unknown methods too). */
  calls: Record<string, number>;
  close(): Promise<void>;
}

/** One request's reply object as Core writes it (legacy: both result and error, one of them null). */
function reply(id: unknown, result: string | null, error: RpcError | null): string {
  const errorText = error === null ? 'null' : JSON.stringify({ code: error.code, message: error.message });
  return `{"result":${result ?? 'null'},"error":${errorText},"id":${JSON.stringify(id ?? null)}}`;
}

/** Core's `JSONRPCRequest::parse` then the call; anything thrown that is not an RpcError is Core's -1 (misc). */
function execute(ctx: RpcContext, calls: Record<string, number>, request: unknown): { id: unknown; result: string } {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) throw Object.assign(new RpcError(-32600, 'Invalid Request object'), { id: null });
  const { id = null, method, params } = request as Record<string, unknown>;
  try {
    if (method === undefined) throw new RpcError(-32600, 'Missing method');
    if (typeof method !== 'string') throw new RpcError(-32600, 'Method must be a string');
    calls[method] = (calls[method] ?? 0) + 1;
    if (params !== undefined && params !== null && typeof params !== 'object') throw new RpcError(-32600, 'Params must be an array or object');
    return { id, result: runMethod(ctx, method, params) };
  } catch (e) {
    throw Object.assign(e instanceof RpcError ? e : new RpcError(-1, String(e)), { id });
  }
}

/** The HTTP status Core's `JSONErrorReply` gives an error code. */
const statusOf = (code: number): number => (code === -32600 ? 400 : code === -32601 ? 404 : 500);

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(`${body}\n`);
}

/** Answers one HTTP request: a single call or a batch (always HTTP 200, errors in place). */
function answer(ctx: RpcContext, calls: Record<string, number>, body: string, res: ServerResponse): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return send(res, 500, reply(null, null, new RpcError(-32700, 'Parse error')));
  }
  if (Array.isArray(parsed)) {
    const replies = parsed.map((request) => {
      try {
        const { id, result } = execute(ctx, calls, request);
        return reply(id, result, null);
      } catch (e) {
        return reply((e as { id?: unknown }).id, null, e as RpcError);
      }
    });
    return send(res, 200, `[${replies.join(',')}]`);
  }
  if (typeof parsed !== 'object' || parsed === null) return send(res, 500, reply(null, null, new RpcError(-32700, 'Top-level object parse error')));
  try {
    const { id, result } = execute(ctx, calls, parsed);
    send(res, 200, reply(id, result, null));
  } catch (e) {
    const error = e as RpcError & { id?: unknown };
    send(res, statusOf(error.code), reply(error.id, null, error));
  }
}

/** Whether the request carries `Authorization: Basic base64(user:password)`. */
function authorized(req: IncomingMessage, user: string, password: string): boolean {
  const header = req.headers.authorization ?? '';
  return header.startsWith('Basic ') && Buffer.from(header.slice(6), 'base64').toString() === `${user}:${password}`;
}

/** Starts the server on 127.0.0.1 and answers once it listens. */
export async function startBitcoinCore(opts: BitcoinCoreOptions = {}): Promise<BitcoinCore> {
  const { user = 'user', password = 'pass', port = 0 } = opts;
  const ctx: RpcContext = {
    chain: opts.chain ?? mainnetChain(),
    options: { verbosity3: opts.verbosity3 ?? true, txindex: opts.txindex ?? false },
    cache: new Map(),
    cacheSize: 8,
  };
  const prerender = opts.prerender ?? [];
  ctx.cacheSize = Math.max(ctx.cacheSize, (ctx.chain.height - ctx.chain.start + 1) * prerender.length);
  for (let h = ctx.chain.start; h <= ctx.chain.height; h++) for (const v of prerender) renderedTxs(ctx, ctx.chain.at(h)!, v);
  const calls: Record<string, number> = {};
  const server = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end('JSONRPC server handles only POST requests');
      return;
    }
    if (!authorized(req, user, password)) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="jsonrpc"' }).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(ctx, calls, Buffer.concat(chunks).toString(), res));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${bound}`,
    port: bound,
    chain: ctx.chain,
    calls,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}
