import { rmSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, type BusConnection } from '../../bus/connect.js';
import { CONTROL_STREAM } from '../../bus/streams.js';
import { startNatsCluster, type NatsCluster } from '../kit/nats-server.js';
import { startChainpost, until, type Running } from '../helpers.js';
import { startReceiver } from '../receiver.js';

/**
 * A node on a three-server NATS cluster (the deployment docs/operations.md describes): with
 * CHAINPOST_NATS_REPLICAS=3 its control log has a copy on each server, so it outlives any one of them.
 */
let nats: NatsCluster;
let bus: BusConnection;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let node: Running;

beforeAll(async () => {
  nats = await startNatsCluster();
  bus = await connectBus({ servers: nats.url, maxReconnectWaitMs: 100 });
  rx = await startReceiver();
  node = await startChainpost({ CHAINPOST_NATS: nats.url, CHAINPOST_NATS_REPLICAS: '3' });
}, 60_000);

afterAll(async () => {
  if (node !== undefined) {
    await node.stop();
    rmSync(node.dir, { recursive: true, force: true });
  }
  await rx?.close();
  await bus?.close();
  await nats?.close();
});

const create = () => node.call('/streams/evm', { method: 'PUT', json: { webhookUrl: rx.url, chainIds: ['0x1'] } });

describe('a node on a three-server NATS cluster (CHAINPOST_NATS_REPLICAS=3)', () => {
  it('keeps its control log on every server, and takes writes again once the servers left replace the one leading it, killed', async () => {
    const jsm = await jetstreamManager(bus.nc);
    const before = await jsm.streams.info(CONTROL_STREAM);
    expect(before.config.num_replicas).toBe(3);
    const first = await create();
    expect(first.status).toBe(200);
    const leader = before.cluster!.leader!;
    await nats.servers[nats.names.indexOf(leader)]!.stop('kill');
    // 503 while the two left elect a leader among their copies (a few seconds), then written.
    let made: string | undefined;
    const written = async (): Promise<boolean> => {
      const r = await create();
      if (r.status === 200) made = r.body.id as string;
      return made !== undefined;
    };
    expect(await until(written, 30_000, 250)).toBe(true);
    const after = await jsm.streams.info(CONTROL_STREAM);
    expect(after.cluster!.leader).not.toBe(leader);
    // Read back from the node's own store, with the one written before the kill.
    const ids = ((await node.call('/streams/evm?limit=100')).body.result as Array<{ id: string }>).map((x) => x.id);
    expect(ids).toEqual(expect.arrayContaining([first.body.id, made]));
  });
});
