import type { z } from 'zod';
import type { ChainFamily } from '../chains/registry.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/config.js';
import type { Dispatcher } from '../delivery/dispatcher.js';
import type { BlockStore, CommittedBlock } from '../ingest/commit.js';
import type { ChainEvents } from '../ingest/follow.js';
import type { Following } from '../ingest/following.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { ReplayFamily } from '../match/block-replay.js';
import type { BuildWebhook } from '../match/build.js';
import type { FamilyMatching } from '../match/ports.js';
import type { TargetPolicy } from '../net/targets.js';
import type { Kv, Upstream } from '../ports.js';
import type { Part, Readiness } from '../readiness.js';
import type { StreamFamily } from '../streams/family.js';
import type { StreamLimits } from '../streams/limits.js';
import type { StoredStream, StreamCommon } from '../streams/model.js';
import type { ChangeEffects, ControlPlane } from '../streams/control-plane.js';
import type { StreamWatch } from '../streams/change-effects.js';
import { FamilyStreams } from '../streams/resources.js';
import type { FollowedChains } from '../streams/unfollowed.js';

/**
 * The contract of a chain family (EVM, Bitcoin, Solana): what the shared parts (streams, matching, ingestion)
 * ask of it. Each family exports one object satisfying it from engine/<family>/index.ts; app/families.ts lists
 * them, a line each, and hands the registry (engine/families/registry.ts) to the shared parts. Its name, match
 * step and tasks come from its worker part (`FamilyWorker`, engine/<family>/worker.ts), reused as they are.
 */
export interface Family<
  D extends StreamCommon = StreamCommon,
  R extends FamilyStreams<D> = FamilyStreams<D>,
  P = unknown,
  W extends object = object,
  S = unknown,
  A = unknown,
> {
  name: ChainFamily;
  /** The stream resource: its checks, its answer, its stored addresses, what it watches, its test webhook. */
  streams: StreamFamily<D>;
  /** The stream resources of a tenant (create, update, list, addresses, and what the family has beyond them). */
  resources(parts: StreamParts, state: S): R;
  /**
   * What a node does, beyond the streams' reactions, when a change is applied (Bitcoin: its xpubs' windows), the
   * node's own changes and the others' alike: registered with them in engine/streams/change-effects.ts.
   */
  effects?(parts: FamilyEffectParts, state: S): ChangeEffects;
  /** The match step: compile what the family's streams watch, walk a block's probe column. */
  matching: FamilyMatching;
  /**
   * Starts the family's followers for what the configuration asks (none when it asks for none), and what runs
   * beside them, each adding its chains to `parts.following`. `P`: what the family needs beyond the shared parts
   * (app/ingest.ts gives every family the same object). What it returns is closed when ingestion stops.
   */
  follow(parts: FollowParts & P, state: S): Started | void;
  /**
   * How its followers write their blocks and take them back (engine/ingest/commit.ts): on a cluster, what the other
   * nodes apply the blocks a chain's follower published with. None: a family without followers.
   */
  blocks?: BlockStore<CommittedBlock>;
  /** Its webhook builder (the matcher's, and its block endpoints'). `W`: what building its bodies reads (app/server.ts gives every family the same object). */
  webhooks(parts: W, state: S): BuildWebhook<any>;
  /** Its block endpoints (POST /streams/<family>/:chainId/block/…), for a family that has them: matched with its filter set, built by its webhook builder. */
  replay?(build: BuildWebhook<any>, parts: W, state: S): ReplayFamily<any>;
  /** Its tasks of the worker pool by name (unique among the families): preparing its blocks, and what else it does off the serving thread. */
  tasks: Record<string, (input: any, parts: TaskParts) => TaskResult>;
  /** Its ports onto the worker pool (what its follower and the rest use), over the runner of the tasks. */
  pool(run: RunTask): object;
  /** Its Streams API under /streams/<name>: the request schemas of its routes, and its stream sub-resources. */
  api: StreamApi<D, R>;
  /**
   * The family's own state, made before its other hooks run (app/server.ts, before the watchlist, which reads
   * the keys it derives): each of its later hooks, its stream resources included, receives it as `state`.
   * `A`: the adapters app/families.ts binds to the family (`bind`), which engine/ does not make (a process, a
   * node's socket).
   */
  prepare?(parts: PrepareParts, adapters: A): S;
  /** The adapters bound to the family in app/families.ts. */
  adapters?: A;
  /**
   * What the family starts before the worker pool and its followers (EVM: the embedded devnet), awaited in
   * app/ingest.ts in the registry's order; what it returns is stopped last, once ingestion has stopped.
   */
  begin?(parts: BeginParts, state: S): Promise<{ stop(): Promise<void> } | void>;
  /** Its parts of the server's readiness (GET /health answers 503 while one is starting), for the configuration. */
  readiness?(config: Config): Part[];
}

/**
 * What a worker of the pool runs of a family: the default export of engine/<name>/worker.ts, which a worker loads by
 * the family's name (app/worker.ts) and alone, not the rest of the family (its schemas, webhook builders: zod and viem).
 */
export type FamilyWorker = Pick<Family, 'name' | 'matching' | 'tasks'>;

/** Runs a family's task of the worker pool by name; the byte arrays of `moved` go to the worker, not copied. */
export type RunTask = <R>(name: string, input: unknown, moved?: ReadonlyArray<Uint8Array | null>) => Promise<R>;

/** What a task runs with in a worker: the store's encoding of index values. */
export interface TaskParts {
  pack(value: unknown): Uint8Array;
}

/** A task's result, and the byte arrays in it moved back to the serving thread (some 300 KB a mainnet block), not copied. */
export interface TaskResult<T = unknown> {
  value: T;
  moved: ReadonlyArray<Uint8Array | null>;
}

/** What every family's followers are started with (app/ingest.ts). */
export interface FollowParts {
  config: Config;
  log: Logger;
  clock: Clock;
  kv: Kv;
  /** The followed chains: each family adds its followers, their nodes and origins. */
  following: Following;
  /** Where a follower announces its blocks (the matcher). */
  events(): ChainEvents;
  /** A JSON-RPC connection to a node, closed when ingestion stops. */
  rpc(url: string, opts?: { connections?: number }): Upstream & { close(): Promise<void> };
  /** Block tracing (CHAINPOST_TRACE_BLOCKS) of a follower's node reads and announcements: the same ones when it is off. */
  trace: { upstream<U extends Upstream>(chain: string, upstream: U): U; events(events: ChainEvents): ChainEvents };
}

/** What a family's follower factory started beside its followers, closed once they are stopped. */
export interface Started {
  close(): void;
}

/** What a family's stream resources are built with (the server's store, clock, delivery and limits). */
export interface StreamParts {
  kv: Kv;
  clock: Clock;
  dispatcher: Dispatcher;
  limits?: StreamLimits;
  targets?: TargetPolicy;
  followed?: FollowedChains;
  /** Where stream, address and xpub changes are written (engine/streams/control-plane.ts). */
  plane?: ControlPlane;
}

/** What a family's reactions to applied changes act on (app/server.ts): the node's watchlist. */
export interface FamilyEffectParts {
  /** What the streams watch, and (`derivedChanged`) when keys a family derives from one change. */
  watch: StreamWatch & { derivedChanged(id: string): void };
}

/** The resources of a family with nothing beyond the shared ones. */
export const sharedResources =
  <D extends StreamCommon>(streams: StreamFamily<D>) =>
  (p: StreamParts): FamilyStreams<D> =>
    new FamilyStreams(p.kv, p.clock, p.dispatcher, streams, p.limits, p.targets, p.followed, p.plane);

/**
 * A family's Streams API (the routes under /streams/<name> are made from it): the request bodies of the shared
 * resources (create, update, addresses), of its block endpoints when it has them, its stream sub-resources, and
 * what the OpenAPI document says of its answers (its stream record) and operations (the hosted service's names).
 */
export interface StreamApi<D extends StreamCommon, R> {
  /** PUT /streams/<name>. */
  create: z.ZodType<D>;
  /** POST /streams/<name>/:id: any subset of the definition. */
  update: z.ZodType<Partial<D>>;
  /** POST and DELETE /streams/<name>/:id/address: an address or a list. */
  address: z.ZodType<{ address: string | string[] }>;
  /** The stream as the API answers it (its StreamFamily's `response`): create, get, update, status, delete and each of the list. */
  stream: z.ZodType;
  /** For a family with block endpoints (`replay`): POST …/:chainId/block/:blockNumber's body, into the definition and addresses the block is matched with. */
  blockRequest?: z.ZodType<[StoredStream, string[]]>;
  /** What a stream has beyond the shared resources (Bitcoin's xpubs), each under /streams/<name>/:id/<sub-resource>. */
  subResources?: ReadonlyArray<SubResource<R, any>>;
  /** The hosted service's operationId of each of its routes, where it names them; the others' are made from the path. */
  operations?: Partial<Record<StreamOperation, string>>;
}

/** The routes of a family's Streams API, by what they do: the shared resources, then the block endpoints. */
export type StreamOperation =
  | 'create'
  | 'list'
  | 'get'
  | 'update'
  | 'remove'
  | 'status'
  | 'addAddresses'
  | 'removeAddresses'
  | 'addresses'
  | 'block'
  | 'blockToWebhook';

/**
 * The operationIds of the hosted Bitcoin and Solana streams (`bitcoinStreamsCreate`, `solanaGetBlockByNumber`, …): one
 * pattern for both families.
 */
export const hostedOperations = (family: string): Record<StreamOperation, string> => ({
  create: `${family}StreamsCreate`,
  list: `${family}StreamsGetAll`,
  get: `${family}StreamsGet`,
  update: `${family}StreamsUpdate`,
  remove: `${family}StreamsDelete`,
  status: `${family}StreamsUpdateStatus`,
  addAddresses: `${family}StreamsAddAddresses`,
  removeAddresses: `${family}StreamsDeleteAddresses`,
  addresses: `${family}StreamsGetAddresses`,
  block: `${family}GetBlockByNumber`,
  blockToWebhook: `${family}BlockToWebhook`,
});

/**
 * A stream's sub-resource: POST …/:id/<name> adds one (body `B`), GET …/:id/<name> lists them a page at a time,
 * DELETE …/:id/<name>/:<item.param> removes one, each through the family's stream resources `R`.
 */
export interface SubResource<R, B> {
  /** Its path segment. */
  name: string;
  /** The body of an add. */
  body: z.ZodType<B>;
  /** The path parameter naming one of them (a UUID), and what a 400 calls it. */
  item: { param: string; what: string };
  add(resources: R, tenant: string, streamId: string, body: B): Promise<unknown>;
  list(resources: R, tenant: string, streamId: string, limit: number, cursor: string | null): unknown;
  remove(resources: R, tenant: string, streamId: string, itemId: string): Promise<unknown>;
  /** The schemas of what add, list and remove answer (the OpenAPI document's). */
  answers: { add: z.ZodType; list: z.ZodType; remove: z.ZodType };
  /** The hosted service's operationIds of its three routes, where it names them. */
  operations?: { add: string; list: string; remove: string };
}

/** What a family's state is made with (app/server.ts): the store, the metrics it exposes, the followed chains it reads. */
export interface PrepareParts {
  config: Config;
  kv: Kv;
  metrics: Pick<Metrics, 'gauge'>;
  following: Following;
}

/** What a family's state may offer the shared parts. */
export interface PreparedState {
  /** Keys the family derives from a stream off the serving thread (Bitcoin: its xpubs' windows), compiled with its own. */
  derived?(id: string): Uint8Array;
}

/** What a family's `begin` runs with (app/ingest.ts). */
export interface BeginParts {
  config: Config;
  log: Logger;
  kv: Kv;
  following: Following;
  readiness: Readiness;
  /** Text for the person at the terminal (stderr). */
  notice(text: string): void;
  /** Test seam: awaited before each part of the server starts. */
  before(part: Part): Promise<void>;
}
