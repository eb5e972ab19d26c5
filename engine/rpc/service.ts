import type { Chain } from '../chains/registry.js';
import { ApiError } from '../errors.js';
import type { ChainState } from '../evm/follower.js';
import { rpcReceipts } from '../evm/record.js';
import type { Metrics } from '../metrics.js';
import { NodeError, type Kv, type Upstream } from '../ports.js';
import { INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, errorText, resultText, type RpcError } from './envelope.js';
import { feeHistoryFromStore } from './fee-history.js';
import { Held } from './held.js';
import { MAX_RESULTS, blockLogs, logsFromStore, tooManyResults, type BlockLogs } from './logs.js';
import { answerBlock, methodRoute, shareable } from './methods.js';
import { nodeRules, type NodeRules } from './node-rules.js';
import { capGas, executesCalls, gasOf } from './gas-cap.js';
import { parseRequest, type Call, type Invalid } from './request.js';
import { InFlight, Lru, type CachedAnswer } from './share.js';

/**
 * Node access: JSON-RPC calls for one chain, answered from the store where it
 * holds what a call asks about (eth_getLogs, eth_getBlockReceipts,
 * eth_feeHistory), else by the chain's node, with identical calls in flight
 * sent once. Answers about blocks at or below the confirmed height, from the
 * store or the node, are kept serialized in a bounded LRU.
 */
export interface ChainNode {
  /** The chain's node. */
  upstream: Upstream;
  /** The node's latest block while that is known to be current (the follower's live newHeads), else undefined. */
  nodeLatest(): number | undefined;
  /** How many reorgs the store took since the start (see Held.blockId). */
  reorgs(): number;
}

/** A whole answer: HTTP status and body (empty when every call was a notification). */
export interface Answered {
  status: number;
  text: string;
}

/** How a call was served, as counted in chainpost_rpc_calls_total. */
type Served = 'store' | 'cache' | 'shared' | 'node' | 'refused' | 'invalid' | 'failed';

/** What the node said to a call, shared by every caller of that call. */
type Settled = { json: string } | { error: RpcError } | { failure: string };

interface Attached {
  chain: string;
  node: ChainNode;
  rules: NodeRules | undefined;
  asking: boolean;
  /** The node's block gas limit as last read, until when it is kept (service time). */
  gasLimit: { value: bigint; until: number } | undefined;
  /** The read of the block gas limit under way, shared by the calls waiting for it. */
  readingGasLimit: Promise<bigint> | undefined;
}

/** How long the node's block gas limit is kept once read (service time): it moves by at most 1/1024 a block. */
const GAS_LIMIT_KEPT_MS = 60_000;

interface Out {
  text: string;
  /** The node could not be reached (or answered over HTTP with an error): a lone call is answered 500. */
  failed?: boolean;
}

export class NodeAccess {
  private readonly chains = new Map<string, Attached>();
  private readonly inFlight = new InFlight<Settled>();
  private readonly cache: Lru<CachedAnswer>;
  private readonly logs: Lru<BlockLogs>;
  private readonly blockReceipts: Lru<string>;
  private readonly counts = new Map<string, number>();

  /** CHAINPOST_RPC_GAS_CAP: a cap on forwarded calls' gas below the chain's block gas limit. */
  private readonly gasCap: bigint | undefined;

  constructor(
    private readonly kv: Kv,
    metrics: Metrics,
    /** Service time, ms (how long the block gas limit is kept). */
    private readonly now: () => number,
    opts: { gasCap?: number; cacheEntries?: number; cacheChars?: number; renderedChars?: number } = {},
  ) {
    this.gasCap = opts.gasCap === undefined ? undefined : BigInt(opts.gasCap);
    this.cache = new Lru<CachedAnswer>(opts.cacheEntries ?? 10_000, opts.cacheChars ?? 64 * 1024 * 1024, (a) => a.json.length);
    // What the store path made of hot blocks: their logs and receipts as the node's JSON.
    this.logs = blockLogs(opts.renderedChars ?? 32 * 1024 * 1024);
    this.blockReceipts = new Lru<string>(100_000, opts.renderedChars ?? 32 * 1024 * 1024, (json) => json.length);
    metrics.gauge(
      'chainpost_rpc_calls_total',
      'Node-access calls by chain, method and how they were served: store, cache, shared (an identical call in flight), node, refused, invalid, failed (node unreachable).',
      () =>
        [...this.counts].map(([k, value]) => {
          const [chain, method, served] = k.split('\u0000') as [string, string, string];
          return { labels: { chain, method, served }, value };
        }),
      'counter',
    );
  }

  /** Node access to `chain` goes through `node` from now on. */
  attach(chain: string, node: ChainNode): void {
    const a: Attached = { chain, node, rules: undefined, asking: false, gasLimit: undefined, readingGasLimit: undefined };
    this.chains.set(chain, a);
    this.learnRules(a);
  }

  /**
   * The most gas a call made on a tenant's behalf may burn on `chain`'s node (a stream's trigger calls, as a
   * forwarded call): the cap below; null when no node is attached or it cannot say (the call then goes without).
   */
  async callGasLimit(chain: string): Promise<bigint | null> {
    const a = this.chains.get(chain);
    return a === undefined ? null : this.callGasCap(a).catch(() => null);
  }

  /** The chain's node as attached for node access (also a chain no longer followed, until its node-access removal). */
  upstream(chain: string): Upstream | undefined {
    return this.chains.get(chain)?.node.upstream;
  }

  /** Answers a JSON body (one call or a batch) for `chain`; throws ApiError for a chain without a node or a malformed body. */
  async answer(chain: Chain, body: unknown): Promise<Answered> {
    const a = this.chains.get(chain.key);
    if (a === undefined)
      throw new ApiError(404, `chain ${chain.key} (${chain.slug}) has no upstream node on this server`, { chain: chain.key });
    const parsed = parseRequest(body);
    if (!parsed.batch) {
      const out = await this.one(a, parsed.call);
      return { status: out.failed === true ? 500 : 200, text: parsed.call.notification ? '' : out.text };
    }
    const outs = await Promise.all(parsed.items.map((item) => ('invalid' in item ? this.invalid(a, item) : this.one(a, item))));
    const texts = outs.filter((_, i) => !(parsed.items[i] as Partial<Call>).notification).map((o) => o.text);
    return { status: 200, text: texts.length === 0 ? '' : `[${texts.join(',')}]` };
  }

  private invalid(a: Attached, item: Invalid): Out {
    this.count(a, 'other', 'invalid');
    return { text: errorText(item.id, { code: INVALID_REQUEST, message: item.invalid.message }) };
  }

  private async one(a: Attached, call: Call): Promise<Out> {
    const route = methodRoute(call.method);
    if (route === undefined) {
      this.count(a, 'other', 'refused');
      return { text: errorText(call.id, { code: METHOD_NOT_FOUND, message: `the method ${call.method} does not exist/is not available` }) };
    }
    const key = `${a.chain}\n${call.method}\n${JSON.stringify(call.params)}`;
    const cached = this.cached(a, key);
    if (cached !== undefined) {
      this.count(a, call.method, 'cache');
      return { text: resultText(call.id, cached) };
    }
    if (route === 'store') {
      const local = this.fromStore(a, this.held(a), call);
      if (local !== undefined) {
        this.count(a, call.method, 'store');
        if ('error' in local) return { text: errorText(call.id, local.error) };
        // A block's receipts are kept per block already (this.blockReceipts); a log query's answer is its own.
        if (call.method !== 'eth_getBlockReceipts') this.keep(a, call, key, local.json, local.json);
        return { text: resultText(call.id, local.json) };
      }
    }
    return this.fromNode(a, call, key);
  }

  /** A cached answer, while the block it is about is still confirmed and canonical. */
  private cached(a: Attached, key: string): string | undefined {
    const hit = this.cache.get(key);
    if (hit === undefined) return undefined;
    const held = this.held(a);
    if (hit.block <= held.confirmed && held.hashAt(hit.block) === hit.hash) return hit.json;
    this.cache.delete(key);
    return undefined;
  }

  /** The store's answer (serialized), or undefined when it does not hold (all of) what the call asks about. */
  private fromStore(a: Attached, held: Held, call: Call): { json: string } | { error: RpcError } | undefined {
    if (a.rules === undefined) this.learnRules(a);
    if (call.method === 'eth_getLogs') {
      const logs = logsFromStore(held, call.params, a.rules?.topicsBeyondLog, this.logs);
      return logs === undefined ? undefined : Array.isArray(logs) ? { json: `[${logs.join(',')}]` } : { error: logs };
    }
    if (call.method === 'eth_getBlockReceipts') {
      const json = this.receipts(held, call.params);
      return json === undefined ? undefined : { json };
    }
    const fees = a.rules?.feeHistory === true ? feeHistoryFromStore(held, call.params) : undefined;
    return fees === undefined ? undefined : { json: JSON.stringify(fees) };
  }

  /** A held block's receipts as the node's JSON, made once per block (Held.blockId). */
  private receipts(held: Held, params: readonly unknown[]): string | undefined {
    const n = params.length === 1 ? held.block(params[0]) : undefined;
    if (n === undefined || !held.holds(n, n)) return undefined;
    const id = held.blockId(n);
    let json = this.blockReceipts.get(id);
    if (json === undefined) {
      const record = held.fullRecord(n);
      if (record === undefined) return undefined;
      json = JSON.stringify(rpcReceipts(record));
      this.blockReceipts.set(id, json);
    }
    return json;
  }

  private async fromNode(a: Attached, call: Call, key: string): Promise<Out> {
    const { promise, shared } = shareable(call.method)
      ? this.inFlight.run(key, () => this.ask(a, call, key))
      : { promise: this.ask(a, call, key), shared: false };
    // Counted as it joins, so a call waiting on another's answer shows at once.
    if (shared) this.count(a, call.method, 'shared');
    const settled = await promise;
    if (!shared) this.count(a, call.method, 'failure' in settled ? 'failed' : 'node');
    if ('json' in settled) return { text: resultText(call.id, settled.json) };
    if ('error' in settled) return { text: errorText(call.id, settled.error) };
    return { text: errorText(call.id, { code: INTERNAL_ERROR, message: settled.failure }), failed: true };
  }

  /** Asks the node; never rejects (the answer is shared). A JSON-RPC error of the node is its answer, passed on as it sent it. */
  private async ask(a: Attached, call: Call, key: string): Promise<Settled> {
    let result: unknown;
    try {
      const params = executesCalls(call.method) ? capGas(call.method, call.params, await this.callGasCap(a)) : call.params;
      result = await a.node.upstream.call<unknown>(call.method, params);
    } catch (err) {
      if (err instanceof NodeError) return { error: err.sent };
      return { failure: `the node of chain ${a.chain} failed: ${(err as Error).message}` };
    }
    // The same limit as the store's answer, whoever answers.
    if (call.method === 'eth_getLogs' && Array.isArray(result) && result.length > MAX_RESULTS) return { error: tooManyResults };
    const json = JSON.stringify(result ?? null);
    this.keep(a, call, key, result, json);
    return { json };
  }

  /** The most gas a forwarded call may burn on the chain's node: its block gas limit, or CHAINPOST_RPC_GAS_CAP when lower. */
  private async callGasCap(a: Attached): Promise<bigint> {
    const limit = await this.blockGasLimit(a);
    return this.gasCap !== undefined && this.gasCap < limit ? this.gasCap : limit;
  }

  /** The gas limit of the node's latest block, read at most once per GAS_LIMIT_KEPT_MS; rejects as the node's call does. */
  private blockGasLimit(a: Attached): Promise<bigint> {
    if (a.gasLimit !== undefined && this.now() < a.gasLimit.until) return Promise.resolve(a.gasLimit.value);
    a.readingGasLimit ??= a.node.upstream
      .call<{ gasLimit?: unknown } | null>('eth_getBlockByNumber', ['latest', false])
      .then((block) => {
        const value = gasOf(block?.gasLimit);
        if (value === undefined) throw new Error(`its latest block names no gasLimit, which caps the gas of forwarded calls`);
        a.gasLimit = { value, until: this.now() + GAS_LIMIT_KEPT_MS };
        return value;
      })
      .finally(() => void (a.readingGasLimit = undefined));
    return a.readingGasLimit;
  }

  /** Caches an answer about a block at or below the confirmed height (by the state now, once the answer is there). */
  private keep(a: Attached, call: Call, key: string, result: unknown, json: string): void {
    const held = this.held(a);
    const block = answerBlock(call.method, call.params, result, (hash) => held.numberOf(hash));
    if (block === undefined || block > held.confirmed) return;
    const hash = held.hashAt(block);
    if (hash !== undefined) this.cache.set(key, { json, block, hash });
  }

  private held(a: Attached): Held {
    return new Held(this.kv, a.chain, this.kv.get<ChainState>('chainState', a.chain), a.node.nodeLatest(), a.node.reorgs());
  }

  /** Asks the node which client it runs, once it answers (see node-rules.ts). */
  private learnRules(a: Attached): void {
    if (a.rules !== undefined || a.asking) return;
    a.asking = true;
    a.node.upstream
      .call<unknown>('web3_clientVersion', [])
      .then(
        (v) => void (a.rules = nodeRules(String(v))),
        // A node without the method answered all the same: its rules are not known. Unreachable: ask again later.
        (err: unknown) => void (err instanceof NodeError ? (a.rules = nodeRules('')) : undefined),
      )
      .finally(() => void (a.asking = false));
  }

  private count(a: Attached, method: string, served: Served): void {
    const k = `${a.chain}\u0000${method}\u0000${served}`;
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
  }
}
