import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BitcoinStreams } from '../../../../engine/bitcoin/stream-service.js';
import { BitcoinWallets } from '../../../../engine/bitcoin/wallets.js';
import { XpubWindows } from '../../../../engine/bitcoin/xpub-windows.js';
import { evm } from '../../../../engine/evm/index.js';
import { KeySet, type KeySetData } from '../../../../engine/match/key-set.js';
import { storedAddresses } from '../../../../engine/match/watched-keys.js';
import { Watchlist } from '../../../../engine/match/watchlist.js';
import { changeEffects } from '../../../../engine/streams/change-effects.js';
import { StoreControlPlane, type Change, type ControlPlane } from '../../../../engine/streams/control-plane.js';
import type { StoredStream } from '../../../../engine/streams/model.js';
import { FAMILIES } from '../../../../app/families.js';
import { pack, unpack } from '../../../../storage/codec.js';
import { lmdbKeyStore } from '../../../../storage/keys.js';
import { manyXpubs } from '../../../kit/bitcoin-core/keys.js';
import { startReceiver } from '../../../receiver.js';
import { evmDefinition } from '../../../kit/evm-stream.js';
import { deliveryRig } from '../delivery/rig.js';

/**
 * Two nodes, each with its own LMDB store, dispatcher, watchlist and Bitcoin xpub windows, as a cluster's nodes are.
 * A tenant's requests write their changes through the first node's control plane; each change, through msgpack as a
 * log carries it, is applied on the second by its applier inside a write transaction of its own, as a log's
 * consumer does. What a node does with a change runs where it is applied, so the second node's watchlist, xpub
 * windows and dispatcher end up as the first's, though no request reached it.
 */

const T0 = Date.parse('2026-11-23T00:00:00Z');
const TENANT = 't_effects';
const GAP = 2;
const [K1, K2] = manyXpubs(2);

type Receiver = Awaited<ReturnType<typeof startReceiver>>;
const opened: Array<{ close(): Promise<void> }> = [];

/** A node: its store, dispatcher and watchlist, the Bitcoin family's windows, and its control plane with its reactions. */
function node() {
  const rig = deliveryRig(T0);
  opened.push(rig);
  const windows = new XpubWindows(GAP);
  const wallets = new BitcoinWallets(rig.store, windows);
  const watchlist = new Watchlist({
    families: FAMILIES,
    derivedOf: (id) => windows.keysOf(id),
    addresses: storedAddresses((opts) => rig.store.keys('streamAddresses', opts)),
  });
  const effects = changeEffects({ dispatcher: rig.dispatcher, watch: watchlist, watched: (s) => FAMILIES.watched(s) }, [
    wallets.effects(watchlist),
  ]);
  const plane = new StoreControlPlane(rig.store, lmdbKeyStore(rig.store), effects);
  /** Enqueues a webhook for the stream and waits until it was sent; what became of it. */
  const send = async (streamId: string, n: number) => {
    const [fate] = await rig.dispatcher.enqueueBatch([
      {
        streamId,
        payload: { confirmed: false, chainId: '0x1', block: { number: String(n), hash: '0x', timestamp: '0' }, logs: [], txs: [] },
      },
    ]);
    await rig.dispatcher.settled();
    return fate;
  };
  return { ...rig, windows, watchlist, plane, send };
}

const bitcoinDefinition = (webhookUrl: string) => ({
  webhookUrl,
  description: '',
  tag: 'bitcoin',
  network: ['mainnet'] as ['mainnet'],
  includeInputs: true,
  includeOutputs: true,
  allAddresses: false,
  demo: false,
});

describe('changes applied on a node that did not write them', () => {
  let rx: Receiver;
  beforeAll(async () => void (rx = await startReceiver()));
  afterAll(() => rx.close());
  afterEach(async () => {
    for (const n of opened.splice(0)) await n.close();
  });

  it("give its watchlist, xpub windows and dispatcher what the writing node's have", async () => {
    const a = node();
    const b = node();
    // The first node's writes, as a log would carry them.
    const log: Uint8Array[] = [];
    const writer: ControlPlane = {
      write: (change) => {
        log.push(pack(change));
        return a.plane.write(change);
      },
    };
    /** The second node applies what was written since, in order, each in its own transaction. */
    const applyOnB = async (): Promise<void> => {
      for (const bytes of log.splice(0)) {
        const { committed } = b.store.transact(() => b.plane.applier.applyInside(unpack<Change>(bytes)));
        await committed();
      }
    };
    const evmStreams = evm.resources({ kv: a.store, clock: a.clock, dispatcher: a.dispatcher, plane: writer });
    const bitcoinStreams = new BitcoinStreams(a.store, a.clock, a.dispatcher, undefined, undefined, undefined, writer);
    const chains = ['0x1', '0x89', 'bitcoin'];
    const watchedOn = (n: ReturnType<typeof node>) => chains.map((chain) => n.watchlist.watchedOn(chain));
    const delivered = (streamId: string, n: number) =>
      rx.webhooks().filter((w) => w.body.streamId === streamId && w.body.block.number === String(n)).length;

    const e = String((await evmStreams.create(TENANT, evmDefinition(rx.url, 'evm'), undefined)).id);
    await evmStreams.addAddresses(TENANT, e, ['0x00000000000000000000000000000000000000a1', '0x00000000000000000000000000000000000000A2']);
    await evmStreams.update(TENANT, e, { chainIds: ['0x1', '0x89'] });
    await evmStreams.removeAddresses(TENANT, e, ['0x00000000000000000000000000000000000000a1']);
    await evmStreams.setStatus(TENANT, e, 'paused');
    const btc = String((await bitcoinStreams.create(TENANT, bitcoinDefinition(rx.url), undefined)).id);
    const first = await bitcoinStreams.addXpub(TENANT, btc, K1!);
    const second = await bitcoinStreams.addXpub(TENANT, btc, K2!);
    await bitcoinStreams.removeXpub(TENANT, btc, second.id);
    await applyOnB();

    expect(b.store.range('streams')).toEqual(a.store.range('streams'));
    expect(watchedOn(a).map((on) => on.streams.length)).toEqual([1, 1, 1]);
    expect(watchedOn(b)).toEqual(watchedOn(a));
    // The address left is compiled (read from the store where the change was applied), the one removed is not.
    const keys = new KeySet((await a.watchlist.compile('0x1')).filter.sets[0] as KeySetData);
    const key = (hex: string) => new DataView(Uint8Array.from(Buffer.from(hex.padStart(40, '0'), 'hex')).buffer);
    expect([keys.size, keys.lookup(key('a2'), 0).length, keys.lookup(key('a1'), 0).length]).toEqual([1, 1, 0]);
    expect(watchedOn(a)[0]!.entries[0]!.count).toBe(1);
    // The one xpub left is watched on both: its window derived where the change was applied.
    expect(b.windows.keysOf(btc)).toEqual(a.windows.keysOf(btc));
    expect(b.windows.keysOf(btc).length).toBe(2 * GAP * 32);
    // Both dispatchers know the active stream (a webhook is queued and sent), and hold the paused one's.
    expect([await a.send(btc, 1), await b.send(btc, 2), await a.send(e, 3), await b.send(e, 4)]).toEqual([
      'queued',
      'queued',
      'dropped',
      'dropped',
    ]);
    expect([delivered(btc, 1), delivered(btc, 2)]).toEqual([1, 1]);

    // Resumed on the first node: the second's dispatcher sends the stream's webhooks again.
    await evmStreams.setStatus(TENANT, e, 'active');
    await applyOnB();
    expect([await a.send(e, 5), await b.send(e, 6)]).toEqual(['queued', 'queued']);
    expect([delivered(e, 5), delivered(e, 6)]).toEqual([1, 1]);

    // Removed on the first node: the second forgets it too, its windows and their used indexes (each node's own) with it.
    for (const n of [a, b]) n.store.transact(() => n.store.put('xpubUsed', `${btc}/${first.id}`, [0, -1]));
    await bitcoinStreams.remove(TENANT, btc);
    await applyOnB();
    expect([a.store.range('xpubUsed'), b.store.range('xpubUsed')]).toEqual([[], []]);
    expect(watchedOn(b)).toEqual(watchedOn(a));
    expect(watchedOn(b).map((on) => on.streams.length)).toEqual([1, 1, 0]);
    expect(b.windows.keysOf(btc).length).toBe(0);
    expect(await b.send(btc, 7)).toBe('dropped');
    expect(b.store.range<StoredStream>('streams').map((r) => r.value.id)).toEqual([e]);
  });
});
