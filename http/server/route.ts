import type { z } from 'zod';
import type { ApiKey } from '../../engine/keys.js';
import { ApiError } from '../../engine/errors.js';
import { ADMIN_HEADER } from '../../engine/operator.js';

/**
 * A route, independent of the HTTP library: the uWS front end serves these,
 * and the HTTP benchmark mounts the very same routes on Fastify and node:http.
 */
export type Area = 'system' | 'admin' | 'auth' | 'keys' | 'streams' | 'data' | 'crosschain' | 'rpc';
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
  /** What the OpenAPI document says of it (http/server/openapi.ts): its request schemas and its answers. */
  readonly doc?: RouteDoc;
  handle(req: Request): Reply | Promise<Reply>;
}

/**
 * A route's description: the schemas its handler validates with (the request side) and those of its answers (the
 * response side), so the document and the checks are one set of schemas. Docs: docs/api.md#openapi.
 */
export interface RouteDoc {
  /** The hosted service's operationId where chainpost follows it; else made from the method and pattern. */
  readonly operationId?: string;
  readonly summary?: string;
  /** The query the handler validates (path parameters included, as the Data API's schemas take them): its input side. */
  readonly query?: z.ZodType;
  /** The JSON body the handler validates: its input side. */
  readonly body?: z.ZodType;
  /** The body may be left out (the handler then validates `{}`). */
  readonly optionalBody?: true;
  /** Each answer but an error: its status, and the schema of its JSON body or the content type of another. */
  readonly responses: Readonly<Record<number, z.ZodType | { readonly contentType: string }>>;
  /** Error statuses beyond those every route of its kind answers (openapi.ts `errorsOf`). */
  readonly errors?: readonly number[];
  /** A removal the route answers at `now` (the interface's table): documented as that answer alone. */
  removed?(now: number): { status: number; date: string; replacement?: string } | undefined;
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
