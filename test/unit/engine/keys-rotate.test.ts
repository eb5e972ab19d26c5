import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseDuration } from '../../../engine/duration.js';
import { ApiKeys, hashKey, keyChangesIn, type ApiKey, type KeyStore } from '../../../engine/keys.js';
import { openStore, type Store } from '../../../storage/env.js';
import { lmdbKeyStore } from '../../../storage/keys.js';
import { OperatorAccess } from '../../../engine/operator.js';
import { tempDir } from '../../helpers.js';

/**
 * API keys on a real LMDB store and an injected clock: rotation's grace period, revocation, and the final digest
 * check; and who may call the admin routes: the first tenant's keys, or whoever holds CHAINPOST_ADMIN_KEY.
 */
let dir: string;
let store: Store;
let now: number;
let keys: ApiKeys;

beforeEach(() => {
  dir = tempDir();
  store = openStore(dir);
  now = Date.UTC(2026, 0, 1);
  keys = new ApiKeys(lmdbKeyStore(store), () => now);
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('OperatorAccess', () => {
  it("without an admin key: the first tenant's keys only, whichever of them, whenever the others were made", async () => {
    // Another process (the CLI) may stamp its tenants by an earlier clock: the mark decides, not createdAt.
    const first = await keys.create({ name: 'first' });
    now -= 86_400_000;
    const second = await keys.create({ name: 'second' });
    const firstAgain = await keys.create({ name: 'first-2', tenant: 'first' });
    const access = new OperatorAccess(undefined, () => keys.firstTenant());
    expect(() => access.check(first.record, undefined)).not.toThrow();
    expect(() => access.check(firstAgain.record, 'anything')).not.toThrow();
    expect(() => access.check(second.record, undefined)).toThrow(expect.objectContaining({ status: 403 }));
  });

  it('takes the oldest tenant as the first in a store written before tenants were marked', async () => {
    const a = await keys.create({ name: 'a' });
    now -= 1000;
    const b = await keys.create({ name: 'b' });
    for (const t of store.values<{ id: string; first?: true }>('tenants'))
      store.transact(() => store.put('tenants', t.id, { ...t, first: undefined }));
    expect(keys.firstTenant()).toBe(b.tenant.id);
    expect(keys.firstTenant()).not.toBe(a.tenant.id);
  });

  it('with an admin key: that key in x-admin-key, from any tenant; nothing else', async () => {
    const first = await keys.create({ name: 'first' });
    const other = await keys.create({ name: 'other' });
    const access = new OperatorAccess('the-admin-key-0123456789', () => keys.firstTenant());
    expect(() => access.check(other.record, 'the-admin-key-0123456789')).not.toThrow();
    for (const presented of [undefined, '', 'the-admin-key-012345678', 'the-admin-key-0123456789 ', 'x'.repeat(10_000)]) {
      expect(() => access.check(first.record, presented), String(presented).slice(0, 30)).toThrow(expect.objectContaining({ status: 403 }));
    }
  });
});

describe('ApiKeys: rotate', () => {
  const HOUR = 3_600_000;

  it('makes a new key of the same name, tenant and e-mail; the old one works until its grace period ends, then is refused and dropped', async () => {
    const { key: first, record } = await keys.create({ name: 'app', email: 'ops@example.com' });
    now += 1000;
    const { key: second, record: next, old } = await keys.rotate('app', 24 * HOUR);
    expect(second).not.toBe(first);
    expect(second).toMatch(/^cpk_[A-Za-z0-9_-]{32}$/);
    expect(next).toMatchObject({ name: 'app', email: 'ops@example.com', tenantId: record.tenantId, createdAt: now });
    expect(next.expiresAt).toBeUndefined();
    expect(old).toEqual({ ...record, expiresAt: now + 24 * HOUR, replacedBy: next.id });
    expect(keys.authenticate(first)?.id).toBe(record.id);
    expect(keys.authenticate(second)?.id).toBe(next.id);
    expect(keys.list().map((k) => [k.id, k.expiresAt])).toEqual(
      expect.arrayContaining([
        [record.id, now + 24 * HOUR],
        [next.id, undefined],
      ]),
    );

    now += 24 * HOUR - 1;
    expect(keys.authenticate(first)?.id).toBe(record.id);
    now += 1;
    expect(keys.authenticate(first)).toBeUndefined();
    expect(keys.authenticate(second)?.id).toBe(next.id);
    expect(keys.list().map((k) => k.id)).toEqual([next.id]);
    // Refused already; the next key write drops it from the store.
    expect(store.get('keys', record.hash)).toBeDefined();
    await keys.create({ name: 'another' });
    expect(store.get('keys', record.hash)).toBeUndefined();
  });

  it('with no grace refuses the old key at once; rotating by id, or again by name, replaces the current key', async () => {
    const { key: first, record } = await keys.create({ name: 'app' });
    const { key: second, record: r2 } = await keys.rotate(record.id, 0);
    expect(keys.authenticate(first)).toBeUndefined();
    expect(keys.authenticate(second)?.id).toBe(r2.id);
    const { key: third, old } = await keys.rotate('app', HOUR);
    expect(old.id).toBe(r2.id);
    expect(keys.authenticate(second)?.id).toBe(r2.id);
    expect(keys.authenticate(third)?.name).toBe('app');
  });

  it('refuses to rotate a key rotated already (by its id), an unknown key, or a bad grace', async () => {
    const { record } = await keys.create({ name: 'app' });
    const { record: next } = await keys.rotate('app', HOUR);
    await expect(keys.rotate(record.id, HOUR)).rejects.toThrow(`key ${record.id} was rotated already (to ${next.id}): rotate "app"`);
    await expect(keys.rotate('nobody', HOUR)).rejects.toThrow('no key named or with id "nobody"');
    await expect(keys.rotate('app', -1)).rejects.toThrow(/grace: not a duration/);
  });

  it('revoke by name ends the key and the one it replaced at once; by id, that key alone', async () => {
    const { key: first } = await keys.create({ name: 'app' });
    const { key: second, record: r2 } = await keys.rotate('app', HOUR);
    expect((await keys.revoke('app')).id).toBe(r2.id);
    expect(keys.authenticate(first)).toBeUndefined();
    expect(keys.authenticate(second)).toBeUndefined();

    const { key: third, record: r3 } = await keys.create({ name: 'other' });
    const { key: fourth } = await keys.rotate('other', HOUR);
    await keys.revoke(r3.id);
    expect(keys.authenticate(third)).toBeUndefined();
    expect(keys.authenticate(fourth)?.name).toBe('other');
  });

  it('accepts a key only when the stored digest equals the digest of the key given, whatever the lookup returned', async () => {
    const { key, record } = await keys.create({ name: 'app' });
    // A store whose lookup answers a record under another digest (a corrupt or colliding index) is not believed.
    const real = lmdbKeyStore(store);
    const lying: KeyStore = { ...real, keyByHash: (): ApiKey => ({ ...record, hash: hashKey('something else') }) };
    expect(new ApiKeys(lying, () => now).authenticate(key)).toBeUndefined();
    expect(new ApiKeys(real, () => now).authenticate(key)?.id).toBe(record.id);
  });
});

describe('parseDuration', () => {
  it.each([
    ['0', 0],
    ['90s', 90_000],
    ['30m', 1_800_000],
    ['24h', 86_400_000],
    ['7d', 604_800_000],
  ])('%s is %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '24', 'h', '1.5h', '-1h', '24 h', '24H', '1w', '1234567890s'])('"%s" is not a duration', (text) =>
    expect(parseDuration(text)).toBeUndefined(),
  );
});

describe('ApiKeys: ensure (CHAINPOST_API_KEY)', () => {
  it('takes the key as there when another node created it first: two cluster nodes started together with it both write it', async () => {
    const key = 'cpk_ensure_race_0123456789abcdefXYZ';
    // This node's write reaches the log after the other node's create of the same key (applied first, everywhere).
    const other = new ApiKeys(lmdbKeyStore(store), () => now);
    const store_ = lmdbKeyStore(store);
    const direct = keyChangesIn(store_);
    const racing = new ApiKeys(store_, () => now, {
      write: async (change) => {
        await other.create({ name: 'env' }, key);
        return direct.write(change);
      },
    });
    expect(await racing.ensure(key)).toBe(false);
    expect(keys.authenticate(key)?.name).toBe('env');
    expect(keys.list()).toHaveLength(1);
  });
});
