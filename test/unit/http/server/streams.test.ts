import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FAMILIES } from '../../../../app/families.js';
import { solana } from '../../../../engine/solana/index.js';
import type { Family, SubResource } from '../../../../engine/families/family.js';
import { streamsRoutes } from '../../../../http/server/streams.js';
import type { Request, Route } from '../../../../http/server/route.js';

const STREAM = '3f0c9d6e-8a1b-4c2d-9e3f-405162738495';
const ITEM = '0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d';

/** Routes of the registry's families, built over stand-in parts (no handler here reaches them). */
const routesOf = (
  families: { list: ReadonlyArray<Family<any, any, any, any>> },
  resources: Record<string, unknown>,
  blocks: Record<string, unknown> = {},
): Route[] => streamsRoutes({} as never, families, resources as never, { testHooks: false, blocks: blocks as never });

const find = (routes: Route[], method: string, pattern: string): Route => {
  const found = routes.find((r) => r.method === method && r.pattern === pattern);
  if (found === undefined) throw new Error(`no route ${method} ${pattern}`);
  return found;
};

const request = (params: Record<string, string>, body?: unknown): Request =>
  ({
    method: 'POST',
    path: '/',
    params,
    query: '',
    header: () => undefined,
    rawBody: undefined,
    id: 'r',
    body,
    caller: { tenantId: 'tenant' },
  }) as unknown as Request;

describe('the Streams API routes', () => {
  it("makes every family's routes under /streams/<name> from its object: the shared resources, Bitcoin's xpubs, Bitcoin's and Solana's block endpoints", () => {
    const routes = routesOf(FAMILIES, { evm: {}, bitcoin: {}, solana: {} }, { bitcoin: {}, solana: {} });
    const shared = (base: string) => [
      `PUT ${base}`,
      `GET ${base}`,
      `GET ${base}/:id`,
      `POST ${base}/:id`,
      `DELETE ${base}/:id`,
      `POST ${base}/:id/status`,
      `POST ${base}/:id/address`,
      `DELETE ${base}/:id/address`,
      `GET ${base}/:id/address`,
    ];
    const blocks = (base: string) => [
      `POST ${base}/:chainId/block/:blockNumber`,
      `POST ${base}/:chainId/block-to-webhook/:blockNumber/:streamId`,
    ];
    const families = routes.filter((r) => r.pattern.startsWith('/streams/')).map((r) => `${r.method} ${r.pattern}`);
    expect(families.sort()).toEqual(
      [
        ...shared('/streams/evm'),
        ...shared('/streams/bitcoin'),
        ...shared('/streams/solana'),
        'POST /streams/bitcoin/:id/xpub',
        'GET /streams/bitcoin/:id/xpub',
        'DELETE /streams/bitcoin/:id/xpub/:xpubId',
        ...blocks('/streams/bitcoin'),
        ...blocks('/streams/solana'),
      ].sort(),
    );
    expect(routes.every((r) => r.area === 'streams' && r.auth === 'key')).toBe(true);
  });

  it('gives a family it has never seen its routes from its object alone: its schemas check the bodies, its sub-resource is called with the checked body', async () => {
    const calls: unknown[][] = [];
    const keys: SubResource<{ kind: string }, { key: string }> = {
      name: 'key',
      body: z.object({ key: z.string().regex(/^k/, 'a key starts with k') }),
      item: { param: 'keyId', what: 'a key id' },
      add: async (r, tenant, streamId, body) => (calls.push(['add', r.kind, tenant, streamId, body]), { added: body.key }),
      list: (r, tenant, streamId, limit, cursor) => (calls.push(['list', r.kind, tenant, streamId, limit, cursor]), { result: [] }),
      remove: async (r, tenant, streamId, keyId) => (calls.push(['remove', r.kind, tenant, streamId, keyId]), true),
      answers: { add: z.object({ added: z.string() }), list: z.object({ result: z.array(z.unknown()) }), remove: z.literal(true) },
    };
    // No block endpoints: it has no replay.
    const { replay: _, ...withoutReplay } = solana;
    const near = {
      ...withoutReplay,
      name: 'near',
      api: { ...solana.api, blockRequest: undefined, subResources: [keys] },
    } as unknown as Family<any, any, any, any>;
    const routes = routesOf({ list: [near] }, { near: { kind: 'near streams' } });

    expect(routes.filter((r) => r.pattern.includes('block')).map((r) => r.pattern)).toEqual([]);
    expect(routes.filter((r) => r.pattern.startsWith('/streams/near')).length).toBe(9 + 3);

    const added = await find(routes, 'POST', '/streams/near/:id/key').handle(request({ id: STREAM.toUpperCase() }, { key: 'k1' }));
    expect(added).toEqual({ status: 200, body: { added: 'k1' } });
    await expect(
      Promise.resolve().then(() => find(routes, 'POST', '/streams/near/:id/key').handle(request({ id: STREAM }, { key: 'x1' }))),
    ).rejects.toMatchObject({ status: 400, message: 'key: a key starts with k' });
    await find(routes, 'GET', '/streams/near/:id/key').handle(request({ id: STREAM }));
    await find(routes, 'DELETE', '/streams/near/:id/key/:keyId').handle(request({ id: STREAM, keyId: ITEM }));
    await expect(
      Promise.resolve().then(() => find(routes, 'DELETE', '/streams/near/:id/key/:keyId').handle(request({ id: STREAM, keyId: 'nope' }))),
    ).rejects.toMatchObject({ status: 400, message: 'keyId: not a key id (a UUID)' });
    expect(calls).toEqual([
      ['add', 'near streams', 'tenant', STREAM, { key: 'k1' }],
      ['list', 'near streams', 'tenant', STREAM, 100, null],
      ['remove', 'near streams', 'tenant', STREAM, ITEM],
    ]);
  });
});
