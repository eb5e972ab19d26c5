import { parsePricing, PricingError, type Pricing } from '../chains/pricing.js';
import { findChain, findEvmChain, type Chain } from '../chains/registry.js';
import { isDateTime } from '../datetime.js';
import { STAGE_CHUNK } from '../delivery/stage-chunks.js';
import { DEFAULT_TENANT_SLOTS, DEFAULT_UNANSWERED_SLOTS, MAX_IN_FLIGHT } from '../delivery/slots.js';
import type { LogLevel } from '../log.js';
import { withoutCredentials, withoutPassword } from '../redact.js';
import { classifyIp, isIpLiteral } from '../net/ip-class.js';
import type { PrivateTargets } from '../net/targets.js';
import { DEFAULT_LIMITS, TRIGGER_BUDGET_MS, TRIGGER_GAS, TRIGGER_SHARE_MS, type StreamLimits } from '../streams/limits.js';
import { ALL_ROLES, type Role } from './roles.js';

/** How often the embedded devnet writes its state while running, s: a crash loses at most this much of it, fewer blocks than its confirmation depth. */
export const DEVNET_SAVE_INTERVAL_S = 5;

/**
 * How long the embedded devnet's anvil gets to exit on a stop (writing its state file) before it is SIGKILLed, ms. An
 * idle anvil exits in milliseconds; one running a call finishes the call first, which may take minutes.
 */
export const DEVNET_STOP_GRACE_MS = 5_000;

/** Graceful stop: the requests in flight get this long (ms) before the process exits anyway (CHAINPOST_SHUTDOWN_GRACE_MS). */
export const SHUTDOWN_GRACE_MS = 8_000;

/**
 * How long a chain's lease outlives its holder's last renewal, ms (CHAINPOST_LEASE_TTL_MS): the longest a chain goes
 * unfollowed after its holder dies. From 1 s, so a renewal's round trip and a pause of the event loop (a GC, a large
 * block) do not lose a live holder its lease; to 10 minutes, past which a dead holder's chains would wait too long.
 */
export const LEASE_TTL_MS = { default: 10_000, min: 1_000, max: 600_000 };

/**
 * Copies JetStream keeps of the cluster's streams and leases bucket (CHAINPOST_NATS_REPLICAS): 1 on a single
 * nats-server; 3 on a three-server cluster, so one server lost loses none of them; at most 5, JetStream's ceiling.
 */
export const NATS_REPLICAS = { default: 1, min: 1, max: 5 };

/**
 * The configuration contract: environment variables with these exact names.
 * Parsing is pure (an env record in, a Config out); a bad value throws a
 * ConfigError naming the variable, and the start stops there.
 */
export interface Config {
  host: string;
  port: number;
  /** A second port serving node access alone, without the /rpc prefix; undefined = none. */
  rpcPort: number | undefined;
  /** CHAINPOST_RPC_GAS_CAP: node access gives a forwarded call at most this much gas when it is below the chain's block gas limit; undefined = that limit. */
  rpcGasCap: number | undefined;
  dataDir: string;
  apiKey: string | undefined;
  /** Upstream JSON-RPC URL per EVM chain, keyed by hex id. */
  chains: Map<string, string>;
  /** Unset CHAINPOST_CHAINS: the embedded anvil devnet; `none`: no ingestion; else the listed upstreams. */
  ingest: 'embedded' | 'configured' | 'none';
  /**
   * The embedded devnet (CHAINPOST_CHAINS unset): its port (0: any free one; else that one or the next free), its block
   * interval and state-save interval, seconds, and how long anvil gets to exit at a stop, ms.
   */
  devnet: { port: number; blockTime: number; saveInterval: number; stopGraceMs: number };
  /** Polling interval where a node offers no newHeads subscription, ms. */
  pollMs: number;
  /** Confirmation depth overrides per chain, keyed by chain key (an EVM chain's hex id, `bitcoin`, `solana`). */
  confirmations: Map<string, number>;
  /** Requests per second per API key (also the burst); 0 = unlimited. */
  rateLimit: number;
  smtpUrl: string | undefined;
  alertEmail: string | undefined;
  /** Service time (ms) the clock starts at; undefined = real time. */
  now: number | undefined;
  testClock: boolean;
  /** CHAINPOST_ADMIN_KEY: the operator's credential for the admin routes (x-admin-key); unset: the first tenant's keys. */
  adminKey: string | undefined;
  /** CHAINPOST_METRICS_KEY: a Bearer token /metrics and /health's detail need; unset: open to anyone. */
  metricsKey: string | undefined;
  /** CHAINPOST_METRICS_STREAMS: delivery series per stream on /metrics, labelled with stream ids (off: totals only). */
  metricsStreams: boolean;
  logLevel: LogLevel;
  /** Allowance for clock skew on a sign-in message's expirationTime and notBefore, seconds. */
  authSkewSeconds: number;
  /** CHAINPOST_MAX_PENDING_CHALLENGES: messages a tenant may have waiting for a signature (sign-in challenges, bind and unbind messages). */
  maxPendingChallenges: number;
  /** One JSON log line per request (at info). */
  accessLog: boolean;
  /** CHAINPOST_TRUSTED_PROXIES: the reverse proxies whose X-Forwarded-For the access log believes (addresses and CIDR ranges); empty: none. */
  trustedProxies: readonly TrustedProxy[];
  /** How long failed-delivery history (and the logs of failed deliveries) are kept, days. */
  historyDays: number;
  /** How long the logs of successful deliveries are kept, days. */
  deliveryLogDays: number;
  /** At most this many logs of successful deliveries per tenant (the oldest go first). */
  deliveryLogMax: number;
  /** Webhooks staged per write transaction (CHAINPOST_STAGE_CHUNK): a block's webhooks commit in chunks of this many. */
  stageChunk: number;
  /** Webhooks in flight at once for one tenant (CHAINPOST_DELIVERY_TENANT_SLOTS). */
  tenantSlots: number;
  /** Webhooks in flight at once for one tenant to receiver origins that have not answered it (CHAINPOST_DELIVERY_UNANSWERED_SLOTS). */
  unansweredSlots: number;
  /** Full blocks kept per chain; older records and probe columns are pruned (indexes stay). */
  retentionBlocks: number;
  /** CHAINPOST_WORKER_THREADS: the worker pool's threads (matching, compiling, preparing blocks); undefined = one per core. */
  workerThreads: number | undefined;
  /**
   * The first block of each EVM chain (and of Bitcoin, `bitcoin`) followed for the first time
   * (CHAINPOST_START_BLOCKS), keyed by chain key: the follower backfills from there to the node's head, then
   * follows. A chain not listed starts at the node's head; a chain already in the store keeps its state.
   */
  startBlocks: Map<string, number>;
  /** One `trace` line per block and stage on its way to a webhook, with a high-resolution time (bench:e2e). */
  traceBlocks: boolean;
  /** CHAINPOST_SHUTDOWN_GRACE_MS: how long a stopping server waits for the requests in flight before it exits anyway, ms. */
  shutdownGraceMs: number;
  /** Bitcoin Core JSON-RPC (`http://user:pass@host:port`, basic auth from the URL), its poll interval (ms) and the xpub gap; no url: no Bitcoin. */
  bitcoin: { url: string | undefined; pollMs: number; gap: number };
  /**
   * Solana JSON-RPC over HTTP, its poll interval (ms) and the WebSocket where slotSubscribe wakes the
   * follower (CHAINPOST_SOLANA_WS; default: the RPC URL with a ws/wss scheme); no url: no Solana.
   */
  solana: { url: string | undefined; pollMs: number; wsUrl: string | undefined };
  /** The ENS registry the Data API's /resolve endpoints read, and its chain (CHAINPOST_ENS=`chain=registry`; default: 0x1's). */
  ens: { chain: string; registry: string };
  /** An IPFS HTTP gateway (`https://host` or `https://host/ipfs`) where ipfs:// NFT metadata is fetched; undefined: not fetched. */
  ipfsGateway: string | undefined;
  /** The pricing registry with CHAINPOST_PRICING's entries, keyed by hex chain id (engine/chains/pricing.ts). */
  pricing: ReadonlyMap<string, Pricing>;
  /** Per tenant: at most this many streams of all families together, and this many addresses and triggers on any one stream. */
  limits: StreamLimits;
  /** How long one stream's trigger calls for one block may take (service time, ms); the calls not answered by then are reported over budget. */
  triggerBudgetMs: number;
  /** Node-ms per second a tenant's trigger calls on one chain may take on average (service time); a burst may take one budget. */
  triggerShareMs: number;
  /** The gas a trigger call is given (at most the chain's gas cap for calls). */
  triggerGas: number;
  /**
   * Whether webhook and NFT metadata URLs may reach non-public addresses (loopback, private, link-local,
   * CGNAT, cloud metadata: engine/net/ip-class.ts). Default (followsDevnetOnly): allow for the devnet setup on
   * a loopback listener (a local setup, whose receivers are local too), deny for a server that follows real
   * chains, whatever its listener (a server behind a reverse proxy listens on loopback too), or that others
   * can reach.
   */
  privateTargets: PrivateTargets;
  /**
   * A cluster's NATS servers (CHAINPOST_NATS, `nats://` or `tls://` URLs, their credentials in them or in the creds
   * file of CHAINPOST_NATS_CREDS); undefined: a single process, which needs no NATS. Never logged as given: a URL's
   * user name may be a token (engine/redact.ts withoutCredentials).
   */
  nats: { servers: readonly string[]; creds: string | undefined } | undefined;
  /** CHAINPOST_LEASE_TTL_MS: how long a chain's lease outlives its holder's last renewal, ms (LEASE_TTL_MS). */
  leaseTtlMs: number;
  /** CHAINPOST_NATS_REPLICAS: the replicas a node gives the streams and the leases bucket it creates or finds (NATS_REPLICAS). */
  natsReplicas: number;
  /** What this node does (`serve --roles`): every role by default, and always in a single process. */
  roles: ReadonlySet<Role>;
}

/** An address (`bits` 32 or 128) or a CIDR range of CHAINPOST_TRUSTED_PROXIES. */
export interface TrustedProxy {
  address: string;
  bits: number;
  family: 'ipv4' | 'ipv6';
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/** CHAINPOST_WORKER_THREADS's ceiling: each thread holds its own copy of the worker's code and an LMDB read handle. */
const MAX_WORKER_THREADS = 256;

type Env = Readonly<Record<string, string | undefined>>;

export function parseConfig(env: Env): Config {
  const get = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const chains = get('CHAINPOST_CHAINS');
  const upstreams = chains === 'none' ? new Map<string, string>() : chainMap('CHAINPOST_CHAINS', chains, upstreamUrl);
  const ingest = chains === undefined ? 'embedded' : chains === 'none' ? 'none' : 'configured';
  const port = integer('CHAINPOST_PORT', get('CHAINPOST_PORT'), 8080, 0, 65535);
  const rpcPort =
    get('CHAINPOST_RPC_PORT') === undefined ? undefined : integer('CHAINPOST_RPC_PORT', get('CHAINPOST_RPC_PORT'), 0, 0, 65535);
  if (rpcPort !== undefined && rpcPort !== 0 && rpcPort === port)
    throw new ConfigError('CHAINPOST_RPC_PORT', `must differ from CHAINPOST_PORT (${port})`);
  const listenHost = host(get('CHAINPOST_HOST'));
  const bitcoinRpc = url('CHAINPOST_BITCOIN_RPC', get('CHAINPOST_BITCOIN_RPC'), ['http:', 'https:']);
  const solanaNode = solana(get);
  const devnetOnly = followsDevnetOnly(chains, bitcoinRpc, solanaNode.url);
  const nats = cluster(get);
  // Every node would start a devnet of its own: a chain 0x539 per node, which no two of them agree on.
  if (nats !== undefined && ingest === 'embedded')
    throw new ConfigError(
      'CHAINPOST_CHAINS',
      'unset on a cluster node (CHAINPOST_NATS is set): each node would start its own embedded devnet, a different chain 0x539 on each. Set it to the EVM nodes the cluster follows (0x1=http://host:8545), or to none where it follows CHAINPOST_BITCOIN_RPC or CHAINPOST_SOLANA_RPC alone',
    );
  return {
    host: listenHost,
    port,
    rpcPort,
    // The intrinsic gas of a call (21,000) at least: below it no call could run.
    rpcGasCap:
      get('CHAINPOST_RPC_GAS_CAP') === undefined
        ? undefined
        : integer('CHAINPOST_RPC_GAS_CAP', get('CHAINPOST_RPC_GAS_CAP'), 0, 21_000, Number.MAX_SAFE_INTEGER),
    dataDir: get('CHAINPOST_DATA') ?? './data',
    apiKey: apiKey(get('CHAINPOST_API_KEY')),
    chains: upstreams,
    ingest,
    devnet: {
      port: integer('CHAINPOST_DEVNET_PORT', get('CHAINPOST_DEVNET_PORT'), 8545, 0, 65535),
      blockTime: positive('CHAINPOST_DEVNET_BLOCK_TIME', get('CHAINPOST_DEVNET_BLOCK_TIME'), 1, 86_400),
      saveInterval: integer('CHAINPOST_DEVNET_SAVE_INTERVAL', get('CHAINPOST_DEVNET_SAVE_INTERVAL'), DEVNET_SAVE_INTERVAL_S, 1, 3600),
      stopGraceMs: integer('CHAINPOST_DEVNET_STOP_GRACE_MS', get('CHAINPOST_DEVNET_STOP_GRACE_MS'), DEVNET_STOP_GRACE_MS, 0, 600_000),
    },
    pollMs: integer('CHAINPOST_POLL_MS', get('CHAINPOST_POLL_MS'), 250, 10, 600_000),
    // Any followed chain: an EVM chain, bitcoin or solana (`solana=32`).
    confirmations: chainMap(
      'CHAINPOST_CONFIRMATIONS',
      get('CHAINPOST_CONFIRMATIONS'),
      (name, v) => integer(name, v, 0, 0, 100_000),
      followedChain,
    ),
    rateLimit: integer('CHAINPOST_RATE_LIMIT', get('CHAINPOST_RATE_LIMIT'), 1000, 0, 1_000_000_000),
    smtpUrl: url('CHAINPOST_SMTP_URL', get('CHAINPOST_SMTP_URL'), ['smtp:', 'smtps:']),
    alertEmail: email('CHAINPOST_ALERT_EMAIL', get('CHAINPOST_ALERT_EMAIL')),
    now: instant('CHAINPOST_NOW', get('CHAINPOST_NOW')),
    testClock: flag('CHAINPOST_TEST_CLOCK', get('CHAINPOST_TEST_CLOCK')),
    adminKey: operatorKey('CHAINPOST_ADMIN_KEY', get('CHAINPOST_ADMIN_KEY')),
    metricsKey: operatorKey('CHAINPOST_METRICS_KEY', get('CHAINPOST_METRICS_KEY')),
    metricsStreams: flag('CHAINPOST_METRICS_STREAMS', get('CHAINPOST_METRICS_STREAMS')),
    logLevel: oneOf('CHAINPOST_LOG_LEVEL', get('CHAINPOST_LOG_LEVEL'), ['debug', 'info', 'warn', 'error'] as const, 'info'),
    authSkewSeconds: integer('CHAINPOST_AUTH_SKEW', get('CHAINPOST_AUTH_SKEW'), 30, 0, 3600),
    maxPendingChallenges: integer('CHAINPOST_MAX_PENDING_CHALLENGES', get('CHAINPOST_MAX_PENDING_CHALLENGES'), 10_000, 1, 1_000_000_000),
    accessLog: get('CHAINPOST_ACCESS_LOG') === undefined ? true : flag('CHAINPOST_ACCESS_LOG', get('CHAINPOST_ACCESS_LOG')),
    trustedProxies: trustedProxies(get('CHAINPOST_TRUSTED_PROXIES')),
    historyDays: integer('CHAINPOST_HISTORY_DAYS', get('CHAINPOST_HISTORY_DAYS'), 7, 1, 365),
    deliveryLogDays: integer('CHAINPOST_DELIVERY_LOG_DAYS', get('CHAINPOST_DELIVERY_LOG_DAYS'), 1, 1, 365),
    deliveryLogMax: integer('CHAINPOST_DELIVERY_LOG_MAX', get('CHAINPOST_DELIVERY_LOG_MAX'), 1_000_000, 1, 1_000_000_000),
    stageChunk: integer('CHAINPOST_STAGE_CHUNK', get('CHAINPOST_STAGE_CHUNK'), STAGE_CHUNK, 1, 100_000),
    tenantSlots: integer('CHAINPOST_DELIVERY_TENANT_SLOTS', get('CHAINPOST_DELIVERY_TENANT_SLOTS'), DEFAULT_TENANT_SLOTS, 1, MAX_IN_FLIGHT),
    unansweredSlots: integer(
      'CHAINPOST_DELIVERY_UNANSWERED_SLOTS',
      get('CHAINPOST_DELIVERY_UNANSWERED_SLOTS'),
      DEFAULT_UNANSWERED_SLOTS,
      1,
      MAX_IN_FLIGHT,
    ),
    retentionBlocks: integer('CHAINPOST_RETENTION_BLOCKS', get('CHAINPOST_RETENTION_BLOCKS'), 100_000, 1, 1_000_000_000),
    workerThreads:
      get('CHAINPOST_WORKER_THREADS') === undefined
        ? undefined
        : integer('CHAINPOST_WORKER_THREADS', get('CHAINPOST_WORKER_THREADS'), 0, 1, MAX_WORKER_THREADS),
    startBlocks: startBlocks(get('CHAINPOST_START_BLOCKS'), followedEvm(ingest, upstreams), bitcoinRpc !== undefined),
    traceBlocks: flag('CHAINPOST_TRACE_BLOCKS', get('CHAINPOST_TRACE_BLOCKS')),
    shutdownGraceMs: integer('CHAINPOST_SHUTDOWN_GRACE_MS', get('CHAINPOST_SHUTDOWN_GRACE_MS'), SHUTDOWN_GRACE_MS, 0, 600_000),
    ens: ens(get('CHAINPOST_ENS')),
    bitcoin: {
      url: bitcoinRpc,
      pollMs: integer('CHAINPOST_BITCOIN_POLL_MS', get('CHAINPOST_BITCOIN_POLL_MS'), 1000, 10, 600_000),
      gap: integer('CHAINPOST_BITCOIN_GAP', get('CHAINPOST_BITCOIN_GAP'), 20, 1, 1000),
    },
    solana: solanaNode,
    ipfsGateway: url('CHAINPOST_IPFS_GATEWAY', get('CHAINPOST_IPFS_GATEWAY'), ['http:', 'https:']),
    pricing: pricing(get('CHAINPOST_PRICING')),
    limits: {
      streams: integer('CHAINPOST_MAX_STREAMS', get('CHAINPOST_MAX_STREAMS'), DEFAULT_LIMITS.streams, 1, 1_000_000_000),
      addresses: integer('CHAINPOST_MAX_ADDRESSES', get('CHAINPOST_MAX_ADDRESSES'), DEFAULT_LIMITS.addresses, 1, 1_000_000_000),
      triggers: integer('CHAINPOST_MAX_TRIGGERS', get('CHAINPOST_MAX_TRIGGERS'), DEFAULT_LIMITS.triggers, 0, 10_000),
      xpubs: integer('CHAINPOST_MAX_XPUBS', get('CHAINPOST_MAX_XPUBS'), DEFAULT_LIMITS.xpubs, 1, 1_000_000),
    },
    triggerBudgetMs: integer('CHAINPOST_TRIGGER_BUDGET_MS', get('CHAINPOST_TRIGGER_BUDGET_MS'), TRIGGER_BUDGET_MS, 1, 3_600_000),
    triggerShareMs: integer('CHAINPOST_TRIGGER_SHARE_MS', get('CHAINPOST_TRIGGER_SHARE_MS'), TRIGGER_SHARE_MS, 1, 1_000),
    triggerGas: integer('CHAINPOST_TRIGGER_GAS', get('CHAINPOST_TRIGGER_GAS'), TRIGGER_GAS, 21_000, Number.MAX_SAFE_INTEGER),
    privateTargets: oneOf(
      'CHAINPOST_PRIVATE_TARGETS',
      get('CHAINPOST_PRIVATE_TARGETS'),
      ['allow', 'deny'] as const,
      devnetOnly && isLoopbackHost(listenHost) ? 'allow' : 'deny',
    ),
    nats,
    leaseTtlMs: integer('CHAINPOST_LEASE_TTL_MS', get('CHAINPOST_LEASE_TTL_MS'), LEASE_TTL_MS.default, LEASE_TTL_MS.min, LEASE_TTL_MS.max),
    natsReplicas: integer(
      'CHAINPOST_NATS_REPLICAS',
      get('CHAINPOST_NATS_REPLICAS'),
      NATS_REPLICAS.default,
      NATS_REPLICAS.min,
      NATS_REPLICAS.max,
    ),
    roles: ALL_ROLES,
  };
}

/** CHAINPOST_NATS and its creds file: a cluster node's; neither set: a single process. */
function cluster(get: (name: string) => string | undefined): Config['nats'] {
  const servers = get('CHAINPOST_NATS');
  const creds = get('CHAINPOST_NATS_CREDS');
  if (servers === undefined) {
    if (creds !== undefined) throw new ConfigError('CHAINPOST_NATS_CREDS', 'set without CHAINPOST_NATS (the NATS servers it signs in to)');
    return undefined;
  }
  // Whether the file can be read is app/'s to check at start: engine/ reads no file.
  return { servers: servers.split(',').map((entry) => natsServer(entry.trim())), creds };
}

/** One NATS server: `nats://` or `tls://`, credentials and a port (4222 when omitted) at most; shown without the credentials. */
function natsServer(entry: string): string {
  const name = 'CHAINPOST_NATS';
  if (entry === '') throw new ConfigError(name, 'expected NATS URLs separated by commas (nats://host:4222), got an empty one');
  url(name, entry, ['nats:', 'tls:'], withoutCredentials);
  const u = new URL(entry);
  if ((u.pathname !== '' && u.pathname !== '/') || u.search !== '' || u.hash !== '')
    throw new ConfigError(name, `expected a server alone (nats://host:4222), got "${withoutCredentials(entry)}"`);
  return entry;
}

/** The EVM chains (store keys) a server follows: the embedded devnet 0x539 when CHAINPOST_CHAINS is unset, else those it lists. */
const followedEvm = (ingest: Config['ingest'], chains: Config['chains']): Set<string> =>
  new Set(ingest === 'embedded' ? ['0x539'] : chains.keys());

/** Every chain (store key) a server on this configuration follows: the EVM chains above, `bitcoin` and `solana` when their node is set. */
export const followedChains = (c: Pick<Config, 'ingest' | 'chains' | 'bitcoin' | 'solana'>): Set<string> =>
  new Set([
    ...followedEvm(c.ingest, c.chains),
    ...(c.bitcoin.url === undefined ? [] : ['bitcoin']),
    ...(c.solana.url === undefined ? [] : ['solana']),
  ]);

/**
 * Whether the server follows the embedded devnet and nothing else (CHAINPOST_CHAINS unset, no Bitcoin or Solana
 * node): the one setup where private targets are allowed by default. Any chain named in CHAINPOST_CHAINS counts
 * as real (a node on loopback may be mainnet's), and so does `none` (a server following nothing is not the devnet).
 */
const followsDevnetOnly = (chains: string | undefined, bitcoinRpc: string | undefined, solanaUrl: string | undefined): boolean =>
  chains === undefined && bitcoinRpc === undefined && solanaUrl === undefined;

/** Whether a listen address is this machine's loopback (`localhost` or a loopback address). */
export const isLoopbackHost = (host: string): boolean => host === 'localhost' || classifyIp(host) === 'loopback';

function solana(get: (name: string) => string | undefined): Config['solana'] {
  const rpc = url('CHAINPOST_SOLANA_RPC', get('CHAINPOST_SOLANA_RPC'), ['http:', 'https:']);
  const ws = url('CHAINPOST_SOLANA_WS', get('CHAINPOST_SOLANA_WS'), ['ws:', 'wss:']);
  return {
    url: rpc,
    pollMs: integer('CHAINPOST_SOLANA_POLL_MS', get('CHAINPOST_SOLANA_POLL_MS'), 400, 10, 600_000),
    // agave serves its WebSocket on the RPC port + 1 (8899 → 8900): CHAINPOST_SOLANA_WS names it there. The
    // default, the RPC's own host and port, is where providers and proxies (and the test stand-in) serve both.
    wsUrl: ws ?? (rpc === undefined ? undefined : rpc.replace(/^http/, 'ws')),
  };
}

/**
 * `0x1=19000000,base=0x1c9c380,bitcoin=880000`: a block number (decimal or 0x hex) per EVM chain the server
 * follows (one of CHAINPOST_CHAINS, or the devnet 0x539 when that is unset), and a height for Bitcoin when
 * CHAINPOST_BITCOIN_RPC is set: a start block for a chain never followed is a typo.
 */
function startBlocks(v: string | undefined, followed: ReadonlySet<string>, bitcoin: boolean): Map<string, number> {
  const name = 'CHAINPOST_START_BLOCKS';
  const out = chainMap(name, v, blockNumber, evmOrBitcoin);
  for (const key of out.keys()) {
    if (key === BITCOIN) {
      if (!bitcoin) throw new ConfigError(name, 'chain bitcoin is not followed (CHAINPOST_BITCOIN_RPC is unset)');
    } else if (!followed.has(key))
      throw new ConfigError(name, `chain ${key} is not followed (not in CHAINPOST_CHAINS, or the devnet 0x539 when that is unset)`);
  }
  return out;
}

const BITCOIN = 'bitcoin';

/** An EVM chain, or Bitcoin (Solana starts at the node's confirmed slot: it takes no start block). */
function evmOrBitcoin(id: string): Chain | undefined {
  const c = findChain(id);
  return c?.family === 'evm' || c?.key === BITCOIN ? c : undefined;
}

function blockNumber(name: string, v: string): number {
  const n = /^\d+$/.test(v) ? Number(v) : /^0x[0-9a-fA-F]+$/.test(v) ? parseInt(v, 16) : NaN;
  if (!Number.isSafeInteger(n)) throw new ConfigError(name, `expected a block number (decimal or 0x hex), got "${v}"`);
  return n;
}

/** A chain followed by its key: an EVM chain (hex id, decimal id or slug), or `bitcoin`, `solana`. */
function followedChain(id: string): Chain | undefined {
  const c = findChain(id);
  return c?.family === 'evm' || c?.key === 'bitcoin' || c?.key === 'solana' ? c : undefined;
}

/** ENS on Ethereum: the registry (with fallback) every ENS client starts from. */
const MAINNET_ENS = { chain: '0x1', registry: '0x00000000000c2e074ec69a0dfb2997ba6c7d2e1e' };

/** CHAINPOST_ENS: one `chain=registry address` (a devnet's own ENS); default: Ethereum's registry. */
function ens(v: string | undefined): Config['ens'] {
  const map = chainMap('CHAINPOST_ENS', v, (name, address) => {
    if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new ConfigError(name, `expected chain=registry address, got "${address}"`);
    return address.toLowerCase();
  });
  if (map.size > 1) throw new ConfigError('CHAINPOST_ENS', 'names one chain: the /resolve endpoints read one registry');
  const [entry] = map;
  return entry === undefined ? MAINNET_ENS : { chain: entry[0], registry: entry[1] };
}

function integer(name: string, v: string | undefined, fallback: number, min: number, max: number): number {
  if (v === undefined) return fallback;
  if (!/^\d+$/.test(v)) throw new ConfigError(name, `expected a whole number, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(name, `expected ${min} to ${max}, got ${v}`);
  return n;
}

/** A positive decimal number up to `max` (fractions allowed: anvil takes a block time of 0.5 s). */
function positive(name: string, v: string | undefined, fallback: number, max: number): number {
  if (v === undefined) return fallback;
  if (!/^(\d+\.?\d*|\.\d+)$/.test(v)) throw new ConfigError(name, `expected a positive number of seconds, got "${v}"`);
  const n = Number(v);
  if (n <= 0 || n > max) throw new ConfigError(name, `expected more than 0 and at most ${max}, got ${v}`);
  return n;
}

function apiKey(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  // The key travels in a URL path (node access), so it must be path-safe.
  if (!/^[A-Za-z0-9_.~-]{16,128}$/.test(v)) {
    throw new ConfigError('CHAINPOST_API_KEY', 'expected 16 to 128 characters of A-Z a-z 0-9 _ . ~ -');
  }
  return v;
}

/** An operator's secret (CHAINPOST_ADMIN_KEY, CHAINPOST_METRICS_KEY): long enough not to be guessed, and sendable in a header. */
function operatorKey(name: string, v: string | undefined): string | undefined {
  if (v !== undefined && !/^[\x21-\x7e]{16,256}$/.test(v))
    throw new ConfigError(name, 'expected 16 to 256 printable ASCII characters, no space');
  return v;
}

function url(name: string, v: string | undefined, protocols: readonly string[], shown = withoutPassword): string | undefined {
  if (v === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new ConfigError(name, `not a URL: "${shown(v)}"`);
  }
  // The start prints this message: a node's or SMTP server's password (a NATS server's user name too) stays out of it.
  if (!protocols.includes(u.protocol)) throw new ConfigError(name, `expected a ${protocols.join(' or ')} URL, got "${shown(v)}"`);
  if (u.hostname === '') throw new ConfigError(name, `the URL names no host: "${shown(v)}"`);
  return v;
}

function upstreamUrl(name: string, v: string): string {
  return url(name, v, ['http:', 'https:', 'ws:', 'wss:'])!;
}

/** `0x1=value,0x539=value`: ids as hex, decimal or slug of a registry EVM chain (or what `find` takes); keyed by chain key. */
function chainMap<T>(
  name: string,
  v: string | undefined,
  parse: (name: string, value: string) => T,
  find: (id: string) => Chain | undefined = findEvmChain,
): Map<string, T> {
  const out = new Map<string, T>();
  if (v === undefined) return out;
  for (const entry of v.split(',')) {
    const eq = entry.indexOf('=');
    // An entry may hold a node URL with its password (CHAINPOST_CHAINS): shown without it.
    if (eq <= 0)
      throw new ConfigError(name, `expected chain=value, got "${entry.includes('@') ? withoutPassword(entry.trim()) : entry.trim()}"`);
    const id = entry.slice(0, eq).trim();
    const chain = find(id);
    if (chain === undefined)
      throw new ConfigError(
        name,
        find === findEvmChain
          ? `unknown EVM chain "${id}"`
          : find === evmOrBitcoin
            ? `not an EVM chain or bitcoin: "${id}"`
            : `unknown chain "${id}"`,
      );
    if (out.has(chain.key)) throw new ConfigError(name, `chain ${chain.key} is listed twice`);
    out.set(chain.key, parse(name, entry.slice(eq + 1).trim()));
  }
  return out;
}

function pricing(v: string | undefined): ReadonlyMap<string, Pricing> {
  try {
    return parsePricing(v);
  } catch (err) {
    if (err instanceof PricingError) throw new ConfigError('CHAINPOST_PRICING', err.message);
    throw err;
  }
}

function email(name: string, v: string | undefined): string | undefined {
  if (v !== undefined && !/^[^\s@]+@[^\s@]+$/.test(v)) throw new ConfigError(name, `not an e-mail address: "${v}"`);
  return v;
}

function instant(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  // A bare date means its midnight UTC; anything else must be a real RFC 3339 instant.
  const full = /^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00Z` : v;
  if (!isDateTime(full)) throw new ConfigError(name, `expected an ISO 8601 instant such as 2026-06-01T00:00:00Z, got "${v}"`);
  return Date.parse(full);
}

/** An IPv4 or IPv6 literal, or a host name (letters, digits, hyphens, dots). */
function host(v: string | undefined): string {
  if (v === undefined) return '127.0.0.1';
  const ipv4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
  const ipv6 = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$/;
  const name = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
  if (!ipv4.test(v) && !ipv6.test(v) && !(name.test(v) && !/^[\d.]+$/.test(v)))
    throw new ConfigError('CHAINPOST_HOST', `expected an IP address or a host name, got "${v}"`);
  return v;
}

/** `127.0.0.1,10.0.0.0/8,::1,fd00::/8`: IPv4 and IPv6 addresses and CIDR ranges (no zone id: they name no interface). */
function trustedProxies(v: string | undefined): TrustedProxy[] {
  if (v === undefined) return [];
  return v.split(',').map((raw) => {
    const entry = raw.trim();
    const [address = '', bits, ...extra] = entry.split('/');
    const family = address.includes(':') ? 'ipv6' : 'ipv4';
    const max = family === 'ipv6' ? 128 : 32;
    const ok =
      extra.length === 0 &&
      isIpLiteral(address) &&
      !address.includes('%') &&
      (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= max));
    if (!ok)
      throw new ConfigError(
        'CHAINPOST_TRUSTED_PROXIES',
        `expected IP addresses and CIDR ranges (such as 10.0.0.0/8) separated by commas, got "${entry}"`,
      );
    return { address, bits: bits === undefined ? max : Number(bits), family };
  });
}

function flag(name: string, v: string | undefined): boolean {
  if (v === undefined || v === '0' || v === 'false') return false;
  if (v === '1' || v === 'true') return true;
  throw new ConfigError(name, `expected 1 or 0, got "${v}"`);
}

function oneOf<const T extends string>(name: string, v: string | undefined, allowed: readonly T[], fallback: T): T {
  if (v === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(v)) throw new ConfigError(name, `expected one of ${allowed.join(', ')}, got "${v}"`);
  return v as T;
}
