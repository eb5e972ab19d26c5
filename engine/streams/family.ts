import type { StreamLimits } from './limits.js';
import type { FamilyName, StreamCommon, StreamState } from './model.js';

/**
 * What differs between the stream families (EVM, Bitcoin, Solana): the service's
 * create, update, status, addresses, remove and list are written once over it.
 * D is the family's definition (its request fields, shared ones included).
 */
export interface StreamFamily<D extends StreamCommon> {
  family: FamilyName;
  /** Checks what the schema cannot (registry chains, abi events, the operator's limits) at service time `now`; throws a 400 naming the field. */
  check(def: D, now: number, limits: StreamLimits): D;
  /** The stream as the API answers it. */
  response(s: D & StreamState, now: number): Record<string, unknown>;
  /** An address (already valid by the endpoint's schema) in the form it is stored and matched in. */
  address(text: string): string;
  /** What the watchlist matches on: the store's chain keys, allAddresses, topic0 (event signatures), Solana's programIds and mintAddresses. */
  watched(def: D): Watched;
  /** The test webhook's body (sent before a create, an update or a reactivation); null: an empty body. */
  testWebhook(streamId: string, tag: string): Record<string, unknown> | null;
}

export interface Watched {
  chainIds: string[];
  allAddresses: boolean;
  topic0: string[] | null;
  /** Solana: programs whose invocation matches (empty for other families). */
  programIds: readonly string[];
  /** Solana: token mints whose pre/post balances match (empty for other families). */
  mintAddresses: readonly string[];
}

/** What a family without programs or mints watches beyond its chains: nothing. */
export const NO_SOLANA_SELECTORS = { programIds: [], mintAddresses: [] } as const satisfies Pick<Watched, 'programIds' | 'mintAddresses'>;
