import { Agent, request } from 'undici';
import WebSocket from 'ws';
import { NodeError, type Upstream } from '../../engine/ports.js';

/**
 * JSON-RPC to an EVM node over HTTP (undici keep-alive pool), and newHeads over
 * WebSocket on the same address where the node offers it (anvil does).
 */
export function jsonRpcUpstream(url: string, opts: { timeoutMs?: number; connections?: number } = {}): Upstream & { close(): Promise<void> } {
  const agent = new Agent({ connections: opts.connections ?? 8, keepAliveTimeout: 30_000 });
  const timeoutMs = opts.timeoutMs ?? 30_000;
  let id = 0;
  const sockets = new Set<WebSocket>();
  return {
    async call<T>(method: string, params: unknown[]): Promise<T> {
      const res = await request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
        dispatcher: agent,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const text = await res.body.text();
      // Not a JSON-RPC answer (a proxy's 502, say): the node was not reached.
      if (res.statusCode !== 200) throw new Error(`${method}: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
      const body = JSON.parse(text) as { result?: T; error?: { code: number; message: string; data?: unknown } };
      if (body.error !== undefined) throw new NodeError(body.error.code, `${method}: ${body.error.message}`, body.error);
      return body.result as T;
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
