import { z } from 'zod';
import { badRequest } from '../../engine/errors.js';
import type { Family, StreamOperation } from '../../engine/families/family.js';
import { MAX_LIMIT } from '../../engine/page.js';
import { validate } from '../../engine/schema.js';
import type { BlockReplay } from '../../engine/match/block-replay.js';
import type { StreamCommon, StoredStream } from '../../engine/streams/model.js';
import type { FamilyStreams } from '../../engine/streams/resources.js';
import {
  addressAnswer,
  addressesPage,
  blockBodyAnswer,
  blockToWebhookAnswer,
  enqueueAnswer,
  historyPage,
  logsPage,
  pageOf,
  regionAnswer,
  replayAnswer,
  replayOrStreamAnswer,
  settingsAnswer,
  statsAnswer,
  streamStatsAnswer,
} from '../../engine/streams/responses.js';
import { historyQuery, pageQuery, statusBody, settingsBody } from '../../engine/streams/schemas.js';
import type { StreamsService } from '../../engine/streams/service.js';
import { queryParams } from './query.js';
import { json, operatorOnly, type Method, type Request, type Route, type RouteDoc } from './route.js';
import { BATCH } from '../../engine/size-limits.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The query's values for a schema: the first of each name, an empty one counting as absent. */
function queryOf(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of queryParams(req.query)) if (v !== '' && !Object.hasOwn(out, k)) out[k] = v;
  return out;
}

/** A page's limit and cursor, checked by `schema` (pageQuery, or one extending it). */
function paging<S extends typeof pageQuery>(req: Request, schema: S = pageQuery as S) {
  const q = validate(schema, queryOf(req), 'query');
  return { ...q, limit: q.limit ?? MAX_LIMIT, cursor: q.cursor ?? null };
}

/**
 * The Streams API: each family's streams under /streams/<name> (made from its StreamApi: its addresses, its
 * sub-resources, its block endpoints, the schemas of its bodies and answers), history and replay, stats, settings.
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
  /** A key route of the Streams API, answering 200 with `answer`; it reads a JSON body when its doc names the body's schema. */
  const route = (method: Method, pattern: string, answer: z.ZodType, doc: Omit<RouteDoc, 'responses'>, handle: Route['handle']): Route => ({
    method,
    pattern,
    area: 'streams',
    auth: 'key',
    body: doc.body !== undefined,
    doc: { ...doc, responses: { 200: answer } },
    handle,
  });
  /** The hosted service's operationId of an operation, when it names it. */
  const named = (operationId: string | undefined): { operationId?: string } => (operationId === undefined ? {} : { operationId });

  /** One family's shared resources under /streams/<name>: the same routes for every family, each with its own schemas. */
  const familyRoutes = <D extends StreamCommon>(family: Family<D, any, any, any>): Route[] => {
    const base = `/streams/${family.name}`;
    const { api } = family;
    const streams = resources[family.name] as FamilyStreams<D>;
    const op = (name: StreamOperation) => named(api.operations?.[name]);
    const addresses = (req: Request): string[] => {
      const { address } = validate(api.address, req.body);
      return Array.isArray(address) ? address : [address];
    };
    return [
      route('PUT', base, api.stream, { ...op('create'), body: api.create }, async (req) =>
        json(200, await streams.create(tenant(req), validate(api.create, req.body), req.caller!.email)),
      ),
      route('GET', base, pageOf(api.stream), { ...op('list'), query: pageQuery }, (req) => {
        const p = paging(req);
        return json(200, streams.list(tenant(req), p.limit, p.cursor));
      }),
      route('GET', `${base}/:id`, api.stream, op('get'), (req) => json(200, streams.describe(tenant(req), id(req)))),
      route('POST', `${base}/:id`, api.stream, { ...op('update'), body: api.update }, async (req) =>
        json(200, await streams.update(tenant(req), id(req), validate(api.update, req.body))),
      ),
      route('DELETE', `${base}/:id`, api.stream, op('remove'), async (req) => json(200, await streams.remove(tenant(req), id(req)))),
      route('POST', `${base}/:id/status`, api.stream, { ...op('status'), body: statusBody }, async (req) =>
        json(200, await streams.setStatus(tenant(req), id(req), validate(statusBody, req.body).status)),
      ),
      route('POST', `${base}/:id/address`, addressAnswer, { ...op('addAddresses'), body: api.address }, async (req) =>
        json(200, await streams.addAddresses(tenant(req), id(req), addresses(req))),
      ),
      route('DELETE', `${base}/:id/address`, addressAnswer, { ...op('removeAddresses'), body: api.address }, async (req) =>
        json(200, await streams.removeAddresses(tenant(req), id(req), addresses(req))),
      ),
      route('GET', `${base}/:id/address`, addressesPage, { ...op('addresses'), query: pageQuery }, (req) => {
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
      route('POST', `${base}/:id/${sub.name}`, sub.answers.add, { ...named(sub.operations?.add), body: sub.body }, async (req) =>
        json(200, await sub.add(streams, tenant(req), id(req), validate(sub.body, req.body))),
      ),
      route('GET', `${base}/:id/${sub.name}`, sub.answers.list, { ...named(sub.operations?.list), query: pageQuery }, (req) => {
        const p = paging(req);
        return json(200, sub.list(streams, tenant(req), id(req), p.limit, p.cursor));
      }),
      route('DELETE', `${base}/:id/${sub.name}/:${sub.item.param}`, sub.answers.remove, named(sub.operations?.remove), async (req) =>
        json(200, await sub.remove(streams, tenant(req), id(req), id(req, sub.item.param, sub.item.what))),
      ),
    ]);
    const blocks = opts.blocks[family.name];
    const request = family.api.blockRequest;
    if (blocks === undefined || request === undefined) return subResources;
    const op = (name: StreamOperation) => named(family.api.operations?.[name]);
    return [
      ...subResources,
      route(
        'POST',
        `${base}/:chainId/block/:blockNumber`,
        blockBodyAnswer,
        { ...op('block'), body: request, optionalBody: true },
        async (req) => json(200, (await blocks.body(req.params['chainId']!, blockNumber(req), ...validate(request, req.body ?? {}))) ?? {}),
      ),
      route('POST', `${base}/:chainId/block-to-webhook/:blockNumber/:streamId`, blockToWebhookAnswer, op('blockToWebhook'), async (req) => {
        const stream = streams.get(tenant(req), id(req, 'streamId')) as StoredStream;
        return json(200, await blocks.toWebhook(req.params['chainId']!, blockNumber(req), stream));
      }),
    ];
  };

  const routes: Route[] = [
    // Every family's shared resources first, then what each has beyond them (no two of these patterns match one request).
    ...families.list.flatMap((f) => familyRoutes(f)),
    ...families.list.flatMap((f) => familyExtras(f)),
    route('GET', '/history', historyPage, { operationId: 'GetHistory', query: historyQuery }, (req) => {
      const p = paging(req, historyQuery);
      return json(200, streams.history(tenant(req), p.limit, p.cursor, p.excludePayload === 'true'));
    }),
    route('GET', '/history/logs', logsPage, { operationId: 'GetLogs', query: pageQuery }, (req) => {
      const p = paging(req);
      return json(200, streams.logs(tenant(req), p.limit, p.cursor));
    }),
    // A history record's id, or a stream's: every record of it (StreamsService.replayRecordOrStream).
    route('POST', '/history/replay/:historyId', replayOrStreamAnswer, {}, async (req) =>
      json(200, await streams.replayRecordOrStream(tenant(req), id(req, 'historyId'))),
    ),
    route('POST', '/history/replay/:streamId/:historyId', replayAnswer, { operationId: 'ReplayHistory' }, async (req) =>
      json(200, await streams.replay(tenant(req), id(req, 'historyId'), id(req, 'streamId'))),
    ),
    route('GET', '/stats', statsAnswer, { operationId: 'getStats' }, (req) => json(200, streams.stats(tenant(req)))),
    route('GET', '/stats/:streamId', streamStatsAnswer, { operationId: 'GetStatsByStreamId' }, (req) =>
      json(200, streams.stats(tenant(req), id(req, 'streamId'))),
    ),
    route('GET', '/settings', settingsAnswer, { operationId: 'GetSettings' }, async (req) =>
      json(200, await streams.settings(tenant(req))),
    ),
    route('POST', '/settings', regionAnswer, { operationId: 'SetSettings', body: settingsBody }, async (req) =>
      json(200, await streams.setRegion(tenant(req), validate(settingsBody, req.body).region)),
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
        route('POST', '/admin/streams/:id/webhooks', enqueueAnswer, { body }, (req) => {
          const streamId = id(req);
          return enqueue(
            req,
            validate(body, req.body).webhooks.map((p) => ({ streamId, payload: p })),
          );
        }),
      ),
      operatorOnly(
        // 404: a stream the tenant does not have.
        route('POST', '/admin/webhooks', enqueueAnswer, { body: batchBody, errors: [404] }, (req) =>
          enqueue(req, validate(batchBody, req.body).webhooks),
        ),
      ),
    );
  }
  return routes;
}
