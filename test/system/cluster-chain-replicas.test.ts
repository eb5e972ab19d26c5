import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type BusConnection } from '../../bus/connect.js';
import { LEASES_BUCKET } from '../../bus/leases.js';
import { BLOCKS_STREAM } from '../../bus/streams.js';
import { leaseTimings } from '../../engine/ingest/leases.js';
import { startNatsCluster, type NatsCluster } from '../kit/nats-server.js';
import { until } from '../helpers.js';
import { ClusterScene, electedAt, said, type Node } from './cluster-scene.js';

/**
 * The chain's takeover on three nats-servers (replicas 3) when its holder and the nats-server leading the blocks
 * stream are killed together: with a 2 s TTL the next holder takes the lease before the two servers left elect the
 * stream's new leader (nats-server 2.9: 4 to 9 s of silence, then a campaign), so its read of the chain's last
 * message meets a stream answering no one. It asks again every lease poll, so it follows soon after the election.
 * The leases bucket's leader is moved off that server first: killed too, its own election held the lease's take
 * until after the stream's (CI, 2026-12-07: no take tried before the stream answered), which is another case.
 */
const TTL_MS = 2_000;
const POLL_MS = leaseTimings(TTL_MS).pollEveryMs;
/** What a loaded 2-core machine adds once the stream answers (the stream's blocks applied, the follower started). */
const SLACK_MS = 1_000;

let nats: NatsCluster;
let bus: BusConnection;
let scene: ClusterScene;

beforeAll(async () => {
  nats = await startNatsCluster();
  bus = await connectBus({ servers: nats.url, maxReconnectWaitMs: 100 });
  scene = await ClusterScene.start({ nats: nats.url, replicas: 3, ttlMs: TTL_MS, nodes: 2 });
}, 120_000);

afterAll(async () => {
  await scene?.close();
  await bus?.close();
  await nats?.close();
});

describe('the chain on three nats-servers (replicas 3): its holder and the blocks stream’s leader killed together', () => {
  it('is followed by the other node within a lease poll of the blocks stream’s new leader', async () => {
    let victim: Node | undefined;
    expect(await until(async () => (victim = await scene.holder()) !== undefined, 30_000, 100)).toBe(true);
    const jsm = await jetstreamManager(bus.nc);
    const leader = (await jsm.streams.info(BLOCKS_STREAM)).cluster!.leader!;
    const leasesLeader = async () => (await jsm.streams.info(`KV_${LEASES_BUCKET}`)).cluster?.leader;
    if ((await leasesLeader()) === leader) {
      await bus.nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.KV_${LEASES_BUCKET}`, undefined, { timeout: 5_000 });
      expect(await until(async () => ![leader, undefined].includes(await leasesLeader().catch(() => undefined)), 15_000, 100)).toBe(true);
    }
    const [killedAt] = await Promise.all([
      scene.kill(victim!, `${victim!.name} and nats-server ${leader} killed`),
      nats.servers[nats.names.indexOf(leader)]!.stop('kill'),
    ]);
    const [survivor] = scene.alive();
    const following = () => said(survivor!, 'cluster: following a chain').filter((t) => t > killedAt);
    expect(await until(() => following().length > 0, 30_000, 50)).toBe(true);
    const elected = electedAt(nats.servers, BLOCKS_STREAM, killedAt);
    const tried = said(survivor!, 'cluster: taking a chain over failed').filter((t) => t > killedAt);
    console.log(
      `${victim!.name} and nats-server ${leader} killed: the blocks stream's new leader ${((elected ?? Number.NaN) - killedAt).toFixed(0)} ms after, the chain followed ${(following()[0]! - (elected ?? Number.NaN)).toFixed(0)} ms after the election (${tried.length} tries failed before, at ${tried.map((t) => (t - killedAt).toFixed(0)).join(', ')} ms)`,
    );
    expect(elected).toBeDefined();
    expect(tried.length).toBeGreaterThan(0);
    expect(following()[0]! - elected!).toBeLessThan(POLL_MS + SLACK_MS);
  }, 60_000);
});
