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
    store.transact(() => {
      fn();
      store.put('meta', 'keysVersion', version() + 1);
    });
  return {
    keyByHash: (hash) => store.get<ApiKey>('keys', hash),
    keys: () => store.values<ApiKey>('keys'),
    tenants: () => store.values<Tenant>('tenants'),
    putKey: (key) => write(() => store.put('keys', key.hash, key)),
    putTenant: (tenant) => write(() => store.put('tenants', tenant.id, tenant)),
    removeKey: (hash) => write(() => store.remove('keys', hash)),
    version,
    transact: (fn) => store.transact(fn),
  };
}
