import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coinsOf, mineBlock, owner, payTo, spend } from '../kit/bitcoin-core/build.js';
import { prunedChain } from '../kit/bitcoin-core/fixtures.js';
import { startBitcoinCore, type BitcoinCore } from '../kit/bitcoin-core/server.js';
import { startNatsServer, type NatsServer } from '../kit/nats-server.js';
import { startBinary, stopAndClean, tempDir, until, type RunningBinary } from '../helpers.js';
import { startReceiver } from '../receiver.js';
import { settled, splitOf, tenantOfStreams, urlIn } from './cluster-kit.js';

/**
 * The Bitcoin mempool's webhooks on a cluster (docs/decisions/cluster.md): two nodes (the built binary) on one nats-server, following
 * the Bitcoin Core stand-in (a pruned node above block 880,000, real mainnet blocks relinked). The node holding the
 * chain's lease reads the mempool; a transaction pays an address watched by two streams, one delivering to a URL of
 * a partition the follower owns, one to a URL of a partition the other node owns. Each gets the transaction's
 * mempool webhook once: the follower stages the first, the other node the second, asked by the follower. Then a
 * cluster whose follower has `api` and `ingest` alone (no partition): the node owning every partition sends a
 * stream's mempool and block webhooks once each, and the follower queues none of them itself.
 */

const TTL_MS = 1_500;
/** What a node following Bitcoin publishes a block in at most (a 4 MB block's message): it checks the server's max_payload at its start. */
const MAX_PAYLOAD = '32MB';
const KEY = 'cpk_cluster_mempool_0123456789abcdefX';

let nats: NatsServer;
let core: BitcoinCore;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let a: RunningBinary;
let b: RunningBinary;

const env = (): Record<string, string> => ({
  CHAINPOST_NATS: nats.url,
  CHAINPOST_BITCOIN_RPC: core.url,
  CHAINPOST_BITCOIN_POLL_MS: '50',
  CHAINPOST_API_KEY: KEY,
  CHAINPOST_LEASE_TTL_MS: String(TTL_MS),
  CHAINPOST_RATE_LIMIT: '0',
  CHAINPOST_METRICS_STREAMS: '1',
});

/** Whether the node holds the Bitcoin chain's lease (it follows the chain, and reads its mempool). */
const follows = async (n: RunningBinary): Promise<boolean> =>
  (((await n.call('/health')).body.cluster?.leases ?? []) as Array<{ chain: string }>).some((l) => l.chain === 'bitcoin');
const head = async (n: RunningBinary): Promise<number> =>
  ((await n.call('/health')).body.chains as Array<{ chain: string; head: number }>).find((c) => c.chain === 'bitcoin')?.head ?? -1;
/** The mempool webhooks a stream received. */
const mempoolOf = (streamId: string) => rx.webhooks().filter((w) => w.body.streamId === streamId && w.body.block?.hash === 'mempool');
/** The block webhooks (unconfirmed) a stream received. */
const inBlockOf = (streamId: string) =>
  rx
    .webhooks()
    .filter((w) => w.body.streamId === streamId && w.body.block !== undefined && w.body.block.hash !== 'mempool' && !w.body.confirmed);
/** The stream's x-queue-size as the node's /metrics says it (its own count of what it staged). */
const queuedOn = async (n: RunningBinary, id: string): Promise<number> => {
  const line = ((await n.call('/metrics')).body as string)
    .split('\n')
    .find((l) => l.startsWith(`chainpost_stream_webhooks_queued{stream="${id}"}`));
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
};

beforeAll(async () => {
  [nats, core, rx] = await Promise.all([
    startNatsServer({ maxPayload: MAX_PAYLOAD }),
    startBitcoinCore({ chain: prunedChain() }),
    startReceiver(),
  ]);
  [a, b] = await Promise.all([startBinary(env(), tempDir()), startBinary(env(), tempDir())]);
}, 60_000);

afterAll(async () => {
  await stopAndClean(a);
  await stopAndClean(b);
  await rx?.close();
  await core?.close();
  await nats?.close();
});

describe('the Bitcoin mempool’s webhooks on a cluster (two nodes, the built binary)', () => {
  it('delivers a mempool transaction’s webhook once to a stream whose partition the node not following the chain owns', async () => {
    const ofA = await splitOf(a, b, TTL_MS);
    let follower: RunningBinary | undefined;
    expect(
      await until(
        async () => {
          follower = (await follows(a)) ? a : (await follows(b)) ? b : undefined;
          return follower !== undefined && (await head(follower)) === core.chain.height;
        },
        20_000,
        50,
      ),
    ).toBe(true);
    const other = follower === a ? b : a;
    const ofFollower = follower === a ? ofA : new Set([...Array(64).keys()].filter((p) => !ofA.has(p)));
    const ofOther = new Set([...Array(64).keys()].filter((p) => !ofFollower.has(p)));

    // URLs of a partition each node owns: the tenant (from the control log) and the URL hash to one.
    const make = async (webhookUrl: string): Promise<string> => {
      const made = await follower!.call('/streams/bitcoin', { method: 'PUT', json: { webhookUrl, description: 'mempool', tag: 'btc' } });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      return made.body.id as string;
    };
    const probe = await make(`${rx.url}/probe`);
    const tenant = await tenantOfStreams(nats);
    expect((await follower!.call(`/streams/bitcoin/${probe}`, { method: 'DELETE' })).status).toBe(200);
    const payee = owner('p2wpkh', 'cluster-mempool-payee');
    const here = await make(await urlIn(ofFollower, tenant, `${rx.url}/here`));
    const away = await make(await urlIn(ofOther, tenant, `${rx.url}/away`));
    for (const id of [here, away]) {
      const added = await follower!.call(`/streams/bitcoin/${id}/address`, { method: 'POST', json: { address: payee.address } });
      expect(added.status, JSON.stringify(added.body)).toBe(200);
    }
    // Both nodes hold the streams (the other stages for `away` what the follower asks it to).
    expect(await until(async () => (await other.call(`/streams/bitcoin/${away}`)).body.amountOfAddresses === 1, 10_000, 50)).toBe(true);

    // A coin for the payer, in a block the cluster ingests; then a transaction paying the streams' address, unmined.
    const payer = owner('p2wpkh', 'cluster-mempool-payer');
    const funding = mineBlock(core.chain, [], payer.output);
    expect(await until(async () => (await head(follower!)) === core.chain.height, 20_000, 50)).toBe(true);
    const tx = spend(coinsOf(funding.transactions![0]!, [payer]), [payTo(payee.address, 100_000)]);
    core.chain.addToMempool(tx.toHex());

    expect(await until(() => mempoolOf(here).length === 1 && mempoolOf(away).length === 1, 15_000, 20)).toBe(true);
    for (const id of [here, away])
      expect(mempoolOf(id)[0]!.body).toMatchObject({ streamId: id, confirmed: false, transactions: [{ txid: tx.getId() }] });
    // Dozens of polls later (every 50 ms): neither is sent again.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(mempoolOf(here)).toHaveLength(1);
    expect(mempoolOf(away)).toHaveLength(1);
  });

  it('has a follower with api and ingest alone: the partitions’ owner sends the mempool and block webhooks once, the follower queues none', async () => {
    await stopAndClean(a);
    await stopAndClean(b);
    await nats.close();
    nats = await startNatsServer({ maxPayload: MAX_PAYLOAD });
    a = await startBinary(env(), tempDir(), undefined, undefined, ['--roles', 'api,ingest']);
    b = await startBinary(env(), tempDir(), undefined, undefined, ['--roles', 'api,match,deliver']);
    expect(await until(() => settled([b]), 30_000, 100)).toBe(true);
    expect(await until(async () => (await follows(a)) && (await head(a)) === core.chain.height, 20_000, 50)).toBe(true);

    const made = await a.call('/streams/bitcoin', {
      method: 'PUT',
      json: { webhookUrl: `${rx.url}/solo`, description: 'solo', tag: 'btc' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const id = made.body.id as string;
    const payee = owner('p2wpkh', 'cluster-mempool-solo-payee');
    expect((await a.call(`/streams/bitcoin/${id}/address`, { method: 'POST', json: { address: payee.address } })).status).toBe(200);
    expect(await until(async () => (await b.call(`/streams/bitcoin/${id}`)).body.amountOfAddresses === 1, 10_000, 50)).toBe(true);

    const payer = owner('p2wpkh', 'cluster-mempool-solo-payer');
    const funding = mineBlock(core.chain, [], payer.output);
    expect(await until(async () => (await head(a)) === core.chain.height, 20_000, 50)).toBe(true);
    const tx = spend(coinsOf(funding.transactions![0]!, [payer]), [payTo(payee.address, 100_000)]);
    core.chain.addToMempool(tx.toHex());
    expect(await until(() => mempoolOf(id).length === 1, 15_000, 20)).toBe(true);
    const block = mineBlock(core.chain, [tx]);
    expect(await until(() => inBlockOf(id).length === 1, 15_000, 20)).toBe(true);
    expect(inBlockOf(id)[0]!.body.block.hash).toBe(block.getId());
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(mempoolOf(id)).toHaveLength(1);
    expect(inBlockOf(id)).toHaveLength(1);
    // The follower matched nothing for itself: it staged none of the stream's webhooks.
    expect(await queuedOn(a, id)).toBe(0);
  });
});
