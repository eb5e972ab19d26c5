import { PARTITIONS, type Hash32 } from '../engine/cluster/partitions.js';
import { OwnersMemory, planOwners, type OwnerEvent, type PartitionLeases } from '../engine/cluster/owners.js';
import { leaseTimings } from '../engine/ingest/leases.js';
import type { Logger } from '../engine/log.js';
import type { BusConnection } from './connect.js';
import { openPartitionLeases } from './leases.js';
import { registryNodes, type RegistryNode } from './nodes.js';

/** Opens this node's partition leases and the registry, and starts the owners loop. */
export async function startPartitionOwners(
  bus: BusConnection,
  options: { node: string; ttlMs: number; replicas?: number; hash: Hash32; log?: Logger },
): Promise<PartitionOwners> {
  const { node, ttlMs, replicas, hash, log } = options;
  const leases = await openPartitionLeases(bus, {
    node,
    ttlMs,
    ...(replicas === undefined ? {} : { replicas }),
    ...(log === undefined ? {} : { log }),
  });
  // A read gives up within a poll, as the leases' requests do.
  const registry = await registryNodes(bus, leaseTimings(leases.ttlMs).requestTimeoutMs);
  const owners = new PartitionOwners({ leases, registry, hash, ttlMs: leases.ttlMs, ...(log === undefined ? {} : { log }) });
  owners.start();
  return owners;
}

export interface OwnersParts {
  /** This node's partition leases (bus/leases.ts openPartitionLeases); the loop takes and releases them. */
  leases: PartitionLeases;
  /** The registry's nodes now (bus/nodes.ts registryNodes); a read that fails skips the round. */
  registry: () => Promise<readonly RegistryNode[]>;
  hash: Hash32;
  /** The leases' TTL, ms (the bucket's): the poll is a quarter of it. */
  ttlMs: number;
  log?: Logger;
}

/**
 * The owners loop of a node that matches and delivers: every poll it reads the registry's live nodes and the
 * partitions' holders, plans (engine/cluster/owners.ts) and contends for what the plan says, stops contending for
 * the rest, and hands over what another live node is preferred for, after the hand-over hook (the dispatcher drains
 * the partition's attempts in flight there). Owning is holding the lease: `owned()` and the events follow it.
 */
export class PartitionOwners {
  private readonly memory: OwnersMemory;
  private readonly everyMs: number;
  private readonly listeners = new Set<(event: OwnerEvent) => void>();
  /** The partitions this node contends for or holds (leases.take called, not released since). */
  private readonly wanted = new Set<number>();
  /** The hand-overs under way: the hook, then the release. */
  private readonly handing = new Map<number, Promise<void>>();
  private handOverHook: (partition: number) => Promise<void> = async () => {};
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  private stopped = false;
  private readonly unlisten: () => void;

  constructor(private readonly parts: OwnersParts) {
    this.memory = new OwnersMemory(parts.ttlMs);
    this.everyMs = Math.max(50, leaseTimings(parts.ttlMs).pollEveryMs);
    this.unlisten = parts.leases.onEvent((event) =>
      this.emit(
        event.kind === 'held'
          ? event
          : { ...event, reason: event.reason === 'released' && this.handing.has(event.partition) ? 'handed over' : event.reason },
      ),
    );
  }

  get node(): string {
    return this.parts.leases.node;
  }

  /** Plans now and every poll after. */
  start(): void {
    if (!this.stopped && this.round === undefined) this.poll();
  }

  /** The partitions this node owns now, each at its lease's revision. */
  owned(): Map<number, number> {
    return new Map(this.parts.leases.held().map((h) => [h.partition, h.revision]));
  }

  /** Calls `listener` with each partition this node comes to own (`held`) or stops owning (`lost`); returns how to stop. */
  onEvent(listener: (event: OwnerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Awaited before a partition is released for its preferred node (default: at once). */
  setHandOver(hook: (partition: number) => Promise<void>): void {
    this.handOverHook = hook;
  }

  /**
   * Releases the partition now, without a hand-over: this node cannot own it (its log lost it, refused or
   * superseded, or was not caught up with in time). A later poll may take it again, as the plan says.
   */
  async giveUp(partition: number): Promise<void> {
    if (!this.parts.leases.holds(partition) || this.handing.has(partition)) return;
    this.wanted.delete(partition);
    await this.parts.leases.release(partition);
  }

  /** Stops planning, lets the hand-overs under way finish, and releases every partition. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.round;
    await Promise.all(this.handing.values());
    await this.parts.leases.stop();
    this.unlisten();
  }

  private poll(): void {
    const run = this.plan().catch((err: unknown) => this.parts.log?.debug('partition owners: a round failed', { error: message(err) }));
    this.round = run;
    void run.then(() => {
      if (!this.stopped) this.timer = setTimeout(() => this.poll(), this.everyMs);
    });
  }

  private async plan(): Promise<void> {
    const { leases, registry, hash, ttlMs } = this.parts;
    const [nodes, holders] = await Promise.all([registry(), leases.holders()]);
    if (this.stopped) return;
    const held = new Map(holders.map((h) => [h.partition, h.node]));
    // The bucket as read may lag this node's own takes and releases: its own leases say what it holds.
    for (let partition = 0; partition < PARTITIONS; partition++)
      if (leases.holds(partition)) held.set(partition, this.node);
      else if (held.get(partition) === this.node) held.delete(partition);
    const sight = this.memory.see(
      this.node,
      nodes.filter((n) => n.owns),
      held,
      performance.now(),
      ttlMs,
    );
    const plan = planOwners(hash, sight);
    const take = new Set(plan.take);
    for (const partition of take)
      if (!this.handing.has(partition)) {
        this.wanted.add(partition);
        leases.take(partition);
      }
    for (const partition of this.wanted)
      if (!take.has(partition) && !leases.holds(partition)) {
        this.wanted.delete(partition);
        await leases.release(partition);
      }
    for (const partition of plan.handOver) if (leases.holds(partition) && !this.handing.has(partition)) this.handOver(partition);
  }

  private handOver(partition: number): void {
    const done = (async () => {
      try {
        await this.handOverHook(partition);
      } catch (err) {
        this.parts.log?.warn('partition owners: the hand-over hook failed; the partition is released anyway', {
          partition,
          error: message(err),
        });
      }
      this.wanted.delete(partition);
      await this.parts.leases.release(partition);
    })();
    this.handing.set(partition, done);
    void done.then(() => this.handing.delete(partition));
  }

  private emit(event: OwnerEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.parts.log?.error('partition owners: a listener failed', { partition: event.partition, error: message(err) });
      }
    }
  }
}

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));
