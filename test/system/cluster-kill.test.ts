import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type NatsServer } from '../kit/nats-server.js';
import { until } from '../helpers.js';
import { ClusterScene, type Node } from './cluster-scene.js';

/**
 * Nothing acknowledged is lost (docs/decisions/cluster.md, Part 2): one nats-server, three chainpost nodes (the built binary, all roles, one pool
 * thread each) following anvil, 200 streams over the partitions, transactions flowing all along (test/system/
 * cluster-scene.ts). The node holding the chain's lease (and partitions) is killed -9 and comes back a few seconds
 * later; then the next holder is killed for good; then the nats-server is killed for 10 s. Webhooks of a killed
 * node's partitions resume from another node within 2 lease TTLs, the survivors answer reads throughout, and the
 * ledger at the end holds against anvil's chain: every required webhook, none confirmed off the chain, each stream's
 * first arrivals in order, repeats only at a kill's seam (counted and printed).
 */

const TTL_MS = 2_000;
/** How long the first node killed stays down. */
const DOWN_MS = 6_000;
/** How long the second runs on without it. */
const AFTER_MS = 5_000;
/** How long nats-server stays down. */
const OUTAGE_MS = 10_000;

let nats: NatsServer;
let scene: ClusterScene;
const t0 = performance.now();
const timings: string[] = [];
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  nats = await startNatsServer();
  scene = await ClusterScene.start({ nats: nats.url, ttlMs: TTL_MS });
  expect(await until(() => scene.owned(), 30_000, 100), 'the three nodes own the 64 partitions').toBe(true);
  await scene.createStreams();
  scene.startFlow();
  // Webhooks flowing from every node before anything is killed.
  expect(await until(() => scene.arrived.length >= 100, 30_000, 100)).toBe(true);
  timings.push(`setup ${seconds(performance.now() - t0)}`);
}, 120_000);

afterAll(async () => {
  console.log(`cluster kill: ${timings.join(', ')}, in all ${seconds(performance.now() - t0)}`);
  await scene?.close();
  await nats?.close();
});

/**
 * Kills the node holding the chain's lease, which owns partitions, with reads polled on the others; answers when the
 * first webhook of a partition it owned arrived from another node (ms after the kill).
 */
async function killHolder(label: string): Promise<{
  victim: Node;
  owned: Set<number>;
  resumedMs: number;
  probe: ReturnType<ClusterScene['probeReads']>;
}> {
  let victim: Node | undefined;
  expect(await until(async () => (victim = await scene.holder()) !== undefined, 10_000, 100), 'a node holds the chain').toBe(true);
  const owned = new Set((await scene.partitionsOf(victim!)).map((p) => p.partition));
  expect(owned.size, `${victim!.name} owns partitions`).toBeGreaterThan(0);
  const probe = scene.probeReads(scene.alive().filter((n) => n !== victim));
  const killedAt = await scene.kill(victim!, `${victim!.name} killed`);
  const resumed = await until(() => scene.arrivalsAfter(killedAt, owned).length > 0, 10 * TTL_MS, 20);
  const resumedMs = resumed ? scene.arrivalsAfter(killedAt, owned)[0]!.at - killedAt : Number.POSITIVE_INFINITY;
  console.log(
    `${label}: killed ${victim!.name} (the chain's holder, ${owned.size} partitions); the first webhook of its partitions ${seconds(resumedMs)} after the kill (2 TTLs: ${seconds(2 * TTL_MS)})`,
  );
  return { victim: victim!, owned, resumedMs, probe };
}

const ownedSet = async (n: Node): Promise<Set<number>> => new Set((await scene.partitionsOf(n)).map((p) => p.partition));

describe('three chainpost nodes on one nats-server, 200 streams, transactions flowing: kills lose no acknowledged webhook', () => {
  it('resumes a killed holder’s partitions on the others within 2 lease TTLs; back, it takes its share again', async () => {
    const from = performance.now();
    const { victim, owned, resumedMs, probe } = await killHolder('node kill, back later');
    expect(resumedMs).toBeLessThan(2 * TTL_MS);
    // The survivors own every partition and one of them follows the chain.
    expect(await until(() => scene.owned(), 5 * TTL_MS, 100)).toBe(true);
    expect(await until(async () => (await scene.holder()) !== undefined, 5 * TTL_MS, 100)).toBe(true);
    await sleep(Math.max(0, DOWN_MS - (performance.now() - from)));

    const back = await scene.restart(victim, `${victim.name} back`);
    const rejoinFrom = performance.now();
    const sameShare = async () => {
      const now = await ownedSet(back);
      return now.size === owned.size && [...owned].every((p) => now.has(p)) && (await scene.owned());
    };
    expect(await until(sameShare, 30_000, 100), `${back.name} owns ${[...(await ownedSet(back))].join(',')}`).toBe(true);
    timings.push(`node back: its share adopted ${seconds(performance.now() - rejoinFrom)} after its start`);
    const reads = await probe.stop();
    console.log(`node kill, back later: ${reads.reads} reads on the survivors, ${reads.failures.length} failed`);
    expect(reads.failures.slice(0, 10)).toEqual([]);
    timings.push(`node kill and rejoin ${seconds(performance.now() - from)}`);
  }, 120_000);

  it('resumes a killed holder’s partitions on the others within 2 lease TTLs when it never comes back', async () => {
    const from = performance.now();
    const { owned, resumedMs, probe } = await killHolder('node kill, never back');
    expect(resumedMs).toBeLessThan(2 * TTL_MS);
    expect(await until(() => scene.owned(), 5 * TTL_MS, 100)).toBe(true);
    expect(await until(async () => (await scene.holder()) !== undefined, 5 * TTL_MS, 100)).toBe(true);
    await sleep(AFTER_MS);
    // Its partitions' webhooks go on arriving from the two left.
    expect(scene.arrivalsAfter(performance.now() - AFTER_MS, owned).length).toBeGreaterThan(0);
    const reads = await probe.stop();
    console.log(`node kill, never back: ${reads.reads} reads on the survivors, ${reads.failures.length} failed`);
    expect(reads.failures.slice(0, 10)).toEqual([]);
    timings.push(`node kill for good ${seconds(performance.now() - from)}`);
  }, 120_000);

  it('answers reads while nats-server is down for 10 s, writes 503 with Retry-After; delivery pauses and resumes', async () => {
    const from = performance.now();
    const nodes = scene.alive();
    const stream = [...scene.watches.keys()][0]!;
    const addressesOf = async (n: Node): Promise<string[]> =>
      ((await n.call(`/streams/evm/${stream}/address`)).body.result as Array<{ address: string }>).map((a) => a.address).sort();
    const before = await addressesOf(nodes[0]!);
    const write = (n: Node) =>
      n.call(`/streams/evm/${stream}/address`, { method: 'POST', json: { address: ['0x00000000000000000000000000000000000d0e5a'] } });
    const probe = scene.probeReads(nodes);

    await nats.stop('kill');
    const down = performance.now();
    scene.nextRun('bus killed');
    let paused = Number.POSITIVE_INFINITY;
    try {
      for (const n of nodes) expect(await until(async () => (await write(n)).status === 503, 10_000, 100), n.name).toBe(true);
      // Once every node saw the bus gone, and the attempts under way ended, nothing is sent.
      paused = performance.now() + 1_000;
      while (performance.now() - down < OUTAGE_MS) {
        for (const n of nodes) {
          const w = await write(n);
          expect(w.status, n.name).toBe(503);
          expect(w.headers.get('retry-after'), n.name).toMatch(/^[1-9]\d*$/);
        }
        await sleep(500);
      }
    } finally {
      await nats.start();
    }
    const up = performance.now();
    // What the nodes sent again (their unacknowledged outcomes taken back at the leases' loss) is the next run's.
    scene.nextRun('bus back');
    const during = scene.arrived.filter((a) => a.at > paused && a.at < up).length;
    expect(await until(() => scene.arrived.some((a) => a.at > up), 30_000, 50)).toBe(true);
    const resumedMs = scene.arrived.find((a) => a.at > up)!.at - up;
    console.log(
      `bus kill: ${during} webhooks arrived while it was down (from 1 s after every node answered 503), the first ${seconds(resumedMs)} after its restart`,
    );
    expect(during).toBe(0);
    // Every partition owned again, the chain followed again.
    expect(await until(() => scene.owned(), 30_000, 100), nodes.map((n) => ClusterScene.lastWords(n)).join('\n')).toBe(true);
    const reads = await probe.stop();
    console.log(`bus kill: ${reads.reads} reads, ${reads.failures.length} failed`);
    expect(reads.failures.slice(0, 10)).toEqual([]);
    // No write answered 503 was applied later.
    for (const n of nodes) expect(await addressesOf(n), n.name).toEqual(before);
    timings.push(`bus kill ${seconds(performance.now() - from)}`);
  }, 120_000);

  it('holds the ledger against anvil’s final chain: every required webhook, in order, repeats only at a kill’s seam', async () => {
    const from = performance.now();
    const { report, drained, drainMs, blocks } = await scene.finish();
    scene.dump(report);
    console.log(
      `ledger: ${scene.watches.size} streams, ${blocks} blocks, ${scene.sent} transactions; runs: ${scene.runs.join(' → ')}\n${scene.summary(report)}\ndrained ${drained ? 'in' : 'not within'} ${seconds(drainMs)}`,
    );
    expect({
      missing: report.missing.slice(0, 20),
      confirmedOffChain: report.confirmedOffChain.slice(0, 20),
      wrongContent: report.wrongContent.slice(0, 20),
      badDuplicates: report.badDuplicates.slice(0, 20),
      orderBroken: report.orderBroken.slice(0, 20),
    }).toEqual({ missing: [], confirmedOffChain: [], wrongContent: [], badDuplicates: [], orderBroken: [] });
    expect(drained).toBe(true);
    expect(report.required.confirmed).toBeGreaterThan(0);
    timings.push(`ledger ${seconds(performance.now() - from)}`);
  }, 120_000);
});
