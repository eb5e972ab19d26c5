import type { ApiKey, KeyStore, Tenant } from '../engine/keys.js';
import type { Store } from './env.js';

/**
 * KeyStore over LMDB: `keys` by key hash, `tenants` by tenant id, and
 * `meta/keysVersion`, bumped in the same transaction as every key or tenant
 * write so readers in other processes know their cache is stale.
 */
export function lmdbKeyStore(store: Store): KeyStore {
  // Read on every request: the stored bytes are compared with the last ones seen, and decoded only when they changed.
  let seenBytes: Uint8Array | undefined;
  let seenVersion = 0;
  const version = (): number => {
    const raw = store.getRaw('meta', 'keysVersion');
    if (raw === undefined) return 0;
    if (seenBytes === undefined || !sameBytes(raw, seenBytes)) {
      seenVersion = store.get<number>('meta', 'keysVersion') ?? 0;
      seenBytes = Uint8Array.from(raw); // a copy: raw views LMDB's shared read buffer
    }
    return seenVersion;
  };
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

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
