import type { ApiKey, KeyStore, Tenant } from '../engine/keys.js';
import type { Store } from './env.js';

/**
 * KeyStore over LMDB: `keys` by key hash, `tenants` by tenant id, and
 * `meta/keysVersion`, bumped in the same transaction as every key or tenant
 * write so readers in other processes know their cache is stale.
 */
export function lmdbKeyStore(store: Store): KeyStore {
  const version = (): number => store.get<number>('meta', 'keysVersion') ?? 0;
  const write = (fn: () => void): void =>
    store.transactSync(() => {
      fn();
      store.putSync('meta', 'keysVersion', version() + 1);
    });
  return {
    keyByHash: (hash) => store.get<ApiKey>('keys', hash),
    keys: () => store.values<ApiKey>('keys'),
    tenants: () => store.values<Tenant>('tenants'),
    putKey: (key) => write(() => store.putSync('keys', key.hash, key)),
    putTenant: (tenant) => write(() => store.putSync('tenants', tenant.id, tenant)),
    removeKey: (hash) => write(() => store.removeSync('keys', hash)),
    version,
    transact: (fn) => store.transactSync(fn),
  };
}
