import type { ApiKey } from '../../engine/keys.js';
import { ApiError } from '../../engine/errors.js';
import { ADMIN_HEADER } from '../../engine/operator.js';

/**
 * A route, independent of the HTTP library: the uWS front end serves these,
 * and the HTTP benchmark mounts the very same routes on Fastify and node:http.
 */
export type Area = 'system' | 'admin' | 'auth' | 'streams' | 'data' | 'crosschain' | 'rpc';
export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'ANY';

export interface Request {
  readonly method: string;
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
  /** The raw query string, without `?`. */
  readonly query: string;
  header(lowerCaseName: string): string | undefined;
  readonly rawBody: Buffer | undefined;
  readonly id: string;
  /** The parsed JSON body (routes with `body: true`). */
  body: unknown;
  /** The key that called, once authenticated. */
  caller: ApiKey | undefined;
  /** The client's address, for the access log (Pipeline.clients); unset where the front end does not read it. */
  readonly client?: string;
}

export interface Reply {
  status: number;
  /** Serialized as JSON unless `text` is set. */
  body?: unknown;
  text?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface Route {
  readonly method: Method;
  /** `/path/:param/*` */
  readonly pattern: string;
  readonly area: Area;
  /** `key`: x-api-key or Bearer header; `path`: the `:apiKey` path parameter; `none`: public. */
  readonly auth: 'key' | 'path' | 'none';
  /** Request headers the handler reads besides x-api-key, authorization, content-length and x-request-id (lower case). */
  readonly headers?: readonly string[];
  /** Reads a JSON body (up to the size limit). */
  readonly body?: boolean;
  /** Only the operator may call it, besides the key's check (engine/operator.ts); made with operatorOnly. */
  readonly operator?: boolean;
  /** Error bodies as JSON-RPC error objects (node access) instead of `{message}`. */
  readonly errors?: 'json' | 'jsonrpc';
  handle(req: Request): Reply | Promise<Reply>;
}

/** `route` for the operator alone: its credential comes in x-admin-key, which the front end then reads. */
export const operatorOnly = (route: Route): Route => ({ ...route, operator: true, headers: [...(route.headers ?? []), ADMIN_HEADER] });

export const json = (status: number, body: unknown, headers?: Record<string, string>): Reply =>
  headers === undefined ? { status, body } : { status, body, headers };

/** A reply that never changes, serialized once: every request gets the same object (never modified). */
export const constantJson = (status: number, body: unknown): Reply => Object.freeze({ status, text: JSON.stringify(body) });

/** Names of the `:params` of a pattern, in order. */
export const paramNames = (pattern: string): string[] =>
  pattern
    .split('/')
    .filter((s) => s.startsWith(':'))
    .map((s) => s.slice(1));

/** An endpoint the interface names that a later issue builds: 501 with its name, after its own checks. */
export const notBuilt = (method: Method, pattern: string): never => {
  throw new ApiError(501, `${method} ${pattern} is not built yet`);
};
