import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BitcoinStreams } from '../../../../engine/bitcoin/stream-service.js';
import { BitcoinWallets } from '../../../../engine/bitcoin/wallets.js';
import {
  deriveWindow,
  XpubWindows,
  type DerivedWindow,
  type WindowDeriver,
  type WindowTask,
} from '../../../../engine/bitcoin/xpub-windows.js';
import type { Kv } from '../../../../engine/ports.js';
import { changeEffects } from '../../../../engine/streams/change-effects.js';
import { StoreControlPlane } from '../../../../engine/streams/control-plane.js';
import { DEFAULT_LIMITS } from '../../../../engine/streams/limits.js';
import { Watchlist } from '../../../../engine/match/watchlist.js';
import { FAMILIES } from '../../../../app/families.js';
import { workerPool } from '../../../../app/worker-pool.js';
import { manyXpubs } from '../../../kit/bitcoin-core/keys.js';
import { bitcoinDefinition } from '../../../kit/bitcoin-stream.js';
import { counting } from '../../../kit/counting-kv.js';
import { tempDir } from '../../../helpers.js';
import { startReceiver } from '../../../receiver.js';
import { deliveryRig } from '../delivery/rig.js';

/**
 * Adding xpubs to a Bitcoin stream over a real LMDB store (reads counted by test/kit/counting-kv.ts) and a real
 * receiver for the streams' test webhooks: an add reads the same whatever the stream holds, the limit, and
 * the gap window derived by the deriver the wallets are given (the worker pool in the server).
 */

const TENANT = 't_xpubs';
/** A small gap: a thousand keys' windows derived in a test. */
const GAP = 2;
const KEYS = manyXpubs(DEFAULT_LIMITS.xpubs + 1);
/** How many addresses a stream's xpubs watch (their keys: 32 bytes each, end to end). */
const watched = (keys: Uint8Array): number => keys.length / 32;

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Engines opened by a test, closed after it. */
const opened: Array<{ close(): Promise<void> }> = [];

async function engine(rx: Receiver, deriver?: WindowDeriver) {
  const rig = deliveryRig(Date.parse('2026-11-23T00:00:00Z'));
  opened.push(rig);
  const { store, clock, dispatcher } = rig;
  const windows = new XpubWindows(GAP);
  const watchlist = new Watchlist({ families: FAMILIES, derivedOf: (id) => windows.keysOf(id) });
  const c = counting(store);
  const wallets = new BitcoinWallets(c.kv, windows);
  if (deriver !== undefined) wallets.deriveWith(deriver);
  // What the server's node does once a change is applied: the streams' reactions and the wallets' (the xpubs' windows).
  const effects = changeEffects({ dispatcher, watch: watchlist, watched: (s) => FAMILIES.watched(s) }, [wallets.effects(watchlist)]);
  const on = (kv: Kv) =>
    new BitcoinStreams(kv, clock, dispatcher, undefined, undefined, undefined, new StoreControlPlane(kv, undefined, effects));
  const streams = on(c.kv);
  // The same on the store itself, for creates and lists: they count ranges (which counting-kv refuses).
  const plain = on(store);
  const make = async (): Promise<string> => String((await plain.create(TENANT, bitcoinDefinition(rx.url, 'xpubs'), undefined)).id);
  return { store, reads: c, windows, wallets, streams, plain, make };
}

describe('adding xpubs to a Bitcoin stream', () => {
  let rx: Receiver;
  beforeAll(async () => void (rx = await startReceiver()));
  afterAll(() => rx.close());
  afterEach(async () => {
    for (const e of opened.splice(0)) await e.close();
  });

  it("reads as much of the store to add the 1,000th xpub as the 10th, none of the stream's other keys, and refuses the 1,001st naming CHAINPOST_MAX_XPUBS", async () => {
    const e = await engine(rx);
    const id = await e.make();
    const cost = new Map<number, { points: number; ranges: number }>();
    for (let i = 0; i < DEFAULT_LIMITS.xpubs; i++) {
      e.reads.reset();
      await e.streams.addXpub(TENANT, id, KEYS[i]!);
      cost.set(i + 1, { points: e.reads.points(), ranges: e.reads.ranges() });
    }
    expect(cost.get(1_000)).toEqual(cost.get(10));
    expect(cost.get(1_000)!.ranges).toBe(0);
    // Every key's window is watched.
    expect(watched(e.windows.keysOf(id))).toBe(DEFAULT_LIMITS.xpubs * 2 * GAP);

    await expect(e.streams.addXpub(TENANT, id, KEYS[1_000]!)).rejects.toMatchObject({
      status: 400,
      message: 'xpub: a stream holds at most 1,000 (CHAINPOST_MAX_XPUBS)',
      details: { field: 'xpub', limit: 1_000, variable: 'CHAINPOST_MAX_XPUBS' },
    });
    // A key already there answers its record and takes no place; a removed one frees its place.
    const first = (await e.plain.listXpubs(TENANT, id, 1, null)).result[0]!;
    expect(await e.streams.addXpub(TENANT, id, first.xpub)).toEqual(first);
    await e.streams.removeXpub(TENANT, id, first.id);
    expect((await e.streams.addXpub(TENANT, id, KEYS[1_000]!)).xpub).toBe(KEYS[1_000]);
    await expect(e.streams.addXpub(TENANT, id, first.xpub)).rejects.toMatchObject({ status: 400 });
    expect(e.plain.listXpubs(TENANT, id, 1, null).total).toBe(DEFAULT_LIMITS.xpubs);
  });

  it("has the deriver it is given derive an added key's window and answers once it is watched; a key removed meanwhile is never watched", async () => {
    const tasks: WindowTask[] = [];
    const held: Array<() => void> = [];
    const deriver: WindowDeriver = {
      derive: (task) => {
        tasks.push(task);
        return new Promise<DerivedWindow>((resolve) => held.push(() => resolve(deriveWindow(task))));
      },
    };
    const e = await engine(rx, deriver);
    const id = await e.make();
    let answered = false;
    const add = e.streams.addXpub(TENANT, id, KEYS[0]!).then((x) => ((answered = true), x));
    while (held.length === 0) await new Promise((r) => setImmediate(r));
    expect(tasks).toEqual([{ xpub: KEYS[0], used: [-1, -1], gap: GAP }]);
    expect(answered).toBe(false);
    expect(watched(e.windows.keysOf(id))).toBe(0);
    held.shift()!();
    const x = await add;
    expect(watched(e.windows.keysOf(id))).toBe(2 * GAP);
    expect(e.windows.lookup(id, Buffer.from(e.windows.keysOf(id).subarray(0, 32)).toString('hex'))).toMatchObject({
      xpubId: x.id,
      index: 0,
    });

    // Removed while its window is derived: the add answers, the window is not installed.
    const second = e.streams.addXpub(TENANT, id, KEYS[1]!);
    while (held.length === 0) await new Promise((r) => setImmediate(r));
    const stored = e.plain.listXpubs(TENANT, id, 10, null).result.find((r) => r.xpub === KEYS[1])!;
    await e.streams.removeXpub(TENANT, id, stored.id);
    held.shift()!();
    await second;
    expect(watched(e.windows.keysOf(id))).toBe(2 * GAP);
    expect(e.windows.used(id, stored.id)).toBeUndefined();
  });

  it('derives in the worker pool the window the serving thread would', async () => {
    const pool = workerPool(tempDir(), 1);
    try {
      const task: WindowTask = { xpub: KEYS[7]!, used: [3, -1], gap: 5 };
      const window = await pool.xpubs.derive(task);
      expect(window).toEqual(deriveWindow(task));
      expect(window.addresses.map((a) => a.length)).toEqual([9, 5]);
    } finally {
      await pool.close();
    }
  });

  it('indexes at start the keys a store holds without their entries (written by an older chainpost): the same key again answers its record, and they count', async () => {
    const e = await engine(rx);
    const id = await e.make();
    const [a, b] = [KEYS[0]!, KEYS[1]!];
    const now = Date.parse('2026-11-23T00:00:00Z');
    e.store.transact(() => {
      // Two keys as an older chainpost wrote them, and an entry for a key it removed since.
      e.store.put('streamXpubs', `${id}/x-a`, { id: 'x-a', streamId: id, xpub: a, createdAt: now, updatedAt: now });
      e.store.put('streamXpubs', `${id}/x-b`, { id: 'x-b', streamId: id, xpub: b, createdAt: now, updatedAt: now });
      e.store.put('xpubKeys', `${id}/${KEYS[2]}`, 'x-gone');
      e.store.put('xpubKeys', `${id}/`, 7);
    });
    e.wallets.load();
    expect(e.store.range('xpubKeys').map((r) => [r.key, r.value])).toEqual(
      [
        [`${id}/`, 2],
        [`${id}/${a}`, 'x-a'],
        [`${id}/${b}`, 'x-b'],
      ].sort((x, y) => (String(x[0]) < String(y[0]) ? -1 : 1)),
    );
    expect((await e.streams.addXpub(TENANT, id, b)).id).toBe('x-b');
    expect(watched(e.windows.keysOf(id))).toBe(2 * 2 * GAP);
    await e.streams.removeXpub(TENANT, id, 'x-a');
    await e.streams.removeXpub(TENANT, id, 'x-b');
    expect(e.store.range('xpubKeys')).toEqual([]);
  });
});
