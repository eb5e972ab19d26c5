import xxhash from 'xxhash-wasm';
import { describe, expect, it } from 'vitest';
import { OwnersMemory, ownsPartitions, planOwners, preferredNode } from '../../../../engine/cluster/owners.js';
import { PARTITIONS, type Hash32 } from '../../../../engine/cluster/partitions.js';
import { parseRoles } from '../../../../engine/config/roles.js';

const { h32 } = await xxhash();
const hash: Hash32 = (text) => h32(text);
const TTL = 2_000;

/** A seeded source of node ids shaped like chainpost's (host name, a random part): the same clusters every run. */
function ids(seed: number): () => string {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
  return () => `host-${next().toString(36)}${next().toString(36)}`.slice(0, 16);
}

/** Each node's partitions, by the plan of rendezvous hashing over `nodes`. */
function split(nodes: readonly string[]): Map<string, number[]> {
  const out = new Map<string, number[]>(nodes.map((n) => [n, []]));
  for (let p = 0; p < PARTITIONS; p++) out.get(preferredNode(hash, nodes, p)!)!.push(p);
  return out;
}

/** The partitions whose preferred node differs between two sets of nodes. */
const movedBetween = (a: readonly string[], b: readonly string[]): number[] =>
  Array.from({ length: PARTITIONS }, (_, p) => p).filter((p) => preferredNode(hash, a, p) !== preferredNode(hash, b, p));

/** A binomial's standard deviation: a node's count of 64 partitions each its own with chance 1/n. */
const sigma = (n: number): number => Math.sqrt(PARTITIONS * (1 / n) * (1 - 1 / n));

/** `count` random clusters of `n` nodes. */
function clusters(n: number, count: number, seed = n): string[][] {
  const next = ids(seed);
  return Array.from({ length: count }, () => Array.from({ length: n }, next));
}

describe('the owners of the delivery partitions: the plan', () => {
  it('spreads the 64 partitions over 1 to 6 nodes as a binomial does: 99 % of nodes within 64/n ± 3σ, none beyond ± 4.5σ, none empty', () => {
    for (let n = 1; n <= 6; n++) {
      const counts = clusters(n, 200).flatMap((nodes) => [...split(nodes).values()].map((ps) => ps.length));
      const mean = PARTITIONS / n;
      const within = counts.filter((c) => Math.abs(c - mean) <= 3 * sigma(n)).length;
      expect(within / counts.length, `${n} nodes`).toBeGreaterThanOrEqual(0.99);
      for (const c of counts) expect(Math.abs(c - mean), `${n} nodes`).toBeLessThanOrEqual(Math.max(0, 4.5 * sigma(n)));
      expect(Math.min(...counts), `${n} nodes`).toBeGreaterThan(0);
      // Spread no wider than independent choices would give (a hash whose scores move together would).
      const sd = Math.sqrt(counts.reduce((s, c) => s + (c - mean) ** 2, 0) / counts.length);
      expect(sd, `${n} nodes`).toBeLessThanOrEqual(1.15 * sigma(n));
    }
  });

  it('moves only the partitions the joining node wins, about 64 / nodes, and only the leaving node’s when one leaves', () => {
    for (let n = 1; n <= 5; n++) {
      const next = ids(100 + n);
      let total = 0;
      const runs = 100;
      for (let i = 0; i < runs; i++) {
        const nodes = Array.from({ length: n }, next);
        const joined = [...nodes, next()];
        const moved = movedBetween(nodes, joined);
        // Exactly the newcomer's share moved, each partition to it; no partition between the others.
        expect(moved).toEqual(split(joined).get(joined[n]!));
        expect(moved.length).toBeLessThanOrEqual(PARTITIONS / (n + 1) + 4.5 * sigma(n + 1));
        total += moved.length;
        // Leaving is the same move backwards: exactly the leaver's partitions.
        const leaver = joined[i % (n + 1)]!;
        const left = joined.filter((x) => x !== leaver);
        if (left.length > 0) expect(movedBetween(joined, left)).toEqual(split(joined).get(leaver));
      }
      expect(total / runs, `${n} → ${n + 1} nodes`).toBeGreaterThan(0.9 * (PARTITIONS / (n + 1)));
      expect(total / runs, `${n} → ${n + 1} nodes`).toBeLessThan(1.1 * (PARTITIONS / (n + 1)));
    }
  });

  it('says the same for the same inputs, whatever the order the live nodes are listed in', () => {
    const nodes = clusters(5, 1)[0]!;
    const holders = new Map([
      [3, nodes[1]!],
      [7, nodes[0]!],
      [12, nodes[4]!],
    ]);
    const sight = { node: nodes[0]!, live: nodes, holders, freeSince: new Map([[20, 0]]), now: TTL, ttlMs: TTL };
    const plan = planOwners(hash, sight);
    expect(planOwners(hash, sight)).toEqual(plan);
    expect(planOwners(hash, { ...sight, live: [...nodes].reverse() })).toEqual(plan);
    expect(plan.take.length + plan.handOver.length).toBeGreaterThan(0);
  });

  it('takes what the node is preferred for, a partition free for a TTL, and hands over what another live node is preferred for', () => {
    const [me, other] = clusters(2, 1)[0]!;
    const mine = split([me!, other!]).get(me!)!;
    const theirs = split([me!, other!]).get(other!)!;
    const [held, free, freshlyFree, heldByThem] = theirs;
    const sight = {
      node: me!,
      live: [me!, other!],
      holders: new Map([
        [held!, me!],
        [heldByThem!, other!],
      ]),
      // One of the other's partitions has been free a TTL (its node slow or gone), another only just.
      freeSince: new Map([
        [free!, 0],
        [freshlyFree!, TTL - 1],
      ]),
      now: TTL,
      ttlMs: TTL,
    };
    const plan = planOwners(hash, sight);
    expect(plan.take).toEqual([...mine, free!].sort((a, b) => a - b));
    expect(plan.handOver).toEqual([held!]);
    // Alone, a node is preferred for every partition, and counts itself live before its registry entry is read.
    expect(planOwners(hash, { ...sight, live: [] }).take).toHaveLength(PARTITIONS);
  });

  it('leaves no partition unowned once the nodes settle, when a node joins, and when one dies with its registry entry left behind', () => {
    // A model of the cluster: the leases bucket (holder and last renew per partition), the registry (each entry's
    // revision), and each node's plan applied every poll (a quarter of the TTL).
    const nodes = clusters(4, 1, 42)[0]!;
    const poll = TTL / 4;
    const bucket = new Map<number, { node: string; renewed: number }>();
    const revision = new Map<string, number>();
    const memories = new Map(nodes.map((n) => [n, new OwnersMemory(TTL)]));
    const alive = new Set(nodes.slice(0, 3));
    let now = 0;
    const round = () => {
      now += poll;
      // Live holders renew; a lease unrenewed for a TTL expires.
      for (const l of bucket.values()) if (alive.has(l.node)) l.renewed = now;
      for (const [p, l] of bucket) if (now - l.renewed >= TTL) bucket.delete(p);
      for (const n of alive) revision.set(n, (revision.get(n) ?? 0) + 1);
      for (const node of alive) {
        const holders = new Map([...bucket].map(([p, l]) => [p, l.node]));
        const entries = [...revision].map(([id, r]) => ({ node: id, revision: r }));
        const plan = planOwners(hash, memories.get(node)!.see(node, entries, holders, now, TTL));
        for (const p of plan.handOver) bucket.delete(p);
        for (const p of plan.take) if (!bucket.has(p)) bucket.set(p, { node, renewed: now });
      }
    };
    const settled = (live: readonly string[]) =>
      [...split(live)].every(([node, ps]) => ps.every((p) => bucket.get(p)?.node === node)) && bucket.size === PARTITIONS;

    for (let i = 0; i < 3; i++) round();
    expect(settled([...alive])).toBe(true);

    alive.add(nodes[3]!);
    for (let i = 0; i < 3; i++) round();
    expect(settled([...alive])).toBe(true);

    // Killed: no renew, no release, its registry entry left to the registry's TTL (three lease TTLs).
    const dead = nodes[1]!;
    alive.delete(dead);
    const rounds = () => {
      let r = 0;
      while (bucket.size < PARTITIONS || [...bucket.values()].some((l) => l.node === dead)) {
        round();
        r++;
      }
      return r;
    };
    // Its leases expire within a TTL; its entry counts as gone a TTL after it last moved; then within a poll or two.
    expect(rounds() * poll).toBeLessThanOrEqual(2 * TTL);
    for (let i = 0; i < 4; i++) round();
    expect(settled([...alive])).toBe(true);
  });

  it('counts a node gone once its registry entry has not moved for a TTL, and itself always', () => {
    const memory = new OwnersMemory(TTL);
    /** The live nodes seen at `now` with the registry at `revisions`, sorted; partition 0 held throughout. */
    const live = (revisions: Record<string, number>, now: number) =>
      [
        ...memory.see(
          'me',
          Object.entries(revisions).map(([node, revision]) => ({ node, revision })),
          new Map([[0, 'a']]),
          now,
          TTL,
        ).live,
      ].sort();
    expect(live({ a: 1, b: 1 }, 0)).toEqual(['a', 'b', 'me']);
    // `a` beats, `b` does not.
    expect(live({ a: 2, b: 1 }, TTL / 2)).toEqual(['a', 'b', 'me']);
    expect(live({ a: 3, b: 1 }, TTL)).toEqual(['a', 'me']);
    // Gone from the registry: forgotten; back with a new entry: live again.
    expect(live({ a: 4 }, 2 * TTL)).toEqual(['a', 'me']);
    expect(live({ a: 5, b: 9 }, 3 * TTL)).toEqual(['a', 'b', 'me']);
    // Partition 0 held all along; the others free since the first look.
    const sight = memory.see('me', [], new Map([[0, 'a']]), 4 * TTL, TTL);
    expect(sight.freeSince.get(0)).toBeUndefined();
    expect(sight.freeSince.get(1)).toBe(0);
  });

  it("counts a node gone once its entry was written a TTL before the freshest one, on the bus's clock, though this node saw that write only now", () => {
    const memory = new OwnersMemory(TTL);
    const live = (entries: Array<{ node: string; revision: number; writtenAt: number }>, now: number) =>
      [...memory.see('me', entries, new Map(), now, TTL).live].sort();
    expect(
      live(
        [
          { node: 'a', revision: 1, writtenAt: 1_000 },
          { node: 'b', revision: 1, writtenAt: 1_000 },
        ],
        0,
      ),
    ).toEqual(['a', 'b', 'me']);
    // This node's reads failed for a while (an election); its next one sees `b`'s last write for the first time, made
    // just before `b` died, and `a`'s beats since. Within a TTL of the freshest: still live.
    expect(
      live(
        [
          { node: 'a', revision: 5, writtenAt: 1_000 + TTL - 1 },
          { node: 'b', revision: 2, writtenAt: 1_500 },
        ],
        5 * TTL,
      ),
    ).toEqual(['a', 'b', 'me']);
    // `a`'s next beat is a TTL after `b`'s last write: `b` is gone, though this node saw that write a poll ago.
    expect(
      live(
        [
          { node: 'a', revision: 6, writtenAt: 1_500 + TTL },
          { node: 'b', revision: 2, writtenAt: 1_500 },
        ],
        5 * TTL + 1,
      ),
    ).toEqual(['a', 'me']);
    // `b` writes again: live.
    expect(
      live(
        [
          { node: 'a', revision: 7, writtenAt: 1_500 + TTL },
          { node: 'b', revision: 3, writtenAt: 1_500 + TTL },
        ],
        5 * TTL + 2,
      ),
    ).toEqual(['a', 'b', 'me']);
  });

  it('has a node own partitions when it matches and delivers', () => {
    expect(ownsPartitions(parseRoles('match,deliver'))).toBe(true);
    expect(ownsPartitions(parseRoles('api,ingest,match,deliver'))).toBe(true);
    expect(ownsPartitions(parseRoles('api,deliver'))).toBe(false);
    expect(ownsPartitions(parseRoles('match'))).toBe(false);
  });
});
