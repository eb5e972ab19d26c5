import { rmSync } from 'node:fs';
import { privateKeyToAccount } from 'viem/accounts';
import { afterEach, describe, expect, it } from 'vitest';
import {
  freshProfileId,
  type AuthApplied,
  type AuthChange,
  type AuthChanges,
  type ChallengeVerify,
  type StoredAccount,
} from '../../../../engine/auth/changes.js';
import { bindRemove, bindRequest, challengeRequest } from '../../../../engine/auth/schemas.js';
import { AuthService } from '../../../../engine/auth/service.js';
import { TokenIssuer } from '../../../../engine/auth/token.js';
import type { Clock } from '../../../../engine/clock.js';
import type { Table } from '../../../../engine/ports.js';
import { validate } from '../../../../engine/schema.js';
import { StoreControlPlane } from '../../../../engine/streams/control-plane.js';
import { pack, unpack } from '../../../../storage/codec.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';

/**
 * The Auth API's changes on real LMDB stores: applied in one order they give one answer (a challenge's single use,
 * the limit of messages waiting for a signature, the first signing key), and the changes a service wrote, decoded
 * from msgpack as a log carries them, make the same rows on another store: what every node of a cluster does.
 */
const T0 = Date.UTC(2026, 10, 22, 12);
const TENANT = 't_auth';
const evm = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');
const evm2 = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
const ACCOUNT: StoredAccount = { blockchainType: 'evm', address: evm.address };
const AUTH_TABLES: Table[] = ['challenges', 'binds', 'expiries', 'expiryCounts', 'profiles', 'accounts', 'meta'];

const stores: Store[] = [];
const open = (): Store => {
  const s = openStore(tempDir());
  stores.push(s);
  return s;
};
afterEach(async () => {
  for (const s of stores.splice(0)) {
    await s.close();
    rmSync(s.path, { recursive: true, force: true });
  }
});
const rows = (s: Store, table: Table) => s.range(table).map(({ key, value }) => [key, value]);

/** A control plane that keeps each change as the msgpack bytes a log would carry, with what applying it gave. */
class LoggedPlane implements AuthChanges {
  readonly log: Uint8Array[] = [];
  readonly outcomes: unknown[] = [];
  private readonly plane: StoreControlPlane;

  constructor(store: Store) {
    this.plane = new StoreControlPlane(store);
  }

  async write<C extends AuthChange>(change: C): Promise<AuthApplied<C>> {
    this.log.push(pack(change));
    const applied = this.plane.write(change) as Promise<AuthApplied<C>>;
    this.outcomes.push(await applied.then(outcome, outcome));
    return applied;
  }
}
const outcome = (v: unknown): unknown => (v instanceof Error ? `refused: ${v.message}` : 'applied');

/** Applies logged changes in their order to another store: the outcome of each. */
async function replay(log: Uint8Array[], store: Store): Promise<unknown[]> {
  const plane = new StoreControlPlane(store);
  const out: unknown[] = [];
  for (const bytes of log) out.push(await plane.write(unpack<AuthChange>(bytes)).then(outcome, outcome));
  return out;
}

const challengeAdd = (nonce: string, maxPending = 10): AuthChange => ({
  kind: 'auth.challenge.request',
  tenant: TENANT,
  challenge: { id: `id-${nonce}`, family: 'evm', nonce, message: `message ${nonce}`, expiresAt: T0 + 60_000 },
  maxPending,
  at: T0,
});
const verify = (nonce: string, profileId: string, account = ACCOUNT): ChallengeVerify => ({
  kind: 'auth.challenge.verify',
  tenant: TENANT,
  nonce,
  account,
  profileId,
});

describe('auth changes', () => {
  it('refuses the second of two verifies of one challenge applied in order, on every store the same', async () => {
    const store = open();
    const plane = new LoggedPlane(store);
    const candidate = freshProfileId(store, TENANT, ACCOUNT);
    await plane.write(challengeAdd('n1'));
    expect(await plane.write(verify('n1', candidate))).toBe(candidate);
    await expect(plane.write(verify('n1', candidate))).rejects.toMatchObject({
      status: 404,
      message: 'no challenge with this nonce: unknown, already verified or expired',
    });
    expect(rows(store, 'challenges')).toEqual([]);
    expect(rows(store, 'expiries')).toEqual([]);
    expect(rows(store, 'profiles')).toEqual([[`${TENANT}/${candidate}`, { profileId: candidate, addresses: [ACCOUNT] }]]);

    const other = open();
    expect(await replay(plane.log, other)).toEqual(plane.outcomes);
    expect(plane.outcomes).toEqual(['applied', 'applied', 'refused: no challenge with this nonce: unknown, already verified or expired']);
    for (const table of AUTH_TABLES) expect(rows(other, table)).toEqual(rows(store, table));
  });

  it("makes a profile under the writer's candidate id, or under the next free one when another profile took it first", async () => {
    const store = open();
    const plane = new StoreControlPlane(store);
    const candidate = freshProfileId(store, TENANT, ACCOUNT);
    const second: StoredAccount = { blockchainType: 'evm', address: evm2.address };
    await plane.write(challengeAdd('n1'));
    await plane.write(challengeAdd('n2'));
    // Two sign-ins written with the same candidate (as two nodes could): the one applied second gets the next id.
    expect(await plane.write(verify('n1', candidate, second))).toBe(candidate);
    const following = freshProfileId(store, TENANT, ACCOUNT);
    expect(following).not.toBe(candidate);
    const next = await plane.write(verify('n2', candidate));
    expect(next).toBe(following);
    expect(store.get('accounts', `${TENANT}/evm/${evm.address.toLowerCase()}`)).toBe(next);
    expect(store.count('profiles', { start: `${TENANT}/`, end: `${TENANT}/\uffff` })).toBe(2);
  });

  it('lets exactly as many racing requests through as the limit of messages waiting for a signature leaves room for', async () => {
    const store = open();
    const plane = new StoreControlPlane(store);
    const racing = await Promise.allSettled(['a', 'b', 'c', 'd', 'e'].map((n) => plane.write(challengeAdd(n, 3))));
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (const r of racing.filter((x) => x.status === 'rejected'))
      expect((r as PromiseRejectedResult).reason).toMatchObject({
        status: 429,
        details: { field: 'challenges', limit: 3, variable: 'CHAINPOST_MAX_PENDING_CHALLENGES' },
        headers: { 'retry-after': '60' },
      });
    expect(store.count('challenges', { start: `${TENANT}/`, end: `${TENANT}/\uffff` })).toBe(3);
  });

  it('keeps the first signing key applied: a second changes nothing, and every issuer opened signs with the first', async () => {
    const store = open();
    const plane = new LoggedPlane(store);
    const first = (await TokenIssuer.open(store, plane)).jwks();
    const kept = await plane.write({
      kind: 'auth.signingKey',
      key: { kid: 'second', privateJwk: { kty: 'OKP', crv: 'Ed25519', x: 'x', d: 'd' }, publicJwk: { kty: 'OKP', crv: 'Ed25519', x: 'x' } },
    });
    expect(kept.kid).toBe(first.keys[0]!.kid);
    expect((await TokenIssuer.open(store, plane)).jwks()).toEqual(first);
    expect(plane.log).toHaveLength(2);

    // Another store applying the same log in the same order keeps the same key.
    const other = open();
    await replay(plane.log, other);
    expect((await TokenIssuer.open(other, new LoggedPlane(other))).jwks()).toEqual(first);
  });

  it('replayed on a second store, the changes of sign-ins, a bind, an unbind and a purge make the same profiles and rows', async () => {
    const store = open();
    const plane = new LoggedPlane(store);
    let now = T0;
    const clock: Clock = { now: () => now, at: () => ({ cancel: () => {} }) };
    const auth = new AuthService(store, plane, clock, await TokenIssuer.open(store, plane), {
      skewMs: 30_000,
      bindTtlMs: 15 * 60_000,
      maxPending: 10,
    });
    const signIn = async (who: typeof evm, timeout = 60) => {
      const request = validate(challengeRequest.evm, {
        domain: 'example.org',
        uri: 'https://example.org/login',
        chainId: 1,
        address: who.address,
        timeout,
      });
      const { message } = await auth.requestChallenge(TENANT, 'evm', request);
      return { message, signature: await who.signMessage({ message }) };
    };

    const { profileId } = await auth.verifyChallenge(TENANT, 'evm', await signIn(evm));
    await auth.verifyChallenge(TENANT, 'evm', await signIn(evm2));
    const { addresses } = validate(bindRequest, {
      addresses: [
        { blockchainType: 'evm', address: evm.address },
        { blockchainType: 'evm', address: evm2.address },
      ],
    });
    const { messages } = await auth.requestBind(TENANT, addresses);
    const verifications = [
      { message: messages[0]!, signature: await evm.signMessage({ message: messages[0]! }) },
      { message: messages[1]!, signature: await evm2.signMessage({ message: messages[1]! }) },
    ];
    expect(await auth.verifyBind(TENANT, verifications)).toEqual({ profileId });
    expect(auth.addresses(TENANT, profileId as string)).toEqual([evm.address, evm2.address]);
    const { message } = await auth.removeBind(TENANT, validate(bindRemove, { blockchainType: 'evm', address: evm2.address, profileId }));
    await auth.verifyRemoveBind(TENANT, { message, signature: await evm2.signMessage({ message }) });
    expect(auth.addresses(TENANT, profileId as string)).toEqual([evm.address]);
    // One challenge left to expire, one still waiting.
    await signIn(evm, 15);
    now += 20_000;
    await signIn(evm2);
    await auth.expire();

    expect(plane.outcomes.every((o) => o === 'applied')).toBe(true);
    expect(plane.log.map((b) => unpack<AuthChange>(b).kind)).toEqual([
      'auth.signingKey',
      'auth.challenge.request',
      'auth.challenge.verify',
      'auth.challenge.request',
      'auth.challenge.verify',
      'auth.bind.request',
      'auth.bind.verify',
      'auth.unbind.request',
      'auth.unbind.verify',
      'auth.challenge.request',
      'auth.challenge.request',
      'auth.expire',
    ]);
    expect(rows(store, 'profiles')).toHaveLength(1);
    expect(rows(store, 'challenges')).toHaveLength(1);

    const other = open();
    expect(await replay(plane.log, other)).toEqual(plane.outcomes);
    for (const table of AUTH_TABLES) expect(rows(other, table)).toEqual(rows(store, table));
  });
});
