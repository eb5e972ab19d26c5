import { z } from 'zod';
import { nftEndpoints } from '../http/server/data-nft.js';
import { authRoutes } from '../http/server/auth.js';
import { keysRoutes } from '../http/server/keys.js';
import { streamsRoutes } from '../http/server/streams.js';
import { crossChainRoutes } from '../http/server/crosschain.js';
import { dataRoutes } from '../http/server/data.js';
import { callsEndpoints } from '../http/server/data-calls.js';
import { txsEndpoints } from '../http/server/data-txs.js';
import { erc20Endpoints } from '../http/server/data-erc20.js';
import { defiEndpoints } from '../http/server/data-defi.js';
import { priceEndpoints } from '../http/server/data-prices.js';
import { undiciMetadataFetcher } from '../http/clients/metadata-fetch.js';
import { rpcRoutes } from '../http/server/rpc.js';
import type { Route } from '../http/server/route.js';
import { systemRoutes } from '../http/server/system.js';
import { referenceRoutes } from '../http/server/reference.js';
import { dashboardRoutes } from '../http/server/dashboard.js';
import { chainpostVersion } from './version.js';
import type { Store } from '../storage/env.js';
import type { AuthService } from '../engine/auth/service.js';
import type { ApiKeys } from '../engine/keys.js';
import type { TokenIssuer } from '../engine/auth/token.js';
import type { ServiceClock } from '../engine/clock.js';
import type { Config } from '../engine/config/config.js';
import type { Dispatcher } from '../engine/delivery/dispatcher.js';
import type { DataIndexer } from '../engine/data-api/common/indexer.js';
import type { DataDeps } from '../engine/data-api/common/deps.js';
import { NftMetadata } from '../engine/data-api/nft/metadata.js';
import type { FollowerStatus } from '../engine/ingest/follow.js';
import type { HeadWatch } from '../engine/ingest/stall.js';
import type { Logger } from '../engine/log.js';
import type { Metrics } from '../engine/metrics.js';
import type { TargetPolicy } from '../engine/net/targets.js';
import type { Readiness } from '../engine/readiness.js';
import type { NodeAccess } from '../engine/rpc/service.js';
import type { StreamsService } from '../engine/streams/service.js';
import type { ClusterNode } from './cluster.js';
import { nodeEntryAnswer } from '../engine/cluster/node.js';
import { FAMILIES, type FamilyReplays, type FamilyResources } from './families.js';
import type { Following } from '../engine/ingest/following.js';

/** Every route of the API port: system, streams, auth, Data API, cross-chain, node access. */
export function buildRoutes(parts: {
  config: Config;
  log: Logger;
  store: Store;
  clock: ServiceClock;
  metrics: Metrics;
  readiness: Readiness;
  heads: HeadWatch;
  following: Following;
  dispatcher: Dispatcher;
  streams: StreamsService;
  familyStreams: FamilyResources;
  auth: AuthService;
  /** The API keys, written through the control plane (the keys routes). */
  keys: ApiKeys;
  tokens: TokenIssuer;
  nodes: NodeAccess;
  reads: DataDeps['reads'];
  tokenMetadata: DataDeps['tokens'];
  dataIndexer: DataIndexer;
  targets: TargetPolicy;
  /** Each family's block endpoints. */
  blocks: FamilyReplays;
  /** A cluster node's own figures (/health's `cluster`). */
  cluster: ClusterNode | undefined;
}): Route[] {
  const { config, store, clock, dispatcher, following, dataIndexer } = parts;
  const fetcher = undiciMetadataFetcher({ targets: parts.targets });
  const nftMetadata = new NftMetadata(store, parts.reads, fetcher, clock, { ipfsGateway: config.ipfsGateway, log: parts.log });
  const dataDeps: DataDeps = {
    kv: store,
    tokens: parts.tokenMetadata,
    reads: parts.reads,
    indexer: dataIndexer,
    follower: (chain) => following.follower(chain)?.status(),
    pricing: (chain) => config.pricing.get(chain),
  };
  const { cluster } = parts;
  const health = () => ({
    now: new Date(clock.now()).toISOString(),
    chains: following.followers.map((f) =>
      withStall(withNode(withIndexed(f.status(), following.indexed, dataIndexer), following.nodeUrls), parts.heads),
    ),
    ...(cluster === undefined ? {} : { cluster: cluster.entry() }),
  });
  const system = systemRoutes({
    healthAnswer,
    metrics: parts.metrics,
    clock,
    testClock: config.testClock,
    metricsKey: config.metricsKey,
    settle: () => dispatcher.settled(),
    starting: () => parts.readiness.starting(),
    health,
  });
  // A cluster node without the api role answers its operator alone: /health and /metrics.
  if (!config.roles.has('api')) return system;
  const routes: Route[] = [
    ...system,
    ...referenceRoutes({ routes: () => routes, clock, version: chainpostVersion() }),
    ...dashboardRoutes(),
    ...streamsRoutes(parts.streams, FAMILIES, parts.familyStreams, { testHooks: config.testClock, blocks: parts.blocks }),
    ...authRoutes(parts.auth, parts.tokens),
    ...keysRoutes(parts.keys),
    ...dataRoutes(clock, dataDeps, [
      callsEndpoints(dataDeps, { ens: config.ens, clock }),
      txsEndpoints(dataDeps, clock),
      erc20Endpoints(dataDeps),
      defiEndpoints(dataDeps),
      priceEndpoints(dataDeps, clock),
      nftEndpoints({ ...dataDeps, metadata: nftMetadata }, clock),
    ]),
    ...crossChainRoutes(clock, () => following.chains(), dataDeps, config),
    ...rpcRoutes(clock, parts.nodes),
  ];
  return routes;
}

/**
 * A chain's /health entry as answered (FollowerStatus with what withIndexed, withNode and withStall add), and the
 * figures its family's follower adds (EVM's subscription and backfill, Bitcoin's inputs, Solana's skipped slots).
 */
const chainEntry = z.looseObject({
  chain: z.string(),
  head: z.number(),
  confirmed: z.number(),
  nodeHead: z.number(),
  oldest: z.number(),
  upstream: z.enum(['ok', 'failing']),
  upstreamErrors: z.number(),
  lastError: z.string().optional(),
  indexed: z.number().nullable().optional().meta({ description: "The Data API indexes' last block, for a chain they index" }),
  node: z.string().optional().meta({ description: "The chain's node: its scheme and host" }),
  stalled: z.boolean(),
});

/** /health's figures (with the metrics key): the service time, each followed chain, a cluster node's own entry. */
const healthAnswer = z.object({
  now: z.string(),
  chains: z.array(chainEntry),
  cluster: nodeEntryAnswer.optional(),
});

/** A chain's /health entry: its follower's status, and for a chain with Data API indexes their position (`indexed`, null before the first block). */
function withIndexed(
  status: FollowerStatus,
  indexed: ReadonlySet<string>,
  indexer: DataIndexer,
): FollowerStatus & { indexed?: number | null } {
  return indexed.has(status.chain) ? { ...status, indexed: indexer.position(status.chain) ?? null } : status;
}

/** A /health entry with whether the chain's head has stood still too long (HeadWatch). */
const withStall = <S extends FollowerStatus>(status: S, heads: HeadWatch): S & { stalled: boolean } => ({
  ...status,
  stalled: heads.stalled(status.chain, status.head),
});

/** A /health entry with the chain's node, its scheme and host alone. */
function withNode<S extends FollowerStatus>(status: S, nodeUrls: ReadonlyMap<string, string>): S & { node?: string } {
  const node = nodeUrls.get(status.chain);
  return node === undefined ? status : { ...status, node };
}
