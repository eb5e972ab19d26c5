/**
 * The Stream (EVM) resource: the interface's field table, plus what the service
 * keeps beside it (tenant, delivery counters, error time).
 */
export type StreamStatus = 'active' | 'paused' | 'error' | 'terminated';

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
export interface StreamDefinition {
  webhookUrl: string;
  description: string;
  tag: string;
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
  demo: boolean;
  triggers: Trigger[] | null;
}

export interface StreamRecord extends StreamDefinition {
  id: string;
  tenantId: string;
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

/** The stream as the API answers it: every request field plus id, status, statusMessage, updatedAt, amountOfAddresses. */
export function streamResponse(s: StreamRecord): Record<string, unknown> {
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
    statusMessage: s.statusMessage,
    updatedAt: new Date(s.updatedAt).toISOString(),
    amountOfAddresses: s.amountOfAddresses,
  };
}
