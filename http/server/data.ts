import type { Clock } from '../../engine/clock.js';
import { chainFor } from '../../engine/chains/lifecycle.js';
import { findChain, type Chain } from '../../engine/chains/registry.js';
import { ENDPOINT_REMOVALS, endpointRemoval, inEffect, type EndpointRemoval } from '../../engine/chains/removals.js';
import { endpointWeights, endpointWeightsAnswer } from '../../engine/data-api/common/endpoint-weights.js';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import { z } from 'zod';
import { ApiError, badRequest } from '../../engine/errors.js';
import { validate } from '../../engine/schema.js';
import { queryList as listOf, queryParams } from './query.js';
import { constantJson, json, notBuilt, type Method, type Reply, type Request, type Route, type RouteDoc } from './route.js';

/** The Data API: /api/v2.2 (the interface's version segment). */
export const DATA_PREFIX = '/api/v2.2';

const ETH = findChain('0x1')!;
const VERSION = constantJson(200, { version: '2.2' });
const versionAnswer = z.object({ version: z.string() });

/** The chain of a data request: `chain` as hex, decimal or slug, default 0x1; removed chains → 400. */
export function dataChain(req: Request, now: number): Chain {
  if (!req.query.includes('chain')) return ETH;
  const given = queryParams(req.query).getAll('chain');
  if (given.length > 1) throw badRequest('chain', 'given more than once; a data request is about one chain');
  return given.length === 0 ? ETH : chainFor(given[0]!, 'data', now);
}

/** The query's single values (an empty one counts as absent), then the path parameters, for an endpoint's schema. */
export function queryAndPath(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of queryParams(req.query)) if (v !== '') out[k] = v;
  return { ...out, ...req.params };
}

const ENTITIES =
  'labels of people and companies (entities, their categories and addresses) are an off-chain dataset this server does not have; the entity and label fields of its answers are null';
/**
 * Operations of the hosted service that rest on services this server does not run: 501, saying what it does
 * instead (the official SDK calls them like any other).
 */
const NOT_HERE: ReadonlyArray<[Method, string, string]> = [
  // Fixed paths before /entities/:entityId.
  ['GET', '/entities/search', ENTITIES],
  ['GET', '/entities/categories', ENTITIES],
  ['GET', '/entities/categories/:categoryId', ENTITIES],
  ['GET', '/entities/:entityId', ENTITIES],
  [
    'POST',
    '/contracts-review',
    "this server runs no off-chain contract review service and keeps no reports; the possible_spam of its token answers comes from each token's own name and symbol",
  ],
  [
    'POST',
    '/ipfs/uploadFolder',
    'this server runs no IPFS node and stores no files; upload to an IPFS node or pinning service of your own (ipfs:// NFT metadata is read through CHAINPOST_IPFS_GATEWAY)',
  ],
];

/**
 * One Data API endpoint of a group (engine/data-api/ names each group's handlers): `path` under
 * /api/v2.2; `handle` gets the request and its chain, which this server follows.
 */
export interface DataEndpoint {
  /** The operation's name (the hosted OpenAPI document's operationId, else the official SDK's): GET /info/endpointWeights lists it. */
  operation: string;
  method: Method;
  path: string;
  /**
   * What the wrapper does with `chain`. Default: read and checked (lifecycle, followed here). `none`: the
   * endpoint takes none (ENS, endpoint weights, or its own `chains`): neither read nor checked, and handle
   * gets 0x1. `known`: read and lifecycle-checked, but it need not be followed here (a default the endpoint's
   * own `chains` may override).
   */
  chain?: 'none' | 'known';
  /** The query schema `handle` validates with (path parameters included), the body's, and its answers' (RouteDoc). */
  query?: z.ZodType;
  body?: z.ZodType;
  responses?: RouteDoc['responses'];
  errors?: readonly number[];
  handle(req: Request, chain: Chain): Reply | Promise<Reply>;
}

/** A query parameter given as a list: `name=a&name=b`, `name[]=a`, `name[0]=a` (how clients write arrays), empty ones left out. */
export function queryList(req: Request, name: string): string[] {
  return listOf(queryParams(req.query), name);
}

/** An endpoint whose query (and path) is checked by `schema`, answered `status` with what `run` returns. */
export function queryEndpoint<S extends z.ZodType>(
  operation: string,
  method: Method,
  path: string,
  schema: S,
  run: (chain: string, q: z.output<S>) => unknown,
  opts: { lists?: string[]; status?: (q: z.output<S>) => number } = {},
): DataEndpoint {
  return {
    operation,
    method,
    path,
    query: schema,
    async handle(req: Request, chain: Chain) {
      const q = validate(schema, { ...queryAndPath(req), ...arrayParams(req, opts.lists ?? []) }, 'query');
      return json(opts.status?.(q) ?? 200, await run(chain.key, q));
    },
  };
}

/** Array parameters (`name[]=a&name[]=b`, `name=a&name=b`, `name=a,b`), present only when given. */
export function arrayParams(req: Request, names: readonly string[]): Record<string, string[]> {
  const params = queryParams(req.query);
  const out: Record<string, string[]> = {};
  for (const name of names) {
    const values = listOf(params, name);
    if (values.length > 0) out[name] = values;
  }
  return out;
}

/** A chain asked for that this server does not follow: 400 naming `chain`, and how to follow it. */
export function notFollowed(chain: Chain): ApiError {
  return badRequest(
    'chain',
    `${chain.key} (${chain.name}) is not followed by this server; add it to CHAINPOST_CHAINS (\`${chain.key}=http://its-node:8545\`) and restart`,
  );
}

export function dataRoutes(clock: Clock, deps: DataDeps, groups: ReadonlyArray<readonly DataEndpoint[]> = []): Route[] {
  const route = (method: Method, path: string, doc: RouteDoc, handle: Route['handle']): Route => ({
    method,
    pattern: `${DATA_PREFIX}${path}`,
    area: 'data',
    auth: 'key',
    body: method === 'POST',
    doc,
    handle,
  });
  // The weights are this table's operations: what is served here, each under its own path.
  const endpoints: DataEndpoint[] = [
    {
      operation: 'web3ApiVersion',
      method: 'GET',
      path: '/web3/version',
      chain: 'none',
      responses: { 200: versionAnswer },
      handle: () => VERSION,
    },
    {
      operation: 'endpointWeights',
      method: 'GET',
      path: '/info/endpointWeights',
      chain: 'none',
      responses: { 200: endpointWeightsAnswer },
      handle: () => json(200, endpointWeights(clock.now(), endpoints)),
    },
    ...groups.flat(),
  ];
  const built = new Set(endpoints.map((e) => `${e.method} ${e.path}`));
  // Fixed paths before parameter paths (GET /dateToBlock before GET /:address), whatever the router prefers.
  const fixedFirst = [...endpoints].sort((a, b) => fixedness(b.path) - fixedness(a.path));
  return [
    ...fixedFirst.map((e) =>
      route(e.method, e.path, endpointDoc(e), (req) => {
        const gone = endpointRemoval(e.method, e.path, clock.now());
        if (gone !== undefined) throw removedEndpoint(gone);
        if (e.chain === 'none') return e.handle(req, ETH);
        const chain = dataChain(req, clock.now());
        if (e.chain !== 'known' && deps.follower(chain.key) === undefined) throw notFollowed(chain);
        return e.handle(req, chain);
      }),
    ),
    ...NOT_HERE.map(([m, p, instead]) =>
      route(m, p, { summary: instead, responses: {}, errors: [501] }, () => {
        throw new ApiError(501, `${m} ${DATA_PREFIX}${p}: ${instead}`);
      }),
    ),
    // A removed endpoint a group builds answers through the group's route, which checks the date itself.
    ...ENDPOINT_REMOVALS.filter((r) => !built.has(`${r.method} ${r.path}`)).map((r) =>
      route(r.method, r.path, { responses: {}, errors: [501], removed: (now) => (inEffect(r, now) ? r : undefined) }, (req) => {
        if (inEffect(r, clock.now())) throw removedEndpoint(r);
        dataChain(req, clock.now());
        return notBuilt(r.method, `${DATA_PREFIX}${r.path}`);
      }),
    ),
  ];
}

/** `chain`, which the wrapper reads (dataChain), beside the endpoint's own query. */
const CHAIN_QUERY = z.object({
  chain: z.string().optional().meta({ description: 'The chain: hex id, decimal id or name; 0x1 when absent' }),
});
const withChain = (query: z.ZodType | undefined): z.ZodType => (query === undefined ? CHAIN_QUERY : z.intersection(CHAIN_QUERY, query));

/** What the OpenAPI document says of a served endpoint: its schemas, and its removal once in effect. */
const endpointDoc = (e: DataEndpoint): RouteDoc => ({
  operationId: e.operation,
  ...(e.chain === 'none' ? (e.query === undefined ? {} : { query: e.query }) : { query: withChain(e.query) }),
  ...(e.body === undefined ? {} : { body: e.body }),
  responses: e.responses ?? {},
  ...(e.errors === undefined ? {} : { errors: e.errors }),
  removed: (now) => endpointRemoval(e.method, e.path, now),
});

/** How many leading path segments are fixed (no `:param`): more sorts first. */
function fixedness(path: string): number {
  const segments = path.split('/').slice(1);
  const i = segments.findIndex((s) => s.startsWith(':'));
  return i < 0 ? segments.length + 100 : i;
}

function removedEndpoint(r: EndpointRemoval): ApiError {
  const what = `${r.method === 'ANY' ? '' : `${r.method} `}${DATA_PREFIX}${r.path} was removed on ${r.date}`;
  const details = { removedOn: r.date, ...(r.replacement === undefined ? {} : { replacement: r.replacement }) };
  return new ApiError(r.status, r.replacement === undefined ? what : `${what}; use ${r.replacement} instead`, details);
}
