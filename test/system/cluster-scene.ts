import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import xxhash from 'xxhash-wasm';
import { PARTITIONS, partitionOf } from '../../engine/cluster/partitions.js';
import { startAnvil, type Anvil } from '../../http/clients/anvil.js';
import { DEV_ACCOUNTS } from '../contracts.js';
import type { NatsServer } from '../kit/nats-server.js';
import { anvilRpc } from '../kit/anvil-rpc.js';
import { startBinary, stopAndClean, tempDir, until, type RunningBinary } from '../helpers.js';
import { auditLedger, canonicalChain, type Arrival, type ChainBlock, type LedgerReport } from '../ledger.js';
import { startReceiver, type Received } from '../receiver.js';

/**
 * The scene of the cluster's kill tests (test/system/cluster-kill.test.ts): chainpost nodes (the built binary, all
 * roles, one pool thread each) on the NATS servers given (one, or a three-server cluster with replicas), following
 * anvil, which mines a block per transaction; streams whose webhookUrls are distinct paths of one receiver, so they
 * spread over the partitions; transactions to their watched addresses flowing all along; and the receiver's ledger,
 * each webhook with the run it came in (a run ends at each kill or rejoin: `nextRun`), audited at the end against
 * anvil's final chain (test/ledger.ts).
 */

export const CHAIN = '0x539';
const KEY = 'cpk_cluster_kill_0123456789abcdefXYZ';
const SENDERS = DEV_ACCOUNTS.map((a) => a.address.toLowerCase());
/** An address no stream watches: some transactions go there. */
const UNWATCHED = `0x${'beef'.repeat(10)}`;

export interface SceneOptions {
  /** CHAINPOST_NATS. */
  nats: string;
  /** CHAINPOST_NATS_REPLICAS (a NATS cluster's). */
  replicas?: number;
  nodes?: number;
  streams?: number;
  /** CHAINPOST_LEASE_TTL_MS. */
  ttlMs?: number;
  /** CHAINPOST_CONFIRMATIONS of the chain. */
  confirmations?: number;
  /** The pause between transactions, ms. */
  txEveryMs?: number;
}

export interface Node extends RunningBinary {
  name: string;
  /** Its id in the cluster (kept in its store across restarts). */
  id: string;
}

export interface OwnedPartition {
  partition: number;
  revision: number;
  queued: number | null;
}

/** A webhook the receiver got: the run it came in and when (performance.now()). */
export interface Arrived {
  r: Received;
  run: number;
  at: number;
  streamId: string;
}

const hex = (n: number): string => `0x${n.toString(16)}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const { h32 } = await xxhash();

export class ClusterScene {
  /** Each named node's current process (alive or killed). */
  readonly nodes: Node[] = [];
  private readonly dead = new Set<Node>();
  /** Every process started, killed ones included. */
  private readonly started: Node[] = [];
  /** The runs' names, the first `start`: a run ends at each kill or rejoin; and when each began (performance.now()). */
  readonly runs: string[] = ['start'];
  readonly runsAt: number[] = [performance.now()];
  /** Each stream's watched addresses, and its partition. */
  readonly watches = new Map<string, Set<string>>();
  readonly partitionOfStream = new Map<string, number>();
  readonly arrived: Arrived[] = [];
  /** The first block the streams exist for. */
  firstBlock = 0;
  sent = 0;
  private readonly watched: string[];
  private flowing = false;
  private driver: Promise<void> = Promise.resolve();
  private chainOps: Promise<unknown> = Promise.resolve();
  private flowIndex = 0;
  readonly ttlMs: number;
  readonly confirmations: number;

  private constructor(
    readonly options: SceneOptions,
    readonly anvil: Anvil,
    readonly rx: Awaited<ReturnType<typeof startReceiver>>,
  ) {
    this.ttlMs = options.ttlMs ?? 2_000;
    this.confirmations = options.confirmations ?? 2;
    const streams = options.streams ?? 200;
    // About ten streams to an address: a transaction makes ten webhooks and their confirmations.
    const w = Math.max(4, Math.ceil(streams / 5));
    this.watched = Array.from({ length: w }, (_, i) => `0x${'c1a5'.repeat(9)}${(i + 1).toString(16).padStart(4, '0')}`);
    rx.state.answer = (r) => {
      if (!r.test) this.arrived.push({ r, run: this.runs.length, at: performance.now(), streamId: r.body.streamId as string });
      return 200;
    };
  }

  /** anvil, the receiver, and the nodes, each started once the one before listens, owning every partition between them. */
  static async start(options: SceneOptions): Promise<ClusterScene> {
    const [anvil, rx] = await Promise.all([startAnvil({ chainId: 1337 }), startReceiver()]);
    const scene = new ClusterScene(options, anvil, rx);
    // The first node writes CHAINPOST_API_KEY to the control log; the others find it applied when they start.
    await scene.startNode('node 1');
    await Promise.all(Array.from({ length: (options.nodes ?? 3) - 1 }, (_, i) => scene.startNode(`node ${i + 2}`)));
    return scene;
  }

  private env(): Record<string, string> {
    return {
      CHAINPOST_NATS: this.options.nats,
      ...(this.options.replicas === undefined ? {} : { CHAINPOST_NATS_REPLICAS: String(this.options.replicas) }),
      CHAINPOST_CHAINS: `${CHAIN}=${this.anvil.url}`,
      CHAINPOST_API_KEY: KEY,
      CHAINPOST_LEASE_TTL_MS: String(this.ttlMs),
      CHAINPOST_CONFIRMATIONS: `${CHAIN}=${this.confirmations}`,
      CHAINPOST_POLL_MS: '50',
      CHAINPOST_RATE_LIMIT: '0',
      CHAINPOST_WORKER_THREADS: '1',
    };
  }

  /** Starts a node (again, on `dir`: its store and id kept); it replaces the process of that name. */
  async startNode(name: string, dir = tempDir()): Promise<Node> {
    const started = await startBinary(this.env(), dir, undefined, 60_000);
    const id = ((await started.call('/health')).body.cluster?.node ?? '') as string;
    const node = Object.assign(started, { name, id });
    this.started.push(node);
    const at = this.nodes.findIndex((n) => n.name === name);
    if (at >= 0) this.nodes[at] = node;
    else this.nodes.push(node);
    return node;
  }

  alive(): Node[] {
    return this.nodes.filter((n) => !this.dead.has(n));
  }

  /** Ends the current run (a kill, a rejoin): the webhooks after it are the next run's. */
  nextRun(label: string): void {
    this.runs.push(label);
    this.runsAt.push(performance.now());
  }

  /** kill -9 of a node; answers when it was gone (performance.now()). A run ends. */
  async kill(node: Node, label: string): Promise<number> {
    await node.stop('SIGKILL');
    const at = performance.now();
    this.dead.add(node);
    this.nextRun(label);
    return at;
  }

  /** Starts a killed node again on its data directory. A run ends. */
  async restart(node: Node, label: string): Promise<Node> {
    this.nextRun(label);
    return this.startNode(node.name, node.dir);
  }

  /** The partitions a node owns, as its /health says ([] when it does not answer). */
  async partitionsOf(n: Node): Promise<OwnedPartition[]> {
    try {
      return ((await n.call('/health')).body.cluster?.partitions ?? []) as OwnedPartition[];
    } catch {
      return [];
    }
  }

  /** The live node whose /health says it holds the chain's lease, if one does. */
  async holder(): Promise<Node | undefined> {
    for (const n of this.alive()) {
      const leases = ((await n.call('/health')).body.cluster?.leases ?? []) as Array<{ chain: string }>;
      if (leases.some((l) => l.chain === CHAIN)) return n;
    }
    return undefined;
  }

  /** Whether the live nodes own every partition once between them, each adopted. */
  async owned(): Promise<boolean> {
    const all = (await Promise.all(this.alive().map((n) => this.partitionsOf(n)))).flat();
    return all.length === PARTITIONS && new Set(all.map((p) => p.partition)).size === PARTITIONS && all.every((p) => p.queued !== null);
  }

  /** The undelivered webhooks of every partition, summed over the live nodes (each counts at most once a second). */
  async queued(): Promise<number> {
    return (await Promise.all(this.alive().map((n) => this.partitionsOf(n)))).flat().reduce((s, p) => s + (p.queued ?? 0), 0);
  }

  /** `count` streams (each a path of its own on the receiver), each watching two of the addresses, through node 1. */
  async createStreams(count = this.options.streams ?? 200): Promise<void> {
    const via = this.alive()[0]!;
    const w = this.watched.length;
    const urls = new Map<string, string>();
    for (let i = 0; i < count; i += 10) {
      await Promise.all(
        Array.from({ length: Math.min(10, count - i) }, async (_, j) => {
          const n = i + j;
          const webhookUrl = `${this.rx.url}/s${n}`;
          const made = await via.call('/streams/evm', {
            method: 'PUT',
            json: { webhookUrl, description: 'cluster kill', tag: `kill-${n}`, chainIds: [CHAIN], includeNativeTxs: true },
          });
          if (made.status !== 200) throw new Error(`stream ${n}: ${made.status} ${JSON.stringify(made.body)}`);
          const addresses = [...new Set([this.watched[n % w]!, this.watched[(n * 7 + 3) % w]!])];
          const added = await via.call(`/streams/evm/${made.body.id}/address`, { method: 'POST', json: { address: addresses } });
          if (added.status !== 200) throw new Error(`stream ${n}'s addresses: ${added.status} ${JSON.stringify(added.body)}`);
          this.watches.set(made.body.id as string, new Set(addresses));
          urls.set(made.body.id as string, webhookUrl);
        }),
      );
    }
    this.firstBlock = (await this.head()) + 1;
    // The tenant of the scene's key, as the node's access log names it (printed as the request is answered).
    const tenant = () => /"msg":"request".*?"status":200.*?"tenant":"([^"]+)"/.exec(via.output())?.[1];
    if (!(await until(() => tenant() !== undefined, 5_000, 50))) throw new Error('no request of the scene’s key in the access log');
    for (const [id, url] of urls) this.partitionOfStream.set(id, partitionOf(h32, tenant()!, url));
  }

  rpc<T>(method: string, params: unknown[] = []): Promise<T> {
    return anvilRpc<T>(this.anvil.url, method, params);
  }

  async head(): Promise<number> {
    return Number(await this.rpc<string>('eth_blockNumber'));
  }

  /** anvil's chain changes one at a time. */
  private serial<T>(f: () => Promise<T>): Promise<T> {
    const p = this.chainOps.then(f);
    this.chainOps = p.catch(() => undefined);
    return p;
  }

  /** A transaction to `to`, mined in a block of its own. */
  send(to: string): Promise<string> {
    const from = SENDERS[this.sent % SENDERS.length]!;
    const value = hex(++this.sent);
    return this.serial(() => this.rpc<string>('eth_sendTransaction', [{ from, to, value }]));
  }

  /** Transactions all along, one every `txEveryMs`: nine in ten to a watched address (the next in turn), the others elsewhere. */
  startFlow(): void {
    this.flowing = true;
    this.driver = (async () => {
      while (this.flowing) {
        const i = this.flowIndex++;
        await this.send(i % 10 === 9 ? UNWATCHED : this.watched[(i * 13) % this.watched.length]!);
        await sleep(this.options.txEveryMs ?? 300);
      }
    })();
  }

  async stopFlow(): Promise<void> {
    this.flowing = false;
    await this.driver;
  }

  /** The webhooks that arrived after `at` (performance.now()) for streams of `partitions`. */
  arrivalsAfter(at: number, partitions: ReadonlySet<number>): Arrived[] {
    return this.arrived.filter((a) => a.at > at && partitions.has(this.partitionOfStream.get(a.streamId) ?? -1));
  }

  /**
   * Reads on `nodes` every `everyMs` until stopped (a stream list, the history, in turn), each within 2 s: what failed,
   * one line each.
   */
  probeReads(nodes: readonly Node[], everyMs = 200): { stop(): Promise<{ reads: number; failures: string[] }> } {
    let on = true;
    let reads = 0;
    const failures: string[] = [];
    const paths = ['/streams/evm?limit=5', '/history?limit=5'];
    const loop = (async () => {
      while (on) {
        await Promise.all(
          nodes.map(async (n) => {
            const path = paths[reads % paths.length]!;
            reads++;
            try {
              const r = await n.call(path, { signal: AbortSignal.timeout(2_000) });
              if (r.status !== 200) failures.push(`${n.name} ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
            } catch (err) {
              failures.push(`${n.name} ${path}: ${err instanceof Error ? err.message : String(err)}`);
            }
          }),
        );
        await sleep(everyMs);
      }
    })();
    return {
      stop: async () => {
        on = false;
        await loop;
        return { reads, failures };
      },
    };
  }

  /** anvil's chain from the streams' first block to its head. */
  private async chain(): Promise<ChainBlock[]> {
    return canonicalChain((method, params) => this.rpc(method, params), this.firstBlock, await this.head());
  }

  private arrivals(): Arrival[] {
    return this.arrived.map(({ r, run }) => ({
      streamId: r.body.streamId,
      number: Number(r.body.block.number),
      hash: r.body.block.hash,
      confirmed: r.body.confirmed,
      txs: (r.body.txs as Array<{ hash: string }>).map((t) => t.hash),
      run,
    }));
  }

  /**
   * The end: the flow stopped, one last watched transaction, blocks enough to confirm it; then waits (up to
   * `withinMs`) until every required webhook arrived and nothing is queued, and audits the ledger. A killed owner's
   * next owner may send again any of a stream's last webhooks whose outcome it had not published (seamDepth).
   */
  async finish(withinMs = 60_000): Promise<{ report: LedgerReport; drained: boolean; drainMs: number; blocks: number }> {
    await this.stopFlow();
    await this.send(this.watched[0]!);
    await this.serial(() => this.rpc('anvil_mine', [hex(this.confirmations + 2)]));
    const chain = await this.chain();
    const audit = (): LedgerReport =>
      auditLedger(this.arrivals(), chain, this.watches, this.confirmations, { seamDepth: Number.POSITIVE_INFINITY });
    const from = performance.now();
    const drained = await until(async () => audit().missing.length === 0 && (await this.queued()) === 0, withinMs, 250);
    const drainMs = performance.now() - from;
    // Anything sent again after the drain shows in the audit.
    await sleep(500);
    return { report: audit(), drained, drainMs, blocks: chain.length };
  }

  /** The ledger in a few lines: what was required, what arrived, the duplicates per run, the defects. */
  summary(report: LedgerReport): string {
    const perRun = this.runs
      .map((label, i) => `${label}: ${report.duplicates.filter((d) => d.runs[1] === i + 1).length}`)
      .slice(1)
      .join(', ');
    const deepest = report.duplicates.reduce((m, d) => Math.max(m, d.depth + 1), 0);
    return [
      `webhooks required: ${report.required.unconfirmed} unconfirmed + ${report.required.confirmed} confirmed; arrived: ${report.arrivals} POSTs, ${report.distinct} distinct; ${report.duplicates.length} duplicates (by the run they came in: ${perRun}; at most ${deepest} of a stream in a row)`,
      `missing ${report.missing.length}, confirmed off the chain ${report.confirmedOffChain.length}, wrong content ${report.wrongContent.length}, duplicates not at a seam ${report.badDuplicates.length}, order broken ${report.orderBroken.length}`,
    ].join('\n');
  }

  /**
   * With CLUSTER_KILL_DUMP set (a directory): the ledger (every arrival with its run, instant and webhook-id: a copy
   * with an id of its own was staged twice; the runs, each stream's partition, the report) and each node's output,
   * written there to look into a failure.
   */
  dump(report: LedgerReport): void {
    const dir = process.env['CLUSTER_KILL_DUMP'];
    if (dir === undefined || dir === '') return;
    mkdirSync(dir, { recursive: true });
    const arrivals = this.arrived.map(({ r, run, at }) => ({
      streamId: r.body.streamId,
      partition: this.partitionOfStream.get(r.body.streamId as string),
      number: Number(r.body.block.number),
      confirmed: r.body.confirmed,
      webhookId: r.headers['webhook-id'],
      run,
      at: Math.round(at),
    }));
    const runs = this.runs.map((label, i) => ({ label, at: Math.round(this.runsAt[i]!) }));
    const partitions = Object.fromEntries(this.partitionOfStream);
    writeFileSync(join(dir, 'ledger.json'), JSON.stringify({ runs, partitions, report, arrivals }, null, 1));
    for (const n of this.started) writeFileSync(join(dir, `${n.name.replace(/ /g, '-')}-${n.pid}.log`), n.output());
  }

  /** A node's last warnings and errors, for a failure's message. */
  static lastWords(n: Node, lines = 12): string {
    return n
      .output()
      .split('\n')
      .filter((line) => /"level":"(warn|error)"/.test(line))
      .slice(-lines)
      .join('\n');
  }

  async close(): Promise<void> {
    this.flowing = false;
    await this.driver.catch(() => undefined);
    for (const n of this.started) await stopAndClean(n);
    await this.rx.close();
    await this.anvil.stop();
  }
}

/** When a nats-server said it became the leader of `stream` (performance.now()'s clock), after `after`; its log's local time. */
export function electedAt(servers: readonly NatsServer[], stream: string, after: number): number | undefined {
  const offset = Date.now() - performance.now();
  const line = /(\d{4})\/(\d\d)\/(\d\d) (\d\d:\d\d:\d\d\.\d{3})\d* \[INF\] JetStream cluster new stream leader for '\$G > ([^']+)'/g;
  const at = servers
    .flatMap((server) => [...server.output().matchAll(line)])
    .filter((m) => m[5] === stream)
    .map((m) => new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}`).getTime() - offset)
    .filter((t) => t > after);
  return at.length === 0 ? undefined : Math.min(...at);
}

/** The instants (performance.now()'s clock) of the lines of `node`'s log whose message starts with `text`. */
export function said(node: Node, text: string): number[] {
  const offset = Date.now() - performance.now();
  return node
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(text))
    .map((line) => Date.parse((JSON.parse(line) as { time: string }).time) - offset);
}
