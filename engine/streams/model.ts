import { findChain, type ChainFamily } from '../chains/registry.js';
import { chainRemoval, removalMessage } from '../chains/removals.js';

/**
 * Streams of every chain family share one `streams` table: the delivery engine,
 * history, replay and stats read only the shared part (StoredStream). The
 * Stream (EVM) resource below is the interface's field table; Bitcoin's is in
 * engine/bitcoin/stream.ts, Solana's in engine/solana/stream.ts.
 */
export type StreamStatus = 'active' | 'paused' | 'error' | 'terminated';

/** The chain family a stream follows; a record without `family` is EVM (stores written before Bitcoin streams). */
export type FamilyName = Extract<ChainFamily, 'evm' | 'bitcoin' | 'solana'>;

/** The request fields every family has. */
export interface StreamCommon {
  webhookUrl: string;
  description: string;
  tag: string;
  demo: boolean;
}

/** What the service keeps beside a definition: tenant, state, counts, error time. */
export interface StreamState {
  id: string;
  tenantId: string;
  /** Absent for EVM. */
  family?: FamilyName;
  status: StreamStatus;
  statusMessage: string;
  createdAt: number;
  updatedAt: number;
  amountOfAddresses: number;
  /** When the stream last entered error (for error → terminated after 24 h). */
  errorSince?: number;
  /** Where alerts go: the creating key's e-mail, if it has one. */
  ownerEmail?: string;
}

/**
 * Whether a stored stream is of `family`: marked with its name, or marked with none when `family` is the one family
 * whose records are unmarked (`unmarked`: its stream family says so, engine/streams/family.ts).
 */
export const ofFamily = (s: { family?: FamilyName }, family: FamilyName, unmarked: boolean): boolean =>
  s.family === undefined ? unmarked : s.family === family;

/** A stream record of any family, as delivery, history and stats read it. */
export type StoredStream = StreamCommon & StreamState;

/** When a stream in error entered it (ISO 8601), null in any other state: the Bitcoin and Solana objects' isErrorSince. */
export const isErrorSince = (s: Pick<StreamState, 'status' | 'errorSince'>): string | null =>
  s.status === 'error' && s.errorSince !== undefined ? new Date(s.errorSince).toISOString() : null;

export interface NativeBalanceSelector {
  selectors: string[];
  type: string;
}

export interface Trigger {
  type: string;
  contractAddress: string;
  functionAbi: Record<string, unknown>;
  inputs?: string[];
  topic0?: string;
  callFrom?: string;
}

/** The request fields of the Stream (EVM) table. */
export interface StreamDefinition extends StreamCommon {
  chainIds: string[];
  topic0: string[] | null;
  allAddresses: boolean;
  includeNativeTxs: boolean;
  includeContractLogs: boolean;
  includeInternalTxs: boolean;
  includeAllTxLogs: boolean;
  getNativeBalances: NativeBalanceSelector[];
  abi: Array<Record<string, unknown>> | null;
  advancedOptions: Array<Record<string, unknown>> | null;
  filterPossibleSpamAddresses: boolean;
  triggers: Trigger[] | null;
}

/** An EVM stream as stored. */
export type StreamRecord = StreamDefinition & StreamState;

/**
 * Why a stream is invalid at `now`: a chain it lists was removed from streams
 * (0x504, 0x505 and 0x46f from 2026-09-25). It stays so until the stream is
 * updated (an update must drop the chain) or deleted.
 */
function invalidChains(s: Pick<StreamRecord, 'chainIds'>, now: number): string | undefined {
  const gone = s.chainIds.flatMap((id) => {
    const chain = findChain(id);
    const removal = chain === undefined ? undefined : chainRemoval(chain, 'streams', now);
    return removal === undefined ? [] : [removalMessage(chain!, removal)];
  });
  return gone.length === 0
    ? undefined
    : `Stream invalid: ${gone.join('; ')}. It emits nothing for that chain; update its chainIds or delete it.`;
}

/**
 * Why a definition can never produce a webhook, whatever addresses it is given
 * (the webhook builder's rules, engine/evm/webhook-builder.ts): a webhook
 * needs a transaction (includeNativeTxs: from, to or creating a watched
 * address), an internal transaction (includeInternalTxs: moving value from or
 * to one), or a log (includeContractLogs: emitted by a watched address or
 * naming one in an indexed address parameter; allAddresses: any log of a
 * listed topic0, which needs abi and topic0). A topic0 list keeps only the
 * listed events that decode with the stream's abi, so with includeContractLogs
 * it needs an abi. includeAllTxLogs, getNativeBalances, triggers and
 * advancedOptions only add to or filter what those found. undefined when the
 * stream can match.
 */
export function matchesNothing(
  d: Pick<StreamDefinition, 'includeNativeTxs' | 'includeInternalTxs' | 'includeContractLogs' | 'allAddresses' | 'topic0' | 'abi'>,
): string | undefined {
  if (d.includeNativeTxs || d.includeInternalTxs || d.allAddresses) return undefined;
  const topics = d.topic0 !== null && d.topic0.length > 0;
  if (d.includeContractLogs) {
    if (!topics || d.abi !== null) return undefined;
    return "Stream matches nothing: topic0 keeps only the logs that decode with the stream's abi, and the stream has no abi. Set abi (with the events topic0 lists), or includeNativeTxs or includeInternalTxs.";
  }
  const why = topics ? 'topic0 is set but no log is included (includeContractLogs and allAddresses are false)' : 'no include option is set';
  return `Stream matches nothing: ${why}. Set includeNativeTxs, includeInternalTxs or includeContractLogs (for the stream's addresses), or allAddresses with abi and topic0 (every log of those events).`;
}

/** The stream as the API answers it at service time `now`: every request field plus id, status, statusMessage, updatedAt, amountOfAddresses. */
export function streamResponse(s: StreamRecord, now: number): Record<string, unknown> {
  return {
    id: s.id,
    webhookUrl: s.webhookUrl,
    description: s.description,
    tag: s.tag,
    chainIds: s.chainIds,
    topic0: s.topic0,
    allAddresses: s.allAddresses,
    includeNativeTxs: s.includeNativeTxs,
    includeContractLogs: s.includeContractLogs,
    includeInternalTxs: s.includeInternalTxs,
    includeAllTxLogs: s.includeAllTxLogs,
    // In responses each selector also has its type (the interface shows `tx`).
    getNativeBalances: s.getNativeBalances.map((g) => ({ selectors: g.selectors, type: g.type })),
    abi: s.abi,
    advancedOptions: s.advancedOptions,
    filterPossibleSpamAddresses: s.filterPossibleSpamAddresses,
    demo: s.demo,
    triggers: s.triggers,
    status: s.status,
    statusMessage:
      s.status === 'error' || s.status === 'terminated'
        ? s.statusMessage
        : [invalidChains(s, now), matchesNothing(s)].filter((m) => m !== undefined).join(' ') || s.statusMessage,
    updatedAt: new Date(s.updatedAt).toISOString(),
    amountOfAddresses: s.amountOfAddresses,
  };
}
