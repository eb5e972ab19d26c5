/**
 * A stand-in Solana RPC node on node:http, answering as agave's JSON-RPC 2.0 service does (jsonrpc-core):
 * single and batch requests, HTTP 200 with errors in the reply, no reply for notifications. A WebSocket on
 * the same port (agave uses the next port; a test gets both URLs) offers slotSubscribe / slotUnsubscribe.
 * For tests and benchmarks: it must not import vitest.
 */
import { createServer, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { type SolanaChain } from './chain.js';
import { AnswerCache } from './answers.js';
import { RpcError, runMethod, type Result, type RpcContext } from './rpc.js';

export interface SolanaRpcOptions {
  chain: SolanaChain;
  /** 0 (default) picks a free port. */
  port?: number;
  /** false: no WebSocket (a node that does not offer slotSubscribe). Default true. */
  ws?: boolean;
  /** Render every available block's getBlock answer (chainpost's parameters) before listening, so benchmarks time chainpost, not this. */
  prerender?: boolean;
  /** Rendered getBlock answers kept (default 16; at least the chain's blocks when prerendering). */
  cacheSize?: number;
}

export interface SolanaRpc {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `ws://127.0.0.1:PORT`, or undefined without WebSocket. */
  wsUrl: string | undefined;
  port: number;
  chain: SolanaChain;
  /** Calls per method, batch members and WebSocket calls included (unknown methods too). */
  calls: Record<string, number>;
  /** Open slot subscriptions. */
  subscriptions(): number;
  close(): Promise<void>;
}

interface Outcome {
  id: unknown;
  hasId: boolean;
  result?: Result;
  error?: RpcError;
}

/** The reply as jsonrpc-core writes it: `{"jsonrpc":"2.0","result"|"error":…,"id":…}`; a block result stays bytes. */
function reply({ id, result, error }: Outcome): Buffer[] {
  const idText = JSON.stringify(id ?? null);
  if (error)
    return [Buffer.from(`{"jsonrpc":"2.0","error":${JSON.stringify({ code: error.code, message: error.message })},"id":${idText}}`)];
  return [
    Buffer.from('{"jsonrpc":"2.0","result":'),
    typeof result === 'string' ? Buffer.from(result) : result!,
    Buffer.from(`,"id":${idText}}`),
  ];
}

function execute(ctx: RpcContext, calls: Record<string, number>, request: unknown): Outcome {
  if (typeof request !== 'object' || request === null || Array.isArray(request))
    return { id: null, hasId: true, error: new RpcError(-32600, 'Invalid request') };
  const { id = null, method, params, jsonrpc } = request as Record<string, unknown>;
  const outcome = { id, hasId: Object.hasOwn(request, 'id') };
  if (jsonrpc !== '2.0' || typeof method !== 'string') return { ...outcome, error: new RpcError(-32600, 'Invalid request') };
  calls[method] = (calls[method] ?? 0) + 1;
  try {
    return { ...outcome, result: runMethod(ctx, method, params) };
  } catch (e) {
    return { ...outcome, error: e instanceof RpcError ? e : new RpcError(-32603, 'Internal error') };
  }
}

function send(res: ServerResponse, answers: AnswerCache, pieces: Buffer[] | undefined): void {
  if (pieces === undefined) {
    res.writeHead(200, { 'Content-Length': 0 }).end();
    return;
  }
  // A kept block answer's buffer is reused once dropped: not before this response has written it.
  const leases = pieces.map((p) => answers.lease(p));
  res.once('close', () => leases.forEach((release) => release()));
  // Pieces are written as they are: a block's bytes are not copied again.
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': pieces.reduce((n, p) => n + p.length, 1) });
  for (const p of pieces) res.write(p);
  res.end('\n');
}

/** One HTTP body: a call or a batch; notifications (no id) get no reply, as in jsonrpc-core. */
function answer(ctx: RpcContext, calls: Record<string, number>, body: string, res: ServerResponse): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return send(res, ctx.answers, reply({ id: null, hasId: true, error: new RpcError(-32700, 'Parse error') }));
  }
  if (Array.isArray(parsed)) {
    if (parsed.length === 0)
      return send(res, ctx.answers, reply({ id: null, hasId: true, error: new RpcError(-32600, 'Invalid request') }));
    const replies = parsed.map((r) => execute(ctx, calls, r)).filter((o) => o.hasId);
    if (replies.length === 0) return send(res, ctx.answers, undefined);
    const pieces: Buffer[] = [Buffer.from('[')];
    replies.forEach((o, i) => pieces.push(...(i > 0 ? [Buffer.from(',')] : []), ...reply(o)));
    return send(res, ctx.answers, [...pieces, Buffer.from(']')]);
  }
  const outcome = execute(ctx, calls, parsed);
  send(res, ctx.answers, outcome.hasId ? reply(outcome) : undefined);
}

/** slotSubscribe / slotUnsubscribe over one socket, as agave's pubsub answers them. */
function serveSocket(
  socket: WebSocket,
  chain: SolanaChain,
  calls: Record<string, number>,
  subs: Map<number, () => void>,
  nextId: () => number,
): void {
  const mine = new Set<number>();
  socket.on('message', (data) => {
    let req: Record<string, unknown>;
    try {
      req = JSON.parse(String(data)) as Record<string, unknown>;
    } catch {
      socket.send(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null }));
      return;
    }
    const id = req.id ?? null;
    const method = String(req.method);
    calls[method] = (calls[method] ?? 0) + 1;
    const respond = (body: object): void => socket.send(JSON.stringify({ jsonrpc: '2.0', ...body, id }));
    if (method === 'slotSubscribe') {
      const sub = nextId();
      const off = chain.onSlot((n) => {
        if (socket.readyState === socket.OPEN)
          socket.send(
            JSON.stringify({
              jsonrpc: '2.0',
              method: 'slotNotification',
              params: { result: { parent: n.parent, root: n.root, slot: n.slot }, subscription: sub },
            }),
          );
      });
      subs.set(sub, off);
      mine.add(sub);
      respond({ result: sub });
    } else if (method === 'slotUnsubscribe') {
      const sub = Array.isArray(req.params) ? req.params[0] : undefined;
      if (typeof sub !== 'number' || !mine.has(sub)) return respond({ error: { code: -32602, message: 'Invalid subscription id.' } });
      subs.get(sub)!();
      subs.delete(sub);
      mine.delete(sub);
      respond({ result: true });
    } else respond({ error: { code: -32601, message: 'Method not found' } });
  });
  socket.on('close', () => {
    for (const sub of mine) {
      subs.get(sub)?.();
      subs.delete(sub);
    }
  });
}

/** Starts the node on 127.0.0.1 and answers once it listens. */
export async function startSolanaRpc(opts: SolanaRpcOptions): Promise<SolanaRpc> {
  const { chain, port = 0 } = opts;
  const ctx: RpcContext = { chain, answers: new AnswerCache(opts.cacheSize ?? 16) };
  if (opts.prerender) {
    const blocks = chain.slots().filter((b) => b.available);
    ctx.answers.size = Math.max(ctx.answers.size, blocks.length);
    for (const b of blocks) ctx.answers.get(b, { rewards: false, showVersion: true });
  }
  const calls: Record<string, number> = {};
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405).end('Used HTTP Method is not allowed. POST or OPTIONS is required');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => answer(ctx, calls, Buffer.concat(chunks).toString(), res));
  });
  const subs = new Map<number, () => void>();
  let counter = 0;
  const wss = opts.ws === false ? undefined : new WebSocketServer({ server });
  wss?.on('connection', (socket) => serveSocket(socket, chain, calls, subs, () => counter++));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    wsUrl: wss ? `ws://127.0.0.1:${bound}` : undefined,
    port: bound,
    chain,
    calls,
    subscriptions: () => subs.size,
    close: async () => {
      for (const off of subs.values()) off();
      subs.clear();
      if (wss) {
        for (const c of wss.clients) c.terminate();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      }
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve())));
    },
  };
}
