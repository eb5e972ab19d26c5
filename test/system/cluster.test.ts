import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type BusConnection } from '../../bus/connect.js';
import { LEASES_BUCKET, leaseKey } from '../../bus/leases.js';
import { startAnvil, type Anvil } from '../../http/clients/anvil.js';
import { anvilRpc, minedReceipt } from '../kit/anvil-rpc.js';
import { startNatsServer, type NatsServer } from '../kit/nats-server.js';
import { apiCaller, cli, startBinary, stopAndClean, tempDir, until, type RunningBinary } from '../helpers.js';
import { startReceiver } from '../receiver.js';

/**
 * A cluster as an operator runs one: one nats-server (file storage, max_payload 8 MB), anvil as the chain, and three
 * chainpost nodes, each the built binary with its own data directory and port, sharing CHAINPOST_NATS. Everything is
 * checked through what a user reaches: each node's own HTTP API (its Data API block endpoints read the node's store),
 * the CLI on a node's data directory, a real webhook receiver; the test reads the leases bucket only to time a
 * takeover. Leases run on wall time: a short TTL, and every wait an event or a poll with a deadline.
 */

const CHAIN = '0x539';
const TTL_MS = 2_000;
const KEY = 'cpk_cluster_system_0123456789abcdefXYZ';
/** The stream limit the race runs against. */
const MAX_STREAMS = 3;
/** How long another node may take to apply a change (docs/decisions/cluster.md's bound). */
const OTHER_NODE_MS = 1_000;
/** How long a node may take to store a block anvil mined (applied from the stream, or followed). */
const BLOCK_MS = 20_000;
/** How long nats-server stays down. */
const OUTAGE_MS = 10_000;
/** The wallet every block pays once: its transaction list shows a block applied twice or skipped. */
const WALLET = '0x00000000000000000000000000000000000c1a57';
/** anvil's first dev account (unlocked: eth_sendTransaction signs with it). */
const SENDER = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const SIGNER = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');

interface Node extends RunningBinary {
  name: string;
}

let nats: NatsServer;
let anvil: Anvil;
let bus: BusConnection;
let rx: Awaited<ReturnType<typeof startReceiver>>;
const nodes: Node[] = [];
/** The stream created through node 1 (the address test's, then the outage's). */
let streamId: string;

/** What every node is started with: the cluster, the chain, a short lease. */
const clusterEnv = (): Record<string, string> => ({
  CHAINPOST_NATS: nats.url,
  CHAINPOST_CHAINS: `${CHAIN}=${anvil.url}`,
});
const nodeEnv = (): Record<string, string> => ({
  ...clusterEnv(),
  CHAINPOST_API_KEY: KEY,
  CHAINPOST_LEASE_TTL_MS: String(TTL_MS),
  CHAINPOST_MAX_STREAMS: String(MAX_STREAMS),
  CHAINPOST_CONFIRMATIONS: `${CHAIN}=1`,
  CHAINPOST_POLL_MS: '50',
  CHAINPOST_RATE_LIMIT: '0',
});
/** A node's last warnings and errors, for a failure's message. */
const lastWords = (n: Node): string =>
  n
    .output()
    .split('\n')
    .filter((line) => /"level":"(warn|error)"/.test(line))
    .slice(-12)
    .join('\n');

const startNode = async (name: string, dir = tempDir()): Promise<Node> => Object.assign(await startBinary(nodeEnv(), dir), { name });

const rpc = <T>(method: string, params: unknown[] = []): Promise<T> => anvilRpc<T>(anvil.url, method, params);

/** A block as anvil has it: its hash and its transactions' hashes. */
const anvilBlock = async (n: number): Promise<{ hash: string; txs: string[] }> => {
  const b = await rpc<{ hash: string; transactions: string[] }>('eth_getBlockByNumber', [`0x${n.toString(16)}`, false]);
  return { hash: b.hash, txs: b.transactions };
};

/** The payments to WALLET anvil mined, a block each. */
const paid: Array<{ hash: string; block: number }> = [];

/** Pays WALLET; anvil mines the payment in a block of its own. Answers the block once it is mined. */
async function pay(): Promise<{ hash: string; block: number }> {
  const hash = await rpc<string>('eth_sendTransaction', [{ from: SENDER, to: WALLET, value: '0x1' }]);
  // Mined at once, its receipt answered a moment later on a loaded machine.
  const receipt = await minedReceipt({ call: rpc }, hash, 10_000);
  const p = { hash, block: Number(receipt.blockNumber) };
  paid.push(p);
  return p;
}

/** The block `n` as a node's Data API serves it from its store (404 until stored there). */
const blockOn = (n: Node, height: number) => n.call(`/api/v2.2/block/${height}?chain=${CHAIN}`);

/** Whether a node serves block `height` with anvil's hash. */
const holdsBlock = async (n: Node, height: number): Promise<boolean> => {
  const r = await blockOn(n, height);
  return r.status === 200 && r.body.hash === (await anvilBlock(height)).hash;
};

/**
 * A node's copy of the chain against anvil, through its own API: every block from 1 to `to` with anvil's hash and
 * transactions, and WALLET's transactions each once (a block applied twice would list its payment twice, a block
 * skipped would miss it).
 */
async function expectChainOn(n: Node, to: number): Promise<void> {
  for (let h = 1; h <= to; h++) {
    const r = await blockOn(n, h);
    expect(r.status, `${n.name}: block ${h}: ${JSON.stringify(r.body)}`).toBe(200);
    const want = await anvilBlock(h);
    expect(r.body.hash, `${n.name}: block ${h}`).toBe(want.hash);
    expect(
      (r.body.transactions as Array<{ hash: string }>).map((t) => t.hash),
      `${n.name}: block ${h}`,
    ).toEqual(want.txs);
  }
  const listed = await n.call(`/api/v2.2/${WALLET}?chain=${CHAIN}&limit=100`);
  expect(listed.status).toBe(200);
  const rows = (listed.body.result as Array<{ hash: string; block_number: string }>).map((t) => `${t.block_number} ${t.hash}`).sort();
  expect(rows, n.name).toEqual(
    paid
      .filter((p) => p.block <= to)
      .map((p) => `${p.block} ${p.hash}`)
      .sort(),
  );
}

/** Every entry of a `leases` list anywhere in a JSON document (where /health shows the leases a node holds). */
function leasesIn(doc: unknown): Array<{ chain?: unknown }> {
  if (Array.isArray(doc)) return doc.flatMap(leasesIn);
  if (doc === null || typeof doc !== 'object') return [];
  return Object.entries(doc).flatMap(([k, v]) => (k === 'leases' && Array.isArray(v) ? (v as Array<{ chain?: unknown }>) : leasesIn(v)));
}

/** The nodes whose /health says they hold the chain's lease. */
async function holders(among: Node[]): Promise<Node[]> {
  const out: Node[] = [];
  for (const n of among) if (leasesIn((await n.call('/health')).body).some((l) => l.chain === CHAIN)) out.push(n);
  return out;
}

/** The chain's lease as the bucket records it, each write with when the test saw it. */
async function watchLease(): Promise<{ log: Array<{ node: string; at: number }>; stop(): void }> {
  const kv = await new Kvm(jetstream(bus.nc)).open(LEASES_BUCKET);
  const watch = await kv.watch({ key: leaseKey(CHAIN) });
  const log: Array<{ node: string; at: number }> = [];
  void (async () => {
    for await (const e of watch) if (e.operation === 'PUT') log.push({ node: e.string(), at: performance.now() });
  })();
  return { log, stop: () => watch.stop() };
}

const REQUEST = { domain: 'defi.finance', uri: 'https://defi.finance/login', statement: 'Please confirm', timeout: 120 };

beforeAll(async () => {
  [nats, anvil, rx] = await Promise.all([startNatsServer(), startAnvil({ chainId: 1337 }), startReceiver()]);
  bus = await connectBus({ servers: nats.url, maxReconnectWaitMs: 100 });
  // The first node writes CHAINPOST_API_KEY to the log; the others find it applied when they start.
  nodes.push(await startNode('node 1'));
  nodes.push(...(await Promise.all([startNode('node 2'), startNode('node 3')])));
}, 90_000);

afterAll(async () => {
  for (const n of nodes) await stopAndClean(n);
  await rx?.close();
  await bus?.close();
  await anvil?.stop();
  await nats?.close();
});

describe('three chainpost nodes on one nats-server (the built binary, CHAINPOST_NATS)', () => {
  it('lists on node 3 within 1 s a stream created through node 1', async () => {
    const [one, , three] = nodes as [Node, Node, Node];
    const made = await one.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: rx.url, chainIds: [CHAIN], includeNativeTxs: true, description: 'cluster' },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    streamId = made.body.id as string;
    const listed = async () => ((await three.call('/streams/evm')).body.result as Array<{ id: string }>).some((s) => s.id === streamId);
    expect(await until(listed, OTHER_NODE_MS)).toBe(true);
  });

  it('matches an address added through node 2 from the next block on: the receiver gets its webhook', async () => {
    const added = await nodes[1]!.call(`/streams/evm/${streamId}/address`, { method: 'POST', json: { address: [WALLET] } });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    // At once: whichever node follows the chain has applied the add before it matches this block.
    const { hash, block } = await pay();
    const carrying = (h: string) => rx.webhooks().filter((w) => (w.body.txs as Array<{ hash: string }>).some((t) => t.hash === h));
    expect(await until(() => carrying(hash).length > 0, BLOCK_MS, 50)).toBe(true);
    expect(Number(carrying(hash)[0]!.body.block.number)).toBe(block);
    expect(carrying(hash)[0]!.body.streamId).toBe(streamId);
    // Matched and delivered by the one node that follows the chain: once unconfirmed, once confirmed (a block later),
    // counted once the next block's webhook arrived too (each node delivers a stream's webhooks in order).
    const next = await pay();
    expect(await until(() => carrying(next.hash).length > 0 && carrying(hash).length >= 2, BLOCK_MS, 50)).toBe(true);
    expect(carrying(hash).map((w) => w.body.confirmed as boolean)).toEqual([false, true]);
  });

  it('accepts on node 2 a key created with the CLI on node 1’s data directory, and refuses it on node 3 within 1 s of its revocation', async () => {
    const [one, two, three] = nodes as [Node, Node, Node];
    const created = await cli(['keys', 'create', '--name', 'cluster-cli'], one.dir, clusterEnv());
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim().split('\n').at(-1)!;
    const on = (n: Node) => apiCaller(n.url, key)('/streams/evm');
    expect(await until(async () => (await on(two)).status === 200, OTHER_NODE_MS)).toBe(true);
    expect((await on(three)).status).toBe(200);

    const revoked = await cli(['keys', 'revoke', 'cluster-cli'], one.dir, clusterEnv());
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(await until(async () => (await on(three)).status === 401, OTHER_NODE_MS)).toBe(true);
    expect((await on(two)).status).toBe(401);
  });

  it('lets exactly one of two stream creates racing on two nodes for the last place under CHAINPOST_MAX_STREAMS through', async () => {
    const [one, two, three] = nodes as [Node, Node, Node];
    const create = (n: Node) => n.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, chainIds: [CHAIN] } });
    const total = async (n: Node): Promise<number> => (await n.call('/streams/evm?limit=100')).body.total as number;
    // One stream so far (the first test's): one more leaves a single place.
    expect((await create(three)).status).toBe(200);
    expect(await total(three)).toBe(MAX_STREAMS - 1);
    const answers = await Promise.all([create(one), create(two)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    expect(answers.find((a) => a.status === 400)!.body.details).toEqual({
      field: 'streams',
      limit: MAX_STREAMS,
      variable: 'CHAINPOST_MAX_STREAMS',
    });
    for (const n of nodes) expect(await until(async () => (await total(n)) === MAX_STREAMS, OTHER_NODE_MS), n.name).toBe(true);
  });

  it('verifies on node 2 a challenge requested on node 1, at once and once: a second verify on node 3 is refused', async () => {
    const [one, two, three] = nodes as [Node, Node, Node];
    const req = await one.call('/challenge/request/evm', { method: 'POST', json: { ...REQUEST, chainId: 1, address: SIGNER.address } });
    expect(req.status, JSON.stringify(req.body)).toBe(201);
    const signature = await SIGNER.signMessage({ message: req.body.message as string });
    const verify = (n: Node) => n.call('/challenge/verify/evm', { method: 'POST', json: { message: req.body.message, signature } });
    const first = await verify(two);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body).toMatchObject({ id: req.body.id, profileId: req.body.profileId, address: SIGNER.address });
    expect((await verify(three)).status).toBe(404);
    expect((await verify(two)).status).toBe(404);
  });

  it('hands the chain to another node within 2 TTLs of a kill -9 of its lease holder; every node keeps the head moving, each block stored once', async () => {
    for (let i = 0; i < 3; i++) await pay();
    const before = paid.at(-1)!.block;
    for (const n of nodes) expect(await until(() => holdsBlock(n, before), BLOCK_MS, 50), n.name).toBe(true);
    // One node at a time follows the chain.
    const held = await holders(nodes);
    expect(held.map((n) => n.name)).toHaveLength(1);
    const holder = held[0]!;

    const lease = await watchLease();
    try {
      expect(await until(() => lease.log.length > 0, TTL_MS)).toBe(true);
      const killedId = lease.log.at(-1)!.node;
      await holder.stop('SIGKILL');
      const killed = performance.now();
      const survivors = nodes.filter((n) => n !== holder);
      // The bucket names another node: the takeover, timed from the kill.
      expect(await until(() => lease.log.some((l) => l.at > killed && l.node !== killedId), 5 * TTL_MS, 20)).toBe(true);
      expect(lease.log.find((l) => l.at > killed && l.node !== killedId)!.at - killed).toBeLessThan(2 * TTL_MS);
      expect(await until(async () => (await holders(survivors)).length === 1, 2 * TTL_MS, 100)).toBe(true);
    } finally {
      lease.stop();
    }

    // The head keeps moving on both survivors, from the new holder's follower and its published blocks.
    for (let i = 0; i < 3; i++) await pay();
    const after = paid.at(-1)!.block;
    const survivors = nodes.filter((n) => n !== holder);
    for (const n of survivors) expect(await until(() => holdsBlock(n, after), BLOCK_MS, 50), n.name).toBe(true);
    for (const n of survivors) await expectChainOn(n, after);

    // The killed node, started again on its data directory, applies what it missed from the blocks stream.
    const restarted = await startNode(holder.name, holder.dir);
    nodes[nodes.indexOf(holder)] = restarted;
    expect(await until(() => holdsBlock(restarted, after), BLOCK_MS, 50)).toBe(true);
    await expectChainOn(restarted, after);
  });

  it('answers reads on every node while nats-server is down for 10 s and writes 503 with Retry-After; the chain resumes once it is back', async () => {
    const head = paid.at(-1)!.block;
    const addressesOf = async (n: Node): Promise<string[]> =>
      ((await n.call(`/streams/evm/${streamId}/address`)).body.result as Array<{ address: string }>).map((a) => a.address);
    const addressesBefore = await addressesOf(nodes[0]!);
    const addAddress = (n: Node) =>
      n.call(`/streams/evm/${streamId}/address`, { method: 'POST', json: { address: ['0x00000000000000000000000000000000000d0e5a'] } });

    await nats.stop('kill');
    const down = performance.now();
    try {
      // A node notices the lost connection a moment after the server is gone.
      for (const n of nodes) expect(await until(async () => (await addAddress(n)).status === 503, 10_000, 100), n.name).toBe(true);
      // anvil goes on mining meanwhile.
      await pay();
      await pay();
      while (performance.now() - down < OUTAGE_MS) {
        for (const n of nodes) {
          const write = await addAddress(n);
          expect(write.status, n.name).toBe(503);
          expect(write.headers.get('retry-after'), n.name).toMatch(/^[1-9]\d*$/);
          expect((await n.call('/streams/evm')).status, n.name).toBe(200);
          expect((await blockOn(n, head)).body.hash, n.name).toBe((await anvilBlock(head)).hash);
        }
        await sleep(500);
      }
    } finally {
      await nats.start();
    }

    // Back: a node takes the lease again and follows from where the chain was stored; every node gets every block.
    for (let i = 0; i < 2; i++) await pay();
    const last = paid.at(-1)!.block;
    for (const n of nodes) expect(await until(() => holdsBlock(n, last), BLOCK_MS, 50), `${n.name}: ${lastWords(n)}`).toBe(true);
    for (const n of nodes) await expectChainOn(n, last);
    expect((await holders(nodes)).length).toBe(1);
    // No write answered 503 was applied later.
    for (const n of nodes) expect(await addressesOf(n), n.name).toEqual(addressesBefore);
  });
});
