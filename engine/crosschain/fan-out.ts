import type { z } from 'zod';
import type { Chain } from '../chains/registry.js';
import type { DataDeps } from '../data-api/common/deps.js';
import { ApiError } from '../errors.js';
import { NodeError } from '../ports.js';
import { v1ChainId, type ResolvedChains } from './chains.js';
import type { failedChain, v1Meta as v1MetaSchema } from './responses.js';

/**
 * One request over several chains, answered in part when some fail: each
 * chain's part runs on its own, a chain whose node or index fails is named in
 * `meta.failedChains` with its error, and the others still answer. Bad input
 * is the request's fault, not a chain's: a 4xx from any part fails the whole
 * request with it (the same parameters would fail on every chain).
 */

/** A chain whose part failed (responses.ts). */
export type FailedChain = z.output<typeof failedChain>;

/** The `meta` every /v1 answer carries (responses.ts). */
export type V1Meta = z.output<typeof v1MetaSchema>;

export interface ChainPart<T> {
  readonly chain: Chain;
  readonly value: T;
}

/**
 * A part's failure that belongs to its chain, not to the request: a 5xx the part would answer alone, the node's
 * JSON-RPC error, or a connection's (an error with a string code: ECONNREFUSED, UND_ERR_…). Anything else (a 4xx,
 * a bug's TypeError) is the request's and fails it: a bug is not hidden as a chain's outage.
 */
export function chainFailure(chain: Chain, err: unknown): FailedChain | undefined {
  const fail = (code: number | string): FailedChain => ({ chainId: v1ChainId(chain), code, error: (err as Error).message });
  if (err instanceof ApiError) return err.status >= 500 ? fail(err.status) : undefined;
  if (err instanceof NodeError) return fail(err.code);
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && typeof code === 'string' ? fail(code) : undefined;
}

/**
 * A chain whose node is failing now is one of the answer's failedChains (502, the node's error), as a read of it
 * would be: its indexes (EVM's Data API, Bitcoin's address index) stop at the last block the node gave, so its
 * part would be answered as if current.
 */
export function nodeReachable(deps: Pick<DataDeps, 'follower'>, chain: Chain): void {
  const f = deps.follower(chain.key);
  if (f?.upstream === 'failing')
    throw new ApiError(502, `the node of chain ${chain.key} could not be reached: ${f.lastError ?? 'it fails'}`);
}

/** Runs `part` on every chain at once; the chains that answered, in order, and the failures. A request error is thrown. */
export async function acrossChains<T>(
  chains: readonly Chain[],
  part: (chain: Chain) => T | Promise<T>,
): Promise<{ parts: ChainPart<T>[]; failed: FailedChain[] }> {
  const settled = await Promise.allSettled(chains.map(async (chain) => part(chain)));
  const parts: ChainPart<T>[] = [];
  const failed: FailedChain[] = [];
  settled.forEach((s, i) => {
    const chain = chains[i]!;
    if (s.status === 'fulfilled') return void parts.push({ chain, value: s.value });
    const f = chainFailure(chain, s.reason);
    if (f === undefined) throw s.reason;
    failed.push(f);
  });
  return { parts, failed };
}

/** Failures of a request's chains, then those of the chains it read prices on (Bitcoin's wrapped bitcoin), each chain once. */
export const allFailed = (failed: readonly FailedChain[], more: readonly FailedChain[]): FailedChain[] => [
  ...failed,
  ...more.filter((f) => !failed.some((g) => g.chainId === f.chainId)),
];

/** The `meta` of an answer: every asked chain's sync point, and the unsupported and failed ones when there are any. */
export function v1Meta(resolved: ResolvedChains, failed: readonly FailedChain[], syncedAt: (chain: Chain) => number | undefined): V1Meta {
  const meta: V1Meta = { syncedAt: Object.fromEntries(resolved.chains.map((c) => [v1ChainId(c), syncedAt(c) ?? null])) };
  if (resolved.unsupported.length > 0) meta.unsupportedChains = [...resolved.unsupported];
  if (failed.length > 0) meta.failedChains = [...failed];
  return meta;
}

/** A chain's sync point: the last block every Data API index holds (EVM), else its follower's head (Bitcoin's indexes are written with its blocks). */
export const syncedAt =
  (deps: Pick<DataDeps, 'indexer' | 'follower'>) =>
  (chain: Chain): number | undefined => {
    const at = deps.indexer.position(chain.key) ?? deps.follower(chain.key)?.head;
    // −1 is "nothing yet" (a chain whose node has never answered): null in the answer, not a block.
    return at === undefined || at < 0 ? undefined : at;
  };
