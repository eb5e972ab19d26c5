/**
 * A stand-in Bitcoin Core JSON-RPC server on node:http, speaking Core's wire as `httprpc.cpp` does: basic
 * auth (401, empty body), single and batch requests, legacy (1.0) errors as HTTP 500 (-32600 → 400,
 * -32601 → 404) for single requests and inside an HTTP 200 array for batches; optionally Core 28's
 * JSON-RPC 2.0 replies. For tests and benchmarks: it must not import vitest.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { type BitcoinChain } from './chain.js';
import { mainnetChain } from './fixtures.js';
import { RpcError, renderedTxs, runMethod, type JsonText, type RpcContext } from './rpc.js';

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
  /** Core 28+: requests with "jsonrpc": "2.0" get 2.0 replies (HTTP 200 for errors, 204 for notifications). Default false (Core 27). */
  jsonrpc2?: boolean;
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

/** One call's outcome: its id (absent for a JSON-RPC 2.0 notification), its version, a result or an error. */
interface Outcome {
  id: unknown;
  hasId: boolean;
  v2: boolean;
  result?: JsonText;
  error?: RpcError;
}

/**
 * The reply object as Core writes it: legacy has both result and error (one null); JSON-RPC 2.0 (Core 28+)
 * has "jsonrpc" and only the one that applies.
 */
function reply({ id, v2, result, error }: Outcome): JsonText {
  const idText = JSON.stringify(id ?? null);
  const errorText = error === undefined ? 'null' : JSON.stringify({ code: error.code, message: error.message });
  // A result in bytes (a large block) stays bytes: the envelope goes around it.
  const around = (before: string, after: string): JsonText =>
    typeof result === 'string' || result === undefined
      ? `${before}${result ?? 'null'}${after}`
      : [Buffer.from(before), ...result, Buffer.from(after)];
  if (!v2)
    return error === undefined
      ? around('{"result":', `,"error":null,"id":${idText}}`)
      : `{"result":null,"error":${errorText},"id":${idText}}`;
  return error === undefined
    ? around('{"jsonrpc":"2.0","result":', `,"id":${idText}}`)
    : `{"jsonrpc":"2.0","error":${errorText},"id":${idText}}`;
}

/** Core's `JSONRPCRequest::parse` then the call; anything thrown that is not an RpcError is Core's -1 (misc). */
function execute(ctx: RpcContext, calls: Record<string, number>, request: unknown): Outcome {
  if (typeof request !== 'object' || request === null || Array.isArray(request))
    return { id: null, hasId: true, v2: false, error: new RpcError(-32600, 'Invalid Request object') };
  const { id = null, method, params, jsonrpc } = request as Record<string, unknown>;
  // Core before 28 ignores "jsonrpc"; 28+ answers "2.0" requests in 2.0's shape.
  const v2 = ctx.jsonrpc2 && jsonrpc === '2.0';
  const outcome = { id, hasId: Object.hasOwn(request, 'id'), v2 };
  try {
    if (ctx.jsonrpc2 && jsonrpc !== undefined && jsonrpc !== null && jsonrpc !== '1.0' && jsonrpc !== '2.0')
      throw new RpcError(-32600, 'JSON-RPC version not supported');
    if (method === undefined) throw new RpcError(-32600, 'Missing method');
    if (typeof method !== 'string') throw new RpcError(-32600, 'Method must be a string');
    calls[method] = (calls[method] ?? 0) + 1;
    if (params !== undefined && params !== null && typeof params !== 'object')
      throw new RpcError(-32600, 'Params must be an array or object');
    return { ...outcome, result: runMethod(ctx, method, params) };
  } catch (e) {
    return { ...outcome, error: e instanceof RpcError ? e : new RpcError(-1, String(e)) };
  }
}

/** The HTTP status Core's `JSONErrorReply` gives a legacy single request's error. */
const statusOf = (code: number): number => (code === -32600 ? 400 : code === -32601 ? 404 : 500);

function send(res: ServerResponse, status: number, body?: JsonText): void {
  if (body === undefined) res.writeHead(status).end();
  else if (typeof body === 'string') res.writeHead(status, { 'Content-Type': 'application/json' }).end(`${body}\n`);
  else {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.reduce((n, b) => n + b.length, 1) });
    for (const piece of body) res.write(piece);
    res.end('\n');
  }
}

const textOf = (t: JsonText): string => (typeof t === 'string' ? t : Buffer.concat(t).toString());

/** A 2.0 notification gets no reply (Core 28+). */
const silent = (o: Outcome): boolean => o.v2 && !o.hasId;

/** Answers one HTTP request: a single call, or a batch (HTTP 200, errors in place; 204 if all were notifications). */
function answer(ctx: RpcContext, calls: Record<string, number>, body: string, res: ServerResponse): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return send(res, 500, reply({ id: null, hasId: true, v2: false, error: new RpcError(-32700, 'Parse error') }));
  }
  if (Array.isArray(parsed)) {
    const replies = parsed.map((request) => execute(ctx, calls, request)).filter((o) => !silent(o));
    return replies.length === 0 && parsed.length > 0
      ? send(res, 204)
      : send(res, 200, `[${replies.map((o) => textOf(reply(o))).join(',')}]`);
  }
  if (typeof parsed !== 'object' || parsed === null)
    return send(res, 500, reply({ id: null, hasId: true, v2: false, error: new RpcError(-32700, 'Top-level object parse error') }));
  const outcome = execute(ctx, calls, parsed);
  if (silent(outcome)) return send(res, 204);
  send(res, outcome.error && !outcome.v2 ? statusOf(outcome.error.code) : 200, reply(outcome));
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
    jsonrpc2: opts.jsonrpc2 ?? false,
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
