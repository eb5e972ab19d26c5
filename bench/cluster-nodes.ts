/**
 * What bench:cluster reads of its nodes (their /health, /metrics and API) and of the nats-server, and its payer: the
 * run itself is bench/cluster.ts.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connectBus } from '../bus/connect.js';
import { PARTITIONS_STREAM } from '../bus/streams.js';
import type { NatsServer } from '../test/kit/nats-server.js';
import type { Started } from '../test/kit/proc.js';

/** A node the bench started (the built binary, its own data directory). */
export interface Node {
  name: string;
  /** The receiver's path its streams deliver to. */
  path: string;
  proc: Started;
  dir: string;
  api(method: string, path: string, json?: unknown): Promise<{ status: number; body: any }>;
  /** CPU time (user + system, all threads) the process has used, ms. */
  cpu(): number;
}

/** Whether the node's /health names a lease of the chain among those it holds. */
export async function holdsLease(node: Node, chain: string): Promise<boolean> {
  const leases = (doc: unknown): Array<{ chain?: unknown }> =>
    Array.isArray(doc)
      ? doc.flatMap(leases)
      : doc === null || typeof doc !== 'object'
        ? []
        : Object.entries(doc).flatMap(([k, v]) => (k === 'leases' && Array.isArray(v) ? v : leases(v)));
  return leases((await node.api('GET', '/health')).body).some((l) => l.chain === chain);
}

/** The partitions the node owns and adopted (its /health; a partition's `queued` is null until adopted). */
export async function adopted(node: Node): Promise<number[]> {
  const parts = ((await node.api('GET', '/health')).body?.cluster?.partitions ?? []) as Array<{ partition: number; queued: unknown }>;
  return parts.filter((p) => p.queued !== null).map((p) => p.partition);
}

/** A counter of the node's /metrics: the total, or per stream (CHAINPOST_METRICS_STREAMS) by stream id. */
export async function metric(node: Node, name: string): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${node.proc.port}/metrics`);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    const m = /^(\w+)(?:\{stream="([^"]*)"\})? (\S+)$/.exec(line);
    if (m?.[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}
/** The webhooks the node delivered since its start (its /metrics). */
export const deliveredBy = async (node: Node): Promise<number> => (await metric(node, 'chainpost_webhooks_delivered_total')).get('') ?? 0;

/** The tenant's webhooks delivered as the node's store has them (GET /stats: the partitions' outcomes, applied or its own). */
export const deliveredIn = async (node: Node): Promise<number> => (await node.api('GET', '/stats')).body?.totalWebhooksDelivered ?? 0;

/**
 * Pays `to` in a block every `everyMs` or so until stopped (this alone pays meanwhile: two payments at once would get
 * one nonce); `now()` cuts the current wait short.
 */
export function keepPaying(pay: (to: string) => Promise<unknown>, to: string, everyMs = 100): { now(): void; stop(): Promise<void> } {
  let paying = true;
  let wake = (): void => {};
  const payer = (async () => {
    while (paying) {
      await pay(to);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, everyMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();
  // Its failure is thrown where it is awaited (stop), after the nodes are stopped, not as an unhandled rejection.
  payer.catch(() => undefined);
  return {
    now: () => wake(),
    stop: async () => {
      paying = false;
      wake();
      await payer;
    },
  };
}

/**
 * The most messages of the partitions' log a live node has still to apply, as the server has each node's consumer: a
 * consumer that delivered nothing over half a second while messages waited is a killed node's (left to expire).
 */
export async function partitionLogLag(nats: NatsServer): Promise<number> {
  const bus = await connectBus({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(bus.nc);
    const look = async (): Promise<Map<string, { delivered: number; pending: number }>> => {
      const out = new Map<string, { delivered: number; pending: number }>();
      for await (const c of jsm.consumers.list(PARTITIONS_STREAM))
        out.set(c.name, { delivered: c.delivered.stream_seq, pending: c.num_pending });
      return out;
    };
    const first = await look();
    await new Promise((r) => setTimeout(r, 500));
    let most = 0;
    for (const [name, now] of await look()) {
      const before = first.get(name);
      if (before === undefined || now.delivered > before.delivered || now.pending === 0) most = Math.max(most, now.pending);
    }
    return most;
  } finally {
    await bus.close();
  }
}
