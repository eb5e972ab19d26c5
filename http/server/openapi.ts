import { z } from 'zod';
import { paramNames, type Area, type Route, type RouteDoc } from './route.js';

/**
 * The OpenAPI 3.1 document of the routes a server answers, built from its route table: each route's own request
 * schemas (the zod schemas its handler validates with, input side) and answer schemas (output side), the errors its
 * kind of route answers, and the removals in effect on the service date. Docs: docs/api.md#openapi.
 */

type JsonSchema = Record<string, unknown>;
type Operation = Record<string, unknown>;

const TAGS: Record<Area, string> = {
  system: 'Health, metrics and this reference',
  admin: "The operator's routes (CHAINPOST_ADMIN_KEY in x-admin-key; a test clock's server only)",
  auth: 'Sign-in by wallet signature, profiles and bind',
  keys: "The API keys of the caller's tenant: list, create, rotate, revoke",
  streams: 'Webhooks for on-chain activity: streams, their addresses, history and replay',
  data: 'Indexed reads of EVM chains (/api/v2.2)',
  crosschain: 'Reads across chain families (/v1)',
  rpc: 'JSON-RPC to the chains this server follows',
};

/** The error body every route but node access answers (engine/errors.ts). */
const ERROR_BODY: JsonSchema = {
  type: 'object',
  required: ['message'],
  properties: {
    message: { type: 'string' },
    details: { description: 'What the error is about: `field` for a bad input, `limit` for one over its size, …' },
  },
};
/** Node access answers its errors as JSON-RPC does. */
const RPC_ERROR_BODY: JsonSchema = {
  type: 'object',
  required: ['jsonrpc', 'error'],
  properties: {
    jsonrpc: { const: '2.0' },
    id: {},
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} },
    },
  },
};

const ERROR_TEXT: Record<number, string> = {
  400: 'A bad input: `details.field` names it',
  401: 'No API key, or one this server does not know',
  403: "The key's tenant may not call it",
  404: 'What the path names does not exist (for this tenant)',
  410: 'Removed on the date the interface gives',
  413: 'A body over the size limit',
  429: "Over the key's request rate: Retry-After says when to try again",
  501: 'Not served by this server: the message says why and what it does instead',
  502: "The chain's node could not be reached for a read the answer needs: the request may be sent again",
  503: 'Not ready yet (starting), or a cluster whose bus is down: Retry-After says when to try again',
};

/** The error statuses a route answers: its kind's, then its own. */
export function errorsOf(route: Route): number[] {
  const out = new Set<number>();
  const params = paramNames(route.pattern).length > 0;
  if (params || route.body === true || route.doc?.query !== undefined || route.area === 'data' || route.area === 'crosschain') out.add(400);
  if (route.auth !== 'none') out.add(401).add(429);
  if (route.operator === true) out.add(403);
  if (params) out.add(404);
  if (route.body === true) out.add(413);
  // A write through a cluster's control plane while its bus is down.
  if (route.auth === 'key' && route.method !== 'GET') out.add(503);
  for (const s of route.doc?.errors ?? []) out.add(s);
  return [...out].sort((a, b) => a - b);
}

/** `/a/:b/*` as OpenAPI writes it: `/a/{b}/{path}`. */
export const openApiPath = (pattern: string): string =>
  pattern
    .split('/')
    .map((s) => (s.startsWith(':') ? `{${s.slice(1)}}` : s === '*' ? '{path}' : s))
    .join('/');

const METHODS = ['get', 'post', 'put', 'delete', 'patch'] as const;

/** The JSON Schema of a zod schema, as one side of it sees it (a transform's input is what a client sends). */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _, ...json } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  return json;
}

/** The named properties of an object schema, also of each branch of a union or intersection; `required` from the whole. */
function propertiesOf(json: JsonSchema): { properties: Record<string, JsonSchema>; required: Set<string> } {
  const properties: Record<string, JsonSchema> = {};
  const required = new Set<string>((json['required'] as string[] | undefined) ?? []);
  Object.assign(properties, json['properties'] ?? {});
  for (const k of ['allOf', 'anyOf', 'oneOf'] as const) {
    for (const branch of (json[k] as JsonSchema[] | undefined) ?? []) {
      const inner = propertiesOf(branch);
      for (const [name, s] of Object.entries(inner.properties)) properties[name] ??= s;
      if (k === 'allOf') for (const r of inner.required) required.add(r);
    }
  }
  return { properties, required };
}

function parametersOf(route: Route): JsonSchema[] {
  const pathNames = paramNames(route.pattern);
  const query = route.doc?.query === undefined ? undefined : propertiesOf(jsonSchemaOf(route.doc.query, 'input'));
  const path = pathNames.map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: query?.properties[name] ?? { type: 'string' },
    ...(route.auth === 'path' && name === 'apiKey' ? { description: 'The API key: node access takes it in the path' } : {}),
  }));
  if (route.pattern.endsWith('/*')) path.push({ name: 'path', in: 'path', required: true, schema: { type: 'string' } });
  const inQuery = Object.entries(query?.properties ?? {})
    .filter(([name]) => !pathNames.includes(name))
    .map(([name, schema]) => ({
      name,
      in: 'query',
      ...(query!.required.has(name) ? { required: true } : {}),
      schema,
      ...(schema['type'] === 'array' ? { style: 'form', explode: true } : {}),
    }));
  return [...path, ...inQuery];
}

const errorResponse = (route: Route, status: number, description = ERROR_TEXT[status] ?? 'An error'): JsonSchema => ({
  description,
  content: { 'application/json': { schema: { $ref: `#/components/schemas/${route.errors === 'jsonrpc' ? 'RpcError' : 'Error'}` } } },
});

function responsesOf(route: Route, doc: RouteDoc | undefined): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const [status, answer] of Object.entries(doc?.responses ?? {})) {
    out[status] =
      answer instanceof z.ZodType
        ? { description: 'The answer', content: { 'application/json': { schema: jsonSchemaOf(answer, 'output') } } }
        : { description: 'The answer', content: { [answer.contentType]: {} } };
  }
  for (const status of errorsOf(route)) out[String(status)] ??= errorResponse(route, status);
  return out;
}

const SECURITY: Record<Route['auth'], JsonSchema[]> = {
  key: [{ apiKey: [] }, { bearer: [] }],
  path: [],
  none: [],
};

/** operationId from the method and pattern where the route names none: `getStreamsEvmById`. */
function madeOperationId(method: string, pattern: string): string {
  const words = pattern
    .split('/')
    .filter((s) => s !== '' && s !== 'api' && s !== 'v2.2')
    .map((s) => (s.startsWith(':') ? `By_${s.slice(1)}` : s === '*' ? 'Any' : s))
    .flatMap((s) => s.split(/[^A-Za-z0-9]+/))
    .filter((w) => w !== '');
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

function operationOf(route: Route, method: string, now: number): Operation {
  const doc = route.doc;
  const removed = doc?.removed?.(now);
  const base: Operation = {
    operationId: doc?.operationId ?? madeOperationId(method, route.pattern),
    tags: [route.area],
    ...(doc?.summary === undefined ? {} : { summary: doc.summary }),
    security: route.operator === true ? [{ apiKey: [], adminKey: [] }] : SECURITY[route.auth],
    parameters: parametersOf(route),
  };
  if (removed !== undefined) {
    const instead = removed.replacement === undefined ? '' : `; use ${removed.replacement} instead`;
    return {
      ...base,
      deprecated: true,
      description: `Removed on ${removed.date}${instead}.`,
      responses: { [String(removed.status)]: errorResponse(route, removed.status, `Removed on ${removed.date}${instead}`) },
    };
  }
  return {
    ...base,
    ...(route.body === true
      ? {
          requestBody: {
            required: doc?.body !== undefined && doc.optionalBody !== true,
            content: { 'application/json': { schema: doc?.body === undefined ? {} : jsonSchemaOf(doc.body, 'input') } },
          },
        }
      : {}),
    responses: responsesOf(route, doc),
  };
}

/**
 * A recursive zod schema comes out with `$defs` and `$ref: '#/$defs/…'`, which in a schema embedded in the document
 * would resolve against the document's root: its definitions are moved to components.schemas under names of their
 * own (`<operationId>_<name>`, a number added if taken) and its references renamed with them.
 */
function hoistDefs(node: unknown, prefix: string, into: Record<string, JsonSchema>, names: Record<string, string> = {}): unknown {
  if (Array.isArray(node)) return node.map((n) => hoistDefs(n, prefix, into, names));
  if (node === null || typeof node !== 'object') return node;
  const { $defs, ...rest } = node as JsonSchema;
  let scope = names;
  if ($defs !== undefined) {
    scope = { ...names };
    for (const name of Object.keys($defs as JsonSchema)) {
      const base = `${prefix}_${name.replace(/^_+/, '')}`;
      let unique = base;
      for (let n = 2; unique in into; n++) unique = `${base}${n}`;
      into[unique] = {};
      scope[name] = unique;
    }
    for (const [name, def] of Object.entries($defs as JsonSchema)) into[scope[name]!] = hoistDefs(def, prefix, into, scope) as JsonSchema;
  }
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(rest)) {
    const def = k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/') ? scope[v.slice('#/$defs/'.length)] : undefined;
    out[k] = def === undefined ? hoistDefs(v, prefix, into, scope) : `#/components/schemas/${def}`;
  }
  return out;
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  paths: Record<string, Record<string, Operation>>;
  [k: string]: unknown;
}

/** The document of `routes` on the service date `now`. */
export function openApiDocument(routes: readonly Route[], opts: { now: number; version: string }): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  const seen = new Set<string>();
  const defs: Record<string, JsonSchema> = {};
  for (const route of routes) {
    const path = openApiPath(route.pattern);
    for (const method of route.method === 'ANY' ? METHODS : [route.method.toLowerCase() as (typeof METHODS)[number]]) {
      const op = operationOf(route, method, opts.now);
      // Two routes under one pattern (each family's block endpoints) would make one id twice.
      let id = op['operationId'] as string;
      for (let n = 2; seen.has(id); n++) id = `${op['operationId']}${n}`;
      seen.add(id);
      (paths[path] ??= {})[method] = hoistDefs({ ...op, operationId: id }, id, defs) as Operation;
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'chainpost',
      version: opts.version,
      description:
        'The routes this server answers with its configuration on its service date: the Auth, Streams, Data (/api/v2.2) and cross-chain (/v1) APIs and node access.',
    },
    servers: [{ url: '/' }],
    tags: Object.entries(TAGS)
      .filter(([name]) => routes.some((r) => r.area === name))
      .map(([name, description]) => ({ name, description })),
    components: {
      schemas: { Error: ERROR_BODY, RpcError: RPC_ERROR_BODY, ...defs },
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        bearer: { type: 'http', scheme: 'bearer', description: 'The API key as a Bearer token' },
        adminKey: { type: 'apiKey', in: 'header', name: 'x-admin-key' },
      },
    },
    paths,
  };
}
