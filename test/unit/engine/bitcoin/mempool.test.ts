import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FAMILIES } from '../../../../app/families.js';
import { BitcoinMempool } from '../../../../engine/bitcoin/mempool.js';
import { BitcoinStreams } from '../../../../engine/bitcoin/stream-service.js';
import { BITCOIN_CHAIN } from '../../../../engine/bitcoin/stream.js';
import { BitcoinWallets } from '../../../../engine/bitcoin/wallets.js';
import { XpubWindows } from '../../../../engine/bitcoin/xpub-windows.js';
import { PartitionLost, UnitsTakenBack } from '../../../../engine/cluster/partition-log.js';
import type { Dispatcher } from '../../../../engine/delivery/dispatcher.js';
import type { EnqueueItem } from '../../../../engine/delivery/enqueue.js';
import { unavailable } from '../../../../engine/errors.js';
import type { StagedElsewhere } from '../../../../engine/match/lanes.js';
import { FilterSets } from '../../../../engine/match/match-blocks.js';
import { Watchlist } from '../../../../engine/match/watchlist.js';
import { changeEffects } from '../../../../engine/streams/change-effects.js';
import { StoreControlPlane } from '../../../../engine/streams/control-plane.js';
import { jsonRpcUpstream } from '../../../../http/clients/rpc.js';
import { coinsOf, mineBlock, owner, payTo, spend } from '../../../kit/bitcoin-core/build.js';
import { prunedChain } from '../../../kit/bitcoin-core/fixtures.js';
import { startBitcoinCore, type BitcoinCore } from '../../../kit/bitcoin-core/server.js';
import { bitcoinDefinition } from '../../../kit/bitcoin-stream.js';
import { until } from '../../../helpers.js';
import { startReceiver } from '../../../receiver.js';
import { deliveryRig } from '../delivery/rig.js';
import { quietLog } from '../../../kit/quiet-log.js';

/**
 * The Bitcoin mempool's webhooks on a cluster node (docs/decisions/cluster.md, Part 2): the follower stages those of
 * the streams whose partition it carries out, and asks each other partition's owner to stage the rest (the ask a
 * stand-in port here); what was sent (`btcMempool`) is recorded once the owner answered. Real LMDB, the Bitcoin Core
 * stand-in on loopback serving a mempool transaction, a real receiver for what is staged here, the service clock.
 */

const TENANT = 't_mempool';
const START = Date.parse('2026-12-07T00:00:00Z');
/** The partition the stand-in says another node owns. */
const AWAY = 7;

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

let core: BitcoinCore;
let rx: Receiver;
const opened: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  [core, rx] = await Promise.all([startBitcoinCore({ chain: prunedChain() }), startReceiver()]);
});
afterAll(async () => {
  await rx.close();
  await core.close();
});
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
});

/**
 * A follower's engine: two streams watching `payee`, one of a partition this node carries out, one of partition AWAY;
 * what the mempool stages here goes through `stager` (the dispatcher itself unless a test stands in for the capture).
 */
async function engine(
  seed: string,
  elsewhere: (away: string) => StagedElsewhere,
  stager: (d: Dispatcher) => Pick<Dispatcher, 'stage'> = (d) => d,
) {
  // The stream `away`'s webhooks are in partition AWAY, the other's in 0.
  const rig = deliveryRig(START, { partitionOf: (_tenant, url) => (url.endsWith('/away') ? AWAY : 0) });
  const upstream = jsonRpcUpstream(core.url);
  opened.push(rig, upstream);
  const { store, clock, dispatcher } = rig;
  const windows = new XpubWindows(2);
  const watchlist = new Watchlist({ families: FAMILIES, derivedOf: (id) => windows.keysOf(id) });
  const wallets = new BitcoinWallets(store, windows);
  const effects = changeEffects({ dispatcher, watch: watchlist, watched: (s) => FAMILIES.watched(s) }, [wallets.effects(watchlist)]);
  const streams = new BitcoinStreams(
    store,
    clock,
    dispatcher,
    undefined,
    undefined,
    undefined,
    new StoreControlPlane(store, undefined, effects),
  );
  await watchlist.load(store);
  const payee = owner('p2wpkh', `${seed}-payee`);
  const make = async (path: string): Promise<string> => {
    const made = await streams.create(TENANT, bitcoinDefinition(`${rx.url}/${seed}/${path}`, path), undefined);
    const id = String(made.id);
    await streams.addAddresses(TENANT, id, [payee.address]);
    return id;
  };
  const here = await make('here');
  const away = await make('away');
  await watchlist.compile(BITCOIN_CHAIN);
  dispatcher.start();
  const mempool = new BitcoinMempool({
    chain: BITCOIN_CHAIN,
    upstream,
    kv: store,
    clock,
    log: quietLog(() => clock.now()),
    watchlist,
    sets: new FilterSets(FAMILIES.matching),
    windows,
    grown: () => {},
    dispatcher: stager(dispatcher),
    elsewhere: elsewhere(away),
  });
  /** A transaction paying the streams' address from a new coin of payer `n`, in the stand-in's mempool; its txid. */
  const pay = (n: number): string => {
    const payer = owner('p2wpkh', `${seed}-payer`, n);
    const funding = mineBlock(core.chain, [], payer.output);
    const tx = spend(coinsOf(funding.transactions![0]!, [payer]), [payTo(payee.address, 100_000)]);
    return core.chain.addToMempool(tx.toHex());
  };
  const txid = pay(0);
  /** The mempool webhooks of a stream the receiver got (those staged here). */
  const received = (id: string) => rx.webhooks().filter((w) => w.body.streamId === id && w.body.block?.hash === 'mempool');
  const recorded = (id: string, tx = txid): number | undefined => store.get<number>('btcMempool', `${id}/${tx}`);
  return { here, away, mempool, txid, pay, received, recorded };
}

/** A stand-in for the bus: the stream `away`'s webhooks belong to partition AWAY, owned by another node. */
const askedFor = (answer: (items: EnqueueItem[]) => Promise<unknown>) => {
  const asks: Array<{ partition: number; items: EnqueueItem[] }> = [];
  const port = (away: string): StagedElsewhere => ({
    partitionOf: (id) => (id === away ? AWAY : undefined),
    stage: (partition, items) => {
      asks.push({ partition, items });
      return answer(items);
    },
  });
  return { asks, port };
};

describe('the Bitcoin mempool’s webhooks on a cluster node', () => {
  it("has another node's partition's webhooks staged by its owner, and records them sent once it answered", async () => {
    let answer: (() => void) | undefined;
    const { asks, port } = askedFor(() => new Promise<unknown>((resolve) => (answer = () => resolve(['queued']))));
    const e = await engine('asked', port);

    const polled = e.mempool.poll();
    expect(await until(() => asks.length === 1, 10_000)).toBe(true);
    // Asked to partition AWAY's owner, the mempool form of the body; not recorded before the owner answered.
    expect(asks[0]!.partition).toBe(AWAY);
    expect(asks[0]!.items.map((i) => i.streamId)).toEqual([e.away]);
    expect(asks[0]!.items[0]!.payload).toMatchObject({ block: { hash: 'mempool' }, transactions: [{ txid: e.txid }] });
    expect(e.recorded(e.away)).toBeUndefined();
    expect(e.recorded(e.here)).toBeUndefined();
    answer!();
    await polled;
    expect(e.recorded(e.away)!).toBeGreaterThanOrEqual(START);
    expect(e.recorded(e.here)!).toBeGreaterThanOrEqual(START);
    // The stream of a partition this node carries out has it staged here and sent; the other is not staged here.
    expect(await until(() => e.received(e.here).length === 1, 10_000)).toBe(true);
    expect(e.received(e.away)).toHaveLength(0);

    // The next poll: nothing asked or staged again.
    await e.mempool.poll();
    expect(asks).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(e.received(e.here)).toHaveLength(1);
    expect(e.received(e.away)).toHaveLength(0);
  });

  it('asks again at the next poll when the owner could not be asked, once a poll, recording nothing for it meanwhile; what was staged here is not staged twice', async () => {
    let refuse = true;
    const { asks, port } = askedFor(() =>
      refuse ? Promise.reject(unavailable('no node owns partition 7 now (it is between owners)', 4)) : Promise.resolve(['queued']),
    );
    const e = await engine('refused', port);
    // A second transaction for the streams: the partition refused for the first is not asked again in the same poll.
    const second = e.pay(1);

    await e.mempool.poll();
    expect(asks).toHaveLength(1);
    for (const tx of [e.txid, second]) {
      expect(e.recorded(e.away, tx)).toBeUndefined();
      expect(e.recorded(e.here, tx)!).toBeGreaterThanOrEqual(START);
    }
    expect(await until(() => e.received(e.here).length === 2, 10_000)).toBe(true);

    // Still refused: asked again at the next poll (once), still not recorded.
    await e.mempool.poll();
    expect(asks).toHaveLength(2);
    expect(e.recorded(e.away)).toBeUndefined();

    refuse = false;
    await e.mempool.poll();
    expect(asks).toHaveLength(4);
    expect(asks.every((a) => a.partition === AWAY && a.items.length === 1 && a.items[0]!.streamId === e.away)).toBe(true);
    expect(
      asks
        .slice(2)
        .map((a) => (a.items[0]!.payload as { transactions: Array<{ txid: string }> }).transactions[0]!.txid)
        .sort(),
    ).toEqual([e.txid, second].sort());
    for (const tx of [e.txid, second]) expect(e.recorded(e.away, tx)!).toBeGreaterThanOrEqual(START);

    await e.mempool.poll();
    expect(asks).toHaveLength(4);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(e.received(e.here)).toHaveLength(2);
    expect(e.received(e.away)).toHaveLength(0);
  });

  it('records at the next poll, without asking its owner again, a webhook the owner staged while the transaction recording it here failed', async () => {
    const { asks, port } = askedFor(() => Promise.resolve(['queued']));
    let fail = true;
    // The transaction that records both webhooks and stages the one of this node's partition fails once.
    const failing = (d: Dispatcher): Pick<Dispatcher, 'stage'> => ({
      stage: (items) => {
        if (!fail) return d.stage(items);
        fail = false;
        throw new Error('the disk is full');
      },
    });
    const e = await engine('failed-record', port, failing);

    await expect(e.mempool.poll()).rejects.toThrow('the disk is full');
    expect(asks).toHaveLength(1);
    expect([e.recorded(e.here), e.recorded(e.away)]).toEqual([undefined, undefined]);

    await e.mempool.poll();
    expect(asks).toHaveLength(1);
    expect(e.recorded(e.here)!).toBeGreaterThanOrEqual(START);
    expect(e.recorded(e.away)!).toBeGreaterThanOrEqual(START);
    expect(await until(() => e.received(e.here).length === 1, 10_000)).toBe(true);
    await e.mempool.poll();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect([e.received(e.here).length, e.received(e.away).length, asks.length]).toEqual([1, 0, 1]);
  });

  it('takes back the record of a webhook whose unit was taken back with its partition (its next owner is asked at the next poll), and of no other staged with it', async () => {
    // Both streams' partitions carried out here at first: both webhooks staged in one transaction. A stand-in for the
    // capture: AWAY's unit is taken back (its partition lost before the publish), partition 0's published. The
    // node learns of the loss after the rejection (its lease's loss still settling): only at the next poll does
    // `elsewhere` name AWAY's owner.
    let lost = false;
    const asks: Array<{ partition: number; items: EnqueueItem[] }> = [];
    const port = (away: string): StagedElsewhere => ({
      partitionOf: (id) => (lost && id === away ? AWAY : undefined),
      stage: (partition, items) => {
        asks.push({ partition, items });
        return Promise.resolve(items.map(() => 'queued'));
      },
    });
    let takeBack = true;
    const losing = (d: Dispatcher): Pick<Dispatcher, 'stage'> => ({
      stage: (items) => {
        const staged = d.stage(items);
        if (!takeBack) return staged;
        takeBack = false;
        const taken = new UnitsTakenBack(new Set([AWAY]), new PartitionLost(AWAY, 'refused'));
        return { ...staged, durable: () => Promise.reject(taken) };
      },
    });
    const e = await engine('taken-back', port, losing);

    await e.mempool.poll();
    // Both sent without waiting for the publish; only the one of the partition whose unit was published is recorded.
    expect(await until(() => e.received(e.here).length === 1 && e.received(e.away).length === 1, 10_000)).toBe(true);
    expect(e.recorded(e.here)!).toBeGreaterThanOrEqual(START);
    expect(e.recorded(e.away)).toBeUndefined();
    expect(asks).toHaveLength(0);

    // The next poll asks the lost partition's owner for it, and stages nothing here again.
    lost = true;
    await e.mempool.poll();
    expect(asks.map((a) => [a.partition, a.items.map((i) => i.streamId)])).toEqual([[AWAY, [e.away]]]);
    expect(e.recorded(e.away)!).toBeGreaterThanOrEqual(START);
    await e.mempool.poll();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect([e.received(e.here).length, e.received(e.away).length, asks.length]).toEqual([1, 1, 1]);
  });
});
