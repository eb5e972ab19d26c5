import { timingSafeEqual } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { z } from 'zod';
import { ApiError } from './errors.js';
import { validate } from './schema.js';
import type { AppliedOf, ChangeOf, ChangeWriter } from './ports.js';

/**
 * API keys and tenants. A key is shown once and stored only as its SHA-256;
 * every stored resource belongs to the key's tenant, never to the key itself.
 */
export interface ApiKey {
  /** SHA-256 of the key, hex: the store's lookup key. */
  hash: string;
  /** Short public id (hash prefix) for listing and revoking. */
  id: string;
  name: string;
  email?: string;
  tenantId: string;
  createdAt: number;
  /** Set when the key was rotated: it is refused from this moment on (ms since the epoch). */
  expiresAt?: number;
  /** The id of the key that replaced it (rotate). */
  replacedBy?: string;
}

export interface Tenant {
  id: string;
  name: string;
  createdAt: number;
  /** The tenant made first (the first start's key, or CHAINPOST_API_KEY's): without CHAINPOST_ADMIN_KEY, the operator. */
  first?: true;
}

/** Port: the key store (LMDB in storage/keys.ts), shared with other processes such as the CLI. */
export interface KeyStore {
  keyByHash(hash: string): ApiKey | undefined;
  keys(): ApiKey[];
  tenants(): Tenant[];
  putKey(key: ApiKey): void;
  putTenant(tenant: Tenant): void;
  removeKey(hash: string): void;
  /** A number that changes with every key or tenant write, by any process. */
  version(): number;
  /** Runs `fn` in one write transaction, so a name check and an insert are atomic across processes. */
  transact<T>(fn: () => T): T;
}

/** A new key (its digest, never the key) named `name`, in the tenant named or with id `tenant`, or else in `newTenant`. */
export interface KeyCreate {
  kind: 'key.create';
  hash: string;
  name: string;
  email?: string;
  tenant?: string;
  newTenant: { id: string };
  at: number;
}

/** The key named or with id `nameOrId` replaced by the key with digest `hash`; the old one works `graceMs` more. */
export interface KeyRotate {
  kind: 'key.rotate';
  nameOrId: string;
  hash: string;
  graceMs: number;
  at: number;
  /** Set through the API: only a key of this tenant, by its id (another's is not found). */
  tenant?: string;
}

/** The key with this id, or those with this name, revoked. */
export interface KeyRevoke {
  kind: 'key.revoke';
  nameOrId: string;
  /** Set through the API: only a key of this tenant, by its id, and never the tenant's last (it would lock it out). */
  tenant?: string;
}

export type KeyCreated = { record: ApiKey; tenant: Tenant };
export type KeyRotated = { record: ApiKey; old: ApiKey };

/** Each kind of key change and what applying it gives. */
export interface KeyKinds {
  'key.create': [KeyCreate, KeyCreated];
  'key.rotate': [KeyRotate, KeyRotated];
  'key.revoke': [KeyRevoke, ApiKey];
}
export type KeyChange = ChangeOf<KeyKinds>;
export type KeyApplied<C extends KeyChange> = AppliedOf<KeyKinds, C>;
/** Where ApiKeys writes its changes: the control plane's for key changes. */
export type KeyChanges = ChangeWriter<KeyKinds>;

/** Key changes applied to the key store at once, in its own transaction: where no control plane is given. */
export const keyChangesIn = (store: KeyStore): KeyChanges => ({
  write: async <C extends KeyChange>(change: C) => store.transact(() => applyKeyChange(store, change)),
});

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** A key's fields its maker gives (`keys create`, POST /keys): one schema checks both. */
export const keyFields = z.strictObject({
  name: z
    .string({ error: 'a string' })
    .regex(NAME, '1 to 64 characters of A-Z a-z 0-9 _ . -, starting with a letter or digit')
    .meta({ description: "The key's name, unique on the server: 1 to 64 characters of A-Z a-z 0-9 _ . -" }),
  email: z
    .string({ error: 'a string' })
    .regex(/^[^\s@]+@[^\s@]+$/, 'not an e-mail address')
    .optional()
    .meta({ description: "Where the tenant's stream alerts are e-mailed (with CHAINPOST_SMTP_URL)" }),
});
const HASH_CACHE_MAX = 10_000;

const base64url = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');

export const hashKey = (key: string): string => bytesToHex(sha256(utf8ToBytes(key)));

/** A new key: `cpk_` and 24 random bytes. */
const newKey = (): string => `cpk_${base64url(randomBytes(24))}`;

/**
 * Whether two SHA-256 hex digests are equal, in time that does not depend on where they differ: the last step of
 * authenticate, so no comparison of a caller's key material (its digest against a stored one) leaks by its timing.
 */
const sameDigest = (a: string, b: string): boolean =>
  a.length === b.length && timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));

/** Whether `presented` is the secret whose SHA-256 is `digest` (an operator's key from the environment), compared as keys are. */
export const matchesSecret = (presented: string | undefined, digest: string): boolean =>
  presented !== undefined && presented.length <= 256 && sameDigest(hashKey(presented), digest);

/** A key still in use at `now`: not rotated, or rotated and still in its grace period. */
const inUse = (k: ApiKey, now: number): boolean => k.expiresAt === undefined || now < k.expiresAt;

export class ApiKeys {
  // A key's hash never changes, so it is memoized. Decoded records are cached
  // until the store's version moves: one small read per request instead of a
  // record decode, and a revoke by another process still takes effect at once.
  private readonly hashes = new Map<string, string>();
  private readonly records = new Map<string, ApiKey>();
  private recordsVersion = -1;

  constructor(
    private readonly store: KeyStore,
    private readonly now: () => number,
    /** Where key changes are written; none: applied to `store` at once. */
    private readonly changes: KeyChanges = keyChangesIn(store),
  ) {}

  /** Creates a key; a new tenant named after the key unless `tenant` names an existing one. */
  async create(
    opts: { name: string; email?: string | undefined; tenant?: string | undefined },
    key = newKey(),
  ): Promise<{ key: string; record: ApiKey; tenant: Tenant }> {
    const fields = validate(keyFields, { name: opts.name, email: opts.email }, 'name');
    const change: KeyCreate = {
      kind: 'key.create',
      hash: hashKey(key),
      name: fields.name,
      newTenant: { id: `t_${bytesToHex(randomBytes(8))}` },
      at: this.now(),
    };
    if (fields.email !== undefined) change.email = fields.email;
    if (opts.tenant !== undefined) change.tenant = opts.tenant;
    return { key, ...(await this.changes.write(change)) };
  }

  /** Makes sure `key` exists (CHAINPOST_API_KEY); returns true when it had to be created. */
  async ensure(key: string, name = 'env'): Promise<boolean> {
    const hash = hashKey(key);
    if (this.store.keyByHash(hash)) return false;
    const taken = new Set(this.store.keys().map((k) => k.name));
    const tenantNames = new Set(this.store.tenants().map((t) => t.name));
    let n = name;
    for (let i = 2; taken.has(n) || tenantNames.has(n); i++) n = `${name}-${i}`;
    try {
      await this.create({ name: n }, key);
    } catch (err) {
      // Cluster nodes started together with one CHAINPOST_API_KEY each write it: the log applies the first, refuses the rest.
      if (this.store.keyByHash(hash)) return false;
      throw err;
    }
    return true;
  }

  authenticate(key: string | undefined): ApiKey | undefined {
    if (key === undefined || key.length === 0 || key.length > 256) return undefined;
    let hash = this.hashes.get(key);
    if (hash === undefined) {
      hash = hashKey(key);
      if (this.hashes.size >= HASH_CACHE_MAX) this.hashes.clear();
      this.hashes.set(key, hash);
    }
    const version = this.store.version();
    if (version !== this.recordsVersion) {
      this.records.clear();
      this.recordsVersion = version;
    }
    let record = this.records.get(hash);
    if (record === undefined) {
      record = this.store.keyByHash(hash);
      if (record !== undefined) this.records.set(hash, record);
    }
    if (record === undefined || !sameDigest(record.hash, hash)) return undefined;
    return inUse(record, this.now()) ? record : undefined;
  }

  /**
   * Replaces the key named N (its current one) or with id N by a new key of the same name, tenant and e-mail;
   * the old key keeps working for `graceMs` more (0: refused at once), so clients can move over. Returns the new
   * key (shown once) and both records.
   */
  async rotate(
    nameOrId: string,
    graceMs: number,
    key = newKey(),
    /** The API's: a key of this tenant alone, by its id. */
    tenant?: string,
  ): Promise<{ key: string; record: ApiKey; old: ApiKey }> {
    if (!Number.isSafeInteger(graceMs) || graceMs < 0) throw new ApiError(400, `grace: not a duration: ${graceMs} ms`);
    const change: KeyRotate = { kind: 'key.rotate', nameOrId, hash: hashKey(key), graceMs, at: this.now() };
    if (tenant !== undefined) change.tenant = tenant;
    return { key, ...(await this.changes.write(change)) };
  }

  /**
   * Revokes by id, or by name (the key and any it replaced still in their grace period); the tenant and its resources
   * stay. With `tenant` (the API): a key of that tenant alone, by its id, and never its last key not rotated (409).
   */
  revoke(nameOrId: string, tenant?: string): Promise<ApiKey> {
    return this.changes.write(tenant === undefined ? { kind: 'key.revoke', nameOrId } : { kind: 'key.revoke', nameOrId, tenant });
  }

  /** The tenant's keys in use (a rotated one until its grace period ends), oldest first. */
  ofTenant(tenant: string): ApiKey[] {
    const now = this.now();
    return this.store
      .keys()
      .filter((k) => k.tenantId === tenant && inUse(k, now))
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
  }

  list(): Array<ApiKey & { tenant: string }> {
    const tenants = new Map(this.store.tenants().map((t) => [t.id, t.name]));
    const now = this.now();
    return this.store
      .keys()
      .filter((k) => inUse(k, now))
      .map((k) => ({ ...k, tenant: tenants.get(k.tenantId) ?? k.tenantId }));
  }

  count(): number {
    return this.store.keys().length;
  }

  /** The tenant made first; in a store from before that was marked, the oldest (ties: the lowest id). */
  firstTenant(): string | undefined {
    const tenants = this.store.tenants();
    const marked = tenants.find((t) => t.first === true);
    if (marked !== undefined) return marked.id;
    return tenants.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))[0]?.id;
  }
}

/** Applies a key change to the key store, with its checks; call inside its write transaction, so a name check and an insert are atomic across processes. */
export function applyKeyChange<C extends KeyChange>(store: KeyStore, change: C): KeyApplied<C> {
  return (
    change.kind === 'key.create'
      ? createKey(store, change)
      : change.kind === 'key.rotate'
        ? rotateKey(store, change)
        : revokeKey(store, change)
  ) as KeyApplied<C>;
}

function createKey(store: KeyStore, c: KeyCreate): KeyCreated {
  dropExpired(store, c.at);
  if (store.keyByHash(c.hash)) throw new ApiError(409, 'this key exists already');
  if (store.keys().some((k) => k.name === c.name)) throw new ApiError(409, `a key named "${c.name}" exists already`);
  const tenants = store.tenants();
  let tenant: Tenant;
  if (c.tenant !== undefined) {
    // By id first: a tenant's name may be any key name, another tenant's id too.
    const found = tenants.find((t) => t.id === c.tenant) ?? tenants.find((t) => t.name === c.tenant);
    if (!found) throw new ApiError(404, `no tenant "${c.tenant}"`);
    tenant = found;
  } else {
    if (tenants.some((t) => t.name === c.name)) {
      throw new ApiError(409, `a tenant named "${c.name}" exists already: pass --tenant ${c.name} to join it, or choose another name`);
    }
    tenant = { id: c.newTenant.id, name: c.name, createdAt: c.at, ...(tenants.length === 0 ? { first: true as const } : {}) };
    store.putTenant(tenant);
  }
  const record: ApiKey = { hash: c.hash, id: c.hash.slice(0, 12), name: c.name, tenantId: tenant.id, createdAt: c.at };
  if (c.email !== undefined) record.email = c.email;
  store.putKey(record);
  return { record, tenant };
}

function rotateKey(store: KeyStore, c: KeyRotate): KeyRotated {
  dropExpired(store, c.at);
  const keys = store.keys();
  const found =
    c.tenant !== undefined
      ? ownKey(keys, c.tenant, c.nameOrId)
      : (keys.find((k) => k.id === c.nameOrId) ?? keys.find((k) => k.name === c.nameOrId && k.expiresAt === undefined));
  if (!found)
    throw new ApiError(404, c.tenant !== undefined ? `no key with id "${c.nameOrId}"` : `no key named or with id "${c.nameOrId}"`);
  if (found.expiresAt !== undefined)
    throw new ApiError(
      409,
      `key ${found.id} was rotated already (to ${found.replacedBy ?? 'another key'}): rotate ${c.tenant !== undefined ? 'that one' : `"${found.name}"`}`,
    );
  if (store.keyByHash(c.hash)) throw new ApiError(409, 'this key exists already');
  const record: ApiKey = { hash: c.hash, id: c.hash.slice(0, 12), name: found.name, tenantId: found.tenantId, createdAt: c.at };
  if (found.email !== undefined) record.email = found.email;
  const old: ApiKey = { ...found, expiresAt: c.at + c.graceMs, replacedBy: record.id };
  store.putKey(old);
  store.putKey(record);
  return { record, old };
}

function revokeKey(store: KeyStore, c: KeyRevoke): ApiKey {
  const keys = store.keys();
  if (c.tenant !== undefined) {
    const own = ownKey(keys, c.tenant, c.nameOrId);
    if (own === undefined) throw new ApiError(404, `no key with id "${c.nameOrId}"`);
    if (!keys.some((k) => k.tenantId === c.tenant && k.hash !== own.hash && k.expiresAt === undefined))
      throw new ApiError(
        409,
        `key ${own.id} is the tenant's last key not rotated: revoking it would lock the tenant out (create another first)`,
      );
    store.removeKey(own.hash);
    return own;
  }
  const byId = keys.find((k) => k.id === c.nameOrId);
  const gone = byId === undefined ? keys.filter((k) => k.name === c.nameOrId) : [byId];
  if (gone.length === 0) throw new ApiError(404, `no key named or with id "${c.nameOrId}"`);
  for (const k of gone) store.removeKey(k.hash);
  return gone.find((k) => k.expiresAt === undefined) ?? gone[0]!;
}

/** The tenant's key with this id (never by name: names are the server's, ids the key's). */
const ownKey = (keys: readonly ApiKey[], tenant: string, id: string): ApiKey | undefined =>
  keys.find((k) => k.id === id && k.tenantId === tenant);

/** Thrown inside a preview's transaction: it rolls back. */
const PREVIEW = Symbol('preview');

/**
 * What applying `change` to the key store as it is now gives, with its checks (a refusal is thrown), writing
 * nothing: for a process that leaves applying it to another (the CLI beside a cluster node's server).
 */
export function previewKeyChange<C extends KeyChange>(store: KeyStore, change: C): KeyApplied<C> {
  let applied: KeyApplied<C> | undefined;
  try {
    store.transact(() => {
      applied = applyKeyChange(store, change);
      throw PREVIEW;
    });
  } catch (err) {
    if (err !== PREVIEW) throw err;
  }
  return applied!;
}

/** Whether the key store shows `change` applied as its preview said: the new key there, the revoked one gone. */
export function keyChangeShows<C extends KeyChange>(store: KeyStore, change: C, applied: KeyApplied<C>): boolean {
  return change.kind === 'key.revoke'
    ? store.keyByHash((applied as ApiKey).hash) === undefined
    : store.keyByHash(change.hash) !== undefined;
}

/** Removes the rotated keys whose grace period is over: they are refused already. */
function dropExpired(store: KeyStore, now: number): void {
  for (const k of store.keys()) if (!inUse(k, now)) store.removeKey(k.hash);
}
