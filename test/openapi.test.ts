import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiPath } from '../http/server/openapi.js';
import type { Route } from '../http/server/route.js';
import { TEST_KEY, startChainpost, stopAndClean, type Running } from './helpers.js';
import { serverRoutes } from './in-process.js';
import { checkerOf } from './openapi-check.js';

const METHODS = ['get', 'post', 'put', 'delete', 'patch'];
const operationsOf = (doc: any): string[] =>
  Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) =>
    Object.keys(ops).map((m) => `${m} ${path}`),
  );
const routeOperations = (routes: readonly Route[]): string[] =>
  routes.flatMap((r) => (r.method === 'ANY' ? METHODS : [r.method.toLowerCase()]).map((m) => `${m} ${openApiPath(r.pattern)}`));

describe.each([
  ['a server', {}],
  ['a test clock server (its admin routes)', { CHAINPOST_TEST_CLOCK: '1' }],
])('GET /openapi.json of %s', (_, env: Record<string, string>) => {
  let server: Running;
  let doc: any;
  let routes: Route[];
  beforeAll(async () => {
    [server, routes] = await Promise.all([startChainpost(env), serverRoutes({ CHAINPOST_API_KEY: TEST_KEY, ...env })]);
    const res = await fetch(`${server.url}/openapi.json`);
    expect(res.status).toBe(200);
    doc = await res.json();
  });
  afterAll(() => stopAndClean(server));

  it('behavior: is an OpenAPI 3.1 document that swagger-parser validates', async () => {
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeDefined();
  });

  it('behavior: describes every route the server registers, and nothing else', () => {
    expect(operationsOf(doc).sort()).toEqual([...new Set(routeOperations(routes))].sort());
  });

  it('behavior: gives every route that is not removed or unserved a success answer with its schema', () => {
    const missing = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
      Object.entries(ops)
        .filter(([, op]) => !op.deprecated && !('501' in op.responses))
        .filter(([, op]) => !Object.keys(op.responses).some((s) => Number(s) < 400))
        .map(([m]) => `${m} ${path}`),
    );
    expect(missing).toEqual([]);
  });

  it('behavior: names the security schemes, a tag per API area, and the errors of a key route', () => {
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['adminKey', 'apiKey', 'bearer']);
    expect(doc.components.securitySchemes.apiKey).toEqual({ type: 'apiKey', in: 'header', name: 'x-api-key' });
    expect(doc.tags.map((t: { name: string }) => t.name)).toEqual(
      expect.arrayContaining(['system', 'auth', 'streams', 'data', 'crosschain', 'rpc']),
    );
    const put = doc.paths['/streams/evm'].put;
    expect(put.security).toEqual([{ apiKey: [] }, { bearer: [] }]);
    expect(Object.keys(put.responses)).toEqual(expect.arrayContaining(['400', '401', '413', '429']));
    expect(put.requestBody.content['application/json'].schema.properties).toHaveProperty('webhookUrl');
  });

  it("behavior: marks the interface's removals in effect on the service date with their answer alone", () => {
    const removed = doc.paths['/api/v2.2/discovery/tokens/trending'].get;
    expect(removed.deprecated).toBe(true);
    expect(Object.keys(removed.responses)).toEqual(['410']);
    expect(removed.description).toMatch(/^Removed on \d{4}-\d{2}-\d{2}/);
  });

  it('behavior: takes the Data API query from the schema the handler validates with, path parameters apart', () => {
    const op = doc.paths['/api/v2.2/erc20/{address}/price'].get;
    const names = op.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`);
    expect(names).toEqual(expect.arrayContaining(['path:address', 'query:chain', 'query:to_block']));
    expect(names).not.toContain('query:address');
    expect(op.parameters.find((p: { name: string }) => p.name === 'address').schema.pattern).toBe('^0x[0-9a-fA-F]{40}$');
  });
});

describe('the answers check (openapi-check.ts) the shared callers run', () => {
  const doc = {
    openapi: '3.1.0',
    info: { title: 't', version: '1' },
    paths: {
      '/things/{id}': {
        get: {
          operationId: 'getThing',
          responses: {
            '200': {
              description: 'ok',
              content: { 'application/json': { schema: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } } } },
            },
            '404': { description: 'no', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
          },
        },
      },
      '/things/fixed': {
        get: {
          operationId: 'getFixed',
          responses: { '200': { description: 'ok', content: { 'text/plain': {} } } },
        },
      },
    },
    components: { schemas: { Error: { type: 'object', required: ['message'], properties: { message: { type: 'string' } } } } },
  };
  const checker = checkerOf(doc);

  it('behavior: accepts an answer its status documents, and a path no operation takes', () => {
    expect(() => checker.check('GET', '/things/a?x=1', 200, 'application/json', { id: 'a' })).not.toThrow();
    expect(() => checker.check('GET', '/things/a', 404, 'application/json', { message: 'gone' })).not.toThrow();
    expect(() => checker.check('GET', '/elsewhere', 404, 'application/json', { message: 'no route' })).not.toThrow();
  });

  it('behavior: refuses a body off its schema, a status the operation does not give, and another content type', () => {
    expect(() => checker.check('GET', '/things/a', 200, 'application/json', { id: 1 })).toThrow(/getThing.*does not match/);
    expect(() => checker.check('GET', '/things/a', 404, 'application/json', {})).toThrow(/does not match/);
    expect(() => checker.check('GET', '/things/a', 500, 'application/json', { message: 'x' })).toThrow(/does not give/);
    expect(() => checker.check('GET', '/things/fixed', 200, 'application/json', { id: 'a' })).toThrow(/answered application\/json/);
    expect(() => checker.check('POST', '/elsewhere', 200, 'application/json', {})).toThrow(/no operation of the document takes it/);
  });

  it('behavior: takes the fixed path over the templated one, as the router does', () => {
    expect(() => checker.check('GET', '/things/fixed', 200, 'text/plain; charset=utf-8', 'text')).not.toThrow();
  });
});

describe('GET /docs', () => {
  let server: Running;
  beforeAll(async () => {
    server = await startChainpost();
  });
  afterAll(() => stopAndClean(server));

  it('behavior: serves swagger-ui from node_modules over ./openapi.json, every link on this server, under a CSP of its own origin', async () => {
    const page = await fetch(`${server.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self';.*connect-src 'self'/);
    const html = await page.text();
    const links = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThanOrEqual(3);
    for (const link of links) {
      expect(link).not.toMatch(/^[a-z]+:|^\/\//);
      const res = await fetch(new URL(link, `${server.url}/docs`));
      expect(res.status, link).toBe(200);
      expect((await res.text()).length, link).toBeGreaterThan(10);
    }
    const init = await (await fetch(`${server.url}/docs/init.js`)).text();
    expect(init).toContain("url: 'openapi.json'");
    expect(init).toContain('validatorUrl: null');
    expect((await server.call('/docs/package.json')).status).toBe(404);
  });
});
