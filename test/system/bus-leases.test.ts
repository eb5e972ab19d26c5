import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { describe, expect, it } from 'vitest';
import { connectBus, type BusConnection } from '../../bus/connect.js';
import { LEASES_BUCKET, leaseKey, openChainLeases, type BusChainLeases } from '../../bus/leases.js';
import type { LeaseEvent } from '../../engine/ingest/leases.js';
import { inOwnWorld, onOwnNatsServer, startNatsCluster, type NatsCluster, type NatsServer } from '../kit/nats-server.js';
import { until } from '../helpers.js';

/**
 * The chains' leases against a real nats-server: two or three nodes' lease clients in this process, each with its
 * own NATS connection. Leases run on wall time (the server expires them): the TTLs are short, and every wait is on
 * an event or the bucket with a generous deadline.
 */
const TTL = 2_000;
const CHAIN = '0x1';

interface Client {
  node: string;
  bus: BusConnection;
  leases: BusChainLeases;
  /** Stops this client's events reaching the log (a killed node says nothing more). */
  mute(): void;
}

/** Every client's events in the order they came, as `<node> held|lost <chain> [reason]`, with when. */
interface Logged {
  line: string;
  at: number;
}

/**
 * One test's world: its own nats-server (or cluster of them), clients and event log, so the cases (which mostly wait
 * on the server's wall-time expiries) run at the same time.
 */
class Scene<N extends NatsServer | NatsCluster = NatsServer> {
  clients: Client[] = [];
  log: Logged[] = [];
  /** Who holds each chain as the events say, and each time a second node said it held a chain someone held. */
  holding = new Map<string, string>();
  overlaps: string[] = [];
  /** The revision each chain was last taken at. */
  heldAt = new Map<string, number>();
  private cleanups: (() => Promise<void> | void)[] = [];

  constructor(
    readonly nats: N,
    /** The bucket's copies (CHAINPOST_NATS_REPLICAS): 3 on a three-server cluster. */
    readonly replicas = 1,
  ) {}

  record(node: string, event: LeaseEvent): void {
    this.log.push({
      line: event.kind === 'held' ? `${node} held ${event.chain}` : `${node} lost ${event.chain} ${event.reason}`,
      at: performance.now(),
    });
    const holder = this.holding.get(event.chain);
    if (event.kind === 'held') {
      this.heldAt.set(event.chain, event.revision);
      if (holder !== undefined) this.overlaps.push(`${node} held ${event.chain} while ${holder} held it`);
      this.holding.set(event.chain, node);
    } else if (holder === node) this.holding.delete(event.chain);
  }

  /** A node's lease client, on its own connection (to `servers`: the server, or a proxy before it). */
  async client(node: string, { ttlMs = TTL, servers = this.nats.url, replicas = this.replicas } = {}): Promise<Client> {
    const bus = await connectBus({ servers, maxReconnectWaitMs: 100 });
    const leases = await openChainLeases(bus, { node, ttlMs, replicas });
    const off = leases.onEvent((event) => this.record(node, event));
    const c: Client = {
      node,
      bus,
      leases,
      mute: () => {
        off();
        // The node is gone: it holds nothing as far as the events go.
        for (const [chain, holder] of this.holding) if (holder === node) this.holding.delete(chain);
      },
    };
    this.clients.push(c);
    return c;
  }

  /** node-a holding CHAIN, then node-b contending for it; node-a's connection to `servers`. */
  async heldAndContended({ ttlMs = TTL, servers = this.nats.url } = {}): Promise<[Client, Client]> {
    const a = await this.client('node-a', { ttlMs, servers });
    const b = await this.client('node-b', { ttlMs });
    a.leases.take(CHAIN);
    await this.waitFor(`node-a held ${CHAIN}`, 5 * ttlMs);
    b.leases.take(CHAIN);
    return [a, b];
  }

  /** What a kill leaves: no event, no release; its connection dropped first so nothing more reaches the server. */
  async kill(c: Client): Promise<void> {
    c.mute();
    this.clients.splice(this.clients.indexOf(c), 1);
    await c.bus.close();
    await c.leases.stop();
  }

  lines = (): string[] => this.log.map((l) => l.line);
  /** The first entry of `line` from the `from`th entry of the log on. */
  seen = (line: string, from = 0): Logged | undefined => this.log.slice(from).find((l) => l.line === line);

  /** Resolves the first entry of `line` (from the `from`th on) once it is logged; rejects after `ms`. */
  async waitFor(line: string, ms: number, from = 0): Promise<Logged> {
    if (!(await until(() => this.seen(line, from) !== undefined, ms)))
      throw new Error(`no "${line}" within ${ms} ms; logged: ${this.lines().join(' | ')}`);
    return this.seen(line, from)!;
  }

  /** The bucket as another client reads it (the test's own connection). */
  async bucket(ttlMs = TTL): Promise<KV> {
    const bus = await connectBus({ servers: this.nats.url });
    this.cleanups.push(() => bus.close());
    return new Kvm(jetstream(bus.nc)).create(LEASES_BUCKET, { ttl: ttlMs, history: 1 });
  }

  /** A TCP relay before the server for one node: `cut` drops its connections and every new one (a partition). */
  async relay(this: Scene<NatsServer>): Promise<{ url: string; cut(): void }> {
    const sockets = new Set<Socket>();
    let open = true;
    const server: Server = createServer((inbound) => {
      if (!open) return void inbound.destroy();
      const outbound = tcpConnect(this.nats.port, '127.0.0.1');
      for (const s of [inbound, outbound]) {
        sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => {
          inbound.destroy();
          outbound.destroy();
        });
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          server.close(() => resolve());
        }),
    );
    const { port } = server.address() as { port: number };
    return {
      url: `nats://127.0.0.1:${port}`,
      cut: () => {
        open = false;
        for (const s of sockets) s.destroy();
      },
    };
  }

  async close(): Promise<void> {
    for (const c of this.clients.splice(0)) {
      c.mute();
      await c.leases.stop();
      await c.bus.close();
    }
    for (const done of this.cleanups.splice(0)) await done();
    await this.nats.close();
  }
}

/** The JetStream error code a request was refused with. */
const refusal = (request: Promise<unknown>): Promise<unknown> =>
  request.then(
    () => 'not refused',
    (err: { code?: unknown }) => err.code,
  );

/** A case with a scene of its own, run beside the others (each waits on its own server's clock). */
function scene(name: string, body: (s: Scene) => Promise<void>): void {
  it.concurrent(name, () => onOwnNatsServer((nats) => new Scene(nats), body));
}

/** A case on a three-server NATS cluster of its own, the bucket copied to each server (replicas 3). */
function clusterScene(name: string, body: (s: Scene<NatsCluster>) => Promise<void>, replicas = 3): void {
  it.concurrent(name, () => inOwnWorld(startNatsCluster, (cluster) => new Scene(cluster, replicas), body));
}

/**
 * The bucket's stream as JetStream describes it: its replicas, and which server leads them. Asked again for up to
 * 10 s: right after a server's kill the meta leader's election may leave a request unanswered (CI, 2026-12-07).
 */
async function bucketStream(c: Client) {
  const jsm = await jetstreamManager(c.bus.nc, { checkAPI: false, timeout: 2_000 });
  for (const deadline = performance.now() + 10_000; ; ) {
    try {
      return await jsm.streams.info(`KV_${LEASES_BUCKET}`);
    } catch (err) {
      if (performance.now() > deadline) throw err;
    }
  }
}

describe('the chains’ leases over a JetStream KV bucket', () => {
  scene('gives each chain to exactly one of three contending nodes, and says who holds it at which revision', async (s) => {
    const chains = ['0x1', 'bitcoin', 'aptos:testnet'];
    const nodes = [await s.client('node-a'), await s.client('node-b'), await s.client('node-c')];
    for (const c of nodes) for (const chain of chains) c.leases.take(chain);
    expect(await until(() => chains.every((chain) => s.holding.has(chain)), 5 * TTL)).toBe(true);
    // Two TTLs of polls and renews: nobody else takes a chain held.
    const settled = performance.now();
    await until(() => performance.now() - settled > 2 * TTL, 3 * TTL, 100);
    expect(s.overlaps).toEqual([]);
    expect(s.lines().filter((l) => l.includes(' lost '))).toEqual([]);
    expect(s.lines()).toHaveLength(3);
    for (const chain of chains) expect(nodes.filter((c) => c.leases.holds(chain)).map((c) => c.node)).toEqual([s.holding.get(chain)]);
    const holders = await nodes[0]!.leases.holders();
    const byChain = (a: { chain: string }, b: { chain: string }) => (a.chain < b.chain ? -1 : 1);
    expect(holders.map(({ chain, node }) => ({ chain, node })).sort(byChain)).toEqual(
      chains.map((chain) => ({ chain, node: s.holding.get(chain) })).sort(byChain),
    );
    // Renewed since taken: each key's revision moved past the one it was taken at.
    for (const h of holders) expect(h.revision).toBeGreaterThan(s.heldAt.get(h.chain)!);
  });

  scene('keeps a chain with the node that renews it past several TTLs, while another node contends', async (s) => {
    const [a, b] = await s.heldAndContended();
    const revision = async () => (await a.leases.holders())[0]?.revision ?? 0;
    const taken = await revision();
    // Three renews a TTL: nine renews is three TTLs at least.
    expect(await until(async () => (await revision()) >= taken + 9, 10 * TTL, 100)).toBe(true);
    expect(s.lines()).toEqual([`node-a held ${CHAIN}`]);
    expect(a.leases.holds(CHAIN)).toBe(true);
    expect(b.leases.holds(CHAIN)).toBe(false);
    expect((await b.leases.holders())[0]).toMatchObject({ chain: CHAIN, node: 'node-a' });
  });

  scene('hands a chain whose holder was killed (no renew, no release) to another node within 2 TTLs', async (s) => {
    const [a, b] = await s.heldAndContended();
    await s.kill(a);
    const killed = performance.now();
    // Nothing released: the bucket still names the killed node.
    expect((await b.leases.holders())[0]).toMatchObject({ node: 'node-a' });
    const held = await s.waitFor(`node-b held ${CHAIN}`, 5 * TTL);
    expect(held.at - killed).toBeLessThan(2 * TTL);
    expect(b.leases.holds(CHAIN)).toBe(true);
    expect((await b.leases.holders())[0]).toMatchObject({ node: 'node-b' });
  });

  scene('hands a chain released on a clean stop to a contender within one poll, long before the lease could expire', async (s) => {
    // A longer TTL, so the time the lease could have taken to expire is well apart from one poll (750 ms).
    const ttlMs = 3_000;
    const [a, b] = await s.heldAndContended({ ttlMs });
    await a.leases.stop();
    const released = performance.now();
    const held = await s.waitFor(`node-b held ${CHAIN}`, 5 * ttlMs);
    // Renewed at most a third of the TTL before the stop, the lease would have lived two thirds of it on.
    expect(held.at - released).toBeLessThan((2 * ttlMs) / 3);
    expect(s.lines()).toEqual([`node-a held ${CHAIN}`, `node-a lost ${CHAIN} released`, `node-b held ${CHAIN}`]);
    expect(s.overlaps).toEqual([]);
  });

  scene('says lost on a holder cut off from the server before another node takes its chain: never two holders at once', async (s) => {
    const cutOff = await s.relay();
    await s.heldAndContended({ servers: cutOff.url });
    cutOff.cut();
    const held = await s.waitFor(`node-b held ${CHAIN}`, 5 * TTL);
    const lost = s.seen(`node-a lost ${CHAIN} unrenewed`);
    expect(lost).toBeDefined();
    expect(lost!.at).toBeLessThan(held.at);
    expect(s.lines()).toEqual([`node-a held ${CHAIN}`, `node-a lost ${CHAIN} unrenewed`, `node-b held ${CHAIN}`]);
    expect(s.overlaps).toEqual([]);
  });

  scene(
    'says lost at once when the bucket refuses a renew because the lease moved on, before its expiry lets anyone take it',
    async (s) => {
      const [a] = await s.heldAndContended();
      // Another writer (an operator, a node that took the expired lease while this one stalled) moves the revision.
      await (await s.bucket()).put(leaseKey(CHAIN), 'operator');
      // Refused, not waited out: the reason says which.
      await s.waitFor(`node-a lost ${CHAIN} refused`, 5 * TTL);
      expect(a.leases.holds(CHAIN)).toBe(false);
      // The other value lives its TTL; then one of the contenders takes the chain, after the loss.
      expect(await until(() => s.holding.has(CHAIN), 5 * TTL)).toBe(true);
      expect(s.lines().slice(0, 2)).toEqual([`node-a held ${CHAIN}`, `node-a lost ${CHAIN} refused`]);
      expect(s.lines()).toHaveLength(3);
      expect(s.overlaps).toEqual([]);
    },
  );

  scene('says lost on the holder that cannot renew for a TTL while nats-server is stopped, and leases again once it is back', async (s) => {
    const [a] = await s.heldAndContended();
    await s.nats.stop();
    const stopped = performance.now();
    const lost = await s.waitFor(`node-a lost ${CHAIN} unrenewed`, 5 * TTL);
    expect(lost.at - stopped).toBeLessThanOrEqual(TTL);
    expect(a.leases.holds(CHAIN)).toBe(false);
    await s.nats.start();
    // The bucket survived the restart (file storage); its expired lease is gone, and one node takes the chain.
    expect(await until(() => s.holding.has(CHAIN), 20 * TTL)).toBe(true);
    expect(s.lines()).toHaveLength(3);
    expect(s.overlaps).toEqual([]);
  });
});

describe('the leases bucket on nats-server', () => {
  scene(
    'refuses a create over a value, takes one over a delete marker or an expired key, refuses an update at an old revision, and expires delete markers by the TTL',
    async (s) => {
      const kv = await s.bucket();
      const key = leaseKey('aptos:testnet');
      const first = await kv.create(key, 'node-a');
      expect(await refusal(kv.create(key, 'node-b'))).toBe(10071);
      await kv.delete(key, { previousSeq: first });
      expect((await kv.get(key))?.operation).toBe('DEL');
      const second = await kv.create(key, 'node-b');
      expect(second).toBeGreaterThan(first);
      expect(await refusal(kv.update(key, 'node-a', first))).toBe(10071);
      // Past the TTL the key is no message at all.
      expect(await until(async () => (await kv.get(key)) === null, 5 * TTL, 100)).toBe(true);
      expect(await refusal(kv.update(key, 'node-b', second))).toBe(10071);
      const third = await kv.create(key, 'node-a');
      expect(third).toBeGreaterThan(second);
      // A delete marker expires by the TTL too.
      await kv.delete(key, { previousSeq: third });
      expect((await kv.get(key))?.operation).toBe('DEL');
      expect(await until(async () => (await kv.get(key)) === null, 5 * TTL, 100)).toBe(true);
      expect((await kv.status()).ttl).toBe(TTL);
    },
  );
});

/**
 * Kills the NATS server leading the bucket's copies (the harshest of the three to lose: the two left must elect
 * another); says which it was and the lease's revision then.
 */
async function killBucketLeader(s: Scene<NatsCluster>, c: Client): Promise<{ leader: string; revision: number }> {
  const stream = await bucketStream(c);
  expect(stream.config.num_replicas).toBe(3);
  const leader = stream.cluster?.leader;
  expect(s.nats.names).toContain(leader);
  const revision = (await c.leases.holders())[0]!.revision;
  await s.nats.servers[s.nats.names.indexOf(leader!)]!.stop('kill');
  return { leader: leader!, revision };
}

/** Whether the node the events name as the chain's holder holds it, and has written its lease `writes` times since `revision`. */
async function renewedSince(s: Scene<NatsCluster>, revision: number, writes: number): Promise<boolean> {
  const holder = s.holding.get(CHAIN);
  const c = s.clients.find((x) => x.node === holder);
  if (c === undefined || !c.leases.holds(CHAIN)) return false;
  const named = (await c.leases.holders().catch(() => []))[0];
  return named !== undefined && named.node === holder && named.revision >= revision + writes;
}

describe('the chains’ leases on a three-server NATS cluster (the bucket replicated to each, CHAINPOST_NATS_REPLICAS=3)', () => {
  clusterScene(
    'leases a chain again on the two servers left after the kill of the one leading the bucket, and hands it over within 2 TTLs when its holder dies then',
    async (s) => {
      const [a] = await s.heldAndContended();
      const { leader, revision } = await killBucketLeader(s, a);
      // JetStream takes a few seconds to elect another leader among the copies. The holder keeps the chain when one of
      // its renews succeeds in time; with a 2 s TTL none does (it says lost) and one of the two nodes takes the chain
      // again once the copies have a leader. Either way it is held again, and renewed, on the two servers left.
      expect(await until(() => renewedSince(s, revision, 2), 15_000, 100), s.lines().join(' | ')).toBe(true);
      expect((await bucketStream(a)).cluster?.leader).not.toBe(leader);

      // Its holder dies (no renew, no release): the other node takes the chain within 2 TTLs, on two servers of three.
      const holder = s.clients.find((c) => c.node === s.holding.get(CHAIN))!;
      const other = s.clients.find((c) => c !== holder)!;
      const before = s.log.length;
      await s.kill(holder);
      const died = performance.now();
      const held = await s.waitFor(`${other.node} held ${CHAIN}`, 5 * TTL, before);
      expect(held.at - died).toBeLessThan(2 * TTL);
      expect(other.leases.holds(CHAIN)).toBe(true);
      expect(s.overlaps).toEqual([]);
    },
  );

  clusterScene(
    'brings a bucket created with fewer copies to the node’s replicas',
    async (s) => {
      const [, b] = await s.heldAndContended();
      expect((await bucketStream(b)).config.num_replicas).toBe(1);
      const c = await s.client('node-c', { replicas: 3 });
      expect((await bucketStream(c)).config.num_replicas).toBe(3);
    },
    1,
  );
});
