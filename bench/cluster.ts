/**
 * npm run bench:cluster — what the bus costs and how fast a cluster heals, on one machine: a node on NATS JetStream
 * (CHAINPOST_NATS, every role) side by side with the single process, on the same blocks of the same anvil, with the
 * same streams and the same receiver (this process, 127.0.0.1), each delivering to a path of its own: the machine is
 * shared, and two setups measured minutes apart would compare the load of two moments. The built binary, a real
 * nats-server (a fresh one per cluster, so no cluster sees another's control log), anvil.
 *
 * Each node gets STREAMS streams, each watching its own wallets and one wallet every stream watches (HOT):
 * - latency: transfers one at a time, each to one stream's wallet, from this process hearing the block's head to
 *   the receiver getting the node's unconfirmed webhook (bench:e2e's measure);
 * - per block: IDLE_BLOCKS blocks paying a wallet no stream watches, the node's CPU (/proc) until it stored the last;
 * - throughput: BLOCKS blocks paying HOT (a webhook per stream, unconfirmed, and confirmed a block later), sent back
 *   to back: webhooks received ÷ the time from the first payment to the node's last webhook, and the node's CPU per
 *   webhook beyond its per-block cost.
 * Then the cluster's roles apart, on a nats-server of their own: a node with every role (the chain's lease holder: it
 * follows, matches and delivers) and a node without ingest (it applies the blocks the holder publishes), the same
 * windows; then, TAKEOVERS times, a node with every role joins and the holder is killed (-9): the time to the next
 * block the newcomer stores, the newcomer being the holder of the next round.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startAnvil } from '../http/clients/anvil.js';
import { startNatsServer, type NatsServer } from '../test/kit/nats-server.js';
import { cpuMs, startProcess, until, type Started } from '../test/kit/proc.js';
import { announced, breakdown, parseTraces, STAGES } from './announced.js';
import { BIN, percentile, printRows, report, round } from './report.js';

const STREAMS = Number(process.env['BENCH_STREAMS'] ?? 250);
/** Transfers timed one at a time, per setup. */
const TXS = Number(process.env['BENCH_TXS'] ?? 200);
/** Blocks of the throughput window; the per-block window has three times as many (they cost little, and /proc counts in 10 ms ticks). */
const BLOCKS = Number(process.env['BENCH_BLOCKS'] ?? 20);
const IDLE_BLOCKS = 3 * BLOCKS;
/** Kills of the chain's holder, each timed to the next block another node stores. */
const TAKEOVERS = Number(process.env['BENCH_TAKEOVERS'] ?? 3);
const WARMUP_TXS = Math.min(20, TXS);
const WALLETS_PER_STREAM = 10;
/** The chains' lease TTL of the clusters: short, as a takeover waits for it. */
const TTL_MS = 2_000;
const CHAIN = '0x539';
const KEY = 'cpk_bench_cluster_key_0123456789abcdef';
/** A transfer whose webhook has not come within this long is lost (counted). */
const TX_TIMEOUT_MS = 5_000;
/** How long a window may take to be stored, received or taken over before the run gives up. */
const WINDOW_MS = 120_000;

const wallet = (i: number): string => `0x${(0xc1500000 + i).toString(16)}${'7'.repeat(32)}`;
/** Watched by every stream: a block paying it makes a webhook per stream. */
const HOT = `0x${'c1a5'.repeat(10)}`;
/** Watched by none: a block paying it makes no webhook. */
const IDLE = `0x${'1d1e'.repeat(10)}`;

interface Node {
  name: string;
  /** The receiver's path its streams deliver to. */
  path: string;
  proc: Started;
  dir: string;
  api(method: string, path: string, json?: unknown): Promise<{ status: number; body: any }>;
  /** CPU time (user + system, all threads) the process has used, ms. */
  cpu(): number;
}

const anvil = await startAnvil({ chainId: 1337 });
const rig = await announced(anvil.url);

/** What every node runs with: the chain, the receiver on loopback, no rate limit, one confirmation. */
const baseEnv = (): Record<string, string> => ({
  CHAINPOST_PORT: '0',
  CHAINPOST_API_KEY: KEY,
  CHAINPOST_CHAINS: `${CHAIN}=${anvil.url}`,
  CHAINPOST_POLL_MS: '1000',
  CHAINPOST_RATE_LIMIT: '0',
  CHAINPOST_PRIVATE_TARGETS: 'allow',
  CHAINPOST_CONFIRMATIONS: `${CHAIN}=1`,
  CHAINPOST_MAX_STREAMS: String(STREAMS),
  CHAINPOST_MAX_ADDRESSES: String(WALLETS_PER_STREAM + 1),
});
const clusterEnv = (nats: NatsServer): Record<string, string> => ({
  CHAINPOST_NATS: nats.url,
  CHAINPOST_LEASE_TTL_MS: String(TTL_MS),
});

const nodes: Node[] = [];
async function startNode(name: string, path: string, env: Record<string, string>, args: string[] = []): Promise<Node> {
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-cluster-'));
  const proc = await startProcess([BIN, 'serve', ...args], { ...baseEnv(), ...env, CHAINPOST_DATA: dir });
  const node: Node = {
    name,
    path,
    proc,
    dir,
    api: async (method, path, json) => {
      const res = await fetch(`http://127.0.0.1:${proc.port}${path}`, {
        method,
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: json === undefined ? undefined : JSON.stringify(json),
      });
      return { status: res.status, body: await res.json().catch(() => undefined) };
    },
    cpu: () => cpuMs(proc.child.pid),
  };
  nodes.push(node);
  return node;
}
async function stopNode(node: Node, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  await node.proc.stop(signal);
  rmSync(node.dir, { recursive: true, force: true });
  nodes.splice(nodes.indexOf(node), 1);
}

/** Polls `probe` until it holds, or throws naming `what` after WINDOW_MS. */
async function waitFor(what: string, probe: () => boolean | Promise<boolean>, every = 20): Promise<void> {
  if (!(await until(probe, WINDOW_MS, every))) throw new Error(`${what}: not within ${WINDOW_MS / 1000} s`);
}

/** Whether the node's store holds block `height` (its Data API reads it). */
const holds = async (node: Node, height: number): Promise<boolean> =>
  (await node.api('GET', `/api/v2.2/block/${height}?chain=${CHAIN}`)).status === 200;

/** Whether the node's /health names a lease of the chain among those it holds. */
async function holdsLease(node: Node): Promise<boolean> {
  const leases = (doc: unknown): Array<{ chain?: unknown }> =>
    Array.isArray(doc)
      ? doc.flatMap(leases)
      : doc === null || typeof doc !== 'object'
        ? []
        : Object.entries(doc).flatMap(([k, v]) => (k === 'leases' && Array.isArray(v) ? v : leases(v)));
  return leases((await node.api('GET', '/health')).body).some((l) => l.chain === CHAIN);
}

/** STREAMS streams through `node`, each watching its own WALLETS_PER_STREAM wallets and HOT, delivering to its path. */
async function makeStreams(node: Node): Promise<void> {
  const t0 = performance.now();
  for (let s = 0; s < STREAMS; s++) {
    const made = await node.api('PUT', '/streams/evm', {
      webhookUrl: `${rig.hook}${node.path}`,
      description: 'bench',
      tag: `s${s}`,
      chainIds: [CHAIN],
      includeNativeTxs: true,
    });
    if (made.status !== 200) throw new Error(`PUT /streams/evm on ${node.name}: ${made.status} ${JSON.stringify(made.body)}`);
    const address = [...Array.from({ length: WALLETS_PER_STREAM }, (_, k) => wallet(s * WALLETS_PER_STREAM + k)), HOT];
    const added = await node.api('POST', `/streams/evm/${made.body.id}/address`, { address });
    if (added.status !== 200) throw new Error(`POST address on ${node.name}: ${added.status} ${JSON.stringify(added.body)}`);
  }
  console.log(`${node.name}: ${STREAMS} streams made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

const toStream = (i: number): string => wallet((i % STREAMS) * WALLETS_PER_STREAM + (i % WALLETS_PER_STREAM));

interface Latency {
  p50Ms: number;
  p99Ms: number;
  /** Transfers whose webhook did not come, or came before this process heard the block's head. */
  lost: number;
  /** Each stage's p50 over the measured blocks (a node started with CHAINPOST_TRACE_BLOCKS; else NaN). */
  stagesP50Ms: Record<string, number>;
}

/** Warm-up, then TXS transfers timed one at a time: per node, p50 and p99 from the head heard to its webhook received. */
async function latency(delivering: Node[]): Promise<Latency[]> {
  const paths = delivering.map((n) => n.path);
  await rig.run(paths, WARMUP_TXS, toStream, TX_TIMEOUT_MS);
  const measured = await rig.run(paths, TXS, toStream, TX_TIMEOUT_MS);
  return delivering.map((node, i) => {
    const m = measured[i]!;
    const stages = breakdown(
      parseTraces(node.proc.output()),
      m.blocks,
      (n) => rig.heads.get(n)!,
      (n) => rig.arrivals.get(`${node.path}/${n}`)!,
    );
    const out = {
      p50Ms: round(percentile(m.latencies, 0.5)),
      p99Ms: round(percentile(m.latencies, 0.99)),
      lost: m.lost + m.unmeasured,
      stagesP50Ms: Object.fromEntries(STAGES.map(([name]) => [name, stages[`stage${name}P50Ms`]!])),
    };
    console.log(`${node.name}: head → webhook p50 ${out.p50Ms} ms, p99 ${out.p99Ms} ms (${out.lost} of ${TXS} lost or unmeasured)`);
    return out;
  });
}

/** IDLE_BLOCKS blocks no stream watches: each node's CPU per block, read when it stored the last. */
async function perBlock(among: Node[]): Promise<number[]> {
  const before = among.map((n) => n.cpu());
  let last = 0;
  for (let b = 0; b < IDLE_BLOCKS; b++) last = await rig.pay(IDLE);
  const after = await Promise.all(
    among.map(async (n) => {
      await waitFor(`${n.name} stores block ${last}`, () => holds(n, last));
      return n.cpu();
    }),
  );
  return among.map((n, i) => {
    const ms = round((after[i]! - before[i]!) / IDLE_BLOCKS, 2);
    console.log(`${n.name}: ${ms} ms of CPU per block`);
    return ms;
  });
}

interface Throughput {
  perSec: number;
  cpuUsPerWebhook: number;
  seconds: number;
}

/**
 * BLOCKS blocks paying HOT, back to back, and one paying IDLE (the last one's confirmation). Per delivering node,
 * with its CPU per block: webhooks per second from the first payment to its last webhook, and its CPU per webhook
 * beyond its per-block cost, read when its last webhook came. `applying` nodes are waited for until they stored the
 * last block.
 */
async function throughput(delivering: Array<[Node, msPerBlock: number]>, applying: Node[] = []): Promise<Throughput[]> {
  const expected = 2 * BLOCKS * STREAMS;
  const from = rig.received.length;
  const cpu0 = delivering.map(([n]) => n.cpu());
  const started = performance.now();
  let first = 0;
  let last = 0;
  for (let b = 0; b < BLOCKS; b++) {
    last = await rig.pay(HOT);
    if (b === 0) first = last;
  }
  const closing = await rig.pay(IDLE);
  // Each node's webhooks of blocks first..last so far, scanned from where the last poll stopped.
  const arrived = delivering.map((): number[] => []);
  let scanned = from;
  const scan = (): void => {
    for (; scanned < rig.received.length; scanned++) {
      const w = rig.received[scanned]!;
      const i = delivering.findIndex(([n]) => n.path === w.path);
      if (i >= 0 && w.block >= first && w.block <= last) arrived[i]!.push(w.at);
    }
  };
  const out = await Promise.all(
    delivering.map(async ([node, msPerBlock], i): Promise<Throughput> => {
      await waitFor(`${node.name}: ${expected} webhooks of blocks ${first}..${last}`, () => {
        scan();
        return arrived[i]!.length >= expected;
      });
      const cpu = node.cpu() - cpu0[i]!;
      const seconds = (arrived[i]![expected - 1]! - started) / 1000;
      const t = {
        perSec: Math.round(expected / seconds),
        cpuUsPerWebhook: round(((cpu - (BLOCKS + 1) * msPerBlock) * 1000) / expected, 1),
        seconds: round(seconds, 2),
      };
      console.log(`${node.name}: ${expected} webhooks in ${t.seconds} s = ${t.perSec}/s, ${t.cpuUsPerWebhook} µs of CPU per webhook`);
      return t;
    }),
  );
  for (const n of applying) await waitFor(`${n.name} stores block ${closing}`, () => holds(n, closing));
  scan();
  for (const [i, [node]] of delivering.entries())
    if (arrived[i]!.length > expected) console.log(`warning: ${node.name}: ${arrived[i]!.length - expected} webhooks more than expected`);
  return out;
}

/** Where a block's time goes (app/block-trace.ts), for the two side by side. */
const TRACED = { CHAINPOST_TRACE_BLOCKS: '1' };
const natsServers: NatsServer[] = [];
const startNats = async (): Promise<NatsServer> => {
  const nats = await startNatsServer();
  natsServers.push(nats);
  return nats;
};
let figures: Record<string, number | Record<string, number>>;
let notes: string[];
try {
  // Side by side on the same blocks: the single process and a node on NATS with every role.
  const nats1 = await startNats();
  const [single, bus] = await Promise.all([
    startNode('single process', '/single', TRACED),
    startNode('one node on NATS', '/cluster', { ...clusterEnv(nats1), ...TRACED }),
  ]);
  await waitFor(`${bus.name} takes the chain’s lease`, () => holdsLease(bus), 50);
  await Promise.all([makeStreams(single), makeStreams(bus)]);
  const [singleLatency, busLatency] = (await latency([single, bus])) as [Latency, Latency];
  const [singleMsPerBlock, busMsPerBlock] = (await perBlock([single, bus])) as [number, number];
  const [singleTp, busTp] = (await throughput([
    [single, singleMsPerBlock],
    [bus, busMsPerBlock],
  ])) as [Throughput, Throughput];
  await Promise.all([stopNode(single), stopNode(bus)]);

  // The roles apart: the holder (every role) and a node without ingest, on a nats-server of their own.
  const nats2 = await startNats();
  const holder = await startNode('holder (every role)', '/roles', clusterEnv(nats2));
  await waitFor('the holder takes the chain’s lease', () => holdsLease(holder), 50);
  const applier = await startNode('applier (--roles api,deliver)', '/roles', clusterEnv(nats2), ['--roles', 'api,deliver']);
  await makeStreams(holder);
  await rig.run([holder.path], WARMUP_TXS, toStream, TX_TIMEOUT_MS);
  const natsCpu0 = cpuMs(nats2.pid());
  const [holderMsPerBlock, applierMsPerBlock] = (await perBlock([holder, applier])) as [number, number];
  const natsMsPerBlock = round((cpuMs(nats2.pid()) - natsCpu0) / IDLE_BLOCKS, 2);
  console.log(`nats-server: ${natsMsPerBlock} ms of CPU per block`);
  const [roles] = (await throughput([[holder, holderMsPerBlock]], [applier])) as [Throughput];

  // The takeovers: a node with every role joins and applies the chain, the holder is killed (-9) while anvil mines a
  // block every 100 ms or so; the newcomer holds the chain next, and is killed in the next round.
  let paying = true;
  const payer = (async () => {
    while (paying) {
      await rig.pay(IDLE);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  // Its failure is thrown where it is awaited (below), after the nodes are stopped, not as an unhandled rejection.
  payer.catch(() => undefined);
  const takeovers: number[] = [];
  try {
    let current = holder;
    for (let k = 1; k <= TAKEOVERS; k++) {
      const contender = await startNode(`contender ${k} (every role)`, '/roles', { ...clusterEnv(nats2), ...TRACED });
      // The chain's head as mined so far (the payer alone pays: two payments at once would get one nonce).
      const head = Number(await rig.rpc.call<string>('eth_blockNumber', []));
      await waitFor(`${contender.name} applies the chain`, () => holds(contender, head));
      const killedAt = performance.timeOrigin + performance.now();
      await stopNode(current, 'SIGKILL');
      // The contender's first block stored by its own follower after the kill (CHAINPOST_TRACE_BLOCKS's committed marks).
      const storedAfterKill = (): number | undefined => {
        for (const line of contender.proc.output().split('\n')) {
          if (!line.includes('"msg":"trace"')) continue;
          const t = JSON.parse(line) as { stage: string; at: number };
          if (t.stage === 'committed' && t.at > killedAt) return t.at;
        }
        return undefined;
      };
      await waitFor(`${contender.name} stores a block of its own`, () => storedAfterKill() !== undefined);
      takeovers.push(round((storedAfterKill()! - killedAt) / 1000));
      console.log(
        `takeover ${k}: ${contender.name} stored its first block ${takeovers.at(-1)} s after the kill -9 (TTL ${TTL_MS / 1000} s)`,
      );
      current = contender;
    }
  } finally {
    paying = false;
    await payer;
  }
  const ingestTakeoverSeconds = Math.max(...takeovers);

  figures = {
    webhooksPerSec: singleTp.perSec,
    clusterWebhooksPerSec: busTp.perSec,
    ratioWebhooksPerSec: round(busTp.perSec / singleTp.perSec),
    p50Ms: singleLatency.p50Ms,
    clusterP50Ms: busLatency.p50Ms,
    p99Ms: singleLatency.p99Ms,
    clusterP99Ms: busLatency.p99Ms,
    stagesP50Ms: singleLatency.stagesP50Ms,
    clusterStagesP50Ms: busLatency.stagesP50Ms,
    leaseTtlSeconds: TTL_MS / 1000,
    ingestTakeoverSeconds,
    ingestTakeoverMedianSeconds: percentile(takeovers, 0.5),
    cpuMsPerBlock: singleMsPerBlock,
    clusterCpuMsPerBlock: busMsPerBlock,
    cpuUsPerWebhook: singleTp.cpuUsPerWebhook,
    clusterCpuUsPerWebhook: busTp.cpuUsPerWebhook,
    cpuMsPerBlockByRole: { ingest: holderMsPerBlock, apply: applierMsPerBlock },
    natsCpuMsPerBlock: natsMsPerBlock,
    cpuUsPerWebhookByRole: { matchAndDeliver: roles.cpuUsPerWebhook },
    rolesWebhooksPerSec: roles.perSec,
    streams: STREAMS,
    transactions: TXS,
    blocks: BLOCKS,
    lost: singleLatency.lost + busLatency.lost,
  };
  console.log('');
  printRows([
    ['webhooks/s, node on NATS', busTp.perSec, '/s', singleTp.perSec],
    ['webhooks/s, single process', singleTp.perSec, '/s'],
    ['head → webhook p50, NATS', busLatency.p50Ms, 'ms', singleLatency.p50Ms],
    ['head → webhook p50, single', singleLatency.p50Ms, 'ms'],
    ['head → webhook p99, NATS', busLatency.p99Ms, 'ms', singleLatency.p99Ms],
    ['head → webhook p99, single', singleLatency.p99Ms, 'ms'],
    ['CPU per block, NATS', busMsPerBlock, 'ms', singleMsPerBlock],
    ['CPU per block, single', singleMsPerBlock, 'ms'],
    ['CPU per webhook, NATS', busTp.cpuUsPerWebhook, 'µs', singleTp.cpuUsPerWebhook],
    ['CPU per webhook, single', singleTp.cpuUsPerWebhook, 'µs'],
    ['ingest takeover, longest', ingestTakeoverSeconds, 's', TTL_MS / 1000],
    ['ingest takeover, median', percentile(takeovers, 0.5), 's', TTL_MS / 1000],
    ['lease TTL', TTL_MS / 1000, 's'],
  ]);
  console.log('\nwhere the time goes (p50 per stage, CHAINPOST_TRACE_BLOCKS), node on NATS beside the single process:');
  printRows(STAGES.map(([name]) => [`stage ${name}`, busLatency.stagesP50Ms[name]!, 'ms', singleLatency.stagesP50Ms[name]!]));
  console.log('\nby role (two nodes on NATS: the chain’s holder with every role, a node without ingest), beside the single process:');
  printRows([
    ['CPU per block, holder', holderMsPerBlock, 'ms', singleMsPerBlock],
    ['CPU per block, applier', applierMsPerBlock, 'ms', singleMsPerBlock],
    ['CPU per block, nats-server', natsMsPerBlock, 'ms', singleMsPerBlock],
    ['CPU per webhook, holder', roles.cpuUsPerWebhook, 'µs', singleTp.cpuUsPerWebhook],
  ]);
  const deliveryResume =
    'deliveryResumeSeconds (kill to the first webhook of a moved partition) is not measured: delivery partitions are not wired yet (a chain’s webhooks are matched and sent by its lease holder), so no partition moves; its goal counts as not met.';
  console.log(`\n${deliveryResume}`);
  notes = [
    `The single process and a node on NATS (every role, its own nats-server, file storage) side by side on the same blocks of the same anvil, with the same ${STREAMS} streams (each watching ${WALLETS_PER_STREAM} wallets of its own and one every stream watches) and the same receiver (this process, 127.0.0.1), each delivering to a path of its own: both see the machine's load of the same moment (it is shared). The built binary, CHAINPOST_LEASE_TTL_MS=${TTL_MS}, one confirmation. The ratios printed are of the same run.`,
    `p50Ms / clusterP50Ms (and p99): from this process hearing the block's newHeads to the receiver getting the node's unconfirmed webhook, ${TXS} transfers one at a time after ${WARMUP_TXS} for warm-up, each to one stream's wallet (bench:e2e's measure). stagesP50Ms / clusterStagesP50Ms: where that time goes, each stage's p50 over the measured blocks from the nodes' CHAINPOST_TRACE_BLOCKS lines (both nodes trace, in every window): ${STAGES.map(([name, , label]) => `${name} = ${label}`).join('; ')}. lost: transfers whose webhook did not come within ${TX_TIMEOUT_MS / 1000} s, or came before the head was heard, over both.`,
    `webhooksPerSec / clusterWebhooksPerSec: ${BLOCKS} blocks each paying the wallet every stream watches, sent back to back, and one block more (the last one's confirmation): ${2 * BLOCKS * STREAMS} webhooks per node (unconfirmed and confirmed), from the first payment to the node's last webhook received. Both nodes deliver at once, so each has about half the machine: the figures are below what one has alone, their ratio is the bus's cost.`,
    `CPU from /proc of each node's process (user + system, every thread; 10 ms ticks; nats-server's own CPU not included): cpuMsPerBlock over ${IDLE_BLOCKS} blocks of one transfer each (anvil's, far smaller than a mainnet block: bench:ingest) paying a wallet no stream watches, until the node stored the last one; cpuUsPerWebhook over the throughput window, less cpuMsPerBlock for its ${BLOCKS + 1} blocks. A window's CPU includes the node's background work (lease renewals, the registry's beats, this bench's polls of the block it waits for).`,
    `By role, as the roles can be told apart today (two nodes on a third nats-server, the same windows): cpuMsPerBlockByRole.ingest is the chain's lease holder (every role: it follows the chain, stores, publishes and matches each block, no stream hit here); cpuMsPerBlockByRole.apply a node without ingest (--roles api,deliver), which applies the published blocks (and indexes them for its Data API); natsCpuMsPerBlock the nats-server's own CPU per block over the same window (one publisher, two consumers of the blocks, the leases and the registry); cpuUsPerWebhookByRole.matchAndDeliver the holder's CPU per webhook beyond its per-block cost (rolesWebhooksPerSec: the holder delivering alone). Matching and delivery run on the chain's holder until partitions are wired: they cannot be told apart yet, nor measured on nodes of their own.`,
    `ingestTakeoverSeconds: a node with every role joins the two, applies the chain, and the holder is killed (SIGKILL) while anvil mines a block every 100 ms or so; from the kill to the first block the newcomer's own follower stores (its CHAINPOST_TRACE_BLOCKS committed mark). ${TAKEOVERS} kills in a row (each newcomer the next one killed): ${takeovers.join(' s, ')} s; ingestTakeoverSeconds is the longest. leaseTtlSeconds is the TTL of that cluster.`,
    deliveryResume,
  ];
} finally {
  for (const n of [...nodes]) await stopNode(n, 'SIGKILL').catch(() => undefined);
  await rig.close();
  await anvil.stop();
  for (const s of natsServers) await s.close();
}

const f = figures as Record<string, number>;
const goal = {
  ratioWebhooksPerSec: '≥ 0.5 (clusterWebhooksPerSec ÷ webhooksPerSec)',
  clusterP50Ms: '≤ p50Ms + 5',
  ingestTakeoverSeconds: '≤ 2 × leaseTtlSeconds',
  deliveryResumeSeconds: '≤ 2 × leaseTtlSeconds (not measured: no partitions yet)',
  lost: '= 0',
};
const goalsMet: Record<keyof typeof goal, boolean> = {
  ratioWebhooksPerSec: f['ratioWebhooksPerSec']! >= 0.5,
  clusterP50Ms: f['clusterP50Ms']! <= f['p50Ms']! + 5,
  ingestTakeoverSeconds: f['ingestTakeoverSeconds']! <= 2 * f['leaseTtlSeconds']!,
  // Not measured (no partitions yet): its goal is not met.
  deliveryResumeSeconds: f['deliveryResumeSeconds'] !== undefined && f['deliveryResumeSeconds'] <= 2 * f['leaseTtlSeconds']!,
  lost: f['lost'] === 0,
};
const met = Object.values(goalsMet).every((x) => x);
const each = `Each goal: ${Object.entries(goalsMet)
  .map(([k, x]) => `${k} ${x ? 'met' : 'not met'}`)
  .join(', ')}.`;
console.log(`\n${each}`);
notes.push(each);
report('cluster', 'npm run bench:cluster', figures, goal, met, notes);
console.log(`\ngoal: ${met ? 'met' : 'not met'}; wrote bench/results/cluster.json and bench/RESULTS.md`);
process.exit(0);
