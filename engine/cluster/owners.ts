/**
 * Who owns which delivery partition (docs/decisions/cluster.md, Part 2): rendezvous hashing over the live nodes that
 * own partitions, each partition preferring the node with the highest hash of `${node}/${partition}`. A node joining
 * or leaving changes the preferred node of the partitions it wins or held, about PARTITIONS / nodes, and no other.
 * The plan is a function of what one node sees (the registry's nodes, the leases' holders, since when each partition
 * is free): the bus's owners loop (bus/owners.ts) applies it every poll.
 */
import type { Role } from '../config/roles.js';
import type { Leases } from '../ingest/leases.js';
import { PARTITIONS, type Hash32 } from './partitions.js';

/** The partitions' leases (key `partition.<n>` in the leases bucket). */
export type PartitionLeases = Leases<'partition', number>;

/** Why a node stopped owning a partition: its lease's loss, or handed over to the partition's preferred node. */
export type OwnerLoss = 'refused' | 'unrenewed' | 'released' | 'handed over';

export type OwnerEvent = { kind: 'held'; partition: number; revision: number } | { kind: 'lost'; partition: number; reason: OwnerLoss };

/** A node matches and delivers partitions when it has both roles. */
export const ownsPartitions = (roles: ReadonlySet<Role>): boolean => roles.has('match') && roles.has('deliver');

/** The node `partition` prefers among `nodes`: the highest hash, ties to the greater id (undefined: no node). */
export function preferredNode(hash: Hash32, nodes: readonly string[], partition: number): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const node of nodes) {
    const score = hash(`${node}/${partition}`) >>> 0;
    if (score > bestScore || (score === bestScore && best !== undefined && node > best)) {
      best = node;
      bestScore = score;
    }
  }
  return best;
}

/** What one node sees when it plans. */
export interface OwnersSight {
  /** This node's id. */
  node: string;
  /** The live nodes that own partitions (this one among them or not: it is counted either way). */
  live: readonly string[];
  /** Each partition's lease holder, as the bucket has it (a partition absent is free). */
  holders: ReadonlyMap<number, string>;
  /** Since when this node has seen each free partition free, ms on its own clock. */
  freeSince: ReadonlyMap<number, number>;
  now: number;
  /** The leases' TTL, ms: a partition free this long is taken by whoever sees it (its preferred node is gone or slow). */
  ttlMs: number;
}

/** What to do: contend for (or keep) `take`; hand `handOver` over to their preferred nodes. */
export interface OwnersPlan {
  take: number[];
  handOver: number[];
}

export function planOwners(hash: Hash32, sight: OwnersSight): OwnersPlan {
  const { node, holders, freeSince, now, ttlMs } = sight;
  const live = sight.live.includes(node) ? sight.live : [...sight.live, node];
  const plan: OwnersPlan = { take: [], handOver: [] };
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const holder = holders.get(partition);
    if (preferredNode(hash, live, partition) === node) plan.take.push(partition);
    else if (holder === node) plan.handOver.push(partition);
    else if (holder === undefined && now - (freeSince.get(partition) ?? now) >= ttlMs) plan.take.push(partition);
  }
  return plan;
}

/** A registry entry as the owners read it: its node, its revision, and when the bus wrote it (ms, the server's clock). */
export interface SeenEntry {
  node: string;
  revision: number;
  writtenAt?: number;
}

/**
 * What a node remembers between polls: since when each partition is free, and which registry entries are still
 * written. A node killed stays in the registry until the registry's TTL (3 lease TTLs); one whose entry has not been
 * written for `staleAfterMs` (a lease TTL: two beats) counts as gone, so its partitions go to their next preferred
 * nodes as soon as their leases expire rather than a TTL after. Not written: its revision unchanged that long on this
 * node's clock, or its write that long before the freshest entry's on the bus's clock. The second holds when this
 * node's reads failed meanwhile (a NATS server's death, an election): the first counts from when this node saw the
 * entry's last write, which can be seconds after it was made (docs/decisions/cluster.md, "Part 2, built: the
 * partitions' owners").
 */
export class OwnersMemory {
  private readonly free = new Map<number, number>();
  private readonly written = new Map<string, { revision: number; at: number }>();

  constructor(private readonly staleAfterMs: number) {}

  /** Notes the registry's nodes (id and entry revision) and the leases' holders at `now`; returns what the plan sees. */
  see(node: string, entries: readonly SeenEntry[], holders: ReadonlyMap<number, string>, now: number, ttlMs: number): OwnersSight {
    for (let partition = 0; partition < PARTITIONS; partition++) {
      if (holders.has(partition)) this.free.delete(partition);
      else if (!this.free.has(partition)) this.free.set(partition, now);
    }
    const listed = new Set<string>();
    for (const entry of entries) {
      listed.add(entry.node);
      const last = this.written.get(entry.node);
      if (last === undefined || last.revision !== entry.revision) this.written.set(entry.node, { revision: entry.revision, at: now });
    }
    for (const id of this.written.keys()) if (!listed.has(id)) this.written.delete(id);
    // The bus's clock: the freshest write stands for its now (live nodes write every half TTL), with no skew between machines.
    const freshest = Math.max(...entries.map((e) => e.writtenAt ?? Number.NEGATIVE_INFINITY));
    const written = new Map(entries.map((e) => [e.node, e.writtenAt ?? Number.POSITIVE_INFINITY]));
    const live = [...this.written]
      .filter(([id, w]) => id !== node && now - w.at < this.staleAfterMs && freshest - written.get(id)! < this.staleAfterMs)
      .map(([id]) => id);
    return { node, live: [...live, node], holders, freeSince: this.free, now, ttlMs };
  }
}
