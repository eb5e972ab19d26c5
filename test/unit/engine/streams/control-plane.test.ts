import { rmSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredXpub } from '../../../../engine/streams/xpub-record.js';
import { hashKey, type ApiKey, type KeyCreate } from '../../../../engine/keys.js';
import type { Table } from '../../../../engine/ports.js';
import { StoreControlPlane, type AddressesChange, type Change, type StreamCreate } from '../../../../engine/streams/control-plane.js';
import type { StoredStream } from '../../../../engine/streams/model.js';
import { settingsOf } from '../../../../engine/streams/settings.js';
import { pack, unpack } from '../../../../storage/codec.js';
import { openStore, type Store } from '../../../../storage/env.js';
import { lmdbKeyStore } from '../../../../storage/keys.js';
import { tempDir } from '../../../helpers.js';
import { storedStream } from '../../../stored-stream.js';

/**
 * The control plane on a real LMDB store: each kind of change applied, its checks (a limit counted where the
 * change is applied, so racing writes cannot pass it), a refused change writing nothing, and changes being plain
 * data: decoded from msgpack and applied to another store, they make the same rows.
 */
const T0 = Date.UTC(2026, 0, 1);
const TENANT = 't_control';
const stores: Store[] = [];
let store: Store;
let plane: StoreControlPlane;

const open = (): Store => {
  const s = openStore(tempDir());
  stores.push(s);
  return s;
};

beforeEach(() => {
  store = open();
  plane = new StoreControlPlane(store, lmdbKeyStore(store));
});
afterEach(async () => {
  for (const s of stores.splice(0)) {
    await s.close();
    rmSync(s.path, { recursive: true, force: true });
  }
});

const stream = (id: string, over: Partial<StoredStream> = {}): StoredStream => storedStream(TENANT, id, T0, over);
const create = (id: string, maxStreams = 10, over: Partial<StoredStream> = {}): StreamCreate => ({
  kind: 'stream.create',
  stream: stream(id, over),
  maxStreams,
});
const addresses = (id: string, list: string[], maxAddresses = 10): AddressesChange => ({
  kind: 'addresses.add',
  tenant: TENANT,
  id,
  family: 'evm',
  unmarked: true,
  addresses: list,
  at: T0 + 1,
  maxAddresses,
});
const xpub = (streamId: string, id: string, key: string): StoredXpub => ({ id, streamId, xpub: key, createdAt: T0, updatedAt: T0 });
const rows = (s: Store, table: Table) => s.range(table).map(({ key, value }) => [key, value]);
const CONTROL_TABLES: Table[] = ['streams', 'streamAddresses', 'streamXpubs', 'xpubKeys', 'settings', 'keys', 'tenants', 'meta'];
const newKey = (name: string, over: { tenant?: string; at?: number } = {}): KeyCreate => ({
  kind: 'key.create',
  hash: hashKey(`cpk_${name}`),
  name,
  newTenant: { id: `t_${name}` },
  at: over.at ?? T0,
  ...(over.tenant === undefined ? {} : { tenant: over.tenant }),
});

describe('the control plane', () => {
  it("creates a stream as given, and refuses one past the tenant's limit, naming CHAINPOST_MAX_STREAMS", async () => {
    expect(await plane.write(create('a', 2))).toEqual(stream('a'));
    await plane.write(create('b', 2, { family: 'bitcoin' }));
    await expect(plane.write(create('c', 2))).rejects.toMatchObject({
      status: 400,
      message: 'streams: a tenant holds at most 2 (CHAINPOST_MAX_STREAMS)',
    });
    expect(rows(store, 'streams').map(([key]) => key)).toEqual([`${TENANT}/a`, `${TENANT}/b`]);
  });

  it('lets exactly as many of many racing creates through as the limit leaves room for', async () => {
    await plane.write(create('first', 4));
    const racing = await Promise.allSettled(['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7'].map((id) => plane.write(create(id, 4))));
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    for (const r of racing.filter((x) => x.status === 'rejected'))
      expect((r as PromiseRejectedResult).reason).toMatchObject({ message: 'streams: a tenant holds at most 4 (CHAINPOST_MAX_STREAMS)' });
    expect(store.count('streams', { start: `${TENANT}/`, end: `${TENANT}/\uffff` })).toBe(4);
  });

  it('updates only the named fields of the stream as it is when applied, clearing an invalid-chain message', async () => {
    await plane.write(create('a', 10, { statusMessage: 'lists a removed chain' }));
    await plane.write(addresses('a', ['0x01']));
    const next = await plane.write({
      kind: 'stream.update',
      tenant: TENANT,
      id: 'a',
      family: 'evm',
      unmarked: true,
      fields: { tag: 'renamed' },
      at: T0 + 5,
    });
    expect(next).toEqual(stream('a', { tag: 'renamed', amountOfAddresses: 1, updatedAt: T0 + 5 }));
    expect(store.get('streams', `${TENANT}/a`)).toEqual(next);
    // Another family's stream, or none: 404, nothing written.
    await expect(
      plane.write({ kind: 'stream.update', tenant: TENANT, id: 'a', family: 'solana', unmarked: false, fields: { tag: 'x' }, at: T0 }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(
      plane.write({ kind: 'stream.update', tenant: 't_other', id: 'a', family: 'evm', unmarked: true, fields: { tag: 'x' }, at: T0 }),
    ).rejects.toMatchObject({ status: 404 });
    expect(store.get<StoredStream>('streams', `${TENANT}/a`)?.tag).toBe('renamed');
  });

  it("sets the status by the interface's transitions, answering the one it had", async () => {
    await plane.write(create('a', 10, { status: 'error', statusMessage: 'failing', errorSince: T0 }));
    await expect(
      plane.write({ kind: 'stream.status', tenant: TENANT, id: 'a', family: 'evm', unmarked: true, status: 'paused', at: T0 + 1 }),
    ).rejects.toMatchObject({ message: 'status: a stream in error can only be set active' });
    const set = await plane.write({
      kind: 'stream.status',
      tenant: TENANT,
      id: 'a',
      family: 'evm',
      unmarked: true,
      status: 'active',
      at: T0 + 2,
    });
    expect(set).toEqual({ stream: stream('a', { updatedAt: T0 + 2 }), was: 'error' });
    expect(store.get('streams', `${TENANT}/a`)).toEqual(set.stream);
  });

  it('adds and removes addresses, counting only those that change, and stops an add at the limit writing none of it', async () => {
    await plane.write(create('a'));
    expect((await plane.write(addresses('a', ['0x01', '0x02'], 3))).changed).toEqual(['0x01', '0x02']);
    await expect(plane.write(addresses('a', ['0x02', '0x03', '0x04'], 3))).rejects.toMatchObject({
      message: 'address: a stream holds at most 3 (CHAINPOST_MAX_ADDRESSES)',
    });
    expect(rows(store, 'streamAddresses').map(([key]) => key)).toEqual(['a/0x01', 'a/0x02']);
    const removed = await plane.write({
      kind: 'addresses.remove',
      tenant: TENANT,
      id: 'a',
      family: 'evm',
      unmarked: true,
      addresses: ['0x01', '0x09'],
      at: T0 + 3,
      maxAddresses: 3,
    });
    expect(removed).toEqual({ stream: stream('a', { amountOfAddresses: 1, updatedAt: T0 + 3 }), changed: ['0x01'], seq: 3 });
    expect(rows(store, 'streamAddresses').map(([key]) => key)).toEqual(['a/0x02']);
    // The watch log, written in the same transactions: the create, the add, the removal; none of the add refused.
    expect(rows(store, 'watchChanges').map(([, value]) => value)).toEqual([
      { id: 'a', created: true },
      { id: 'a', add: true, addresses: ['0x01', '0x02'] },
      { id: 'a', add: false, addresses: ['0x01'] },
    ]);
    expect(store.get('meta', 'watchSeq')).toBe(3);
  });

  it('lets racing address adds fill the stream to its limit and no further', async () => {
    await plane.write(create('a'));
    const racing = await Promise.allSettled([0, 1, 2, 3, 4].map((i) => plane.write(addresses('a', [`0x1${i}`, `0x2${i}`], 6))));
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(store.count('streamAddresses', { start: 'a/', end: 'a/\uffff' })).toBe(6);
    expect(store.get<StoredStream>('streams', `${TENANT}/a`)?.amountOfAddresses).toBe(6);
  });

  it('adds an xpub once (the same key again answers the record it has), up to the limit, and removes it', async () => {
    await plane.write(create('b', 10, { family: 'bitcoin' }));
    const first = await plane.write({ kind: 'xpub.add', tenant: TENANT, xpub: xpub('b', 'x1', 'xpubA'), maxXpubs: 2 });
    expect(first).toEqual({ xpub: xpub('b', 'x1', 'xpubA'), added: true });
    expect(await plane.write({ kind: 'xpub.add', tenant: TENANT, xpub: xpub('b', 'x9', 'xpubA'), maxXpubs: 2 })).toEqual({
      xpub: xpub('b', 'x1', 'xpubA'),
      added: false,
    });
    const racing = await Promise.allSettled(
      ['B', 'C', 'D'].map((k) => plane.write({ kind: 'xpub.add', tenant: TENANT, xpub: xpub('b', `x${k}`, `xpub${k}`), maxXpubs: 2 })),
    );
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of racing.filter((x) => x.status === 'rejected'))
      expect((r as PromiseRejectedResult).reason).toMatchObject({ message: 'xpub: a stream holds at most 2 (CHAINPOST_MAX_XPUBS)' });
    expect(store.get('xpubKeys', 'b/')).toBe(2);
    expect(await plane.write({ kind: 'xpub.remove', tenant: TENANT, streamId: 'b', xpubId: 'x1' })).toEqual(xpub('b', 'x1', 'xpubA'));
    expect([store.get('xpubKeys', 'b/'), store.has('xpubKeys', 'b/xpubA'), store.has('streamXpubs', 'b/x1')]).toEqual([1, false, false]);
    await expect(plane.write({ kind: 'xpub.remove', tenant: TENANT, streamId: 'b', xpubId: 'x1' })).rejects.toMatchObject({
      status: 404,
      message: 'no xpub x1 on stream b',
    });
    // Only a Bitcoin stream has xpubs.
    await plane.write(create('e'));
    await expect(plane.write({ kind: 'xpub.add', tenant: TENANT, xpub: xpub('e', 'x1', 'xpubA'), maxXpubs: 2 })).rejects.toMatchObject({
      status: 404,
    });
  });

  it("removes a stream with the rows it owns, leaving other streams' rows", async () => {
    await plane.write(create('a', 10, { family: 'bitcoin' }));
    await plane.write(create('b', 10, { family: 'bitcoin' }));
    for (const id of ['a', 'b']) {
      await plane.write({ ...addresses(id, ['bc1q0', 'bc1q1']), family: 'bitcoin' });
      await plane.write({ kind: 'xpub.add', tenant: TENANT, xpub: xpub(id, 'x1', 'xpubA'), maxXpubs: 2 });
    }
    await plane.write({ kind: 'stream.remove', tenant: TENANT, id: 'a' });
    expect(rows(store, 'streams').map(([key]) => key)).toEqual([`${TENANT}/b`]);
    for (const table of ['streamAddresses', 'streamXpubs', 'xpubKeys'] as const) {
      expect(rows(store, table).length).toBeGreaterThan(0);
      expect(rows(store, table).every(([key]) => String(key).startsWith('b/'))).toBe(true);
    }
  });

  it("sets a stream's health as delivery's rules allow: an active stream enters error, the same error period ends; a paused stream, a record in that state already and another period are kept", async () => {
    const health = (id: string, status: 'error' | 'terminated', errorSince: number, at = errorSince) =>
      plane.write({ kind: 'stream.health', tenant: TENANT, id, status, statusMessage: `${status} since ${errorSince}`, errorSince, at });
    await plane.write(create('a'));
    await plane.write(create('p', 10, { status: 'paused' }));
    const inError = { ...stream('a'), status: 'error', statusMessage: `error since ${T0 + 5}`, errorSince: T0 + 5, updatedAt: T0 + 5 };
    expect(await health('a', 'error', T0 + 5)).toEqual(inError);
    // Applied again (the node that decided it wrote it first): the same record.
    expect(await health('a', 'error', T0 + 5)).toEqual(inError);
    expect(await health('a', 'error', T0 + 9)).toBeUndefined();
    expect(await health('a', 'terminated', T0 + 9)).toBeUndefined();
    expect(await health('p', 'error', T0 + 5)).toBeUndefined();
    expect(await health('gone', 'error', T0 + 5)).toBeUndefined();
    const ended = { ...inError, status: 'terminated', statusMessage: `terminated since ${T0 + 5}`, updatedAt: T0 + 99 };
    expect(await health('a', 'terminated', T0 + 5, T0 + 99)).toEqual(ended);
    expect(await health('a', 'error', T0 + 5)).toBeUndefined();
    expect(store.get('streams', `${TENANT}/a`)).toEqual(ended);
    expect(store.get('streams', `${TENANT}/p`)).toEqual(stream('p', { status: 'paused' }));
  });

  it("sets a tenant's settings; made at first use, they are kept by a later first use", async () => {
    const made = await settingsOf(store, plane, TENANT);
    expect(made.secretKey).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(
      await plane.write({ kind: 'settings.set', tenant: TENANT, settings: { secretKey: 'other', region: 'eu-central-1' }, first: true }),
    ).toEqual(made);
    expect(await plane.write({ kind: 'settings.set', tenant: TENANT, settings: { ...made, region: 'eu-central-1' } })).toEqual({
      ...made,
      region: 'eu-central-1',
    });
    expect(await settingsOf(store, plane, TENANT)).toEqual({ ...made, region: 'eu-central-1' });
  });

  it('creates keys (the first tenant marked), rotates and revokes them, in the key store', async () => {
    const a = await plane.write({
      kind: 'key.create',
      hash: hashKey('cpk_a'),
      name: 'a',
      email: 'ops@example.com',
      newTenant: { id: 't_a' },
      at: T0,
    });
    expect(a).toEqual({
      record: {
        hash: hashKey('cpk_a'),
        id: hashKey('cpk_a').slice(0, 12),
        name: 'a',
        email: 'ops@example.com',
        tenantId: 't_a',
        createdAt: T0,
      },
      tenant: { id: 't_a', name: 'a', createdAt: T0, first: true },
    });
    const joined = await plane.write(newKey('a2', { tenant: 'a' }));
    expect(joined.tenant.id).toBe('t_a');
    await expect(plane.write(newKey('a'))).rejects.toMatchObject({ status: 409, message: 'this key exists already' });
    await expect(plane.write({ ...newKey('b'), name: 'a' })).rejects.toMatchObject({
      status: 409,
      message: 'a key named "a" exists already',
    });
    await expect(plane.write(newKey('b', { tenant: 'nobody' }))).rejects.toMatchObject({ status: 404, message: 'no tenant "nobody"' });
    const rotated = await plane.write({ kind: 'key.rotate', nameOrId: 'a', hash: hashKey('cpk_a-next'), graceMs: 1000, at: T0 + 10 });
    expect(rotated.old).toEqual({ ...a.record, expiresAt: T0 + 1010, replacedBy: rotated.record.id });
    expect(rotated.record).toMatchObject({ name: 'a', email: 'ops@example.com', tenantId: 't_a', createdAt: T0 + 10 });
    // A rotated key past its grace period goes at the next key change.
    await plane.write(newKey('c', { at: T0 + 1010 }));
    expect(store.has('keys', a.record.hash)).toBe(false);
    expect((await plane.write({ kind: 'key.revoke', nameOrId: 'a' })).id).toBe(rotated.record.id);
    expect(
      store
        .values<ApiKey>('keys')
        .map((k) => k.name)
        .sort(),
    ).toEqual(['a2', 'c']);
  });

  it('lets one of several keys created with the same name at once through', async () => {
    const racing = await Promise.allSettled(
      [1, 2, 3, 4].map((i) =>
        plane.write({ kind: 'key.create', hash: hashKey(`cpk_${i}`), name: 'same', newTenant: { id: `t_${i}` }, at: T0 }),
      ),
    );
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(store.values('keys')).toHaveLength(1);
    expect(store.values('tenants')).toHaveLength(1);
  });

  it('refuses a key change where it has no key store, writing nothing', async () => {
    await expect(new StoreControlPlane(store).write(newKey('a'))).rejects.toThrow('this control plane has no key store for a key.create');
    expect(store.values('keys')).toEqual([]);
  });

  it("runs a change's effect inside its transaction (what it writes commits with the change, its throw undoes the change) and what the effect returns once it committed, before the write answers", async () => {
    const seen: string[] = [];
    const effectful = new StoreControlPlane(store, undefined, {
      'stream.create': ({ stream: asked }, written) => {
        if (asked.id === 'b') throw new Error('refused inside');
        seen.push(`inside ${written.id}`);
        store.put('queueMeta', written.id, 1);
        return () => void seen.push(`committed ${written.id}: ${store.has('streams', `${TENANT}/${written.id}`)}`);
      },
    });
    await effectful.write(create('a'));
    seen.push('answered');
    expect(seen).toEqual(['inside a', 'committed a: true', 'answered']);
    expect(store.get('queueMeta', 'a')).toBe(1);
    await expect(effectful.write(create('b'))).rejects.toThrow('refused inside');
    expect(store.has('streams', `${TENANT}/b`)).toBe(false);
  });

  it('writes plain data: changes decoded from msgpack make the same rows in another store, refusals included', async () => {
    const changes: Change[] = [
      create('a', 2, { ownerEmail: 'ops@example.com' }),
      create('b', 2, { family: 'bitcoin' }),
      create('c', 2),
      addresses('a', ['0x01', '0x02', '0x03'], 2),
      addresses('a', ['0x01', '0x02'], 2),
      {
        kind: 'addresses.remove',
        tenant: TENANT,
        id: 'a',
        family: 'evm',
        unmarked: true,
        addresses: ['0x02'],
        at: T0 + 2,
        maxAddresses: 2,
      },
      {
        kind: 'stream.update',
        tenant: TENANT,
        id: 'a',
        family: 'evm',
        unmarked: true,
        fields: { description: 'new', webhookUrl: 'https://example.com/2' },
        at: T0 + 3,
      },
      { kind: 'stream.status', tenant: TENANT, id: 'a', family: 'evm', unmarked: true, status: 'paused', at: T0 + 4 },
      { kind: 'xpub.add', tenant: TENANT, xpub: xpub('b', 'x1', 'xpubA'), maxXpubs: 1 },
      { kind: 'xpub.add', tenant: TENANT, xpub: xpub('b', 'x2', 'xpubB'), maxXpubs: 1 },
      { kind: 'settings.set', tenant: TENANT, settings: { secretKey: 's'.repeat(32), region: 'us-east-1' }, first: true },
      { kind: 'settings.set', tenant: TENANT, settings: { secretKey: 's'.repeat(32), region: 'eu-central-1' } },
      { kind: 'xpub.remove', tenant: TENANT, streamId: 'b', xpubId: 'x1' },
      { kind: 'stream.remove', tenant: TENANT, id: 'b' },
      newKey('k1'),
      { ...newKey('k3'), name: 'k1' },
      newKey('k2', { tenant: 'k1' }),
      { kind: 'key.rotate', nameOrId: 'k1', hash: hashKey('cpk_k1-next'), graceMs: 0, at: T0 + 5 },
      { kind: 'key.revoke', nameOrId: 'k2' },
    ];
    const applyAll = async (to: StoreControlPlane, list: Change[]) => {
      const outcomes: string[] = [];
      for (const c of list)
        outcomes.push(
          await to.write(c).then(
            () => 'applied',
            (err: Error) => err.message,
          ),
        );
      return outcomes;
    };
    const here = await applyAll(plane, changes);
    const decoded = changes.map((c) => unpack<Change>(pack(c)));
    expect(decoded).toEqual(changes);
    const other = open();
    const there = await applyAll(new StoreControlPlane(other, lmdbKeyStore(other)), decoded);
    expect(there).toEqual(here);
    expect(here.filter((o) => o !== 'applied')).toEqual([
      'streams: a tenant holds at most 2 (CHAINPOST_MAX_STREAMS)',
      'address: a stream holds at most 2 (CHAINPOST_MAX_ADDRESSES)',
      'xpub: a stream holds at most 1 (CHAINPOST_MAX_XPUBS)',
      'a key named "k1" exists already',
    ]);
    for (const table of CONTROL_TABLES) expect(rows(other, table)).toEqual(rows(store, table));
    expect(rows(store, 'streams')).toHaveLength(1);
  });
});
