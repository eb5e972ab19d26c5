import { describe, expect, it } from 'vitest';
import { PARTITIONS } from '../engine/cluster/partitions.js';
import { onOwnNatsServer } from './kit/nats-server.js';
import { OwnersScene } from './owners-scene.js';
import { until } from './helpers.js';

/**
 * The delivery partitions' owners loops on a real nats-server, the quick cases (the kills and the waits over TTLs are
 * in test/system/bus-owners.test.ts). A short TTL: a poll is a quarter of it, and every wait has a deadline.
 */
const TTL = 1_000;

function scene(name: string, body: (s: OwnersScene) => Promise<void>): void {
  it.concurrent(name, () => onOwnNatsServer((nats) => new OwnersScene(nats, TTL), body), 30_000);
}

describe('the owners of the delivery partitions', () => {
  scene('splits the 64 partitions over three nodes as the plan says, shows them in the registry, and never counts one twice', async (s) => {
    const nodes = [await s.add('node-a'), await s.add('node-b'), await s.add('node-c')];
    await s.settle(10 * TTL);
    expect(s.ownedCount()).toBe(PARTITIONS);
    // Each share is the plan's, not one node's 64.
    for (const ps of s.plan().values()) expect(ps.length).toBeLessThan(PARTITIONS);

    for (const o of nodes) await o.registry.beat();
    const state = await s.read();
    // Every partition's lease names the node whose registry entry lists it, at a revision no older than the entry's.
    expect(state.partitions).toHaveLength(PARTITIONS);
    // The bucket holds the chains' leases too: neither kind lists the other's.
    expect(state.leases).toEqual([]);
    for (const entry of state.nodes) {
      const listed = entry.partitions!.map((p) => p.partition);
      expect(listed.sort((a, b) => a - b)).toEqual(s.plan().get(entry.node));
      for (const p of entry.partitions!) {
        expect(p.queued).toBeNull();
        const holder = state.partitions.find((h) => h.partition === p.partition)!;
        expect(holder.node).toBe(entry.node);
        expect(holder.revision).toBeGreaterThanOrEqual(p.revision);
      }
    }
    // The sampler ran all along (every 5 ms: about 125 times alone, 79 once under the whole suite's load).
    expect(s.samples).toBeGreaterThan(20);
    expect(s.overlaps).toEqual([]);
  });

  scene('gives a stopped node’s partitions to the others within a few polls: its stop releases them all', async (s) => {
    await s.add('node-a');
    await s.add('node-b');
    const c = await s.add('node-c');
    await s.settle(10 * TTL);
    const had = s.plan().get('node-c')!;
    await s.stop(c);
    expect(c.owners.owned().size).toBe(0);
    expect(c.events.filter((e) => e.includes(' lost ')).sort()).toEqual(had.map((p) => `node-c lost ${p} released`).sort());
    // Its leases deleted and its registry entry too, at once: nothing for the others to wait out.
    const state = await s.read();
    expect(state.partitions.filter((h) => h.node === 'node-c')).toEqual([]);
    expect(state.nodes.map((n) => n.node)).toEqual(['node-a', 'node-b']);
    await s.settle(10 * TTL);
    expect(s.ownedCount()).toBe(PARTITIONS);
    expect(s.overlaps).toEqual([]);
  });

  scene(
    'awaits the hand-over hook before releasing a partition to the node that joins: until it resolves the partition stays with its owner',
    async (s) => {
      const a = await s.add('node-a');
      const b = await s.add('node-b');
      await s.settle(10 * TTL);
      const hooked = new Map<number, string>();
      let drain!: () => void;
      const drained = new Promise<void>((resolve) => (drain = resolve));
      for (const o of [a, b])
        o.owners.setHandOver(async (partition) => {
          hooked.set(partition, o.node);
          await drained;
        });
      const lost = () => [...a.events, ...b.events].filter((e) => e.includes(' lost ')).length;
      const lostBefore = lost();
      const c = await s.add('node-c');
      const share = s.plan().get('node-c')!;
      expect(share.length).toBeGreaterThan(0);
      // The old owners called the hook for each partition of the new node's share, and for no other.
      expect(await until(() => hooked.size === share.length, 10 * TTL)).toBe(true);
      expect([...hooked.keys()].sort((x, y) => x - y)).toEqual(share);
      // Several polls later nothing moved: the owners still own them, the new node none.
      const polls = c.events.length;
      await until(() => false, TTL);
      expect(c.events.length).toBe(polls);
      expect(c.owners.owned().size).toBe(0);
      for (const [p, node] of hooked)
        expect(
          s.owners
            .find((o) => o.node === node)!
            .owners.owned()
            .has(p),
        ).toBe(true);

      drain();
      await s.settle(10 * TTL);
      for (const [p, node] of hooked) expect(s.owners.find((o) => o.node === node)!.events).toContain(`${node} lost ${p} handed over`);
      // Nothing else moved: the old owners lost only what they handed over.
      expect(lost() - lostBefore).toBe(share.length);
      expect(s.overlaps).toEqual([]);
    },
  );
});
