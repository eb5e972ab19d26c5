import { rmSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type BusConnection } from '../../bus/connect.js';
import { ClusterPartitions } from '../../bus/partitions.js';
import { ensurePartitionsStream, PARTITIONS_STREAM } from '../../bus/streams.js';
import { applyPartitionChange, type PendingUnit } from '../../engine/cluster/partitions.js';
import { jsonLogger } from '../../engine/log.js';
import { openStore, type Store } from '../../storage/env.js';
import { startNatsCluster, type NatsCluster } from '../kit/nats-server.js';
import { tempDir, until } from '../helpers.js';

/**
 * The partition log on three routed nats-servers (replicas 3) when the server leading it is killed: the stream has
 * no leader until the two left elect one (nats-server 2.9: 4 to 9 s of silence, then a campaign). A node's requests
 * of that time go to no one; what the node controls is how soon it asks the new leader.
 */

/** The node's request timeout and longest wait between tries (a lease poll in a node: CHAINPOST_LEASE_TTL_MS / 4). */
const REQUEST_MS = 500;
/** What a loaded 2-core machine may add to a try after the leader is back (a round trip, an LMDB commit). */
const SLACK_MS = 500;

let nats: NatsCluster;
let watch: BusConnection;
let bus: BusConnection;
let store: Store;
const dir = tempDir();
const lines: string[] = [];
let log: ClusterPartitions;

beforeAll(async () => {
  nats = await startNatsCluster();
  watch = await connectBus({ servers: nats.url, maxReconnectWaitMs: 100 });
  await ensurePartitionsStream(await jetstreamManager(watch.nc), { replicas: 3 });
  bus = await connectBus({ servers: nats.url, maxReconnectWaitMs: 100 });
  store = openStore(dir);
  log = new ClusterPartitions({
    bus,
    kv: store,
    node: 'a',
    log: jsonLogger((line) => lines.push(line), Date.now, 'debug'),
    publishTimeoutMs: REQUEST_MS,
    requestTimeoutMs: REQUEST_MS,
  });
  log.start();
}, 60_000);

afterAll(async () => {
  await log?.stop();
  await bus?.close();
  await store?.close();
  await watch?.close();
  await nats?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A unit of one queue row, committed to the store as delivery's capture would hand it over. */
async function unit(partition: number, key: string): Promise<PendingUnit> {
  const change = { partition, rows: [['queue', key, new TextEncoder().encode(key)] as ['queue', string, Uint8Array]] };
  let before: PendingUnit['before'] = [];
  await store.transactAsync(() => {
    const held = store.getRaw('queue', key);
    before = [['queue', key, held === undefined ? null : Uint8Array.from(held)]];
    applyPartitionChange(store, change);
  });
  return { change, before };
}

/** The instants (Date.now()) of the node's warnings whose message starts with `text`. */
const warned = (text: string): number[] =>
  lines
    .map((l) => JSON.parse(l) as { level: string; msg: string; time: string })
    .filter((l) => l.level === 'warn' && l.msg.startsWith(text))
    .map((l) => Date.parse(l.time));

const gaps = (times: number[]): number[] => times.slice(1).map((t, i) => t - times[i]!);

describe('the partition log on three nats-servers (replicas 3), its leader killed', () => {
  it('asks the stream again within a request timeout while it has no leader, so a takeover is ready and a unit acknowledged soon after the new leader is elected', async () => {
    expect(await log.take(1, 1)).toBe(true);
    await log.submit([await unit(1, 'before')])[0];
    const jsm = await jetstreamManager(watch.nc, { timeout: 200 });
    const leader = (await jsm.streams.info(PARTITIONS_STREAM)).cluster!.leader!;
    await nats.servers[nats.names.indexOf(leader)]!.stop('kill');
    const killedAt = Date.now();
    // A unit of the partition owned, and a takeover of another, both while the stream has no leader.
    const acked = log.submit([await unit(1, 'after')])[0]!.then(() => Date.now());
    const ready = log.take(2, 1).then((taken) => ({ taken, at: Date.now() }));
    let leaderAt = 0;
    const elected = async (): Promise<boolean> => {
      const now = await jsm.streams.info(PARTITIONS_STREAM).catch(() => undefined);
      if (now?.cluster?.leader === undefined || now.cluster.leader === leader) return false;
      leaderAt = Date.now();
      return true;
    };
    expect(await until(elected, 30_000, 20)).toBe(true);
    const [ackedAt, takeover] = await Promise.all([acked, ready]);
    const reads = warned('partition log: reading a partition’s last message failed');
    const publishes = warned('partition log: publishing a unit failed');
    console.log(
      `leader ${leader} killed; a new one after ${leaderAt - killedAt} ms; the takeover ready ${takeover.at - leaderAt} ms after it (${reads.length} reads failed before, gaps ${gaps(reads).join(', ')} ms), the unit acknowledged ${ackedAt - leaderAt} ms after it (${publishes.length} tries failed, gaps ${gaps(publishes).join(', ')} ms)`,
    );
    expect(takeover.taken).toBe(true);
    // Asked again within a request timeout (and a machine's slack) each time, not once every 5 s.
    expect(reads.length).toBeGreaterThanOrEqual(2);
    expect(Math.max(...gaps([killedAt, ...reads]))).toBeLessThan(REQUEST_MS + SLACK_MS);
    expect(takeover.at - leaderAt).toBeLessThan(REQUEST_MS + SLACK_MS);
    // A failed publish is tried again within a request timeout, its backoff not grown past it.
    expect(Math.max(0, ...gaps(publishes))).toBeLessThan(REQUEST_MS + SLACK_MS);
    expect(ackedAt - leaderAt).toBeLessThan(REQUEST_MS + SLACK_MS);
  }, 60_000);
});
