import { performance } from 'node:perf_hooks';
import uWS from 'uWebSockets.js';
import { ApiError } from '../../engine/errors.js';
import { MAX_BODY_BYTES } from '../../engine/size-limits.js';
import { canonicalAddress, type ClientAddresses } from './client-address.js';
import type { Pipeline } from './pipeline.js';
import { paramNames, type Reply, type Request, type Route } from './route.js';

/** A too-large body is read and dropped up to this much so its 413 reaches the client; beyond it the connection is closed. */
const DISCARD_BYTES = 16 << 20;

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
  200: '200 OK',
  201: '201 Created',
  204: '204 No Content',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  410: '410 Gone',
  413: '413 Payload Too Large',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  501: '501 Not Implemented',
  502: '502 Bad Gateway',
  503: '503 Service Unavailable',
  504: '504 Gateway Timeout',
};

export function startServer(opts: {
  host: string;
  port: number;
  routes: readonly Route[];
  pipeline: Pipeline;
  fallback: Route;
}): Promise<Server> {
  const { pipeline } = opts;
  const { clients } = pipeline;
  const app = uWS.App();

  const server: Front = { pipeline, inflight: 0, closing: false, idle: undefined };
  const reqPrefix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-4)}`;
  let seq = 0;

  const mount = (route: Route): void => {
    const names = paramNames(route.pattern);
    const wanted = [...PIPELINE_HEADERS, ...(route.headers ?? [])];
    const handler = (res: uWS.HttpResponse, ureq: uWS.HttpRequest): void => {
      const started = performance.now();
      server.inflight++;
      // uWS's request object dies when this callback returns: copy what is needed now,
      // which is the headers the pipeline reads plus those the route declares.
      const values = wanted.map((name) => ureq.getHeader(name));
      const incomingId = values[REQUEST_ID]!;
      const req = new UwsRequest(
        route.method === 'ANY' ? ureq.getCaseSensitiveMethod().toUpperCase() : route.method,
        ureq.getUrl(),
        ureq.getQuery() ?? '',
        readParams(ureq, names),
        wanted,
        values,
        incomingId !== '' && SANE_ID.test(incomingId) ? incomingId : `${reqPrefix}-${(++seq).toString(36)}`,
        clients === undefined ? undefined : clientOf(clients, res, ureq),
      );
      const ex = new Exchange(server, res, route, req, started);
      const length = values[CONTENT_LENGTH]!;
      if (length !== '' && lengthsDiffer(ureq, length)) {
        ex.refuseFraming(pipeline.fail(route, req, conflictingLengths()));
        return;
      }
      const refused = pipeline.admit(route, req);
      if (refused !== undefined) ex.finish(refused);
      else if (route.body !== true) ex.run();
      else ex.readBody(Number(length || '0'));
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
    const listen = app.listen as unknown as (
      host: string,
      port: number,
      options: number,
      cb: (s: uWS.us_listen_socket | false) => void,
    ) => void;
    listen.call(app, opts.host, opts.port, EXCLUSIVE_PORT, (socket) => {
      if (socket === false) {
        reject(new Error(`cannot listen on ${opts.host}:${opts.port}`));
        return;
      }
      resolve({
        port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket),
        close: (graceMs) => {
          server.closing = true;
          uWS.us_listen_socket_close(socket);
          if (server.inflight === 0) return Promise.resolve(0);
          return new Promise((done) => {
            const timer = setTimeout(() => done(server.inflight), graceMs);
            server.idle = () => {
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

/** Headers the pipeline and the front end read on every request; the front end reads two by position. */
const PIPELINE_HEADERS = ['x-api-key', 'authorization', 'content-length', 'x-request-id'] as const;
const CONTENT_LENGTH = 2;
const REQUEST_ID = 3;
/** A client's x-request-id is kept when it is this sane. */
const SANE_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** What the requests of one listener share. */
interface Front {
  readonly pipeline: Pipeline;
  inflight: number;
  closing: boolean;
  /** Set while closing: called once the last in-flight request settles. */
  idle: (() => void) | undefined;
}

/** A request as the routes see it, with the headers copied out of uWS's short-lived request. */
class UwsRequest implements Request {
  rawBody: Buffer | undefined = undefined;
  body: unknown = undefined;
  caller: Request['caller'] = undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly query: string,
    readonly params: Record<string, string>,
    private readonly names: readonly string[],
    private readonly values: readonly string[],
    readonly id: string,
    readonly client: string | undefined,
  ) {}

  header(name: string): string | undefined {
    const v = this.values[this.names.indexOf(name)];
    return v === '' ? undefined : v;
  }
}

/**
 * One request from admission to its answer, as an object rather than closures: the
 * synchronous path (most requests) allocates nothing else. Settled exactly once:
 * answered, or abandoned by the client; the in-flight count and the metrics follow
 * settlement, so an abort can never leak.
 */
class Exchange {
  private settled = false;
  private aborted = false;
  private watching = false;
  /** The status of a refusal still to be sent: what the request counts as if the connection ends first. */
  private refused: number | undefined = undefined;
  /** A body left unread on the wire (413, refused before reading) makes the connection unusable. */
  private bodyUnread: boolean;

  constructor(
    private readonly front: Front,
    private readonly res: uWS.HttpResponse,
    private readonly route: Route,
    private readonly req: UwsRequest,
    private readonly started: number,
  ) {
    this.bodyUnread = route.body === true;
  }

  run(): void {
    const out = this.front.pipeline.run(this.route, this.req);
    // run settles every failure into a reply itself.
    if (out instanceof Promise) {
      this.watchAbort();
      void out.then((reply) => this.finish(reply));
    } else {
      this.finish(out);
    }
  }

  /** Reads the JSON body (up to MAX_BODY_BYTES) and runs the route with it. */
  readBody(declared: number): void {
    const { pipeline } = this.front;
    this.watchAbort();
    const chunks: Buffer[] = [];
    let size = 0;
    // Too large: the rest is read and dropped, and 413 answered once it is in. Closing with the body unread
    // would reset the connection, and the client would lose the 413 in it; past DISCARD_BYTES it is closed anyway.
    let tooBig = declared > MAX_BODY_BYTES;
    this.res.onData((chunk, isLast) => {
      if (this.aborted || this.settled) return;
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) tooBig = true;
      if (tooBig) {
        if (isLast) this.bodyUnread = false;
        if (isLast || size > DISCARD_BYTES) this.finish(pipeline.fail(this.route, this.req, tooLarge()));
        return;
      }
      // The chunk's memory is reused after this callback: copy it.
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (!isLast) return;
      this.bodyUnread = false;
      this.req.rawBody = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      this.run();
    });
  }

  /**
   * Answers a request whose body cannot be told apart from the next request's, and closes the connection. The answer
   * leaves after uWS's callback: answered within it, uWS would go on to serve a request pipelined behind this one,
   * while with this answer pending it closes the connection at such a request instead (nothing answered).
   */
  refuseFraming(reply: Reply): void {
    this.bodyUnread = true;
    this.refused = reply.status;
    this.watchAbort();
    setImmediate(() => this.finish(reply));
  }

  finish(reply: Reply): void {
    if (!this.settle()) return;
    const { pipeline } = this.front;
    let text: string;
    try {
      text = reply.text ?? JSON.stringify(reply.body);
    } catch (err) {
      reply = pipeline.fail(this.route, this.req, err);
      text = JSON.stringify(reply.body);
    }
    const close = this.front.closing || this.bodyUnread;
    // Corked: status, headers and body leave in one write.
    if (this.watching) this.res.cork(() => write(this.res, reply, text, this.req.id, close));
    // Still inside uWS's request callback, which corks by itself.
    else write(this.res, reply, text, this.req.id, close);
    pipeline.done(this.route, this.req, reply.status, this.started, performance.now());
  }

  /** uWS must be told before its callback returns that the answer comes later; a client that leaves meanwhile counts as 499. */
  private watchAbort(): void {
    if (this.watching) return;
    this.watching = true;
    this.res.onAborted(() => {
      this.aborted = true;
      if (this.settle()) this.front.pipeline.done(this.route, this.req, this.refused ?? CLIENT_CLOSED, this.started, performance.now());
    });
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    const front = this.front;
    front.inflight--;
    if (front.closing && front.inflight === 0) front.idle?.();
    return true;
  }
}

/** The native constant (the type declarations have it only as an enum). */
const EXCLUSIVE_PORT = (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;

/** Recorded in metrics for a request the client abandoned (nginx's convention). */
const CLIENT_CLOSED = 499;

/**
 * Whether the request carries Content-Length more than once with different values. uWS frames the body by the
 * first; a proxy in front taking the last would read the rest as another request (request smuggling). Read only
 * when there is a Content-Length at all, so a request without a body pays nothing.
 */
function lengthsDiffer(ureq: uWS.HttpRequest, first: string): boolean {
  let differ = false;
  ureq.forEach((name, value) => {
    if (name === 'content-length' && value !== first) differ = true;
  });
  return differ;
}

/**
 * The client's address (ClientAddresses.client), read while uWS's request lives: its peer, and X-Forwarded-For only from a
 * trusted proxy, every such header (a proxy may pass the client's own header on and add its own beside it).
 */
function clientOf(clients: ClientAddresses, res: uWS.HttpResponse, ureq: uWS.HttpRequest): string {
  const peer = canonicalAddress(Buffer.from(res.getRemoteAddressAsText()).toString('latin1'));
  if (!clients.trustsAny || !clients.trusts(peer)) return peer;
  let forwardedFor: string | undefined;
  ureq.forEach((name, value) => {
    if (name === 'x-forwarded-for') forwardedFor = forwardedFor === undefined ? value : `${forwardedFor},${value}`;
  });
  return clients.client(peer, forwardedFor);
}

const conflictingLengths = (): ApiError =>
  new ApiError(400, 'content-length: sent more than once with different values', { field: 'content-length' });

const tooLarge = (): ApiError =>
  new ApiError(413, `body: larger than ${MAX_BODY_BYTES} bytes, the most a request body may hold`, {
    field: 'body',
    limit: MAX_BODY_BYTES,
  });

/** The params of a route without any: one object for all its requests. */
const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

function readParams(ureq: uWS.HttpRequest, names: readonly string[]): Record<string, string> {
  if (names.length === 0) return NO_PARAMS;
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
