import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { NodeError, type Upstream } from '../../engine/ports.js';

/**
 * JSON-RPC to a node over HTTP (undici keep-alive pool): an EVM node, with
 * newHeads over WebSocket on the same address where it offers it (anvil does),
 * or Bitcoin Core. Credentials in the URL (`http://user:pass@host:port`) are
 * sent as basic auth.
 */
/** Raw answers shorter than this are parsed to find a JSON-RPC error in them. */
const RAW_READ_BELOW = 16_384;

export function jsonRpcUpstream(
  url: string,
  opts: { timeoutMs?: number; connections?: number } = {},
): Upstream & Required<Pick<Upstream, 'callRaw'>> & { close(): Promise<void> } {
  const agent = new Agent({ connections: opts.connections ?? 8, keepAliveTimeout: 30_000 });
  const timeoutMs = opts.timeoutMs ?? 30_000;
  let id = 0;
  const sockets = new Set<WebSocket>();
  const { target, authorization } = credentials(url);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) };
  /** The body of the node's answer; an HTTP error means the node was not reached. */
  const post = async (method: string, params: unknown[]): Promise<Buffer> => {
    const res = await request(target, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
      dispatcher: agent,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const body = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode === 200) return body;
    // Bitcoin Core answers an RPC error with HTTP 500 (404: no such method) and the error in the body: an answer.
    const error = res.statusCode === 429 ? undefined : rpcError(body);
    if (error !== undefined) throw new NodeError(error.code, `${method}: ${error.message}`, error);
    // Not a JSON-RPC answer (a proxy's 502, a 401 for bad credentials): the node was not reached.
    throw new Error(`${method}: HTTP ${res.statusCode} ${body.subarray(0, 200).toString()}`);
  };
  const answer = <T>(method: string, body: Buffer): T => {
    const parsed = JSON.parse(body.toString()) as { result?: T; error?: { code: number; message: string; data?: unknown } | null };
    // Bitcoin Core writes `"error": null` beside a result.
    if (parsed.error !== undefined && parsed.error !== null)
      throw new NodeError(parsed.error.code, `${method}: ${parsed.error.message}`, parsed.error);
    return parsed.result as T;
  };
  return {
    call: async <T>(method: string, params: unknown[]): Promise<T> => answer<T>(method, await post(method, params)),
    async callRaw(method, params) {
      const body = await post(method, params);
      // A JSON-RPC error is a short answer: a short one is read here to find it, a long one (a block) is not.
      if (body.length < RAW_READ_BELOW) answer(method, body);
      return body;
    },
    subscribeHeads({ onHead, onOpen, onClose }) {
      const ws = new WebSocket(target.replace(/^http/, 'ws'));
      sockets.add(ws);
      ws.on('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] })));
      ws.on('message', (data) => {
        let msg: { id?: number; result?: unknown; method?: string; params?: { result?: { number?: string } } };
        try {
          msg = JSON.parse(String(data)) as typeof msg;
        } catch {
          return; // not JSON: nothing a node should send; the poll still runs
        }
        if (msg.id === 1 && typeof msg.result === 'string') onOpen();
        const n = msg.params?.result?.number;
        if (msg.method === 'eth_subscription' && n !== undefined) onHead(parseInt(n, 16));
      });
      ws.on('error', () => ws.close());
      ws.on('close', () => {
        sockets.delete(ws);
        onClose();
      });
      return () => ws.close();
    },
    /** Aborts what is in flight: a hung node must not hold up a shutdown for the request timeout. */
    async close() {
      for (const ws of sockets) ws.terminate();
      await agent.destroy();
    },
  };
}

/** The URL without its credentials, and those as a basic Authorization header. */
function credentials(url: string): { target: string; authorization?: string } {
  const u = new URL(url);
  if (u.username === '' && u.password === '') return { target: url };
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
  u.username = '';
  u.password = '';
  return { target: u.toString(), authorization };
}

/** The JSON-RPC error object of a body, if it is one. */
function rpcError(body: Buffer): { code: number; message: string; data?: unknown } | undefined {
  try {
    const e = (JSON.parse(body.toString()) as { error?: { code?: unknown; message?: unknown; data?: unknown } }).error;
    return typeof e?.code === 'number'
      ? { code: e.code, message: String(e.message), ...(e.data === undefined ? {} : { data: e.data }) }
      : undefined;
  } catch {
    return undefined;
  }
}
