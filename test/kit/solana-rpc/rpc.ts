/**
 * The stand-in's JSON-RPC methods over a SolanaChain, with agave's error codes and texts (rpc/src/custom_error.rs,
 * jsonrpc-core's standard errors). getBlock serves the json encoding with full transaction details only.
 */
import { type SolanaChain } from './chain.js';
import { type AnswerCache } from './answers.js';
import { versionedIn, type RenderOptions } from './render.js';

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A result as JSON text, or a block's bytes. */
export type Result = string | Buffer;

export interface RpcContext {
  chain: SolanaChain;
  /** Rendered getBlock answers. */
  answers: AnswerCache;
}

/** Mainnet's genesis hash (getGenesisHash). */
export const MAINNET_GENESIS_HASH = '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d';
/** What getVersion answers: an agave release of 2025. */
export const NODE_VERSION = { 'feature-set': 3294202862, 'solana-core': '2.2.16' };

export const blockNotAvailable = (slot: number): RpcError => new RpcError(-32004, `Block not available for slot ${slot}`);
export const blockStatusNotAvailableYet = (slot: number): RpcError =>
  new RpcError(-32014, `Block status not yet available for slot ${slot}`);
export const slotSkipped = (slot: number): RpcError =>
  new RpcError(-32007, `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`);
export const longTermStorageSlotSkipped = (slot: number): RpcError =>
  new RpcError(-32009, `Slot ${slot} was skipped, or missing in long-term storage`);
export const unsupportedTransactionVersion = (version: number): RpcError =>
  new RpcError(
    -32015,
    `Transaction version (${version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${version}`,
  );

type Commitment = 'processed' | 'confirmed' | 'finalized';

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'sequence';
  if (typeof v === 'string') return `string ${JSON.stringify(v)}`;
  if (typeof v === 'number') return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  return typeof v === 'object' ? 'map' : typeof v;
}

/** serde's message for a parameter of the wrong type, as jsonrpc-core's `Params::parse` wraps it. */
const invalidType = (v: unknown, want: string): RpcError =>
  new RpcError(-32602, `Invalid params: invalid type: ${typeName(v)}, expected ${want}.`);

function paramsArray(params: unknown): unknown[] {
  if (params === undefined || params === null) return [];
  if (!Array.isArray(params)) throw new RpcError(-32602, 'Invalid params: invalid type: map, expected a sequence.');
  return params;
}

function slotParam(v: unknown): number {
  if (v === undefined) throw new RpcError(-32602, 'Invalid params: invalid length 0, expected at least one element.');
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw invalidType(v, 'u64');
  return v;
}

function configParam(v: unknown): Record<string, unknown> {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidType(v, 'a config map');
  return v as Record<string, unknown>;
}

/** The commitment of a config (agave's default is finalized). */
function commitmentOf(config: Record<string, unknown>): Commitment {
  const c = config.commitment ?? 'finalized';
  if (c === 'processed' || c === 'confirmed' || c === 'finalized') return c;
  // Older names the node still maps.
  if (c === 'recent') return 'processed';
  if (c === 'single' || c === 'singleGossip') return 'confirmed';
  if (c === 'root' || c === 'max') return 'finalized';
  throw new RpcError(
    -32602,
    `Invalid params: unknown variant \`${String(c)}\`, expected one of \`processed\`, \`confirmed\`, \`finalized\`.`,
  );
}

/** The slot a commitment sees: the root for finalized, the confirmed tip otherwise. */
const slotAt = (chain: SolanaChain, c: Commitment): number => (c === 'finalized' ? chain.root : chain.tip);

function getSlot(ctx: RpcContext, params: unknown[]): Result {
  return String(slotAt(ctx.chain, commitmentOf(configParam(params[0]))));
}

function getBlockHeight(ctx: RpcContext, params: unknown[]): Result {
  const slot = slotAt(ctx.chain, commitmentOf(configParam(params[0])));
  return JSON.stringify(ctx.chain.at(slot)?.blockHeight ?? ctx.chain.blockBelow(slot)?.blockHeight ?? 0);
}

function getBlock(ctx: RpcContext, params: unknown[]): Result {
  const slot = slotParam(params[0]);
  // The second parameter may be an encoding name (the deprecated form) or a config.
  const config = typeof params[1] === 'string' ? { encoding: params[1] } : configParam(params[1]);
  const encoding = config.encoding ?? 'json';
  if (encoding !== 'json')
    throw new RpcError(-32602, `Invalid params: the stand-in Solana RPC serves encoding json only, not ${JSON.stringify(encoding)}.`);
  const details = config.transactionDetails ?? 'full';
  if (details !== 'full')
    throw new RpcError(
      -32602,
      `Invalid params: the stand-in Solana RPC serves transactionDetails full only, not ${JSON.stringify(details)}.`,
    );
  const commitment = commitmentOf(config);
  if (commitment === 'processed') throw new RpcError(-32602, 'Method does not support commitment below `confirmed`');
  const max = config.maxSupportedTransactionVersion;
  if (max !== undefined && max !== null && (typeof max !== 'number' || !Number.isInteger(max) || max < 0 || max > 255))
    throw invalidType(max, 'u8');
  const { chain } = ctx;
  if (slot < chain.firstAvailable) throw longTermStorageSlotSkipped(slot);
  if (slot > slotAt(chain, commitment)) throw blockNotAvailable(slot);
  const block = chain.at(slot);
  if (!block) throw slotSkipped(slot);
  if (!block.available) {
    if (block.unavailableAs === null) return 'null';
    if (block.unavailableAs === -32014) throw blockStatusNotAvailableYet(slot);
    throw blockNotAvailable(slot);
  }
  const versioned = versionedIn(block);
  if (versioned !== undefined && (max === undefined || max === null || versioned > (max as number)))
    throw unsupportedTransactionVersion(versioned);
  const opts: RenderOptions = { rewards: config.rewards !== false, showVersion: max !== undefined && max !== null };
  return ctx.answers.get(block, opts);
}

type Method = (ctx: RpcContext, params: unknown[]) => Result;

const METHODS: Record<string, Method> = {
  getSlot,
  getBlock,
  getBlockHeight,
  getVersion: () => JSON.stringify(NODE_VERSION),
  getGenesisHash: () => JSON.stringify(MAINNET_GENESIS_HASH),
  getHealth: () => '"ok"',
  getFirstAvailableBlock: (ctx) => String(ctx.chain.firstAvailable),
};

/** Runs a method; unknown ones are jsonrpc-core's -32601. */
export function runMethod(ctx: RpcContext, method: string, params: unknown): Result {
  const m = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
  if (!m) throw new RpcError(-32601, 'Method not found');
  return m(ctx, paramsArray(params));
}
