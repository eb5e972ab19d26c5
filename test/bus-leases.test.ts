import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectBus, type BusConnection } from '../bus/connect.js';
import { LEASES_BUCKET, leaseKey, openChainLeases, type BusChainLeases } from '../bus/leases.js';
import type { LeaseEvent } from '../engine/ingest/leases.js';
import { startNatsServer, type NatsServer } from './kit/nats-server.js';
import { until } from './helpers.js';

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

let nats: NatsServer;
let clients: Client[] = [];
let log: Logged[] = [];
/** Who holds each chain as the events say, and each time a second node said it held a chain someone held. */
let holding: Map<string, string>;
let overlaps: string[];
/** The revision each chain was last taken at. */
const heldAt = new Map<string, number>();
const cleanups: (() => Promise<void> | void)[] = [];

function record(node: string, event: LeaseEvent): void {
  log.push({
    line: event.kind === 'held' ? `${node} held ${event.chain}` : `${node} lost ${event.chain} ${event.reason}`,
    at: performance.now(),
  });
  const holder = holding.get(event.chain);
  if (event.kind === 'held') {
    heldAt.set(event.chain, event.revision);
    if (holder !== undefined) overlaps.push(`${node} held ${event.chain} while ${holder} held it`);
    holding.set(event.chain, node);
  } else if (holder === node) holding.delete(event.chain);
}

/** A node's lease client, on its own connection (to `servers`: the server, or a proxy before it). */
async function client(node: string, { ttlMs = TTL, servers = nats.url } = {}): Promise<Client> {
  const bus = await connectBus({ servers, maxReconnectWaitMs: 100 });
  const leases = await openChainLeases(bus, { node, ttlMs });
  const off = leases.onEvent((event) => record(node, event));
  const c: Client = {
    node,
    bus,
    leases,
    mute: () => {
      off();
      // The node is gone: it holds nothing as far as the events go.
      for (const [chain, holder] of holding) if (holder === node) holding.delete(chain);
    },
  };
  clients.push(c);
  return c;
}

/** node-a holding CHAIN, then node-b contending for it; node-a's connection to `servers`. */
async function heldAndContended({ ttlMs = TTL, servers = nats.url } = {}): Promise<[Client, Client]> {
  const a = await client('node-a', { ttlMs, servers });
  const b = await client('node-b', { ttlMs });
  a.leases.take(CHAIN);
  await waitFor(`node-a held ${CHAIN}`, 5 * ttlMs);
  b.leases.take(CHAIN);
  return [a, b];
}

/** What a kill leaves: no event, no release; its connection dropped first so nothing more reaches the server. */
async function kill(c: Client): Promise<void> {
  c.mute();
  clients.splice(clients.indexOf(c), 1);
  await c.bus.close();
  await c.leases.stop();
}

/** The JetStream error code a request was refused with. */
const refusal = (request: Promise<unknown>): Promise<unknown> =>
  request.then(
    () => 'not refused',
    (err: { code?: unknown }) => err.code,
  );

const lines = (): string[] => log.map((l) => l.line);
const seen = (line: string): Logged | undefined => log.find((l) => l.line === line);
/** Resolves the entry of `line` once it is logged; rejects after `ms`. */
async function waitFor(line: string, ms: number): Promise<Logged> {
  if (!(await until(() => seen(line) !== undefined, ms))) throw new Error(`no "${line}" within ${ms} ms; logged: ${lines().join(' | ')}`);
  return seen(line)!;
}

/** The bucket as another client reads it (the test's own connection). */
async function bucket(ttlMs = TTL): Promise<KV> {
  const bus = await connectBus({ servers: nats.url });
  cleanups.push(() => bus.close());
  return new Kvm(jetstream(bus.nc)).create(LEASES_BUCKET, { ttl: ttlMs, history: 1 });
}

/** A TCP relay before the server for one node: `cut` drops its connections and every new one (a partition). */
async function relay(): Promise<{ url: string; cut(): void }> {
  const sockets = new Set<Socket>();
  let open = true;
  const server: Server = createServer((inbound) => {
    if (!open) return void inbound.destroy();
    const outbound = tcpConnect(nats.port, '127.0.0.1');
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
  cleanups.push(
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

beforeEach(async () => {
  nats = await startNatsServer();
  log = [];
  holding = new Map();
  overlaps = [];
  heldAt.clear();
});

afterEach(async () => {
  for (const c of clients.splice(0)) {
    c.mute();
    await c.leases.stop();
    await c.bus.close();
  }
  for (const done of cleanups.splice(0)) await done();
  await nats.close();
});

describe('the chains’ leases over a JetStream KV bucket', () => {
  it('gives each chain to exactly one of three contending nodes, and says who holds it at which revision', async () => {
    const chains = ['0x1', 'bitcoin', 'aptos:testnet'];
    const nodes = [await client('node-a'), await client('node-b'), await client('node-c')];
    for (const c of nodes) for (const chain of chains) c.leases.take(chain);
    expect(await until(() => chains.every((chain) => holding.has(chain)), 5 * TTL)).toBe(true);
    // Two TTLs of polls and renews: nobody else takes a chain held.
    const settled = performance.now();
    await until(() => performance.now() - settled > 2 * TTL, 3 * TTL, 100);
    expect(overlaps).toEqual([]);
    expect(lines().filter((l) => l.includes(' lost '))).toEqual([]);
    expect(lines()).toHaveLength(3);
    for (const chain of chains) expect(nodes.filter((c) => c.leases.holds(chain)).map((c) => c.node)).toEqual([holding.get(chain)]);
    const holders = await nodes[0]!.leases.holders();
    const byChain = (a: { chain: string }, b: { chain: string }) => (a.chain < b.chain ? -1 : 1);
    expect(holders.map(({ chain, node }) => ({ chain, node })).sort(byChain)).toEqual(
      chains.map((chain) => ({ chain, node: holding.get(chain) })).sort(byChain),
    );
    // Renewed since taken: each key's revision moved past the one it was taken at.
    for (const h of holders) expect(h.revision).toBeGreaterThan(heldAt.get(h.chain)!);
  });

  it('keeps a chain with the node that renews it past several TTLs, while another node contends', async () => {
    const [a, b] = await heldAndContended();
    const revision = async () => (await a.leases.holders())[0]?.revision ?? 0;
    const taken = await revision();
    // Three renews a TTL: nine renews is three TTLs at least.
    expect(await until(async () => (await revision()) >= taken + 9, 10 * TTL, 100)).toBe(true);
    expect(lines()).toEqual([`node-a held ${CHAIN}`]);
    expect(a.leases.holds(CHAIN)).toBe(true);
    expect(b.leases.holds(CHAIN)).toBe(false);
    expect((await b.leases.holders())[0]).toMatchObject({ chain: CHAIN, node: 'node-a' });
  });

  it('hands a chain whose holder was killed (no renew, no release) to another node within 2 TTLs', async () => {
    const [a, b] = await heldAndContended();
    await kill(a);
    const killed = performance.now();
    // Nothing released: the bucket still names the killed node.
    expect((await b.leases.holders())[0]).toMatchObject({ node: 'node-a' });
    const held = await waitFor(`node-b held ${CHAIN}`, 5 * TTL);
    expect(held.at - killed).toBeLessThan(2 * TTL);
    expect(b.leases.holds(CHAIN)).toBe(true);
    expect((await b.leases.holders())[0]).toMatchObject({ node: 'node-b' });
  });

  it('hands a chain released on a clean stop to a contender within one poll, long before the lease could expire', async () => {
    // A longer TTL, so the time the lease could have taken to expire is well apart from one poll (750 ms).
    const ttlMs = 3_000;
    const [a, b] = await heldAndContended({ ttlMs });
    await a.leases.stop();
    const released = performance.now();
    const held = await waitFor(`node-b held ${CHAIN}`, 5 * ttlMs);
    // Renewed at most a third of the TTL before the stop, the lease would have lived two thirds of it on.
    expect(held.at - released).toBeLessThan((2 * ttlMs) / 3);
    expect(lines()).toEqual([`node-a held ${CHAIN}`, `node-a lost ${CHAIN} released`, `node-b held ${CHAIN}`]);
    expect(overlaps).toEqual([]);
  });

  it('says lost on a holder cut off from the server before another node takes its chain: never two holders at once', async () => {
    const cutOff = await relay();
    await heldAndContended({ servers: cutOff.url });
    cutOff.cut();
    const held = await waitFor(`node-b held ${CHAIN}`, 5 * TTL);
    const lost = seen(`node-a lost ${CHAIN} unrenewed`);
    expect(lost).toBeDefined();
    expect(lost!.at).toBeLessThan(held.at);
    expect(lines()).toEqual([`node-a held ${CHAIN}`, `node-a lost ${CHAIN} unrenewed`, `node-b held ${CHAIN}`]);
    expect(overlaps).toEqual([]);
  });

  it('says lost at once when the bucket refuses a renew because the lease moved on, before its expiry lets anyone take it', async () => {
    const [a] = await heldAndContended();
    // Another writer (an operator, a node that took the expired lease while this one stalled) moves the revision.
    await (await bucket()).put(leaseKey(CHAIN), 'operator');
    // Refused, not waited out: the reason says which.
    await waitFor(`node-a lost ${CHAIN} refused`, 5 * TTL);
    expect(a.leases.holds(CHAIN)).toBe(false);
    // The other value lives its TTL; then one of the contenders takes the chain, after the loss.
    expect(await until(() => holding.has(CHAIN), 5 * TTL)).toBe(true);
    expect(lines().slice(0, 2)).toEqual([`node-a held ${CHAIN}`, `node-a lost ${CHAIN} refused`]);
    expect(lines()).toHaveLength(3);
    expect(overlaps).toEqual([]);
  });

  it('says lost on the holder that cannot renew for a TTL while nats-server is stopped, and leases again once it is back', async () => {
    const [a] = await heldAndContended();
    await nats.stop();
    const stopped = performance.now();
    const lost = await waitFor(`node-a lost ${CHAIN} unrenewed`, 5 * TTL);
    expect(lost.at - stopped).toBeLessThanOrEqual(TTL);
    expect(a.leases.holds(CHAIN)).toBe(false);
    await nats.start();
    // The bucket survived the restart (file storage); its expired lease is gone, and one node takes the chain.
    expect(await until(() => holding.has(CHAIN), 20 * TTL)).toBe(true);
    expect(lines()).toHaveLength(3);
    expect(overlaps).toEqual([]);
  });
});

describe('the leases bucket on nats-server', () => {
  it('refuses a create over a value, takes one over a delete marker or an expired key, refuses an update at an old revision, and expires delete markers by the TTL', async () => {
    const kv = await bucket();
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
  });
});
