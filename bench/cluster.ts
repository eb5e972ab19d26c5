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
 * Then the cluster's roles apart, on a nats-server of their own: the chain's lease holder (every role: it follows the
 * chain and owns delivery partitions), an owner of partitions that follows no chain (api,match,deliver: it applies the
 * blocks and matches them for its partitions) and a node owning none (api,deliver: it applies the blocks and the
 * partitions' logs), the same windows; every stream delivers to one URL, so one partition, one owner sends them all.
 * Then, RESUMES times, an owner of partitions joins, takes its share and is killed (-9) while blocks pay streams spread
 * over the partitions: the time to the first webhook of a partition it owned, sent by another node. Then, TAKEOVERS
 * times, a node with every role joins and the holder is killed (-9): the time to the next block the newcomer stores,
 * the newcomer being the holder of the next round.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startAnvil } from '../http/clients/anvil.js';
import { startNatsServer, type NatsServer } from '../test/kit/nats-server.js';
import { cpuMs, startProcess, until, type Started } from '../test/kit/proc.js';
import { PARTITIONS } from '../engine/cluster/partitions.js';
import { announced, breakdown, parseTraces, STAGES } from './announced.js';
import { adopted, deliveredBy, deliveredIn, holdsLease, keepPaying, metric, partitionLogLag, type Node } from './cluster-nodes.js';
import { BIN, percentile, printRows, report, round, sized } from './report.js';

const STREAMS = Number(process.env['BENCH_STREAMS'] ?? sized(250, 5));
/** Transfers timed one at a time, per setup. */
const TXS = Number(process.env['BENCH_TXS'] ?? sized(200, 5));
/** Blocks of the throughput window; the per-block window has three times as many (they cost little, and /proc counts in 10 ms ticks). */
const BLOCKS = Number(process.env['BENCH_BLOCKS'] ?? sized(20, 5));
const IDLE_BLOCKS = 3 * BLOCKS;
/** Kills of the chain's holder, each timed to the next block another node stores. */
const TAKEOVERS = Number(process.env['BENCH_TAKEOVERS'] ?? sized(3, 1));
/** Kills of an owner of delivery partitions, each timed to the first webhook of a partition it owned, from another node. */
const RESUMES = Number(process.env['BENCH_RESUMES'] ?? sized(3, 1));
/** Streams of the kills' window, each to a URL of its own (so spread over the partitions), all watching RESUME_WALLET. */
const RESUME_STREAMS = 16;
/** A block paying them every this many ms: some 130 messages a second on the partitions' log, which every node applies. */
const RESUME_BLOCK_MS = 500;
/** A kill waits until no node has more than this many messages of the partitions' log to apply. */
const LAG_AT_KILL = 20;
const LAG_WAIT_MS = 30_000;
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
/** Watched by the RESUME_STREAMS streams alone. */
const RESUME_WALLET = `0x${'5e5e'.repeat(10)}`;

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
  CHAINPOST_MAX_STREAMS: String(STREAMS + RESUME_STREAMS),
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

/** A stream through `node` delivering to the receiver's `path`, watching `address`: its id. */
async function makeStream(node: Node, path: string, tag: string, address: string[]): Promise<string> {
  const made = await node.api('PUT', '/streams/evm', {
    webhookUrl: `${rig.hook}${path}`,
    description: 'bench',
    tag,
    chainIds: [CHAIN],
    includeNativeTxs: true,
  });
  if (made.status !== 200) throw new Error(`PUT /streams/evm on ${node.name}: ${made.status} ${JSON.stringify(made.body)}`);
  const added = await node.api('POST', `/streams/evm/${made.body.id}/address`, { address });
  if (added.status !== 200) throw new Error(`POST address on ${node.name}: ${added.status} ${JSON.stringify(added.body)}`);
  return made.body.id as string;
}

/** STREAMS streams through `node`, each watching its own WALLETS_PER_STREAM wallets and HOT, delivering to its path. */
async function makeStreams(node: Node): Promise<void> {
  const t0 = performance.now();
  for (let s = 0; s < STREAMS; s++)
    await makeStream(node, node.path, `s${s}`, [
      ...Array.from({ length: WALLETS_PER_STREAM }, (_, k) => wallet(s * WALLETS_PER_STREAM + k)),
      HOT,
    ]);
  console.log(`${node.name}: ${STREAMS} streams made in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

/** RESUME_STREAMS streams through `node` watching RESUME_WALLET, each delivering to a path of its own: their ids and paths. */
async function makeResumeStreams(node: Node): Promise<Array<{ id: string; path: string }>> {
  const out: Array<{ id: string; path: string }> = [];
  for (let s = 0; s < RESUME_STREAMS; s++) {
    const path = `/resume/${s}`;
    out.push({ id: await makeStream(node, path, `r${s}`, [RESUME_WALLET]), path });
  }
  return out;
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
 * beyond its per-block cost, read when its last webhook came. Per `applying` node (one that applies the deliverer's
 * outcomes from the partitions' logs), its CPU per webhook beyond its per-block cost, read once its store shows every
 * webhook delivered (GET /stats) and the last block stored; and the nats-server's, read then.
 */
async function throughput(
  delivering: Array<[Node, msPerBlock: number]>,
  applying: Array<[Node, msPerBlock: number]> = [],
  nats?: { pid(): number | undefined; msPerBlock: number },
): Promise<{ delivered: Throughput[]; applied: number[]; natsUsPerWebhook: number }> {
  const expected = 2 * BLOCKS * STREAMS;
  const from = rig.received.length;
  const cpu0 = delivering.map(([n]) => n.cpu());
  const stats0 = await Promise.all(applying.map(([n]) => deliveredIn(n)));
  const applyCpu0 = applying.map(([n]) => n.cpu());
  const natsCpu0 = nats === undefined ? 0 : cpuMs(nats.pid());
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
  const perWebhook = (cpu: number, msPerBlock: number): number => round(((cpu - (BLOCKS + 1) * msPerBlock) * 1000) / expected, 1);
  const delivered = await Promise.all(
    delivering.map(async ([node, msPerBlock], i): Promise<Throughput> => {
      await waitFor(`${node.name}: ${expected} webhooks of blocks ${first}..${last}`, () => {
        scan();
        return arrived[i]!.length >= expected;
      });
      const cpu = node.cpu() - cpu0[i]!;
      const seconds = (arrived[i]![expected - 1]! - started) / 1000;
      const t = { perSec: Math.round(expected / seconds), cpuUsPerWebhook: perWebhook(cpu, msPerBlock), seconds: round(seconds, 2) };
      console.log(`${node.name}: ${expected} webhooks in ${t.seconds} s = ${t.perSec}/s, ${t.cpuUsPerWebhook} µs of CPU per webhook`);
      return t;
    }),
  );
  const applied = await Promise.all(
    applying.map(async ([node, msPerBlock], i) => {
      await waitFor(`${node.name} applies ${expected} outcomes`, async () => (await deliveredIn(node)) >= stats0[i]! + expected, 50);
      await waitFor(`${node.name} stores block ${closing}`, () => holds(node, closing));
      const us = perWebhook(node.cpu() - applyCpu0[i]!, msPerBlock);
      console.log(`${node.name}: ${us} µs of CPU per webhook applied`);
      return us;
    }),
  );
  const natsUsPerWebhook = nats === undefined ? NaN : perWebhook(cpuMs(nats.pid()) - natsCpu0, nats.msPerBlock);
  scan();
  for (const [i, [node]] of delivering.entries())
    if (arrived[i]!.length > expected) console.log(`warning: ${node.name}: ${arrived[i]!.length - expected} webhooks more than expected`);
  return { delivered, applied, natsUsPerWebhook };
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
  await waitFor(`${bus.name} takes the chain’s lease`, () => holdsLease(bus, CHAIN), 50);
  await Promise.all([makeStreams(single), makeStreams(bus)]);
  const [singleLatency, busLatency] = (await latency([single, bus])) as [Latency, Latency];
  const [singleMsPerBlock, busMsPerBlock] = (await perBlock([single, bus])) as [number, number];
  const [singleTp, busTp] = (
    await throughput([
      [single, singleMsPerBlock],
      [bus, busMsPerBlock],
    ])
  ).delivered as [Throughput, Throughput];
  await Promise.all([stopNode(single), stopNode(bus)]);

  // The roles apart, on a nats-server of their own: the chain's holder (every role), an owner of partitions following
  // no chain, and a node owning none. The holder's and the owner's partitions adopted before the windows.
  const nats2 = await startNats();
  const holder = await startNode('holder (every role)', '/roles', clusterEnv(nats2));
  await waitFor('the holder takes the chain’s lease', () => holdsLease(holder, CHAIN), 50);
  const owner = await startNode('owner (--roles api,match,deliver)', '/roles', clusterEnv(nats2), ['--roles', 'api,match,deliver']);
  const applier = await startNode('applier (--roles api,deliver)', '/roles', clusterEnv(nats2), ['--roles', 'api,deliver']);
  const owners = [holder, owner];
  const settled = async (among: Node[]): Promise<boolean> => (await Promise.all(among.map(adopted))).flat().length === PARTITIONS;
  await waitFor('every partition adopted by the holder or the owner', () => settled(owners), 100);
  await makeStreams(holder);
  // Every stream delivers to one URL, so lives in one partition: its owner, the holder or the owner, sends them all.
  const before = await Promise.all(owners.map(deliveredBy));
  await rig.run([holder.path], WARMUP_TXS, toStream, TX_TIMEOUT_MS);
  const after = await Promise.all(owners.map(deliveredBy));
  const deliverer = after[0]! - before[0]! >= after[1]! - before[1]! ? holder : owner;
  console.log(`the streams’ partition is owned by the ${deliverer === holder ? 'holder' : 'owner'}`);
  const natsCpu0 = cpuMs(nats2.pid());
  const [holderMsPerBlock, ownerMsPerBlock, applierMsPerBlock] = (await perBlock([holder, owner, applier])) as [number, number, number];
  const natsMsPerBlock = round((cpuMs(nats2.pid()) - natsCpu0) / IDLE_BLOCKS, 2);
  console.log(`nats-server: ${natsMsPerBlock} ms of CPU per block`);
  const msPerBlock = new Map([
    [holder, holderMsPerBlock],
    [owner, ownerMsPerBlock],
    [applier, applierMsPerBlock],
  ]);
  const other = deliverer === holder ? owner : holder;
  const rolesTp = await throughput(
    [[deliverer, msPerBlock.get(deliverer)!]],
    [
      [applier, applierMsPerBlock],
      [other, msPerBlock.get(other)!],
    ],
    { pid: () => nats2.pid(), msPerBlock: natsMsPerBlock },
  );
  const roles = rolesTp.delivered[0]!;
  const [applierUsPerWebhook, otherUsPerWebhook] = rolesTp.applied as [number, number];

  // The partitions' owners killed: RESUMES times an owner joins, takes its share of the partitions (handed over by the
  // holder and the owner) and is killed (-9) while a block every RESUME_BLOCK_MS pays the RESUME_STREAMS streams.
  const resumeStreams = await makeResumeStreams(holder);
  const resumes: number[] = [];
  const lagsAtKill: number[] = [];
  const resumePayer = keepPaying(rig.pay, RESUME_WALLET, RESUME_BLOCK_MS);
  try {
    for (let k = 1; k <= RESUMES; k++) {
      const victim = await startNode(
        `owner ${k} (--roles api,match,deliver)`,
        '/resume',
        { ...clusterEnv(nats2), CHAINPOST_METRICS_STREAMS: '1' },
        ['--roles', 'api,match,deliver'],
      );
      await waitFor(
        `${victim.name} adopts its share of the partitions`,
        async () => (await adopted(victim)).length > 0 && (await settled([...owners, victim])),
        100,
      );
      // The streams of its partitions: those it delivered to (once adopted, only a partition's owner sends its webhooks).
      const moved = async (): Promise<Set<string>> => {
        const counts = await metric(victim, 'chainpost_stream_webhooks_delivered_total');
        return new Set(resumeStreams.filter((r) => (counts.get(r.id) ?? 0) > 0).map((r) => r.path));
      };
      await waitFor(`${victim.name} delivers webhooks of its partitions`, async () => (await moved()).size > 0, 100);
      // A few blocks more: every stream of its partitions has had a webhook from it.
      await new Promise((r) => setTimeout(r, 1_000));
      const paths = await moved();
      // Killed in a steady state: every node has applied the partitions' log (a takeover waits for its node to apply
      // the partition's last message, so a backlog left by the windows before would be timed too).
      // Waited for LAG_WAIT_MS at most: a machine too busy for its nodes to keep up is measured as it is (lag printed).
      if (!(await until(async () => (await partitionLogLag(nats2)) <= LAG_AT_KILL, LAG_WAIT_MS, 200)))
        console.log(`warning: a node has over ${LAG_AT_KILL} messages of the partitions' log to apply after ${LAG_WAIT_MS / 1000} s`);
      lagsAtKill.push(await partitionLogLag(nats2));
      const from = rig.received.length;
      const killedAt = performance.now();
      await stopNode(victim, 'SIGKILL');
      // Blocks above the head once it is gone were mined after the kill: their webhooks come from another node. The
      // next one is mined at once.
      const head = Number(await rig.rpc.call<string>('eth_blockNumber', []));
      resumePayer.now();
      const resumed = (): number | undefined =>
        rig.received.slice(from).find((w) => paths.has(w.path) && w.block > head && w.at > killedAt)?.at;
      await waitFor(`a webhook of ${victim.name}’s partitions from another node`, () => resumed() !== undefined);
      resumes.push(round((resumed()! - killedAt) / 1000));
      console.log(
        `resume ${k}: the first webhook of a partition ${victim.name} owned (${paths.size} of ${RESUME_STREAMS} streams) came ${resumes.at(-1)} s after its kill -9 (TTL ${TTL_MS / 1000} s; ${lagsAtKill.at(-1)} messages of the partitions' log unapplied on the node furthest behind at the kill)`,
      );
    }
  } finally {
    await resumePayer.stop();
  }
  const deliveryResumeSeconds = Math.max(...resumes);

  // The takeovers: a node with every role joins and applies the chain, the holder is killed (-9) while anvil mines a
  // block every 100 ms or so; the newcomer holds the chain next, and is killed in the next round.
  const payer = keepPaying(rig.pay, IDLE);
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
    await payer.stop();
  }
  const ingestTakeoverSeconds = Math.max(...takeovers);

  // Matching a block on a node owning partitions: the owner's cost beyond the applier's (both apply and index it).
  const matchMsPerBlock = round(ownerMsPerBlock - applierMsPerBlock);
  const delivererName = deliverer === holder ? 'holder' : 'owner';
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
    deliveryResumeSeconds,
    deliveryResumeMedianSeconds: percentile(resumes, 0.5),
    cpuMsPerBlockByRole: { ingest: round(holderMsPerBlock - matchMsPerBlock), match: matchMsPerBlock, apply: applierMsPerBlock },
    cpuMsPerBlockByNode: { holder: holderMsPerBlock, owner: ownerMsPerBlock, applier: applierMsPerBlock },
    natsCpuMsPerBlock: natsMsPerBlock,
    cpuUsPerWebhookByRole: { matchAndDeliver: roles.cpuUsPerWebhook, apply: applierUsPerWebhook },
    natsCpuUsPerWebhook: rolesTp.natsUsPerWebhook,
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
    ['delivery resume, longest', deliveryResumeSeconds, 's', TTL_MS / 1000],
    ['delivery resume, median', percentile(resumes, 0.5), 's', TTL_MS / 1000],
    ['lease TTL', TTL_MS / 1000, 's'],
  ]);
  console.log('\nwhere the time goes (p50 per stage, CHAINPOST_TRACE_BLOCKS), node on NATS beside the single process:');
  printRows(STAGES.map(([name]) => [`stage ${name}`, busLatency.stagesP50Ms[name]!, 'ms', singleLatency.stagesP50Ms[name]!]));
  console.log(
    `\nby role (three nodes on NATS: the chain’s holder with every role, an owner of partitions without ingest, an applier owning none; the streams' partition is the ${delivererName}'s), beside the single process:`,
  );
  printRows([
    ['CPU per block, holder', holderMsPerBlock, 'ms', singleMsPerBlock],
    ['CPU per block, owner', ownerMsPerBlock, 'ms', singleMsPerBlock],
    ['CPU per block, applier', applierMsPerBlock, 'ms', singleMsPerBlock],
    ['CPU per block, nats-server', natsMsPerBlock, 'ms', singleMsPerBlock],
    [`CPU per webhook, ${delivererName}`, roles.cpuUsPerWebhook, 'µs', singleTp.cpuUsPerWebhook],
    ['CPU per webhook, applier', applierUsPerWebhook, 'µs', singleTp.cpuUsPerWebhook],
    [`CPU per webhook, ${deliverer === holder ? 'owner' : 'holder'}`, otherUsPerWebhook, 'µs', singleTp.cpuUsPerWebhook],
    ['CPU per webhook, nats-server', rolesTp.natsUsPerWebhook, 'µs', singleTp.cpuUsPerWebhook],
  ]);
  notes = [
    `The single process and a node on NATS (every role, its own nats-server, file storage) side by side on the same blocks of the same anvil, with the same ${STREAMS} streams (each watching ${WALLETS_PER_STREAM} wallets of its own and one every stream watches) and the same receiver (this process, 127.0.0.1), each delivering to a path of its own: both see the machine's load of the same moment (it is shared). The built binary, CHAINPOST_LEASE_TTL_MS=${TTL_MS}, one confirmation. The ratios printed are of the same run.`,
    `p50Ms / clusterP50Ms (and p99): from this process hearing the block's newHeads to the receiver getting the node's unconfirmed webhook, ${TXS} transfers one at a time after ${WARMUP_TXS} for warm-up, each to one stream's wallet (bench:e2e's measure). stagesP50Ms / clusterStagesP50Ms: where that time goes, each stage's p50 over the measured blocks from the nodes' CHAINPOST_TRACE_BLOCKS lines (both nodes trace, in every window): ${STAGES.map(([name, , label]) => `${name} = ${label}`).join('; ')}. lost: transfers whose webhook did not come within ${TX_TIMEOUT_MS / 1000} s, or came before the head was heard, over both.`,
    `webhooksPerSec / clusterWebhooksPerSec: ${BLOCKS} blocks each paying the wallet every stream watches, sent back to back, and one block more (the last one's confirmation): ${2 * BLOCKS * STREAMS} webhooks per node (unconfirmed and confirmed), from the first payment to the node's last webhook received. Both nodes deliver at once, so each has about half the machine: the figures are below what one has alone, their ratio is the bus's cost.`,
    `CPU from /proc of each node's process (user + system, every thread; 10 ms ticks; nats-server's own CPU not included): cpuMsPerBlock over ${IDLE_BLOCKS} blocks of one transfer each (anvil's, far smaller than a mainnet block: bench:ingest) paying a wallet no stream watches, until the node stored the last one; cpuUsPerWebhook over the throughput window, less cpuMsPerBlock for its ${BLOCKS + 1} blocks. A window's CPU includes the node's background work (lease renewals, the registry's beats, this bench's polls of the block it waits for).`,
    `By role (three nodes on a third nats-server, the same windows): the chain's lease holder (every role: it follows the chain, stores and publishes each block, and owns partitions, so matches it), an owner (--roles api,match,deliver: it applies each published block and matches it for its partitions) and an applier (--roles api,deliver: it applies the blocks and the partitions' logs, owns none); each indexes the blocks for its Data API. Per block, no stream hit (cpuMsPerBlockByNode as measured): apply is the applier's; match the owner's beyond the applier's (a node owning partitions matches every block against every stream, then keeps its partitions' streams: paid on every owner, whatever its share); ingest the holder's less match (follow, store, publish). natsCpuMsPerBlock: the nats-server's own CPU per block over the same window (one publisher; two consumers of the blocks; the leases, the registry and the partitions' owners loops). Per webhook (rolesWebhooksPerSec: its owner delivering alone), every stream delivering to one URL, so in one partition, owned here by the ${delivererName}: matchAndDeliver is that owner's CPU per webhook beyond its per-block cost (build, stage, publish the partition's units, send, record the outcome); apply the applier's, read once its store showed every webhook delivered (GET /stats: it applies each partition's units, as every node does); the other owner's, which applies them too: ${otherUsPerWebhook} µs; natsCpuUsPerWebhook the nats-server's over the window, beyond its per-block cost.`,
    `ingestTakeoverSeconds: after those kills, a node with every role joins the holder, the owner and the applier, applies the chain, and the holder is killed (SIGKILL) while anvil mines a block every 100 ms or so; from the kill to the first block the newcomer's own follower stores (its CHAINPOST_TRACE_BLOCKS committed mark). ${TAKEOVERS} kills in a row (each newcomer the next one killed): ${takeovers.join(' s, ')} s; ingestTakeoverSeconds is the longest. leaseTtlSeconds is the TTL of that cluster.`,
    `deliveryResumeSeconds: ${RESUMES} times an owner of partitions (--roles api,match,deliver) joins the holder, the owner and the applier, adopts its share of the 64 partitions (handed over) and delivers for them, and is killed (SIGKILL) while anvil mines a block every ${RESUME_BLOCK_MS} ms or so paying ${RESUME_STREAMS} streams, each delivering to a URL of its own (so spread over the partitions), once no node has more than ${LAG_AT_KILL} messages of the partitions' log to apply (or after ${LAG_WAIT_MS / 1000} s; the most at the kills: ${lagsAtKill.join(', ')}); from the kill to the first webhook received of a stream the killed node had delivered (its CHAINPOST_METRICS_STREAMS counters: a stream of a partition it owned) for a block mined after it was gone (so sent by another node). The chain's holder is not killed here: its takeover is ingestTakeoverSeconds. ${resumes.join(' s, ')} s; deliveryResumeSeconds is the longest. A block is mined as soon as the killed node is gone. A partition's new owner adopts it once its own node has applied the partition's log to its last message: a node whose applier lags behind the log (it applies one message per LMDB transaction) delays every takeover by that lag.`,
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
  deliveryResumeSeconds: '≤ 2 × leaseTtlSeconds',
  lost: '= 0',
};
const goalsMet: Record<keyof typeof goal, boolean> = {
  ratioWebhooksPerSec: f['ratioWebhooksPerSec']! >= 0.5,
  clusterP50Ms: f['clusterP50Ms']! <= f['p50Ms']! + 5,
  ingestTakeoverSeconds: f['ingestTakeoverSeconds']! <= 2 * f['leaseTtlSeconds']!,
  deliveryResumeSeconds: f['deliveryResumeSeconds']! <= 2 * f['leaseTtlSeconds']!,
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
