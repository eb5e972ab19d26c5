import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import { preferredNode } from '../../engine/cluster/owners.js';
import { PARTITIONS } from '../../engine/cluster/partitions.js';
import { startNatsServer, type NatsServer } from '../kit/nats-server.js';
import { cli, cliInProcess, startBinary, startChainpost, stopAndClean, tempDir, until, type Running } from '../helpers.js';

/**
 * The operator's view of a cluster: two servers in this process on one real nats-server, each node's /health and
 * /metrics, `chainpost status --cluster` (the built binary) over the node registry, and the roles a node takes.
 * The registry runs on the server's wall time (its TTL is 3 lease TTLs, 3 s here): waits poll with deadlines.
 */
const LEASE_TTL_MS = 1_000;
const REGISTRY_TTL_MS = 3 * LEASE_TTL_MS;
const ALL = ['api', 'ingest', 'match', 'deliver'];

let nats: NatsServer;
let one: Running;
let two: Running;

const clusterEnv = (): Record<string, string> => ({
  CHAINPOST_NATS: nats.url,
  CHAINPOST_CHAINS: 'none',
  CHAINPOST_LEASE_TTL_MS: String(LEASE_TTL_MS),
});

/** A node's /health `cluster` object. */
const clusterOf = async (s: Running): Promise<any> => (await s.call('/health')).body.cluster;

/**
 * `chainpost status --cluster --json` as an operator runs it with the nodes' variables: the built binary, or (`run`)
 * the CLI in this process, for the waits that ask again and again.
 */
async function statusJson(run = cli): Promise<any> {
  const res = await run(['status', '--cluster', '--json'], undefined, clusterEnv());
  expect(res.stderr).toBe('');
  expect(res.code).toBe(0);
  return JSON.parse(res.stdout);
}

const listed = async (): Promise<string[]> => (await statusJson(cliInProcess)).nodes.map((n: { node: string }) => n.node);

beforeAll(async () => {
  nats = await startNatsServer();
  one = await startChainpost(clusterEnv());
  two = await startChainpost(clusterEnv());
}, 60_000);

afterAll(async () => {
  for (const s of [one, two]) await stopAndClean(s);
  await nats?.close();
});

describe("a cluster node's /health and /metrics", () => {
  it('lists on /health its node id, roles, HTTP address, bus connection and control log position; the other node its own', async () => {
    const [a, b] = [await clusterOf(one), await clusterOf(two)];
    expect(a.node).not.toBe(b.node);
    for (const [c, s] of [
      [a, one],
      [b, two],
    ] as const) {
      expect(c).toMatchObject({
        roles: ALL,
        http: `127.0.0.1:${s.port}`,
        bus: { up: true, servers: nats.url },
        leases: [],
        consumers: [],
      });
      // The first node wrote its API key to the log at its start.
      expect(c.control.applied).toBeGreaterThanOrEqual(1);
    }
    // The log's last sequence as the node's last beat read it: both have applied all of it.
    expect(await until(async () => (await clusterOf(one)).control.lag === 0 && (await clusterOf(two)).control.lag === 0, 10_000, 100)).toBe(
      true,
    );
    expect((await clusterOf(one)).control.last).toBe((await clusterOf(two)).control.applied);
  });

  it('has the cluster gauges on /metrics: roles, bus, control log applied and lag', async () => {
    expect(await until(async () => (await clusterOf(one)).control.lag === 0, 10_000, 100)).toBe(true);
    const applied = (await clusterOf(one)).control.applied as number;
    const text = (await one.call('/metrics')).body as string;
    for (const role of ALL) expect(text).toContain(`chainpost_cluster_role{role="${role}"} 1`);
    expect(text).toContain('chainpost_cluster_bus_up 1');
    expect(text).toContain(`chainpost_cluster_control_applied ${applied}`);
    expect(text).toContain('chainpost_cluster_control_lag 0');
    expect(text).toContain('# TYPE chainpost_cluster_consumer_lag gauge');
    expect(text).toContain('# TYPE chainpost_cluster_lease_revision gauge');
  });

  it('splits the delivery partitions between the two nodes as the plan says: each /health lists its own, /metrics their revisions, status --cluster where each lives', async () => {
    const [a, b] = [(await clusterOf(one)).node as string, (await clusterOf(two)).node as string];
    const { h32 } = await xxhash();
    const planned = (node: string) =>
      Array.from({ length: PARTITIONS }, (_, p) => p).filter((p) => preferredNode((t) => h32(t), [a, b], p) === node);
    const owned = async (s: Running): Promise<number[]> =>
      ((await clusterOf(s)).partitions as Array<{ partition: number }>).map((p) => p.partition).sort((x, y) => x - y);
    const settled = async () =>
      JSON.stringify(await owned(one)) === JSON.stringify(planned(a)) && JSON.stringify(await owned(two)) === JSON.stringify(planned(b));
    expect(await until(settled, 20_000, 100)).toBe(true);
    // Each partition's queue is counted once its log caught up and the dispatcher adopted it: none queued here.
    const mine = async () => (await clusterOf(one)).partitions as Array<{ partition: number; revision: number; queued: number | null }>;
    expect(await until(async () => (await mine()).every((p) => p.revision > 0 && p.queued === 0), 20_000, 100)).toBe(true);
    const text = (await one.call('/metrics')).body as string;
    expect(text).toContain(`chainpost_cluster_partition_revision{partition="${(await mine())[0]!.partition}"} `);
    expect(text.match(/^chainpost_cluster_partition_revision\{/gm)).toHaveLength((await mine()).length);
    const status = (await cli(['status', '--cluster'], undefined, clusterEnv())).stdout;
    expect(status).toContain('\npartitions: 64 of 64 owned\n');
    expect(status).toMatch(new RegExp(`\n +${a} +${planned(a).length} +\\d`));
    expect(status).not.toContain('(unowned)');
    const json = await statusJson();
    expect(json.partitions).toHaveLength(PARTITIONS);
  });
});

describe('chainpost status --cluster', () => {
  it('lists both nodes with their roles and HTTP addresses, and the streams with their messages and bytes', async () => {
    const [a, b] = [await clusterOf(one), await clusterOf(two)];
    const res = await cli(['status', '--cluster'], undefined, clusterEnv());
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^cluster at nats:\/\/127\.0\.0\.1:\d+: [2-9] nodes\n/);
    for (const [c, s] of [
      [a, one],
      [b, two],
    ] as const) {
      const line = res.stdout.split('\n').find((l) => l.trim().startsWith(`${c.node} `));
      expect(line).toMatch(new RegExp(`^ +${c.node} +api,ingest,match,deliver +\\S+ +127\\.0\\.0\\.1:${s.port} +up +\\d+ \\(lag \\d+\\) `));
    }
    expect(res.stdout).toContain('leases: none held');
    expect(res.stdout).toMatch(/\n +CHAINPOST_CONTROL +\d+ +\d+ +\d+\n/);

    const json = await statusJson();
    expect(json.nodes.map((n: { node: string }) => n.node)).toEqual(expect.arrayContaining([a.node, b.node]));
    const control = json.streams.find((x: { name: string }) => x.name === 'CHAINPOST_CONTROL');
    expect(control.messages).toBeGreaterThanOrEqual(1);
    expect(control.bytes).toBeGreaterThan(0);
    expect(json.streams.map((x: { name: string }) => x.name)).toEqual([
      'CHAINPOST_CONTROL',
      'CHAINPOST_BLOCKS',
      'CHAINPOST_PARTITIONS',
      'KV_chainpost-leases',
      'KV_chainpost-nodes',
    ]);
  });

  it('refuses without CHAINPOST_NATS, and when no NATS server answers (exit 1)', async () => {
    const unset = await cliInProcess(['status', '--cluster'], undefined, { CHAINPOST_CHAINS: 'none' });
    expect(unset.code).toBe(1);
    expect(unset.stderr).toBe(
      'chainpost: CHAINPOST_NATS: is not set: status --cluster reads the cluster from its NATS servers (nats://host:4222)\n',
    );
    // Port 1 of loopback: nothing listens there.
    const down = await cliInProcess(['status', '--cluster'], undefined, { ...clusterEnv(), CHAINPOST_NATS: 'nats://127.0.0.1:1' });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^chainpost: CHAINPOST_NATS: cannot connect to nats:\/\/127\.0\.0\.1:1: .+\n$/);
    expect(down.stdout).toBe('');
  });

  it('drops a node that stopped from the registry: at once when it stops cleanly, within its TTL when it is killed', async () => {
    const clean = await startChainpost(clusterEnv());
    const killed = await startBinary(clusterEnv());
    try {
      const [cleanId, killedId] = [(await clusterOf(clean)).node, (await clusterOf(killed)).node];
      expect(await listed()).toEqual(expect.arrayContaining([cleanId, killedId]));

      await clean.stop();
      expect(await listed()).not.toContain(cleanId);

      await killed.stop('SIGKILL');
      // Its last entry stays until the bucket's TTL removes it: polled with a deadline past it.
      expect(await until(async () => !(await listed()).includes(killedId), REGISTRY_TTL_MS + 10_000, 250)).toBe(true);
      expect(await listed()).toEqual(expect.arrayContaining([(await clusterOf(one)).node, (await clusterOf(two)).node]));
    } finally {
      await stopAndClean(clean);
      await stopAndClean(killed);
    }
  });
});

describe('serve --roles on a cluster node', () => {
  it('a node without api answers /health and /metrics alone (no API, no node access), and lists its roles there and in the registry', async () => {
    const node = await startBinary(clusterEnv(), tempDir(), undefined, undefined, ['--roles', 'ingest,match,deliver']);
    try {
      const c = await clusterOf(node);
      expect(c.roles).toEqual(['ingest', 'match', 'deliver']);
      expect((await node.call('/streams/evm')).status).toBe(404);
      expect((await node.call('/streams/evm')).body).toEqual({ message: 'no route GET /streams/evm' });
      expect((await node.call('/rpc/0x1/key')).status).toBe(404);
      expect((await node.call('/metrics')).body).toContain('chainpost_cluster_role{role="ingest"} 1');
      expect((await node.call('/metrics')).body).not.toContain('chainpost_cluster_role{role="api"}');
      const entry = (await statusJson()).nodes.find((n: { node: string }) => n.node === c.node);
      expect(entry.roles).toEqual(['ingest', 'match', 'deliver']);
      // The nodes with api serve the API.
      expect((await one.call('/streams/evm')).status).toBe(200);
    } finally {
      await stopAndClean(node);
    }
  });
});
