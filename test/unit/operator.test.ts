import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiKeys } from '../../engine/keys.js';
import { OperatorAccess } from '../../engine/operator.js';
import { openStore, type Store } from '../../storage/env.js';
import { lmdbKeyStore } from '../../storage/keys.js';
import { tempDir } from '../helpers.js';

/** Who may call the admin routes, on a real key store: the first tenant's keys, or whoever holds CHAINPOST_ADMIN_KEY. */
describe('OperatorAccess', () => {
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

  it("without an admin key: the first tenant's keys only, whichever of them, whenever the others were made", () => {
    // Another process (the CLI) may stamp its tenants by an earlier clock: the mark decides, not createdAt.
    const first = keys.create({ name: 'first' });
    now -= 86_400_000;
    const second = keys.create({ name: 'second' });
    const firstAgain = keys.create({ name: 'first-2', tenant: 'first' });
    const access = new OperatorAccess(undefined, () => keys.firstTenant());
    expect(() => access.check(first.record, undefined)).not.toThrow();
    expect(() => access.check(firstAgain.record, 'anything')).not.toThrow();
    expect(() => access.check(second.record, undefined)).toThrow(expect.objectContaining({ status: 403 }));
  });

  it('takes the oldest tenant as the first in a store written before tenants were marked', () => {
    const a = keys.create({ name: 'a' });
    now -= 1000;
    const b = keys.create({ name: 'b' });
    for (const t of store.values<{ id: string; first?: true }>('tenants')) store.transact(() => store.put('tenants', t.id, { ...t, first: undefined }));
    expect(keys.firstTenant()).toBe(b.tenant.id);
    expect(keys.firstTenant()).not.toBe(a.tenant.id);
  });

  it('with an admin key: that key in x-admin-key, from any tenant; nothing else', () => {
    const first = keys.create({ name: 'first' });
    const other = keys.create({ name: 'other' });
    const access = new OperatorAccess('the-admin-key-0123456789', () => keys.firstTenant());
    expect(() => access.check(other.record, 'the-admin-key-0123456789')).not.toThrow();
    for (const presented of [undefined, '', 'the-admin-key-012345678', 'the-admin-key-0123456789 ', 'x'.repeat(10_000)]) {
      expect(() => access.check(first.record, presented), String(presented).slice(0, 30)).toThrow(expect.objectContaining({ status: 403 }));
    }
  });
});
