import { rmSync } from 'node:fs';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { encode } from '@msgpack/msgpack';
import { headers } from '@nats-io/transport-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BusControlPlane, CONTROL_SEQ, controlMessage, FORMAT_HEADER, type BusControlPlaneOptions } from '../bus/control-log.js';
import { connectBus, type BusConnection } from '../bus/connect.js';
import { CONTROL_STREAM, CONTROL_SUBJECT, checkMaxPayload, ensureControlStream } from '../bus/streams.js';
import { blockPayload, matchAfterControl } from '../app/cluster.js';
import type { Config } from '../engine/config/config.js';
import { hashKey, type KeyCreate } from '../engine/keys.js';
import { jsonLogger } from '../engine/log.js';
import { quietLog } from './kit/quiet-log.js';
import type { Table } from '../engine/ports.js';
import { changeApplier, type Change, type ChangeApplier, type StreamCreate } from '../engine/streams/control-plane.js';
import type { StoredStream } from '../engine/streams/model.js';
import { openStore, type Store } from '../storage/env.js';
import { lmdbKeyStore } from '../storage/keys.js';
import { startNatsServer, type NatsServer } from './kit/nats-server.js';
import { tempDir, until } from './helpers.js';
import { storedStream } from './stored-stream.js';

/**
 * The cluster's control plane against a real nats-server: three nodes in this process, each with its own LMDB store,
 * its own NATS connection and its own applier of the log, as three machines would have.
 */
const T0 = Date.UTC(2026, 0, 1);
const TENANT = 't_bus';
/** How long another node may take to apply a change (the design's "verify on another node waits up to 1 s"). */
const OTHER_NODE_MS = 1_000;

interface Node {
  dir: string;
  store: Store;
  bus: BusConnection;
  plane: BusControlPlane;
  /** Each change this node applied (refused ones too), in order: its sequence, its kind and what it names. */
  applied: string[];
  /** The store's controlSeq each time `committed` ran: it runs once the change's transaction committed. */
  committed: number[];
  /** Its log lines. */
  lines: string[];
}

let nats: NatsServer;
const nodes: Node[] = [];

/** The single-process applier (engine/streams/control-plane.ts) inside the bus's transaction, recording what it applies. */
function applierOf(node: Node): ChangeApplier {
  const real = changeApplier(node.store, lmdbKeyStore(node.store));
  return {
    applyInside: (change) => {
      node.applied.push(`${node.plane.applied() + 1} ${named(change)}`);
      const done = real.applyInside(change);
      return {
        applied: done.applied,
        committed: async () => {
          await done.committed();
          node.committed.push(node.store.get<number>('meta', CONTROL_SEQ)!);
        },
      };
    },
  };
}

const named = (change: Change): string =>
  change.kind === 'stream.create'
    ? `stream.create ${change.stream.id}`
    : change.kind === 'key.create'
      ? `key.create ${change.name}`
      : change.kind;

/** Starts a node on `dir` (a new one by default): its store, its connection and its applier, following the log. */
async function startNode(dir = tempDir(), options: BusControlPlaneOptions = {}): Promise<Node> {
  const store = openStore(dir);
  const bus = await connectBus({ servers: nats.url, maxReconnectWaitMs: 100 });
  const lines: string[] = [];
  const log = jsonLogger((line) => lines.push(line), Date.now, 'debug');
  const node = { dir, store, bus, applied: [], committed: [], lines } as unknown as Node;
  node.plane = new BusControlPlane(bus, store, applierOf(node), log, options);
  node.plane.start();
  nodes.push(node);
  return node;
}

async function stopNode(node: Node): Promise<void> {
  nodes.splice(nodes.indexOf(node), 1);
  await node.plane.stop();
  await node.bus.close();
  await node.store.close();
}

const stream = (id: string): StoredStream => storedStream(TENANT, id, T0);
const create = (id: string, maxStreams = 10): StreamCreate => ({ kind: 'stream.create', stream: stream(id), maxStreams });
const newKey = (name: string): KeyCreate => ({
  kind: 'key.create',
  hash: hashKey(`cpk_${name}`),
  name,
  newTenant: { id: `t_${name}` },
  at: T0,
});
const CONTROL_TABLES: Table[] = ['streams', 'streamAddresses', 'keys', 'tenants'];
const rows = (s: Store) => CONTROL_TABLES.map((table) => s.range(table).map(({ key, value }) => [table, key, value]));
const streamIds = (s: Store) => s.range<StoredStream>('streams').map(({ value }) => value.id);

/** The stream's last sequence, as JetStream has it. */
async function lastSeq(node: Node): Promise<number> {
  return (await (await jetstreamManager(node.bus.nc)).streams.info(CONTROL_STREAM)).state.last_seq;
}

/** Resolves the next time the node's connection goes up (true) or down (false). */
const nextStatus = (node: Node, up: boolean): Promise<void> =>
  new Promise((resolve) => {
    const off = node.bus.onStatus((now) => {
      if (now !== up) return;
      off();
      resolve();
    });
  });

beforeEach(async () => {
  nats = await startNatsServer();
  const bus = await connectBus({ servers: nats.url });
  await ensureControlStream(await jetstreamManager(bus.nc));
  await bus.close();
});

afterEach(async () => {
  for (const node of nodes.splice(0)) {
    await node.plane.stop();
    await node.bus.close();
    await node.store.close();
    rmSync(node.dir, { recursive: true, force: true });
  }
  await nats.close();
});

describe('the control plane over NATS JetStream', () => {
  it('applies a stream created through one node to every other node within 1 s', async () => {
    const [one, two, three] = [await startNode(), await startNode(), await startNode()];
    expect(await one.plane.write(create('a'))).toEqual(stream('a'));
    expect(await three.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
    expect(await two.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
    for (const node of [two, three]) {
      expect(node.store.get('streams', `${TENANT}/a`)).toEqual(stream('a'));
      expect(node.applied).toEqual(['1 stream.create a']);
      expect(node.committed).toEqual([1]);
    }
  });

  it("answers a write once the writing node applied it: the stream is in its store at once; a change its checks refuse rejects with their ApiError, and the node's sequence moves past it", async () => {
    const one = await startNode();
    await one.plane.write(create('a', 1));
    // Read at once, no wait: read-your-writes on the node that answered.
    expect(one.store.get('streams', `${TENANT}/a`)).toEqual(stream('a'));
    await expect(one.plane.write(create('b', 1))).rejects.toMatchObject({
      status: 400,
      message: 'streams: a tenant holds at most 1 (CHAINPOST_MAX_STREAMS)',
    });
    expect(streamIds(one.store)).toEqual(['a']);
    expect(one.store.get('meta', CONTROL_SEQ)).toBe(2);
    // The key store's changes go through the same log.
    expect((await one.plane.write(newKey('ops'))).record.name).toBe('ops');
    expect(one.store.get('meta', CONTROL_SEQ)).toBe(3);
    expect(one.applied).toEqual(['1 stream.create a', '2 stream.create b', '3 key.create ops']);
    expect(one.committed).toEqual([1, 3]);
  });

  it("lets exactly one of two creates racing through two nodes for a tenant's last stream through, the same one on every node", async () => {
    const [one, two, three] = [await startNode(), await startNode(), await startNode()];
    await one.plane.write(create('first', 2));
    const racing = await Promise.allSettled([one.plane.write(create('x', 2)), two.plane.write(create('y', 2))]);
    const won = racing.flatMap((r) => (r.status === 'fulfilled' ? [r.value.id] : []));
    const lost = racing.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ status: 400, message: 'streams: a tenant holds at most 2 (CHAINPOST_MAX_STREAMS)' });
    for (const node of [one, two, three]) {
      expect(await node.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
      expect(streamIds(node.store)).toEqual(['first', won[0]].sort());
    }
    expect(rows(two.store)).toEqual(rows(one.store));
    expect(rows(three.store)).toEqual(rows(one.store));
  });

  it('resumes a stopped node at its controlSeq: it applies what it missed, once, and nothing it had applied', async () => {
    const [one, three] = [await startNode(), await startNode()];
    await one.plane.write(create('a'));
    await one.plane.write(newKey('ops'));
    expect(await three.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
    expect(three.applied).toEqual(['1 stream.create a', '2 key.create ops']);
    const dir = three.dir;
    await stopNode(three);
    await one.plane.write(create('b'));
    await one.plane.write(newKey('ci'));
    await expect(one.plane.write(newKey('ci'))).rejects.toMatchObject({ status: 409 });
    await one.plane.write(create('c'));
    const again = await startNode(dir);
    expect(again.plane.applied()).toBe(2);
    expect(await again.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
    expect(again.applied).toEqual(['3 stream.create b', '4 key.create ci', '5 key.create ci', '6 stream.create c']);
    expect(again.committed).toEqual([3, 4, 6]);
    expect(again.store.get('meta', CONTROL_SEQ)).toBe(6);
    expect(rows(again.store)).toEqual(rows(one.store));
  });

  it('applies each change once to a store that two processes apply the log to (a CLI command beside a server): the later one finds its controlSeq there in the write transaction and skips it', async () => {
    const [writer, server] = [await startNode(), await startNode()];
    // A second applier of the log on the server's store, with its own connection, as the CLI has.
    const bus = await connectBus({ servers: nats.url });
    const beside = { ...server, applied: [] as string[], committed: [] as number[] } as Node;
    beside.plane = new BusControlPlane(bus, server.store, applierOf(beside), quietLog(Date.now));
    beside.plane.start();
    try {
      for (const id of ['a', 'b', 'c']) await writer.plane.write(create(id));
      await writer.plane.write(newKey('ops'));
      expect(await server.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
      expect(await beside.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
      // Each change applied by one of the two, never by both.
      expect([...server.applied, ...beside.applied].sort()).toEqual([
        '1 stream.create a',
        '2 stream.create b',
        '3 stream.create c',
        '4 key.create ops',
      ]);
      expect(server.store.get('meta', CONTROL_SEQ)).toBe(4);
      expect(rows(server.store)).toEqual(rows(writer.store));
    } finally {
      await beside.plane.stop();
      await bus.close();
    }
  });

  it('appends a change published again with the same message id once, and applies it once', async () => {
    const [one, two] = [await startNode(), await startNode()];
    const js = jetstream(one.bus.nc);
    const { data, headers: h } = controlMessage(create('once'));
    const first = await js.publish(CONTROL_SUBJECT, data, { msgID: 'lost-ack-1', headers: h });
    const second = await js.publish(CONTROL_SUBJECT, data, { msgID: 'lost-ack-1', headers: h });
    expect(first).toMatchObject({ seq: 1, duplicate: false });
    expect(second).toMatchObject({ seq: 1, duplicate: true });
    await one.plane.write(create('after'));
    expect(await lastSeq(one)).toBe(2);
    for (const node of [one, two]) {
      expect(await node.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
      expect(node.applied).toEqual(['1 stream.create once', '2 stream.create after']);
    }
  });

  it('stops applying at a change of a newer format, with one error line naming both versions, and refuses writes after it', async () => {
    const one = await startNode();
    await one.plane.write(create('a'));
    const h = headers();
    h.set(FORMAT_HEADER, '2');
    await jetstream(one.bus.nc).publish(CONTROL_SUBJECT, encode({ v: 2, change: { kind: 'stream.create', future: true } }), { headers: h });
    const errors = () => one.lines.filter((line) => JSON.parse(line).level === 'error');
    expect(await until(() => errors().length > 0, 10_000)).toBe(true);
    await expect(one.plane.write(create('b'))).rejects.toMatchObject({
      status: 503,
      message: 'this node stopped applying the control log: change 2 is in format 2, this node reads format 1: upgrade it',
    });
    expect(errors()).toHaveLength(1);
    expect(JSON.parse(errors()[0]!)).toMatchObject({
      msg: 'control log: this node stops applying changes: change 2 is in format 2, this node reads format 1: upgrade it',
      seq: 2,
      format: 2,
      reads: 1,
    });
    expect(one.store.get('meta', CONTROL_SEQ)).toBe(1);
    expect(one.applied).toEqual(['1 stream.create a']);
  });

  it('holds a match round until the changes its consumer delivered are applied, asking the server nothing (matchAfterControl)', async () => {
    // The second node's applier holds each change it is delivered while `held` is set.
    let held: Promise<void> | undefined;
    let release = (): void => {};
    const one = await startNode();
    const two = await startNode(tempDir(), { beforeApply: async () => held });
    await one.plane.write(create('a'));
    // Applied on the second node (asking the server how far the log goes): told-as-far only holds for what its consumer
    // delivered, and under load 'a' came after that check, then was held in place of 'b' (the round waited for 'a').
    expect(await two.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
    const round = matchAfterControl(
      two,
      jsonLogger((line) => two.lines.push(line), Date.now, 'debug'),
    );
    // Nothing delivered and not applied: the round goes at once, and no message leaves this node's connection.
    const sent = two.bus.nc.stats().outMsgs;
    await round();
    expect(two.bus.nc.stats().outMsgs).toBe(sent);

    held = new Promise((resolve) => (release = resolve));
    await one.plane.write(create('b'));
    // Delivered to the second node, held there before it is applied.
    expect(await until(async () => !(await two.plane.caughtUpAsTold(0)), OTHER_NODE_MS)).toBe(true);
    let matched = false;
    const waiting = round().then(() => (matched = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(matched).toBe(false);
    release();
    await waiting;
    expect(streamIds(two.store)).toEqual(['a', 'b']);
    expect(two.bus.nc.stats().outMsgs).toBe(sent);
    expect(two.lines.filter((line) => line.includes('not caught up before matching'))).toEqual([]);
  });

  it('refuses writes with 503 and Retry-After while nats-server is down, and writes again once it is back', async () => {
    const [one, two] = [await startNode(), await startNode()];
    await one.plane.write(create('a'));
    const down = nextStatus(one, false);
    await nats.stop();
    await down;
    await expect(one.plane.write(create('b'))).rejects.toMatchObject({ status: 503, headers: { 'retry-after': '5' } });
    const up = [nextStatus(one, true), nextStatus(two, true)];
    await nats.start();
    await Promise.all(up);
    // The log survived the restart (file storage), and both appliers follow it again.
    await one.plane.write(create('c'));
    expect(await two.plane.caughtUp(OTHER_NODE_MS)).toBe(true);
    for (const node of [one, two]) expect(node.applied).toEqual(['1 stream.create a', '2 stream.create c']);
  });
});

describe('the NATS server chainpost needs', () => {
  it("refuses a server whose max_payload is under a block's 8 MB (32 MB for a node following Bitcoin), naming max_payload and the value to set", async () => {
    const small = await startNatsServer({ maxPayload: '1MB' });
    try {
      const bus = await connectBus({ servers: small.url });
      expect(() => checkMaxPayload(bus.nc)).toThrow(
        "the NATS server's max_payload is 1048576 bytes; this node publishes blocks of up to 8388608 bytes: set max_payload: 8MB in its configuration",
      );
      expect(() => checkMaxPayload(bus.nc, blockPayload({ bitcoin: { url: 'http://127.0.0.1:8332' } } as Config))).toThrow(
        "the NATS server's max_payload is 1048576 bytes; this node publishes blocks of up to 33554432 bytes: set max_payload: 32MB in its configuration",
      );
      await bus.close();
    } finally {
      await small.close();
    }
    const bus = await connectBus({ servers: nats.url });
    expect(() => checkMaxPayload(bus.nc)).not.toThrow();
    // The kit's server takes 8 MB, not a Bitcoin block's 32.
    expect(() => checkMaxPayload(bus.nc, blockPayload({ bitcoin: {} } as Config))).not.toThrow();
    expect(() => checkMaxPayload(bus.nc, blockPayload({ bitcoin: { url: 'http://127.0.0.1:8332' } } as Config))).toThrow(
      /max_payload: 32MB/,
    );
    await bus.close();
  });

  it('keeps CHAINPOST_CONTROL as it made it (file storage, its subject, old messages discarded, no age limit) when ensured again', async () => {
    const bus = await connectBus({ servers: nats.url });
    const jsm = await jetstreamManager(bus.nc);
    await ensureControlStream(jsm);
    const { config } = await jsm.streams.info(CONTROL_STREAM);
    expect(config).toMatchObject({ subjects: [CONTROL_SUBJECT], storage: 'file', discard: 'old', max_age: 0, num_replicas: 1 });
    await bus.close();
  });

  it('connects with the credentials in the URL, and shows the servers without them', async () => {
    const guarded = await startNatsServer({ extraConfig: 'authorization { user: node, password: "s3cret-pass" }' });
    try {
      const servers = `nats://node:s3cret-pass@127.0.0.1:${guarded.port}`;
      const bus = await connectBus({ servers });
      expect(bus.up()).toBe(true);
      expect(bus.servers).toBe(`nats://***@127.0.0.1:${guarded.port}`);
      await bus.close();
    } finally {
      await guarded.close();
    }
  });
});
