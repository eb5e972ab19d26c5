import { describe, expect, it } from 'vitest';
import { PARTITIONS } from '../../engine/cluster/partitions.js';
import { onOwnNatsServer } from '../kit/nats-server.js';
import { OwnersScene } from '../owners-scene.js';
import { until } from '../helpers.js';

/**
 * The delivery partitions' owners loops on a real nats-server, with kills and nodes added: waits on the leases'
 * wall-time expiries, so here rather than in npm test. A sampler checks, every few milliseconds throughout, that no
 * two live loops count one partition as owned.
 */
const TTL = 2_000;

function scene(name: string, body: (s: OwnersScene) => Promise<void>): void {
  it.concurrent(name, () => onOwnNatsServer((nats) => new OwnersScene(nats, TTL), body), 90_000);
}

/** Which partitions changed owner between two splits. */
function moved(before: Map<string, number[]>, after: Map<string, number[]>): number[] {
  const owner = (split: Map<string, number[]>) => {
    const of = new Map<number, string>();
    for (const [node, ps] of split) for (const p of ps) of.set(p, node);
    return of;
  };
  const [was, is] = [owner(before), owner(after)];
  return Array.from({ length: PARTITIONS }, (_, p) => p).filter((p) => was.get(p) !== is.get(p));
}

describe('the owners of the delivery partitions, as nodes die and join', () => {
  scene('hands every partition of a node killed (no release, its registry entry left) to the others within 2 TTLs', async (s) => {
    for (const node of ['node-a', 'node-b', 'node-c', 'node-d']) await s.add(node);
    await s.settle(15 * TTL);
    const before = s.split();
    const victim = s.owners.find((o) => o.node === 'node-b')!;
    const had = before.get('node-b')!;
    await s.kill(victim);
    const killed = performance.now();
    expect(await until(() => s.ownedCount() === PARTITIONS, 5 * TTL, 20)).toBe(true);
    expect(performance.now() - killed).toBeLessThan(2 * TTL);
    // Then split as the plan over the three left, and only the killed node's partitions moved.
    await s.settle(5 * TTL);
    expect(moved(before, s.split()).sort((x, y) => x - y)).toEqual(had);
    expect(s.overlaps).toEqual([]);
  });

  scene('gives a node that joins its share, which the others hand over, and moves no other partition', async (s) => {
    for (const node of ['node-a', 'node-b', 'node-c']) await s.add(node);
    await s.settle(15 * TTL);
    const before = s.split();
    const others = [...s.owners];
    const lostBefore = others.map((o) => o.events.length);
    await s.add('node-d');
    await s.settle(15 * TTL);
    const share = s.plan().get('node-d')!;
    // About a quarter of them, and exactly the ones that moved.
    expect(share.length).toBeGreaterThan(0);
    expect(moved(before, s.split()).sort((x, y) => x - y)).toEqual(share);
    const handed = others.flatMap((o, i) => o.events.slice(lostBefore[i]).filter((e) => e.includes(' lost ')));
    expect(handed).toHaveLength(share.length);
    for (const line of handed) expect(line).toMatch(/ handed over$/);
    expect(s.overlaps).toEqual([]);
  });

  scene('settles with every partition owned, never two owners at once, after a kill and two joins at the same time', async (s) => {
    for (const node of ['node-a', 'node-b', 'node-c']) await s.add(node);
    await s.settle(15 * TTL);
    await Promise.all([s.kill(s.owners[0]!), s.add('node-d'), s.add('node-e')]);
    await s.settle(15 * TTL);
    expect(s.ownedCount()).toBe(PARTITIONS);
    expect(s.samples).toBeGreaterThan(100);
    expect(s.overlaps).toEqual([]);
  });
});
