import { decode } from '@msgpack/msgpack';
import { jetstreamManager } from '@nats-io/jetstream';
import { expect } from 'vitest';
import xxhash from 'xxhash-wasm';
import { connectBus } from '../../bus/connect.js';
import { CONTROL_STREAM } from '../../bus/streams.js';
import { partitionOf } from '../../engine/cluster/partitions.js';
import type { NatsServer } from '../kit/nats-server.js';
import { until, type RunningBinary } from '../helpers.js';
import { anvilRpc } from '../kit/anvil-rpc.js';

/**
 * What the two-node system tests share: where the delivery partitions live once the nodes split them, and URLs whose
 * partition a given node owns (the tenant read off the control log, the URL hashed with it as the nodes do).
 */

export interface Partition {
  partition: number;
  queued: number | null;
}

export const partitionsOf = async (n: RunningBinary): Promise<Partition[]> =>
  ((await n.call('/health')).body.cluster?.partitions ?? []) as Partition[];

/** The undelivered webhooks of every partition `n` holds (as /health counts them: at most once a second). */
export const queuedOn = async (n: RunningBinary): Promise<number> => (await partitionsOf(n)).reduce((sum, p) => sum + (p.queued ?? 0), 0);

/** Every partition `n` holds, adopted (its log applied). */
export const adoptedAll = async (n: RunningBinary): Promise<boolean> =>
  (await partitionsOf(n)).filter((p) => p.queued !== null).length === 64;

/**
 * Which of `a` and `b` holds the webhook `stage` queues (one that fails and waits for its retry): the node whose
 * partitions' queues grew by one while the other's did not.
 */
export async function queuedWhere(a: RunningBinary, b: RunningBinary, stage: () => Promise<void>): Promise<RunningBinary> {
  const [qa, qb] = [await queuedOn(a), await queuedOn(b)];
  await stage();
  let owner: RunningBinary | undefined;
  const found = await until(
    async () => {
      const [da, db] = [(await queuedOn(a)) - qa, (await queuedOn(b)) - qb];
      owner = da === 1 && db === 0 ? a : da === 0 && db === 1 ? b : undefined;
      return owner !== undefined;
    },
    10_000,
    100,
  );
  expect(found).toBe(true);
  return owner!;
}

/** Every partition held by `nodes` and adopted (its log applied), none twice. */
export const settled = async (nodes: RunningBinary[]): Promise<boolean> => {
  const held = (await Promise.all(nodes.map(partitionsOf))).flat();
  return held.length === 64 && new Set(held.map((p) => p.partition)).size === 64 && held.every((p) => p.queued !== null);
};

/** The partitions `x` holds once the two nodes split them by the plan, each adopted, the split the same a lease TTL on. */
export async function splitOf(x: RunningBinary, y: RunningBinary, ttlMs: number): Promise<Set<number>> {
  const split = async (): Promise<string> => {
    const [px, py] = [await partitionsOf(x), await partitionsOf(y)];
    return px.length > 0 && py.length > 0 && (await settled([x, y])) ? px.map((p) => p.partition).join() : '';
  };
  let seen = '';
  const stable = await until(
    async () => {
      const now = await split();
      const same = now !== '' && now === seen;
      seen = now;
      return same;
    },
    30_000,
    ttlMs,
  );
  expect(stable).toBe(true);
  return new Set(seen.split(',').map(Number));
}

/** A URL `<prefix>-<n>` of one of the partitions `owned`, for the tenant. */
export async function urlIn(owned: ReadonlySet<number>, tenant: string, prefix: string): Promise<string> {
  const { h32 } = await xxhash();
  for (let i = 0; ; i++) {
    const url = `${prefix}-${i}`;
    if (owned.has(partitionOf(h32, tenant, url))) return url;
  }
}

/** The tenant of the nodes' API key, as the control log's first stream says (a stream's partition hashes it with the URL). */
export async function tenantOfStreams(server: NatsServer): Promise<string> {
  const bus = await connectBus({ servers: server.url, onceWithinMs: 5_000 });
  try {
    const jsm = await jetstreamManager(bus.nc);
    const last = (await jsm.streams.info(CONTROL_STREAM)).state.last_seq;
    for (let seq = 1; seq <= last; seq++) {
      const { change } = decode((await jsm.streams.getMessage(CONTROL_STREAM, { seq }))!.data) as {
        change: { kind: string; stream?: { tenantId: string } };
      };
      if (change.kind === 'stream.create') return change.stream!.tenantId;
    }
    throw new Error('no stream in the control log');
  } finally {
    await bus.close();
  }
}

/**
 * A cluster node's environment on one anvil as chain `chain` (confirmed at one block, polled every 50 ms), with
 * `key`, leases of `ttlMs`, no rate limit, and the test clock.
 */
export const evmNodeEnv = (o: {
  nats: NatsServer;
  anvilUrl: string;
  chain: string;
  key: string;
  ttlMs: number;
}): Record<string, string> => ({
  CHAINPOST_NATS: o.nats.url,
  CHAINPOST_CHAINS: `${o.chain}=${o.anvilUrl}`,
  CHAINPOST_API_KEY: o.key,
  CHAINPOST_LEASE_TTL_MS: String(o.ttlMs),
  CHAINPOST_CONFIRMATIONS: `${o.chain}=1`,
  CHAINPOST_POLL_MS: '50',
  CHAINPOST_RATE_LIMIT: '0',
  CHAINPOST_TEST_CLOCK: '1',
});

/** anvil's first dev account, which pays. */
export const SENDER = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';

/** Pays `wallet` 1 wei from SENDER on the anvil at `anvilUrl`, in a block of its own; answers the transaction's hash. */
export const payOn = (anvilUrl: string, wallet: string): Promise<string> =>
  anvilRpc<string>(anvilUrl, 'eth_sendTransaction', [{ from: SENDER, to: wallet, value: '0x1' }]);
