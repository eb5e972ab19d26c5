import { performance } from 'node:perf_hooks';
import uWS from 'uWebSockets.js';
import { ApiError } from '../../engine/errors.js';
import type { Pipeline } from './pipeline.js';
import { paramNames, type Reply, type Request, type Route } from './route.js';

/** JSON bodies up to 1 MiB; larger ones are answered 413 without being read. */
export const MAX_BODY_BYTES = 1 << 20;

/**
 * The uWS package falls back to a slow pure-JS server (with only a warning) when
 * its native build does not match this Node; only the native build exports getParts.
 */
export function nativeUwsLoaded(): boolean {
  return typeof (uWS as unknown as { getParts?: unknown }).getParts === 'function';
}

export interface Server {
  readonly port: number;
  /** Stops accepting, waits for in-flight requests (at most `graceMs`); resolves with how many were cut off. */
  close(graceMs: number): Promise<number>;
}

const STATUS: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 204: '204 No Content', 400: '400 Bad Request', 401: '401 Unauthorized',
  403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed', 409: '409 Conflict', 410: '410 Gone',
  413: '413 Payload Too Large', 429: '429 Too Many Requests', 500: '500 Internal Server Error',
  501: '501 Not Implemented', 502: '502 Bad Gateway', 503: '503 Service Unavailable', 504: '504 Gateway Timeout',
};

export function startServer(opts: { host: string; port: number; routes: readonly Route[]; pipeline: Pipeline; fallback: Route }): Promise<Server> {
  const { pipeline } = opts;
  const app = uWS.App();
  let inflight = 0;
  let closing = false;
  let idle: (() => void) | undefined;
  let seq = 0;
  const reqPrefix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-4)}`;

  const mount = (route: Route): void => {
    const names = paramNames(route.pattern);
    const wanted = [...PIPELINE_HEADERS, ...(route.headers ?? [])];
    const handler = (res: uWS.HttpResponse, ureq: uWS.HttpRequest): void => {
      const started = performance.now();
      inflight++;
      // uWS's request object dies when this callback returns: copy what is needed now,
      // which is the headers the pipeline reads plus those the route declares.
      const h = new Map<string, string>();
      for (const name of wanted) {
        const v = ureq.getHeader(name);
        if (v !== '') h.set(name, v);
      }
      const incomingId = h.get('x-request-id') ?? '';
      const req: Request = {
        method: ureq.getCaseSensitiveMethod().toUpperCase(),
        path: ureq.getUrl(),
        query: ureq.getQuery() ?? '',
        params: readParams(ureq, names),
        header: (name) => h.get(name),
        rawBody: undefined,
        id: /^[A-Za-z0-9._-]{1,64}$/.test(incomingId) ? incomingId : `${reqPrefix}-${(++seq).toString(36)}`,
        body: undefined,
        caller: undefined,
      };

      // Settled exactly once: answered, or abandoned by the client. The in-flight
      // count and the metrics follow settlement, so an abort can never leak.
      let settled = false;
      let aborted = false;
      let bodyUnread = route.body === true;
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        inflight--;
        if (closing && inflight === 0) idle?.();
        return true;
      };
      const finish = (reply: Reply): void => {
        if (!settle()) return;
        let text: string;
        try {
          text = reply.text ?? JSON.stringify(reply.body);
        } catch (err) {
          reply = pipeline.fail(route, req, err);
          text = JSON.stringify(reply.body);
        }
        const r = reply;
        // Corked: status, headers and body leave in one write. A body left unread
        // on the wire (413, refused before reading) makes the connection unusable.
        res.cork(() => write(res, r, text, req.id, closing || bodyUnread));
        pipeline.done(route, req, reply.status, started, performance.now());
      };
      res.onAborted(() => {
        aborted = true;
        if (settle()) pipeline.done(route, req, CLIENT_CLOSED, started, performance.now());
      });
      const run = (): void => {
        const out = pipeline.run(route, req);
        // run settles every failure into a reply itself.
        if (out instanceof Promise) void out.then(finish);
        else finish(out);
      };
      const refused = pipeline.admit(route, req);
      if (refused !== undefined) {
        finish(refused);
        return;
      }
      if (route.body !== true) {
        run();
        return;
      }
      const declared = Number(h.get('content-length') ?? '0');
      if (declared > MAX_BODY_BYTES) {
        finish(pipeline.fail(route, req, tooLarge()));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.onData((chunk, isLast) => {
        if (aborted || settled) return;
        size += chunk.byteLength;
        if (size > MAX_BODY_BYTES) {
          finish(pipeline.fail(route, req, tooLarge()));
          return;
        }
        // The chunk's memory is reused after this callback: copy it.
        chunks.push(Buffer.from(new Uint8Array(chunk)));
        if (!isLast) return;
        bodyUnread = false;
        (req as { rawBody: Buffer }).rawBody = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
        run();
      });
    };
    if (route.method === 'ANY') app.any(route.pattern, handler);
    else if (route.method === 'DELETE') app.del(route.pattern, handler);
    else app[route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch'](route.pattern, handler);
  };

  for (const r of opts.routes) mount(r);
  mount(opts.fallback);

  return new Promise((resolve, reject) => {
    // Exclusive: uWS would otherwise share the port (SO_REUSEPORT) with another
    // server already on it, and the kernel would split the traffic between them.
    const listen = app.listen as unknown as (host: string, port: number, options: number, cb: (s: uWS.us_listen_socket | false) => void) => void;
    listen.call(app, opts.host, opts.port, EXCLUSIVE_PORT, (socket) => {
      if (socket === false) {
        reject(new Error(`cannot listen on ${opts.host}:${opts.port}`));
        return;
      }
      resolve({
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: (graceMs) => {
          closing = true;
          uWS.us_listen_socket_close(socket);
          if (inflight === 0) return Promise.resolve(0);
          return new Promise((done) => {
            const timer = setTimeout(() => done(inflight), graceMs);
            idle = () => {
              clearTimeout(timer);
              // Called inside a uWS callback whose corked writes flush only when it
              // returns: resolve on the next turn, or the exit would drop the answer.
              setImmediate(() => done(0));
            };
          });
        },
      });
    });
  });
}

/** Headers the pipeline and the front end read on every request. */
const PIPELINE_HEADERS = ['x-api-key', 'authorization', 'content-length', 'x-request-id'] as const;

/** The native constant (the type declarations have it only as an enum). */
const EXCLUSIVE_PORT = (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;

/** Recorded in metrics for a request the client abandoned (nginx's convention). */
const CLIENT_CLOSED = 499;

const tooLarge = (): ApiError => new ApiError(413, `body larger than ${MAX_BODY_BYTES} bytes`);

function readParams(ureq: uWS.HttpRequest, names: readonly string[]): Record<string, string> {
  const params: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) {
    const raw = ureq.getParameter(i) ?? '';
    let v = raw;
    if (raw.includes('%')) {
      try {
        v = decodeURIComponent(raw);
      } catch {
        // Left as sent; a handler validating it will name the parameter.
      }
    }
    params[names[i]!] = v;
  }
  return params;
}

function write(res: uWS.HttpResponse, reply: Reply, text: string, reqId: string, closeConnection: boolean): void {
  res.writeStatus(STATUS[reply.status] ?? String(reply.status));
  res.writeHeader('content-type', reply.contentType ?? 'application/json');
  res.writeHeader('x-request-id', reqId);
  if (reply.headers !== undefined) for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!);
  res.end(text, closeConnection);
}
