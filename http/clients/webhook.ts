import { Agent, type Dispatcher, request } from 'undici';
import type { Ticker } from '../../engine/clock.js';
import { RECEIVER_TEXT_MAX } from '../../engine/delivery/limits.js';
import { DEFAULT_ORIGIN_SLOTS } from '../../engine/delivery/slots.js';
import type { TargetPolicy } from '../../engine/net/targets.js';
import type { Sender } from '../../engine/ports.js';
import { TargetRefused, guardedConnector } from './guarded-connect.js';

/**
 * Webhook POSTs over undici keep-alive pools (one pool per origin, reused across
 * deliveries). Any answer is returned with its status; no answer within the
 * timeout, or a connection error, comes back as `error`. Never rejects. Every
 * connection is opened through `targets` (a refused address is an `error`
 * saying why, as any connection error). The timeout runs on `ticker` (real time; a test's moves when it says).
 */
/** Keep-alive connections per receiver origin (the dispatcher sends no more than this many at once to one). */
export const CONNECTIONS_PER_ORIGIN = DEFAULT_ORIGIN_SLOTS;

export function undiciSender(opts: {
  targets: TargetPolicy;
  ticker: Ticker;
  connectionsPerOrigin?: number;
}): Sender & { close(): Promise<void> } {
  const agent = new Agent({
    connect: guardedConnector(opts.targets, 'webhookUrl'),
    connections: opts.connectionsPerOrigin ?? CONNECTIONS_PER_ORIGIN,
    keepAliveTimeout: 30_000,
    pipelining: 1,
  });
  return {
    async post(url, body, headers, timeoutMs) {
      const timeout = deadline(timeoutMs, opts.ticker);
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
        if (res.statusCode === 200) {
          await res.body.dump(); // the answer's body is not read, but the connection must be freed
          return { status: 200 };
        }
        return { status: res.statusCode, text: await answerStart(res.body) };
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
 * The first RECEIVER_TEXT_MAX characters of an answer (its first bytes, up to 4 per character, decoded as UTF-8; a
 * character cut at the end dropped), the rest discarded unread so the connection is freed at once.
 */
async function answerStart(body: Dispatcher.ResponseData['body']): Promise<string> {
  const max = RECEIVER_TEXT_MAX * 4;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= max) break;
  }
  await body.dump();
  return new TextDecoder('utf-8', { fatal: false })
    .decode(Buffer.concat(chunks).subarray(0, max))
    .slice(0, RECEIVER_TEXT_MAX)
    .replace(/\uFFFD$/, '');
}

/**
 * A signal that aborts (TimeoutError) once `ms` have passed since this call on `ticker`'s monotonic reading, never
 * before: when its wake-up comes early (Node's timers count whole milliseconds) it is armed again for what is left.
 */
export function deadline(ms: number, ticker: Ticker): { signal: AbortSignal; clear(): void } {
  const ctl = new AbortController();
  const due = ticker.elapsedMs() + ms;
  const check = (): void => {
    const left = due - ticker.elapsedMs();
    if (left > 0) disarm = ticker.wake(Math.ceil(left), check);
    else ctl.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError'));
  };
  let disarm = ticker.wake(ms, check);
  return { signal: ctl.signal, clear: () => disarm() };
}
