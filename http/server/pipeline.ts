import type { TrustedProxy } from '../../engine/config/config.js';
import { ApiError } from '../../engine/errors.js';
import type { ApiKeys } from '../../engine/keys.js';
import type { Logger } from '../../engine/log.js';
import type { Metrics } from '../../engine/metrics.js';
import { ADMIN_HEADER, bearerToken, type OperatorAccess } from '../../engine/operator.js';
import type { RateLimiter } from '../../engine/ratelimit.js';
import { nodeAccessKey, nodeAccessPath, unmatchedPath } from '../../engine/redact.js';
import { ClientAddresses } from './client-address.js';
import type { Reply, Request, Route } from './route.js';

/**
 * What every request goes through, whatever serves it: API key, rate limit,
 * JSON body, the handler, and errors turned into replies. No exception reaches
 * the client as anything but a JSON reply; only unexpected ones become 500.
 */
export class Pipeline {
  /** How the access log tells a request's client; undefined when there is no access log, so the front end reads no address. */
  readonly clients: ClientAddresses | undefined;

  constructor(
    private readonly keys: ApiKeys,
    private readonly limiter: RateLimiter,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    accessLog: boolean,
    trustedProxies: readonly TrustedProxy[],
    private readonly operator: OperatorAccess,
  ) {
    this.clients = accessLog && log.enabled('info') ? new ClientAddresses(trustedProxies) : undefined;
  }

  /**
   * API key and rate limit, from the headers alone: checked before a body is
   * read, so an unknown or throttled caller cannot make the server buffer one.
   * Returns the refusal, or undefined to go on.
   */
  admit(route: Route, req: Request): Reply | undefined {
    if (route.auth === 'none') return undefined;
    try {
      this.authorize(route, req);
      return undefined;
    } catch (err) {
      return this.fail(route, req, err);
    }
  }

  /** The handler, once admitted and the body read. Synchronous when the handler is, so the common path allocates no promise. */
  run(route: Route, req: Request): Reply | Promise<Reply> {
    try {
      if (route.body === true) req.body = parseBody(req.rawBody);
      const out = route.handle(req);
      return out instanceof Promise ? out.catch((err: unknown) => this.fail(route, req, err)) : out;
    } catch (err) {
      return this.fail(route, req, err);
    }
  }

  /** The reply for an error: its own status for ApiError, 500 for anything else (logged). */
  fail(route: Route, req: Request, err: unknown): Reply {
    const e = err instanceof ApiError ? err : undefined;
    if (e === undefined) this.log.error('request failed', { reqId: req.id, method: req.method, path: loggedPath(route, req), err });
    const status = e?.status ?? 500;
    const message = e?.message ?? `internal error (request ${req.id})`;
    const body =
      route.errors === 'jsonrpc'
        ? { jsonrpc: '2.0', id: rpcId(req), error: { code: rpcCode(status, message), message } }
        : e?.details === undefined
          ? { message }
          : { message, details: e.details };
    return e?.headers === undefined ? { status, body } : { status, body, headers: e.headers };
  }

  /** Counts and logs an answered request. */
  done(route: Route, req: Request, status: number, startedMs: number, endedMs: number): void {
    const area = route?.area ?? 'none';
    this.metrics.observe(area, status, (endedMs - startedMs) / 1000);
    if (this.clients !== undefined) {
      this.log.info('request', {
        reqId: req.id,
        method: req.method,
        path: loggedPath(route, req),
        status,
        area,
        ms: +(endedMs - startedMs).toFixed(3),
        tenant: req.caller?.tenantId,
        client: req.client,
      });
    }
  }

  private authorize(route: Route, req: Request): void {
    const key =
      route.auth === 'path'
        ? nodeAccessKey(req.path, pathPrefix(route))?.key
        : (req.header('x-api-key') ?? bearerToken(req.header('authorization')));
    if (key === undefined || key === '')
      throw new ApiError(401, route.auth === 'path' ? 'missing API key in the path' : 'missing API key: send the x-api-key header');
    const caller = this.keys.authenticate(key);
    if (caller === undefined) throw new ApiError(401, 'unknown API key');
    req.caller = caller;
    if (route.operator === true) this.operator.check(caller, req.header(ADMIN_HEADER));
    const wait = this.limiter.take(caller.hash);
    if (wait > 0) throw new ApiError(429, 'too many requests for this API key', undefined, { 'retry-after': String(wait) });
  }
}

/** The path as logs show it: a node-access key masked, also in a path no route took (the fallback `/*`). */
function loggedPath(route: Route | undefined, req: Request): string {
  if (route?.auth === 'path') return nodeAccessPath(req.path, pathPrefix(route));
  return route === undefined || route.pattern === '/*' ? unmatchedPath(req.path) : req.path;
}

/** A key-in-path route's pattern is `{prefix}/:chain/:apiKey`: its prefix, `/rpc` or empty. */
const pathPrefix = (route: Route): string => route.pattern.slice(0, route.pattern.indexOf('/:'));

/**
 * JSON bodies nest at most this deep. JSON.parse takes any depth, but what handles the value afterwards
 * (JSON.stringify of a node-access call's params, the store's encoder) recurses, and 10,000 levels overflow
 * the stack: a RangeError, answered 500. No request the interface describes comes near this.
 */
export const MAX_JSON_DEPTH = 256;

function parseBody(raw: Buffer | undefined): unknown {
  if (raw === undefined || raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  // Nesting past the limit takes two characters a level: shorter bodies are not scanned.
  if (text.length > 2 * MAX_JSON_DEPTH && nestedDeeper(text, MAX_JSON_DEPTH))
    throw new ApiError(400, `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`, { field: 'body' });
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ApiError(400, `malformed JSON body: ${(err as Error).message}`, { field: 'body' });
  }
}

/** Whether JSON text opens more than `max` arrays and objects inside one another (brackets within strings not counted). */
function nestedDeeper(text: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string, its escaped characters included.
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** JSON-RPC 2.0 error codes for node-access replies (EIP-1474 for the limit). */
function rpcCode(status: number, message: string): number {
  if (status === 400) return message.startsWith('malformed JSON') ? -32700 : -32600;
  if (status === 404 || status === 501) return -32601;
  if (status === 429) return -32005;
  if (status === 401) return -32001;
  return -32603;
}

/** The request's JSON-RPC id, also when the error came before the body was parsed (auth, rate limit). */
function rpcId(req: Request): unknown {
  let body = req.body;
  if (body === undefined && req.rawBody !== undefined) {
    try {
      body = JSON.parse(req.rawBody.toString('utf8'));
    } catch {
      return null;
    }
  }
  const id = (body as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'number' || typeof id === 'string' ? id : null;
}
