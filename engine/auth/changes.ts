import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type { JWK } from 'jose';
import { ApiError, notFound } from '../errors.js';
import { Expiries } from '../expiry.js';
import type { AppliedOf, ChangeOf, ChangeWriter, Kv } from '../ports.js';
import type { Family } from './message.js';

/**
 * The Authentication API's changes: its state (challenges, bind and unbind messages waiting for a signature,
 * profiles and their accounts, the token signing key) changes only by these, written through the control plane
 * (engine/streams/control-plane.ts), so every node of a cluster applies the same ones in the same order. The
 * writer chooses every nonce, id, time and candidate profile id and checks the signatures first; applying is a
 * function of the store and the change alone, and makes the checks that need one answer everywhere (a
 * challenge's single use, the tenant's count of messages waiting for a signature).
 */

export interface StoredAccount {
  blockchainType: Family;
  /** As shown to users: EIP-55 for EVM, lower case for Aptos, base58 for Solana. */
  address: string;
  publicKey?: string;
}

export interface Challenge {
  id: string;
  family: Family;
  nonce: string;
  message: string;
  publicKey?: string;
  expiresAt: number;
}

export interface PendingSignature {
  kind: 'bind' | 'unbind';
  nonce: string;
  message: string;
  account: StoredAccount;
  /** bind: the nonces of every address of the request, in request order. */
  group?: string[];
  /** unbind: the profile the address leaves. */
  profileId?: string;
  expiresAt: number;
}

export interface Profile {
  profileId: string;
  addresses: StoredAccount[];
}

/** The token signing key as stored (engine/auth/token.ts). */
export interface StoredSigningKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

/** A sign-in challenge stored, unless its tenant has `maxPending` messages waiting for a signature already. */
export interface ChallengeAdd {
  kind: 'auth.challenge.request';
  tenant: string;
  challenge: Challenge;
  maxPending: number;
  at: number;
}

/**
 * A verified sign-in: the challenge with this nonce used up, refused when it is gone (so of two verifies of one
 * challenge the first applied wins), and the account's profile made if it has none: `profileId`, the writer's
 * candidate, when that is still free.
 */
export interface ChallengeVerify {
  kind: 'auth.challenge.verify';
  tenant: string;
  nonce: string;
  account: StoredAccount;
  profileId: string;
}

/** Bind or unbind messages waiting for their signatures, unless the tenant has `maxPending` waiting already. */
export interface PendingAdd {
  kind: 'auth.bind.request' | 'auth.unbind.request';
  tenant: string;
  pending: PendingSignature[];
  maxPending: number;
  at: number;
}

/** A bind request signed by every address: they join the profile of the first (`profileId`: the candidate if it has none). */
export interface BindVerify {
  kind: 'auth.bind.verify';
  tenant: string;
  /** The nonces of the request's messages, in request order. */
  nonces: string[];
  profileId: string;
}

/** A signed unbind message: its address leaves the profile it names. */
export interface UnbindVerify {
  kind: 'auth.unbind.verify';
  tenant: string;
  nonce: string;
}

/** What is due by `at` removed (challenges and bind messages: engine/expiry.ts). */
export interface ExpiredRemove {
  kind: 'auth.expire';
  at: number;
}

/** The token signing key, set only if there is none: the first applied wins, and every node signs with it. */
export interface SigningKeySet {
  kind: 'auth.signingKey';
  key: StoredSigningKey;
}

/** Each kind of auth change and what applying it gives. */
export interface AuthKinds {
  'auth.challenge.request': [ChallengeAdd, void];
  /** The profile id of the account that signed in. */
  'auth.challenge.verify': [ChallengeVerify, string];
  'auth.bind.request': [PendingAdd, void];
  'auth.unbind.request': [PendingAdd, void];
  /** The profile id the addresses are bound into. */
  'auth.bind.verify': [BindVerify, string];
  /** The profile id the address left. */
  'auth.unbind.verify': [UnbindVerify, string];
  /** How many were removed. */
  'auth.expire': [ExpiredRemove, number];
  /** The key kept. */
  'auth.signingKey': [SigningKeySet, StoredSigningKey];
}
export type AuthChange = ChangeOf<AuthKinds>;
export type AuthApplied<C extends AuthChange> = AppliedOf<AuthKinds, C>;
export type AuthChanges = ChangeWriter<AuthKinds>;

const SIGNING_KEY = 'authSigningKey';

export const signingKeyOf = (kv: Kv): StoredSigningKey | undefined => kv.get<StoredSigningKey>('meta', SIGNING_KEY);

export const accountKey = (tenant: string, a: StoredAccount): string =>
  `${tenant}/${a.blockchainType}/${a.blockchainType === 'solana' ? a.address : a.address.toLowerCase()}`;

/** The tenant's messages waiting for a signature (sign-in challenges, bind and unbind messages), due ones included. */
export const pendingOf = (kv: Kv, tenant: string): number => {
  const expiries = new Expiries(kv);
  return expiries.count('challenges', tenant) + expiries.count('binds', tenant);
};

/**
 * Stable per (tenant, chain family, address) until the address is bound elsewhere:
 * sha-256 of those, with a counter in case that id is taken (the address left it).
 */
export function freshProfileId(kv: Kv, tenant: string, account: StoredAccount): string {
  const base = accountKey(tenant, account);
  for (let n = 0; ; n++) {
    const id = `0x${bytesToHex(sha256(utf8ToBytes(n === 0 ? base : `${base}#${n}`)))}`;
    if (kv.get('profiles', `${tenant}/${id}`) === undefined) return id;
  }
}

/** Refuses `n` more messages waiting for a signature past the tenant's limit (what is due was removed by its own change first). */
function admit(kv: Kv, tenant: string, n: number, maxPending: number, at: number): void {
  if (pendingOf(kv, tenant) + n <= maxPending) return;
  // The next message of any tenant to expire: finding this tenant's own would be a scan.
  const wait = Math.max(1, Math.ceil(((new Expiries(kv).nextDue() ?? at) - at) / 1000));
  throw new ApiError(
    429,
    `challenges: a tenant has at most ${maxPending} messages waiting for a signature (sign-in challenges, bind and unbind messages; CHAINPOST_MAX_PENDING_CHALLENGES): verify some or wait until they expire`,
    { field: 'challenges', limit: maxPending, variable: 'CHAINPOST_MAX_PENDING_CHALLENGES' },
    { 'retry-after': String(wait) },
  );
}

/** The account's profile; one made for it (`candidate` when still free) if it has none. */
function ensureProfile(kv: Kv, tenant: string, account: StoredAccount, candidate: string): string {
  const existing = kv.get<string>('accounts', accountKey(tenant, account));
  if (existing !== undefined) return existing;
  const profileId = kv.get('profiles', `${tenant}/${candidate}`) === undefined ? candidate : freshProfileId(kv, tenant, account);
  kv.put('profiles', `${tenant}/${profileId}`, { profileId, addresses: [account] } satisfies Profile);
  kv.put('accounts', accountKey(tenant, account), profileId);
  return profileId;
}

function moveAccount(kv: Kv, tenant: string, account: StoredAccount, target: string): void {
  const current = kv.get<string>('accounts', accountKey(tenant, account));
  if (current === target) return;
  if (current !== undefined) detach(kv, tenant, account, current);
  const profile = kv.get<Profile>('profiles', `${tenant}/${target}`)!;
  profile.addresses.push(account);
  kv.put('profiles', `${tenant}/${target}`, profile);
  kv.put('accounts', accountKey(tenant, account), target);
}

/** Takes `account` out of a profile; a profile left empty is deleted. */
function detach(kv: Kv, tenant: string, account: StoredAccount, profileId: string): void {
  const profile = kv.get<Profile>('profiles', `${tenant}/${profileId}`);
  if (profile === undefined) return;
  const k = accountKey(tenant, account);
  profile.addresses = profile.addresses.filter((a) => accountKey(tenant, a) !== k);
  if (profile.addresses.length === 0) kv.remove('profiles', `${tenant}/${profileId}`);
  else kv.put('profiles', `${tenant}/${profileId}`, profile);
}

function addPending(kv: Kv, { tenant, pending, maxPending, at }: PendingAdd): void {
  admit(kv, tenant, pending.length, maxPending, at);
  const expiries = new Expiries(kv);
  for (const p of pending) {
    const key = `${tenant}/${p.nonce}`;
    kv.put('binds', key, p);
    expiries.add(p.expiresAt, 'binds', key);
  }
}

/** The message waiting for a signature with this nonce, removed; 404 when it is gone (verified or expired). */
function takePending(kv: Kv, tenant: string, nonce: string, kind: PendingSignature['kind']): PendingSignature {
  const key = `${tenant}/${nonce}`;
  const p = kv.get<PendingSignature>('binds', key);
  if (p === undefined || p.kind !== kind) throw notFound(`${kind} request already verified or expired`);
  kv.remove('binds', key);
  new Expiries(kv).remove(p.expiresAt, 'binds', key);
  return p;
}

export const AUTH_APPLY: { [K in keyof AuthKinds]: (kv: Kv, change: AuthKinds[K][0]) => AuthKinds[K][1] } = {
  'auth.challenge.request': (kv, { tenant, challenge, maxPending, at }) => {
    admit(kv, tenant, 1, maxPending, at);
    const key = `${tenant}/${challenge.nonce}`;
    kv.put('challenges', key, challenge);
    new Expiries(kv).add(challenge.expiresAt, 'challenges', key);
  },
  'auth.challenge.verify': (kv, { tenant, nonce, account, profileId }) => {
    // Single use: only the verify applied while the challenge is there succeeds.
    const key = `${tenant}/${nonce}`;
    const challenge = kv.get<Challenge>('challenges', key);
    if (challenge === undefined) throw notFound('no challenge with this nonce: unknown, already verified or expired');
    kv.remove('challenges', key);
    new Expiries(kv).remove(challenge.expiresAt, 'challenges', key);
    return ensureProfile(kv, tenant, account, profileId);
  },
  'auth.bind.request': addPending,
  'auth.unbind.request': addPending,
  'auth.bind.verify': (kv, { tenant, nonces, profileId }) => {
    const [first, ...rest] = nonces.map((n) => takePending(kv, tenant, n, 'bind'));
    const target = ensureProfile(kv, tenant, first!.account, profileId);
    for (const r of rest) moveAccount(kv, tenant, r.account, target);
    return target;
  },
  'auth.unbind.verify': (kv, { tenant, nonce }) => {
    const { account, profileId } = takePending(kv, tenant, nonce, 'unbind');
    if (kv.get<string>('accounts', accountKey(tenant, account)) !== profileId)
      throw notFound(`${account.address} is no longer bound to profile ${profileId}`);
    detach(kv, tenant, account, profileId!);
    kv.remove('accounts', accountKey(tenant, account));
    return profileId!;
  },
  'auth.expire': (kv, { at }) => new Expiries(kv).purge(at),
  'auth.signingKey': (kv, { key }) => {
    const kept = signingKeyOf(kv);
    if (kept !== undefined) return kept;
    kv.put('meta', SIGNING_KEY, key);
    return key;
  },
};
