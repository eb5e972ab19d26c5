import type { ApiKey, KeyStore, Tenant } from '../engine/keys.js';
import type { Store } from './env.js';

/** KeyStore over LMDB: `keys` by key hash, `tenants` by tenant id. */
export function lmdbKeyStore(store: Store): KeyStore {
  return {
    keyByHash: (hash) => store.get<ApiKey>('keys', hash),
    keys: () => store.values<ApiKey>('keys'),
    tenants: () => store.values<Tenant>('tenants'),
    putKey: (key) => store.putSync('keys', key.hash, key),
    putTenant: (tenant) => store.putSync('tenants', tenant.id, tenant),
    removeKey: (hash) => store.removeSync('keys', hash),
    transact: (fn) => store.transactSync(fn),
  };
}
