import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { connectBus, type BusConnection } from '../../bus/connect.js';
import { openChainLeases } from '../../bus/leases.js';
import { readCluster, startNodeRegistry, type NodeRegistry } from '../../bus/nodes.js';
import { CONTROL_SUBJECT, ensureControlStream } from '../../bus/streams.js';
import type { ClusterView, ConsumerLag } from '../../engine/cluster/node.js';
import { ALL_ROLES } from '../../engine/config/roles.js';
import { onOwnNatsServer, type NatsServer } from '../kit/nats-server.js';
import { until } from '../helpers.js';

/**
 * The node registry (bucket chainpost-nodes) against a real nats-server: nodes' registries in this process, each on
 * its own connection. The bucket's TTL runs on the server's wall time: short here, every wait polls with a deadline.
 * Each case has its own nats-server (the first registry sets the bucket's TTL), so the cases run at once.
 */
const TTL = 1_500;

/** A node's view with the figures a test sets. */
function view(node: string, figures: Partial<Pick<ClusterView, 'leases' | 'consumers'>> & { applied?: number } = {}): ClusterView {
  return {
    node,
    roles: ALL_ROLES,
    version: '0.0.0-test',
    startedAt: Date.parse('2026-01-01T00:00:00Z'),
    http: () => '127.0.0.1:8080',
    bus: () => ({ up: true, servers: 'nats://127.0.0.1' }),
    applied: () => figures.applied ?? 0,
    ...(figures.leases === undefined ? {} : { leases: figures.leases }),
    ...(figures.consumers === undefined ? {} : { consumers: figures.consumers }),
  };
}

class Scene {
  private cleanups: (() => Promise<unknown>)[] = [];
  constructor(readonly nats: NatsServer) {}

  async bus(): Promise<BusConnection> {
    const bus = await connectBus({ servers: this.nats.url, maxReconnectWaitMs: 100 });
    this.cleanups.push(() => bus.close());
    return bus;
  }

  async registry(v: ClusterView, bus?: BusConnection): Promise<NodeRegistry> {
    const registry = await startNodeRegistry(bus ?? (await this.bus()), v, { ttlMs: TTL });
    this.cleanups.unshift(() => registry.stop());
    return registry;
  }

  private reader: Promise<BusConnection> | undefined;

  /** The registry's node ids as `status --cluster` reads them (on a connection of the test's own). */
  async listed(): Promise<string[]> {
    this.reader ??= this.bus();
    return (await readCluster(await this.reader)).nodes.map((n) => n.node);
  }

  async close(): Promise<void> {
    for (const c of this.cleanups) await c().catch(() => {});
    await this.nats.close();
  }
}

function scene(name: string, body: (s: Scene) => Promise<void>): void {
  it.concurrent(name, () => onOwnNatsServer((nats) => new Scene(nats), body), 60_000);
}

describe('the node registry (bucket chainpost-nodes)', () => {
  scene("writes a node's roles, the leases it holds at their revisions, its control log lag and its consumers' lags", async (s) => {
    const bus = await s.bus();
    await ensureControlStream(await jetstreamManager(bus.nc));
    const leases = await openChainLeases(bus, { node: 'node-a', ttlMs: 2_000 });
    leases.take('0x1');
    expect(await until(() => leases.holds('0x1'), 10_000)).toBe(true);
    const consumers = async (): Promise<ConsumerLag[]> => [{ name: 'blocks 0x2', lag: 3 }];
    const registry = await s.registry(view('node-a', { leases: () => leases.held(), consumers }), bus);
    // Two changes in the log, none applied by this node.
    const js = jetstream(bus.nc);
    await js.publish(CONTROL_SUBJECT, 'one');
    await js.publish(CONTROL_SUBJECT, 'two');
    await registry.beat();

    const state = await readCluster(await s.bus());
    expect(state.nodes).toHaveLength(1);
    const [entry] = state.nodes;
    expect(entry).toMatchObject({
      node: 'node-a',
      roles: ['api', 'ingest', 'match', 'deliver'],
      version: '0.0.0-test',
      startedAt: '2026-01-01T00:00:00.000Z',
      http: '127.0.0.1:8080',
      bus: { up: true },
      control: { applied: 0, last: 2, lag: 2 },
      consumers: [{ name: 'blocks 0x2', lag: 3 }],
    });
    // The lease at the revision of the node's take or a renew since: the bucket's holder agrees.
    expect(entry!.leases.map((l) => l.chain)).toEqual(['0x1']);
    expect(state.leases).toEqual([{ chain: '0x1', node: 'node-a', revision: expect.any(Number) }]);
    expect(entry!.leases[0]!.revision).toBeLessThanOrEqual(state.leases[0]!.revision);
    expect(state.streams.find((x) => x.name === 'CHAINPOST_CONTROL')).toMatchObject({ messages: 2, lastSeq: 2 });
    expect(state.streams.find((x) => x.name === 'KV_chainpost-nodes')).toMatchObject({ messages: 1 });
    await leases.stop();
  });

  scene('drops a node that stopped writing (killed) after the TTL, and one that stops cleanly at once', async (s) => {
    const killedBus = await s.bus();
    const killed = await s.registry(view('node-killed'), killedBus);
    const stopping = await s.registry(view('node-stopping'));
    await s.registry(view('node-staying'));
    expect(await s.listed()).toEqual(['node-killed', 'node-staying', 'node-stopping']);

    await stopping.stop();
    expect(await s.listed()).toEqual(['node-killed', 'node-staying']);

    // A kill: the connection goes and nothing more is written, nothing deleted.
    await killedBus.close();
    expect(await until(async () => !(await s.listed()).includes('node-killed'), 4 * TTL, 100)).toBe(true);
    // The TTL removes only who stopped writing: the staying node, beating, is still there.
    expect(await s.listed()).toEqual(['node-staying']);
    await killed.stop();
  });
});
