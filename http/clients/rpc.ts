import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { NodeError, type Upstream } from '../../engine/ports.js';

/**
 * JSON-RPC to an EVM node over HTTP (undici keep-alive pool), and newHeads over
 * WebSocket on the same address where the node offers it (anvil does).
 */
/** Raw answers shorter than this are parsed to find a JSON-RPC error in them. */
const RAW_READ_BELOW = 16_384;

export function jsonRpcUpstream(url: string, opts: { timeoutMs?: number; connections?: number } = {}): Upstream & Required<Pick<Upstream, 'callRaw'>> & { close(): Promise<void> } {
  const agent = new Agent({ connections: opts.connections ?? 8, keepAliveTimeout: 30_000 });
  const timeoutMs = opts.timeoutMs ?? 30_000;
  let id = 0;
  const sockets = new Set<WebSocket>();
  /** The body of the node's answer; an HTTP error means the node was not reached. */
  const post = async (method: string, params: unknown[]): Promise<Buffer> => {
    const res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
      dispatcher: agent,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const body = Buffer.from(await res.body.arrayBuffer());
    // Not a JSON-RPC answer (a proxy's 502, say): the node was not reached.
    if (res.statusCode !== 200) throw new Error(`${method}: HTTP ${res.statusCode} ${body.subarray(0, 200).toString()}`);
    return body;
  };
  const answer = <T>(method: string, body: Buffer): T => {
    const parsed = JSON.parse(body.toString()) as { result?: T; error?: { code: number; message: string; data?: unknown } };
    if (parsed.error !== undefined) throw new NodeError(parsed.error.code, `${method}: ${parsed.error.message}`, parsed.error);
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
      const ws = new WebSocket(url.replace(/^http/, 'ws'));
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
