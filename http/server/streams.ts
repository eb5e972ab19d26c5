import { z } from 'zod';
import type { Dispatcher } from '../../engine/delivery/dispatcher.js';
import { badRequest } from '../../engine/errors.js';
import { parseLimit } from '../../engine/page.js';
import { validate } from '../../engine/schema.js';
import { bitcoinDefinition } from '../../engine/bitcoin/replay.js';
import type { BlockReplay } from '../../engine/match/block-replay.js';
import { bitcoinAddressBody, blockRequestBody, createBitcoinStream, updateBitcoinStream, xpubBody, type BitcoinStreamRecord } from '../../engine/bitcoin/stream.js';
import { solanaDefinition } from '../../engine/solana/replay.js';
import type { BitcoinStreams } from '../../engine/bitcoin/stream-service.js';
import { createSolanaStream, solanaAddressBody, solanaBlockRequestBody, updateSolanaStream, type SolanaStreamDefinition, type SolanaStreamRecord } from '../../engine/solana/stream.js';
import type { StreamCommon, StreamDefinition } from '../../engine/streams/model.js';
import type { FamilyStreams } from '../../engine/streams/resources.js';
import { addressBody, createStream, settingsBody, statusBody, updateStream } from '../../engine/streams/schemas.js';
import type { StreamsService } from '../../engine/streams/service.js';
import { queryParams } from './query.js';
import { json, operatorOnly, type Method, type Request, type Route } from './route.js';
import { BATCH } from '../../engine/size-limits.js';

/** A family's request schemas: create, update (any subset) and the address body. */
interface FamilySchemas<D> {
  create: z.ZodType<D>;
  update: z.ZodType<Partial<D>>;
  address: z.ZodType<{ address: string | string[] }>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The Streams API: EVM, Bitcoin and Solana streams, their addresses (and Bitcoin xpubs), history and replay, stats, settings. */
export function streamsRoutes(streams: StreamsService, families: { evm: FamilyStreams<StreamDefinition>; bitcoin: BitcoinStreams; solana: FamilyStreams<SolanaStreamDefinition> }, dispatcher: Dispatcher, opts: { testHooks: boolean; blocks: { bitcoin: BlockReplay<BitcoinStreamRecord>; solana: BlockReplay<SolanaStreamRecord> } }): Route[] {
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
  const route = (method: Method, pattern: string, handle: Route['handle'], body = false): Route => ({ method, pattern, area: 'streams', auth: 'key', body, handle });

  /** One family's resources under `base`: the same routes for every family, each with its own schemas. */
  const familyRoutes = <D extends StreamCommon>(base: string, family: FamilyStreams<D>, schemas: FamilySchemas<D>): Route[] => {
    const addresses = (req: Request): string[] => {
      const { address } = validate(schemas.address, req.body);
      return Array.isArray(address) ? address : [address];
    };
    return [
      route('PUT', base, async (req) => json(200, await family.create(tenant(req), validate(schemas.create, req.body), req.caller!.email)), true),
      route('GET', base, (req) => {
        const p = paging(req);
        return json(200, family.list(tenant(req), p.limit, p.cursor));
      }),
      route('GET', `${base}/:id`, (req) => json(200, family.describe(tenant(req), id(req)))),
      route('POST', `${base}/:id`, async (req) => json(200, await family.update(tenant(req), id(req), validate(schemas.update, req.body))), true),
      route('DELETE', `${base}/:id`, async (req) => json(200, await family.remove(tenant(req), id(req)))),
      route('POST', `${base}/:id/status`, async (req) => json(200, await family.setStatus(tenant(req), id(req), validate(statusBody, req.body).status)), true),
      route('POST', `${base}/:id/address`, async (req) => json(200, await family.addAddresses(tenant(req), id(req), addresses(req))), true),
      route('DELETE', `${base}/:id/address`, async (req) => json(200, await family.removeAddresses(tenant(req), id(req), addresses(req))), true),
      route('GET', `${base}/:id/address`, (req) => {
        const p = paging(req);
        return json(200, family.listAddresses(tenant(req), id(req), p.limit, p.cursor));
      }),
    ];
  };

  const routes: Route[] = [
    ...familyRoutes('/streams/evm', families.evm, { create: createStream, update: updateStream, address: addressBody }),
    ...familyRoutes('/streams/bitcoin', families.bitcoin, { create: createBitcoinStream, update: updateBitcoinStream, address: bitcoinAddressBody }),
    ...familyRoutes('/streams/solana', families.solana, { create: createSolanaStream, update: updateSolanaStream, address: solanaAddressBody }),
    route('POST', '/streams/solana/:chainId/block/:blockNumber', async (req) => json(200, (await opts.blocks.solana.body(req.params['chainId']!, blockNumber(req), ...solanaDefinition(validate(solanaBlockRequestBody, req.body ?? {})))) ?? {}), true),
    route('POST', '/streams/solana/:chainId/block-to-webhook/:blockNumber/:streamId', async (req) => {
      const stream = families.solana.get(tenant(req), id(req, 'streamId')) as SolanaStreamRecord;
      return json(200, await opts.blocks.solana.toWebhook(req.params['chainId']!, blockNumber(req), stream));
    }),
    route('POST', '/streams/bitcoin/:id/xpub', async (req) => json(200, await families.bitcoin.addXpub(tenant(req), id(req), validate(xpubBody, req.body).xpub)), true),
    route('GET', '/streams/bitcoin/:id/xpub', (req) => {
      const p = paging(req);
      return json(200, families.bitcoin.listXpubs(tenant(req), id(req), p.limit, p.cursor));
    }),
    route('POST', '/streams/bitcoin/:chainId/block/:blockNumber', async (req) => json(200, (await opts.blocks.bitcoin.body(req.params['chainId']!, blockNumber(req), ...bitcoinDefinition(validate(blockRequestBody, req.body ?? {})))) ?? {}), true),
    route('POST', '/streams/bitcoin/:chainId/block-to-webhook/:blockNumber/:streamId', async (req) => {
      const stream = families.bitcoin.get(tenant(req), id(req, 'streamId')) as BitcoinStreamRecord;
      return json(200, await opts.blocks.bitcoin.toWebhook(req.params['chainId']!, blockNumber(req), stream));
    }),
    route('DELETE', '/streams/bitcoin/:id/xpub/:xpubId', async (req) => json(200, await families.bitcoin.removeXpub(tenant(req), id(req), id(req, 'xpubId', 'an xpub id')))),
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
    route('POST', '/history/replay/:historyId', async (req) => json(200, await streams.replay(tenant(req), id(req, 'historyId')))),
    route('POST', '/history/replay/:streamId/:historyId', async (req) => json(200, await streams.replay(tenant(req), id(req, 'historyId'), id(req, 'streamId')))),
    route('GET', '/stats', (req) => json(200, streams.stats(tenant(req)))),
    route('GET', '/stats/:streamId', (req) => json(200, streams.stats(tenant(req), id(req, 'streamId')))),
    route('GET', '/settings', (req) => json(200, streams.settings(tenant(req)))),
    route('POST', '/settings', async (req) => json(200, await streams.setRegion(tenant(req), validate(settingsBody, req.body).region)), true),
  ];
  if (opts.testHooks) {
    // Test clock only: hand webhooks to the delivery engine through the function the matcher calls, for one
    // stream, or (as a block's matches are) for many streams, CHAINPOST_STAGE_CHUNK to a transaction.
    const payload = z.record(z.string(), z.unknown());
    const most = `at most ${BATCH.adminWebhooks.toLocaleString('en-US')} webhooks`;
    const body = z.object({ webhooks: z.array(payload).min(1).max(BATCH.adminWebhooks, most) });
    const batchBody = z.object({ webhooks: z.array(z.object({ streamId: z.string(), payload })).min(1).max(BATCH.adminWebhooks, most) });
    const enqueue = async (req: Request, items: Array<{ streamId: string; payload: Record<string, unknown> }>) => {
      for (const streamId of new Set(items.map((w) => w.streamId))) streams.mustOwn(tenant(req), streamId);
      return json(200, { results: await dispatcher.enqueueBatch(items) });
    };
    routes.push(
      operatorOnly(route('POST', '/admin/streams/:id/webhooks', (req) => {
        const streamId = id(req);
        return enqueue(req, validate(body, req.body).webhooks.map((p) => ({ streamId, payload: p })));
      }, true)),
      operatorOnly(route('POST', '/admin/webhooks', (req) => enqueue(req, validate(batchBody, req.body).webhooks), true)),
    );
  }
  return routes;
}
