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
  /** Until the node refuses a batch. */
  let batches = true;
  const sockets = new Set<WebSocket>();
  /** One JSON-RPC request or batch, its answer parsed; `what` names it in errors. */
  const post = async (what: string, payload: unknown): Promise<unknown> => {
    const res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      dispatcher: agent,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await res.body.text();
    // Not a JSON-RPC answer (a proxy's 502, say): the node was not reached.
    if (res.statusCode !== 200) throw new Error(`${what}: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
    return JSON.parse(text);
  };
  return {
    async call<T>(method: string, params: unknown[]): Promise<T> {
      return answerOf<T>(method, (await post(method, { jsonrpc: '2.0', id: ++id, method, params })) as Answer<T>);
    },
    async batch(calls) {
      if (!batches) return Promise.allSettled(calls.map(([method, params]) => this.call(method, params)));
      const first = id + 1;
      const what = calls.map(([method]) => method).join('+');
      const body = await post(what, calls.map(([method, params]) => ({ jsonrpc: '2.0', id: ++id, method, params })));
      if (!Array.isArray(body)) {
        // A node that takes no batches answers with one error: call one by one from now on.
        batches = false;
        return this.batch!(calls);
      }
      const byId = new Map((body as Array<Answer<unknown> & { id?: unknown }>).map((a) => [a.id, a]));
      return calls.map(([method], i): PromiseSettledResult<unknown> => {
        const a = byId.get(first + i);
        if (a === undefined) return { status: 'rejected', reason: new Error(`${method}: no answer in the batch`) };
        try {
          return { status: 'fulfilled', value: answerOf(method, a) };
        } catch (reason) {
          return { status: 'rejected', reason };
        }
      });
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

type Answer<T> = { result?: T; error?: { code: number; message: string; data?: unknown } };

/** A call's result, or its NodeError when the node answered with an error. */
function answerOf<T>(method: string, body: Answer<T>): T {
  if (body.error !== undefined) throw new NodeError(body.error.code, `${method}: ${body.error.message}`, body.error);
  return body.result as T;
}
