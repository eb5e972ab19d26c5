import xxhash from 'xxhash-wasm';
import { connectBus, type BusConnection } from '../bus/connect.js';
import { readCluster, registryTtl, startNodeRegistry, type ClusterState, type NodeRegistry } from '../bus/nodes.js';
import { startPartitionOwners, type PartitionOwners } from '../bus/owners.js';
import type { ClusterView } from '../engine/cluster/node.js';
import { preferredNode, type OwnerEvent } from '../engine/cluster/owners.js';
import { PARTITIONS, type Hash32 } from '../engine/cluster/partitions.js';
import { ALL_ROLES } from '../engine/config/roles.js';
import type { NatsServer } from './kit/nats-server.js';
import { until } from './helpers.js';

/**
 * Partition owners loops against a real nats-server (test/bus-owners.test.ts, test/system/bus-owners.test.ts): each
 * node with its own NATS connection, registry entry and loop, as separate machines would have. A sampler reads
 * every live loop's `owned()` every few milliseconds and keeps each instant two of them counted one partition.
 */
export interface Owner {
  node: string;
  bus: BusConnection;
  registry: NodeRegistry;
  owners: PartitionOwners;
  /** Its events as `<node> held|lost <partition> [reason]`, in order. */
  events: string[];
}

const { h32 } = await xxhash();
export const hash: Hash32 = (text) => h32(text);

export class OwnersScene {
  readonly owners: Owner[] = [];
  /** Each sampled instant where two live loops owned one partition. */
  readonly overlaps: string[] = [];
  samples = 0;
  private readonly sampler: NodeJS.Timeout;

  constructor(
    readonly nats: NatsServer,
    readonly ttlMs: number,
  ) {
    this.sampler = setInterval(() => this.sample(), 5);
  }

  /** A node: its registry entry written (listing its partitions), then its owners loop started. */
  async add(node: string): Promise<Owner> {
    const bus = await connectBus({ servers: this.nats.url, maxReconnectWaitMs: 100 });
    let owners: PartitionOwners | undefined;
    const view: ClusterView = {
      node,
      roles: ALL_ROLES,
      version: '0.0.0-test',
      startedAt: Date.now(),
      http: () => undefined,
      bus: () => ({ up: true, servers: this.nats.url }),
      applied: () => 0,
      partitions: () => [...(owners?.owned() ?? [])].map(([partition, revision]) => ({ partition, revision, queued: null })),
    };
    const registry = await startNodeRegistry(bus, view, { ttlMs: registryTtl(this.ttlMs) });
    owners = await startPartitionOwners(bus, { node, ttlMs: this.ttlMs, hash });
    const owner: Owner = { node, bus, registry, owners, events: [] };
    owners.onEvent((e: OwnerEvent) =>
      owner.events.push(e.kind === 'held' ? `${node} held ${e.partition}` : `${node} lost ${e.partition} ${e.reason}`),
    );
    this.owners.push(owner);
    return owner;
  }

  /** A node killed: no release, no registry delete; its connection closed first so nothing more reaches the server. */
  async kill(owner: Owner): Promise<void> {
    this.owners.splice(this.owners.indexOf(owner), 1);
    await owner.bus.close();
    await owner.owners.stop();
    await owner.registry.stop();
  }

  /** A node stopped cleanly: its partitions released, its registry entry deleted. */
  async stop(owner: Owner): Promise<void> {
    await owner.owners.stop();
    this.owners.splice(this.owners.indexOf(owner), 1);
    await owner.registry.stop();
    await owner.bus.close();
  }

  /** Each partition's preferred node among the live loops: what a settled cluster owns. */
  plan(nodes = this.owners.map((o) => o.node)): Map<string, number[]> {
    const split = new Map<string, number[]>(nodes.map((n) => [n, []]));
    for (let p = 0; p < PARTITIONS; p++) split.get(preferredNode(hash, nodes, p)!)!.push(p);
    return split;
  }

  /** What each live loop owns now. */
  split(): Map<string, number[]> {
    return new Map(this.owners.map((o) => [o.node, [...o.owners.owned().keys()].sort((a, b) => a - b)]));
  }

  /** Whether every live loop owns exactly the partitions the plan gives it. */
  settled(): boolean {
    const split = this.split();
    return [...this.plan()].every(([node, ps]) => JSON.stringify(split.get(node)) === JSON.stringify(ps));
  }

  /** Resolves once the loops own the plan's split; rejects after `ms`, saying what they own. */
  async settle(ms: number): Promise<void> {
    if (!(await until(() => this.settled(), ms, 20)))
      throw new Error(`not settled within ${ms} ms: ${JSON.stringify([...this.split()].map(([n, ps]) => [n, ps.length]))}`);
  }

  /** The cluster as `status --cluster` reads it, on a connection of the test's own. */
  async read(): Promise<ClusterState> {
    const bus = await connectBus({ servers: this.nats.url });
    try {
      return await readCluster(bus);
    } finally {
      await bus.close();
    }
  }

  /** How many partitions the live loops own between them. */
  ownedCount = (): number => this.owners.reduce((n, o) => n + o.owners.owned().size, 0);

  private sample(): void {
    this.samples++;
    const seen = new Map<number, string>();
    for (const o of this.owners)
      for (const p of o.owners.owned().keys()) {
        const other = seen.get(p);
        if (other !== undefined) this.overlaps.push(`${o.node} and ${other} both owned ${p}`);
        seen.set(p, o.node);
      }
  }

  async close(): Promise<void> {
    clearInterval(this.sampler);
    for (const o of [...this.owners]) await this.stop(o).catch(() => {});
    await this.nats.close();
  }
}
