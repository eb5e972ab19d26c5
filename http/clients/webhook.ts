import { Agent, request } from 'undici';
import { DEFAULT_ORIGIN_SLOTS } from '../../engine/delivery/slots.js';
import type { TargetPolicy } from '../../engine/net/targets.js';
import type { Sender } from '../../engine/ports.js';
import { TargetRefused, guardedConnector } from './guarded-connect.js';

/**
 * Webhook POSTs over undici keep-alive pools (one pool per origin, reused across
 * deliveries). Any answer is returned with its status; no answer within the
 * timeout, or a connection error, comes back as `error`. Never rejects. Every
 * connection is opened through `targets` (a refused address is an `error`
 * saying why, as any connection error).
 */
/** Keep-alive connections per receiver origin (the dispatcher sends no more than this many at once to one). */
export const CONNECTIONS_PER_ORIGIN = DEFAULT_ORIGIN_SLOTS;

export function undiciSender(opts: { targets: TargetPolicy; connectionsPerOrigin?: number }): Sender & { close(): Promise<void> } {
  const agent = new Agent({
    connect: guardedConnector(opts.targets, 'webhookUrl'),
    connections: opts.connectionsPerOrigin ?? CONNECTIONS_PER_ORIGIN,
    keepAliveTimeout: 30_000,
    pipelining: 1,
  });
  return {
    async post(url, body, headers, timeoutMs) {
      const timeout = deadline(timeoutMs);
      try {
        // undici's own timeouts are off: they tick every 499 ms and may fire up to a tick early.
        const res = await request(url, {
          method: 'POST',
          body,
          headers,
          dispatcher: agent,
          headersTimeout: 0,
          bodyTimeout: 0,
          signal: timeout.signal,
        });
        await res.body.dump(); // the answer's body is not read, but the connection must be freed
        return { status: res.statusCode };
      } catch (err) {
        if (err instanceof TargetRefused) return { error: err.message };
        const e = err as { name?: string; code?: string; message?: string };
        if (e.name === 'TimeoutError') return { error: `no answer within ${timeoutMs / 1000} s`, timedOut: true };
        return { error: `${e.code ?? e.name ?? 'error'}: ${e.message ?? String(err)}` };
      } finally {
        timeout.clear();
      }
    },
    close: () => agent.close(),
  };
}

/**
 * A signal that aborts (TimeoutError) once `ms` have passed since this call on the monotonic clock, never
 * before: when its timer fires early (Node's timers count whole milliseconds) it is armed again for what is left.
 */
export function deadline(ms: number): { signal: AbortSignal; clear(): void } {
  const ctl = new AbortController();
  const due = performance.now() + ms;
  const check = (): void => {
    const left = due - performance.now();
    if (left > 0) timer = setTimeout(check, Math.ceil(left)).unref();
    else ctl.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError'));
  };
  let timer = setTimeout(check, ms).unref();
  return { signal: ctl.signal, clear: () => clearTimeout(timer) };
}
