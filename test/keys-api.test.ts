import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../engine/keys.js';
import { advance, apiCaller, cliInProcess, startChainpost, stopAndClean, TEST_KEY, type Running } from './helpers.js';

/**
 * The keys API (GET /keys, POST /keys, POST /keys/:id/rotate, DELETE /keys/:id) on a real server on its test clock:
 * a key made through it authenticates at once, a rotated one works for its grace period and is refused after it, a
 * revoked one is refused at once, the tenant's last key stays; each 400 names its field; a key reaches its own
 * tenant's keys alone; the CLI's `keys` commands see and change the same keys.
 */
describe('the keys API', () => {
  let s: Running;
  const as = (key: string) => apiCaller(s.url, key);
  /** Whether the key is taken now (an authenticated route answers 200, not 401). */
  const works = async (key: string) => {
    const r = await as(key)('/settings');
    expect([200, 401]).toContain(r.status);
    return r.status === 200;
  };
  const idOf = (key: string) => hashKey(key).slice(0, 12);
  /** The server's service clock, ms. */
  const clock = async () => Date.parse((await s.call('/admin/clock')).body.now);

  beforeAll(async () => {
    s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-11-22T12:00:00Z', CHAINPOST_RATE_LIMIT: '0' });
  }, 60_000);
  afterAll(() => stopAndClean(s));

  it("lists the tenant's keys, the calling one marked current, never a key or its digest", async () => {
    const r = await s.call('/keys');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      result: [
        {
          id: idOf(TEST_KEY),
          name: 'env',
          email: null,
          createdAt: expect.stringMatching(/^2026-11-22T12:0\d:/),
          expiresAt: null,
          replacedBy: null,
          current: true,
        },
      ],
      total: 1,
    });
    const text = JSON.stringify(r.body);
    expect(text).not.toContain(TEST_KEY);
    expect(text).not.toContain(hashKey(TEST_KEY));
  });

  it("creates a key in the caller's tenant: shown once, it authenticates at once and sees the same tenant", async () => {
    const r = await s.call('/keys', { method: 'POST', json: { name: 'ops', email: 'ops@example.com' } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toEqual({
      key: expect.stringMatching(/^cpk_[A-Za-z0-9_-]{32}$/),
      id: idOf(r.body.key),
      name: 'ops',
      email: 'ops@example.com',
      createdAt: expect.stringMatching(/^2026-11-22T12:0\d:/),
    });
    const ops = as(r.body.key);
    // One tenant: what one key writes, the other reads.
    expect((await s.call('/settings', { method: 'POST', json: { region: 'eu-central-1' } })).status).toBe(200);
    expect((await ops('/settings')).body.region).toBe('eu-central-1');
    const listed = await ops('/keys');
    expect(listed.body.total).toBe(2);
    expect(listed.body.result.map((k: { name: string; current: boolean }) => [k.name, k.current])).toEqual([
      ['env', false],
      ['ops', true],
    ]);
    // The key is not shown again.
    expect(JSON.stringify(listed.body)).not.toContain(r.body.key);
    // The CLI sees it, in the caller's tenant.
    const cli = await cliInProcess(['keys', 'list'], s.dir);
    expect(cli.stdout).toMatch(new RegExp(`^ops\\s+${r.body.id}\\s+env\\s+ops@example.com\\s`, 'm'));
  });

  it('answers 400 naming the field, and 409 for a name in use', async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/keys', {}, 'name'],
      ['POST', '/keys', { name: '' }, 'name'],
      ['POST', '/keys', { name: 'has space' }, 'name'],
      ['POST', '/keys', { name: 'x'.repeat(65) }, 'name'],
      ['POST', '/keys', { name: 7 }, 'name'],
      ['POST', '/keys', { name: 'fine', email: 'not-an-address' }, 'email'],
      ['POST', '/keys', { name: 'fine', tenant: 'other' }, 'tenant'],
      ['POST', `/keys/${idOf(TEST_KEY)}/rotate`, { graceSeconds: -1 }, 'graceSeconds'],
      ['POST', `/keys/${idOf(TEST_KEY)}/rotate`, { graceSeconds: 604_801 }, 'graceSeconds'],
      ['POST', `/keys/${idOf(TEST_KEY)}/rotate`, { graceSeconds: 1.5 }, 'graceSeconds'],
      ['POST', `/keys/${idOf(TEST_KEY)}/rotate`, { graceSeconds: '60' }, 'graceSeconds'],
      ['POST', `/keys/${idOf(TEST_KEY)}/rotate`, { grace: 60 }, 'grace'],
      ['POST', '/keys/env/rotate', {}, 'id'],
      ['DELETE', '/keys/not-an-id', undefined, 'id'],
    ];
    for (const [method, path, json, field] of cases) {
      const r = await s.call(path, { method, ...(json === undefined ? {} : { json }) });
      expect(r.status, `${method} ${path} ${JSON.stringify(json)}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.details?.field, `${method} ${path} ${JSON.stringify(json)}: ${JSON.stringify(r.body)}`).toBe(field);
      expect(r.body.message).toMatch(new RegExp(`^${field}: `));
    }
    // Nothing was made or rotated by any of them.
    expect((await s.call('/keys')).body.total).toBe(2);
    for (const name of ['ops', 'env']) {
      const r = await s.call('/keys', { method: 'POST', json: { name } });
      expect(r.status).toBe(409);
      expect(r.body.message).toBe(`a key named "${name}" exists already`);
    }
  });

  it('rotates: the new key works at once, the old one through its grace period on the test clock and is refused after', async () => {
    const made = await s.call('/keys', { method: 'POST', json: { name: 'app', email: 'app@example.com' } });
    const old = made.body.key as string;
    const before = await clock();
    const r = await as(old)(`/keys/${made.body.id}/rotate`, { method: 'POST', json: { graceSeconds: 3_600 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const after = await clock();
    expect(r.body).toEqual({
      key: expect.stringMatching(/^cpk_/),
      id: idOf(r.body.key),
      name: 'app',
      replaces: made.body.id,
      oldExpiresAt: expect.any(String),
    });
    // The server's clock (it runs on from CHAINPOST_NOW) at the rotation, and an hour.
    const expires = Date.parse(r.body.oldExpiresAt);
    expect(expires - 3_600_000).toBeGreaterThanOrEqual(before);
    expect(expires - 3_600_000).toBeLessThanOrEqual(after);
    const fresh = r.body.key as string;
    expect(fresh).not.toBe(old);
    expect(await works(fresh)).toBe(true);
    expect(await works(old)).toBe(true);
    const listed = (await as(fresh)('/keys')).body.result as Array<Record<string, unknown>>;
    expect(listed.find((k) => k['id'] === made.body.id)).toMatchObject({
      name: 'app',
      email: 'app@example.com',
      expiresAt: r.body.oldExpiresAt,
      replacedBy: r.body.id,
      current: false,
    });
    expect(listed.find((k) => k['id'] === r.body.id)).toMatchObject({
      name: 'app',
      email: 'app@example.com',
      expiresAt: null,
      current: true,
    });
    // Rotated already: its replacement is the one to rotate.
    const again = await s.call(`/keys/${made.body.id}/rotate`, { method: 'POST', json: { graceSeconds: 60 } });
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/was rotated already/);

    // The clock runs on meanwhile: 30 s short of the end, and 30 s past it.
    await advance(s, 3_570 - (after - before) / 1000);
    expect(await works(old)).toBe(true);
    await advance(s, 60);
    expect(await works(old)).toBe(false);
    expect(await works(fresh)).toBe(true);
    expect(((await s.call('/keys')).body.result as Array<{ id: string }>).map((k) => k.id)).not.toContain(made.body.id);
  });

  it('rotates with no grace when no body is sent: the old key is refused at once', async () => {
    const made = await s.call('/keys', { method: 'POST', json: { name: 'now' } });
    const before = await clock();
    const r = await s.call(`/keys/${made.body.id}/rotate`, { method: 'POST' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(Date.parse(r.body.oldExpiresAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(r.body.oldExpiresAt)).toBeLessThanOrEqual(await clock());
    expect(await works(made.body.key)).toBe(false);
    expect(await works(r.body.key)).toBe(true);
  });

  it("revokes: the key is refused at once; the tenant's last key not rotated is refused 409 and keeps working", async () => {
    const made = await s.call('/keys', { method: 'POST', json: { name: 'temp' } });
    expect(await works(made.body.key)).toBe(true);
    const r = await s.call(`/keys/${made.body.id}`, { method: 'DELETE' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ id: made.body.id, name: 'temp', revoked: true });
    expect(await works(made.body.key)).toBe(false);
    expect((await s.call(`/keys/${made.body.id}`, { method: 'DELETE' })).status).toBe(404);

    // A tenant of one key (the CLI makes it), rotated with a grace period: the key in its grace does not count.
    const solo = (await cliInProcess(['keys', 'create', '--name', 'solo'], s.dir)).stdout.trim().split('\n').at(-1)!;
    const last = await as(solo)(`/keys/${idOf(solo)}`, { method: 'DELETE' });
    expect(last.status).toBe(409);
    expect(last.body.message).toMatch(/last key/);
    expect(await works(solo)).toBe(true);
    const rotated = await as(solo)(`/keys/${idOf(solo)}/rotate`, { method: 'POST', json: { graceSeconds: 600 } });
    expect(rotated.status).toBe(200);
    expect((await as(solo)(`/keys/${rotated.body.id}`, { method: 'DELETE' })).status).toBe(409);
    // The one in its grace period may go: the new one stays.
    expect((await as(rotated.body.key)(`/keys/${idOf(solo)}`, { method: 'DELETE' })).status).toBe(200);
    expect(await works(solo)).toBe(false);
    // The CLI can revoke a tenant's last key (the operator's way out).
    const cli = await cliInProcess(['keys', 'revoke', rotated.body.id], s.dir);
    expect(cli.code, cli.stderr).toBe(0);
    expect(await works(rotated.body.key)).toBe(false);
  });

  it('is documented: its own tag, the rotate body optional, the create body required', async () => {
    const doc = (await s.call('/openapi.json')).body;
    expect(doc.tags.map((t: { name: string }) => t.name)).toContain('keys');
    expect(doc.paths['/keys'].post.requestBody.required).toBe(true);
    expect(doc.paths['/keys/{id}/rotate'].post.requestBody.required).toBe(false);
    expect(doc.paths['/keys/{id}/rotate'].post.requestBody.content['application/json'].schema.properties).toHaveProperty('graceSeconds');
    expect(Object.keys(doc.paths['/keys/{id}'].delete.responses)).toEqual(expect.arrayContaining(['200', '404', '409']));
  });

  it("another tenant's key ids are 404 on every key route, and its keys are neither listed nor changed", async () => {
    const b = (await cliInProcess(['keys', 'create', '--name', 'tenant-b'], s.dir)).stdout.trim().split('\n').at(-1)!;
    const b2 = await as(b)('/keys', { method: 'POST', json: { name: 'tenant-b-2' } });
    expect(b2.status).toBe(201);
    const before = (await s.call('/keys')).body;
    const aIds = (before.result as Array<{ id: string }>).map((k) => k.id);
    expect(aIds).toContain(idOf(TEST_KEY));
    const listedB = (await as(b)('/keys')).body;
    expect(listedB.result.map((k: { name: string }) => k.name).sort()).toEqual(['tenant-b', 'tenant-b-2']);
    for (const id of aIds) {
      for (const [method, path] of [
        ['POST', `/keys/${id}/rotate`],
        ['DELETE', `/keys/${id}`],
      ] as const) {
        const r = await as(b)(path, { method, ...(method === 'POST' ? { json: { graceSeconds: 0 } } : {}) });
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(r.body.message).toBe(`no key with id "${id}"`);
      }
    }
    expect((await s.call('/keys')).body).toEqual(before);
    expect(await works(TEST_KEY)).toBe(true);
    // And A's the same way round: B's ids are not A's.
    expect((await s.call(`/keys/${b2.body.id}`, { method: 'DELETE' })).status).toBe(404);
    expect(await works(b2.body.key)).toBe(true);
  });
});
