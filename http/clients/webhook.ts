import { Agent, request } from 'undici';
import type { Sender } from '../../engine/ports.js';

/**
 * Webhook POSTs over undici keep-alive pools (one pool per origin, reused across
 * deliveries). Any answer is returned with its status; no answer within the
 * timeout, or a connection error, comes back as `error`. Never rejects.
 */
/** Keep-alive connections per receiver origin (the dispatcher sends no more than this many at once to one). */
export const CONNECTIONS_PER_ORIGIN = 64;

export function undiciSender(opts: { connectionsPerOrigin?: number } = {}): Sender & { close(): Promise<void> } {
  const agent = new Agent({ connections: opts.connectionsPerOrigin ?? CONNECTIONS_PER_ORIGIN, keepAliveTimeout: 30_000, pipelining: 1 });
  return {
    async post(url, body, headers, timeoutMs) {
      try {
        const res = await request(url, { method: 'POST', body, headers, dispatcher: agent, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, signal: AbortSignal.timeout(timeoutMs) });
        await res.body.dump(); // the answer's body is not read, but the connection must be freed
        return { status: res.statusCode };
      } catch (err) {
        const e = err as { name?: string; code?: string; message?: string };
        const timedOut = e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT';
        return { error: timedOut ? `no answer within ${timeoutMs / 1000} s` : `${e.code ?? e.name ?? 'error'}: ${e.message ?? String(err)}` };
      }
    },
    close: () => agent.close(),
  };
}
