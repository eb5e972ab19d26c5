import { z } from 'zod';
import { badRequest } from '../../engine/errors.js';
import type { Family } from '../../engine/families/family.js';
import { parseLimit } from '../../engine/page.js';
import { validate } from '../../engine/schema.js';
import type { BlockReplay } from '../../engine/match/block-replay.js';
import type { StreamCommon, StoredStream } from '../../engine/streams/model.js';
import type { FamilyStreams } from '../../engine/streams/resources.js';
import { statusBody, settingsBody } from '../../engine/streams/schemas.js';
import type { StreamsService } from '../../engine/streams/service.js';
import { queryParams } from './query.js';
import { json, operatorOnly, type Method, type Request, type Route } from './route.js';
import { BATCH } from '../../engine/size-limits.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The Streams API: each family's streams under /streams/<name> (made from its StreamApi: its addresses, its
 * sub-resources, its block endpoints), history and replay, stats, settings.
 */
export function streamsRoutes(
  streams: StreamsService,
  families: { list: ReadonlyArray<Family<any, any, any, any>> },
  resources: Readonly<Record<string, FamilyStreams<any>>>,
  opts: { testHooks: boolean; blocks: Readonly<Record<string, BlockReplay<any>>> },
): Route[] {
  const tenant = (req: Request): string => req.caller!.tenantId;
  const id = (req: Request, name = 'id', what = 'a stream id'): string => {
    const v = req.params[name]!;
    if (!UUID.test(v)) throw badRequest(name, `not ${what} (a UUID)`);
    return v.toLowerCase();
  };
  const blockNumber = (req: Request): number => {
    const v = req.params['blockNumber']!;
    if (!/^\d{1,10}$/.test(v)) throw badRequest('blockNumber', `${v} is not a block height (a whole number)`);
    return Number(v);
  };
  const paging = (req: Request) => {
    const q = queryParams(req.query);
    return { limit: parseLimit(q.get('limit')), cursor: q.get('cursor'), q };
  };
  const route = (method: Method, pattern: string, handle: Route['handle'], body = false): Route => ({
    method,
    pattern,
    area: 'streams',
    auth: 'key',
    body,
    handle,
  });

  /** One family's shared resources under /streams/<name>: the same routes for every family, each with its own schemas. */
  const familyRoutes = <D extends StreamCommon>(family: Family<D, any, any, any>): Route[] => {
    const base = `/streams/${family.name}`;
    const { api } = family;
    const streams = resources[family.name] as FamilyStreams<D>;
    const addresses = (req: Request): string[] => {
      const { address } = validate(api.address, req.body);
      return Array.isArray(address) ? address : [address];
    };
    return [
      route(
        'PUT',
        base,
        async (req) => json(200, await streams.create(tenant(req), validate(api.create, req.body), req.caller!.email)),
        true,
      ),
      route('GET', base, (req) => {
        const p = paging(req);
        return json(200, streams.list(tenant(req), p.limit, p.cursor));
      }),
      route('GET', `${base}/:id`, (req) => json(200, streams.describe(tenant(req), id(req)))),
      route(
        'POST',
        `${base}/:id`,
        async (req) => json(200, await streams.update(tenant(req), id(req), validate(api.update, req.body))),
        true,
      ),
      route('DELETE', `${base}/:id`, async (req) => json(200, await streams.remove(tenant(req), id(req)))),
      route(
        'POST',
        `${base}/:id/status`,
        async (req) => json(200, await streams.setStatus(tenant(req), id(req), validate(statusBody, req.body).status)),
        true,
      ),
      route(
        'POST',
        `${base}/:id/address`,
        async (req) => json(200, await streams.addAddresses(tenant(req), id(req), addresses(req))),
        true,
      ),
      route(
        'DELETE',
        `${base}/:id/address`,
        async (req) => json(200, await streams.removeAddresses(tenant(req), id(req), addresses(req))),
        true,
      ),
      route('GET', `${base}/:id/address`, (req) => {
        const p = paging(req);
        return json(200, streams.listAddresses(tenant(req), id(req), p.limit, p.cursor));
      }),
    ];
  };

  /** What one family has beyond the shared resources: its stream sub-resources, and its block endpoints when it has replay. */
  const familyExtras = (family: Family<any, any, any, any>): Route[] => {
    const base = `/streams/${family.name}`;
    const streams = resources[family.name]!;
    const subResources = (family.api.subResources ?? []).flatMap((sub) => [
      route(
        'POST',
        `${base}/:id/${sub.name}`,
        async (req) => json(200, await sub.add(streams, tenant(req), id(req), validate(sub.body, req.body))),
        true,
      ),
      route('GET', `${base}/:id/${sub.name}`, (req) => {
        const p = paging(req);
        return json(200, sub.list(streams, tenant(req), id(req), p.limit, p.cursor));
      }),
      route('DELETE', `${base}/:id/${sub.name}/:${sub.item.param}`, async (req) =>
        json(200, await sub.remove(streams, tenant(req), id(req), id(req, sub.item.param, sub.item.what))),
      ),
    ]);
    const blocks = opts.blocks[family.name];
    const request = family.api.blockRequest;
    if (blocks === undefined || request === undefined) return subResources;
    return [
      ...subResources,
      route(
        'POST',
        `${base}/:chainId/block/:blockNumber`,
        async (req) => json(200, (await blocks.body(req.params['chainId']!, blockNumber(req), ...validate(request, req.body ?? {}))) ?? {}),
        true,
      ),
      route('POST', `${base}/:chainId/block-to-webhook/:blockNumber/:streamId`, async (req) => {
        const stream = streams.get(tenant(req), id(req, 'streamId')) as StoredStream;
        return json(200, await blocks.toWebhook(req.params['chainId']!, blockNumber(req), stream));
      }),
    ];
  };

  const routes: Route[] = [
    // Every family's shared resources first, then what each has beyond them (no two of these patterns match one request).
    ...families.list.flatMap((f) => familyRoutes(f)),
    ...families.list.flatMap((f) => familyExtras(f)),
    route('GET', '/history', (req) => {
      const p = paging(req);
      const exclude = p.q.get('excludePayload');
      if (exclude !== null && exclude !== 'true' && exclude !== 'false') throw badRequest('excludePayload', 'true or false');
      return json(200, streams.history(tenant(req), p.limit, p.cursor, exclude === 'true'));
    }),
    route('GET', '/history/logs', (req) => {
      const p = paging(req);
      return json(200, streams.logs(tenant(req), p.limit, p.cursor));
    }),
    // A history record's id, or a stream's: every record of it (StreamsService.replayRecordOrStream).
    route('POST', '/history/replay/:historyId', async (req) => json(200, await streams.replayRecordOrStream(tenant(req), id(req, 'historyId')))),
    route('POST', '/history/replay/:streamId/:historyId', async (req) =>
      json(200, await streams.replay(tenant(req), id(req, 'historyId'), id(req, 'streamId'))),
    ),
    route('GET', '/stats', (req) => json(200, streams.stats(tenant(req)))),
    route('GET', '/stats/:streamId', (req) => json(200, streams.stats(tenant(req), id(req, 'streamId')))),
    route('GET', '/settings', async (req) => json(200, await streams.settings(tenant(req)))),
    route(
      'POST',
      '/settings',
      async (req) => json(200, await streams.setRegion(tenant(req), validate(settingsBody, req.body).region)),
      true,
    ),
  ];
  if (opts.testHooks) {
    // Test clock only: hand webhooks to the delivery engine through the function the matcher calls, for one
    // stream, or (as a block's matches are) for many streams, CHAINPOST_STAGE_CHUNK to a transaction.
    const payload = z.record(z.string(), z.unknown());
    const most = `at most ${BATCH.adminWebhooks.toLocaleString('en-US')} webhooks`;
    const body = z.object({ webhooks: z.array(payload).min(1).max(BATCH.adminWebhooks, most) });
    const batchBody = z.object({
      webhooks: z
        .array(z.object({ streamId: z.string(), payload }))
        .min(1)
        .max(BATCH.adminWebhooks, most),
    });
    const enqueue = async (req: Request, items: Array<{ streamId: string; payload: Record<string, unknown> }>) => {
      for (const streamId of new Set(items.map((w) => w.streamId))) streams.mustOwn(tenant(req), streamId);
      // Staged by each stream's partition's owner, as a block replay is.
      return json(200, { results: await streams.enqueue(items) });
    };
    routes.push(
      operatorOnly(
        route(
          'POST',
          '/admin/streams/:id/webhooks',
          (req) => {
            const streamId = id(req);
            return enqueue(
              req,
              validate(body, req.body).webhooks.map((p) => ({ streamId, payload: p })),
            );
          },
          true,
        ),
      ),
      operatorOnly(route('POST', '/admin/webhooks', (req) => enqueue(req, validate(batchBody, req.body).webhooks), true)),
    );
  }
  return routes;
}
