import { z } from 'zod';
import { badRequest } from '../../engine/errors.js';
import { type ApiKey, type ApiKeys, keyFields } from '../../engine/keys.js';
import { validate } from '../../engine/schema.js';
import { json, type Method, type Request, type Route, type RouteDoc } from './route.js';

/**
 * The API keys of the caller's tenant (docs/api.md#api-keys): list, create, rotate, revoke, written through the
 * control plane as the CLI's `keys` commands are, so on a cluster every node applies them. Every route reads and
 * changes the caller's tenant's keys alone: another tenant's id is a 404, as an id no key has.
 */

/** How long the rotated key keeps working at most through the API: a week, the history's retention. */
const MAX_GRACE_SECONDS = 604_800;

const iso = (description: string) => z.iso.datetime().meta({ description });
const keyId = z.string().meta({ description: "The key's public id (12 hex digits of its digest); never the key itself" });

/** A key as listed: never the key itself nor its digest. */
const keyView = z.object({
  id: keyId,
  name: z.string(),
  email: z.string().nullable(),
  createdAt: iso('When it was made'),
  expiresAt: iso('A rotated key: when its grace period ends and it is refused; null for a key not rotated').nullable(),
  replacedBy: z.string().nullable().meta({ description: 'A rotated key: the id of the key that replaced it' }),
  current: z.boolean().meta({ description: 'Whether this is the key that made this call' }),
});

const keyList = z.object({
  result: z.array(keyView),
  total: z.number().int().meta({ description: "The tenant's keys in use: all of them are in `result`" }),
});

const created = z.object({
  key: z.string().meta({ description: 'The new key (`cpk_…`): shown this once, stored only as its SHA-256' }),
  id: keyId,
  name: z.string(),
  email: z.string().nullable(),
  createdAt: iso('When it was made'),
});

const rotateBody = z.strictObject({
  graceSeconds: z
    .number({ error: 'a whole number of seconds' })
    .int('a whole number of seconds')
    .min(0)
    .max(MAX_GRACE_SECONDS, `at most ${MAX_GRACE_SECONDS.toLocaleString('en-US')} (a week)`)
    .default(0)
    .meta({ description: 'How long the old key keeps working (0, the default: refused at once)' }),
});

const rotated = z.object({
  key: z.string().meta({ description: 'The new key (`cpk_…`): shown this once' }),
  id: keyId,
  name: z.string(),
  replaces: z.string().meta({ description: 'The id of the key it replaces' }),
  oldExpiresAt: iso('When the replaced key is refused'),
});

const revoked = z.object({ id: keyId, name: z.string(), revoked: z.literal(true) });

const isoOf = (ms: number): string => new Date(ms).toISOString();

/** The `:id` of a key route: a key's public id (a name is not taken here). */
const idOf = (req: Request): string => {
  const id = req.params['id']!;
  if (!/^[0-9a-f]{12}$/.test(id)) throw badRequest('id', "not a key's id (12 hex digits, as GET /keys lists them)");
  return id;
};

export function keysRoutes(keys: ApiKeys): Route[] {
  const tenant = (req: Request): string => req.caller!.tenantId;
  const view = (k: ApiKey, caller: ApiKey): z.output<typeof keyView> => ({
    id: k.id,
    name: k.name,
    email: k.email ?? null,
    createdAt: isoOf(k.createdAt),
    expiresAt: k.expiresAt === undefined ? null : isoOf(k.expiresAt),
    replacedBy: k.replacedBy ?? null,
    current: k.hash === caller.hash,
  });
  const route = (method: Method, pattern: string, doc: RouteDoc, handle: Route['handle']): Route => ({
    method,
    pattern,
    area: 'keys',
    auth: 'key',
    body: doc.body !== undefined,
    doc,
    handle,
  });
  return [
    route('GET', '/keys', { summary: "The tenant's keys in use", responses: { 200: keyList } }, (req) => {
      const result = keys.ofTenant(tenant(req)).map((k) => view(k, req.caller!));
      return json(200, { result, total: result.length });
    }),
    route(
      'POST',
      '/keys',
      { summary: "A new key in the caller's tenant", body: keyFields, responses: { 201: created }, errors: [409] },
      async (req) => {
        const { name, email } = validate(keyFields, req.body);
        const { key, record } = await keys.create({ name, email, tenant: tenant(req) });
        return json(201, { key, id: record.id, name: record.name, email: record.email ?? null, createdAt: isoOf(record.createdAt) });
      },
    ),
    route(
      'POST',
      '/keys/:id/rotate',
      {
        summary: 'Replaces a key by a new one of the same name; the old one works for the grace period',
        body: rotateBody,
        optionalBody: true,
        responses: { 200: rotated },
        errors: [409],
      },
      async (req) => {
        const id = idOf(req);
        const grace = validate(rotateBody, req.body ?? {}).graceSeconds;
        const { key, record, old } = await keys.rotate(id, grace * 1000, undefined, tenant(req));
        return json(200, { key, id: record.id, name: record.name, replaces: old.id, oldExpiresAt: isoOf(old.expiresAt!) });
      },
    ),
    route(
      'DELETE',
      '/keys/:id',
      { summary: "Revokes a key at once (not the tenant's last: 409)", responses: { 200: revoked }, errors: [409] },
      async (req) => {
        const k = await keys.revoke(idOf(req), tenant(req));
        return json(200, { id: k.id, name: k.name, revoked: true });
      },
    ),
  ];
}
