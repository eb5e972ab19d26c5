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
  /** What the watchlist matches on: the store's chain keys, allAddresses, and the family's own keys. */
  watched(def: D): Watched;
  /** Records of this family are stored without `family` (EVM's: stored before other families existed). */
  unmarked?: true;
  /** The test webhook's body (sent before a create, an update or a reactivation); null: an empty body. */
  testWebhook(streamId: string, tag: string): Record<string, unknown> | null;
}

export interface Watched {
  chainIds: string[];
  allAddresses: boolean;
  /** The family's own keys beyond addresses, by name, in the form its compile reads (EVM: topic0 hashes). */
  keys: Readonly<Record<string, readonly string[]>>;
}
