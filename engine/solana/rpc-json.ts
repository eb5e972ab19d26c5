/**
 * Solana's getBlock result in the `json` encoding (transactionDetails `full`,
 * maxSupportedTransactionVersion 0), as JSON.parse gives it: the node's shapes,
 * named as the RPC names them (solana.com/docs/rpc/json-structures). Keys,
 * hashes, signatures and instruction data are base58 text.
 */
export interface RpcBlock {
  blockhash: string;
  /** "11111111111111111111111111111111" when the parent block is no longer in the ledger. */
  previousBlockhash: string;
  parentSlot: number;
  blockHeight: number | null;
  /** Seconds since the epoch, as the validators estimated it. */
  blockTime: number | null;
  transactions: RpcBlockTransaction[];
  /** Left out of the request (rewards false). */
  rewards?: unknown[];
}

export interface RpcBlockTransaction {
  transaction: RpcTransaction;
  meta: RpcTransactionMeta | null;
  /** "legacy" or 0; absent when maxSupportedTransactionVersion was not given. */
  version?: 'legacy' | 0;
}

export interface RpcTransaction {
  /** The first is the transaction's id. */
  signatures: string[];
  message: RpcMessage;
}

export interface RpcMessage {
  /** The static keys; a v0 message's lookup-table keys follow them in meta.loadedAddresses. */
  accountKeys: string[];
  header: { numRequiredSignatures: number; numReadonlySignedAccounts: number; numReadonlyUnsignedAccounts: number };
  recentBlockhash: string;
  instructions: RpcInstruction[];
  /** v0 messages only. */
  addressTableLookups?: Array<{ accountKey: string; writableIndexes: number[]; readonlyIndexes: number[] }>;
}

/** Indexes into the transaction's keys: static, then loaded writable, then loaded readonly. */
export interface RpcInstruction {
  programIdIndex: number;
  accounts: number[];
  /** base58. */
  data: string;
  /** Inner instructions of recent nodes (1 is top level); null or absent before. */
  stackHeight?: number | null;
}

export interface RpcInnerInstructions {
  /** The top-level instruction that made these calls. */
  index: number;
  instructions: RpcInstruction[];
}

export interface RpcUiTokenAmount {
  /** Raw amount, decimal text. */
  amount: string;
  decimals: number;
  /** Deprecated by the node (a float); null for some zero amounts. */
  uiAmount: number | null;
  uiAmountString: string;
}

export interface RpcTokenBalance {
  /** Index of the token account in the transaction's keys. */
  accountIndex: number;
  mint: string;
  /** The token account's owner; absent on old ledger entries. */
  owner?: string;
  /** The token program; absent on old ledger entries. */
  programId?: string;
  uiTokenAmount: RpcUiTokenAmount;
}

export interface RpcLoadedAddresses {
  writable: string[];
  readonly: string[];
}

export interface RpcTransactionMeta {
  /** The error the transaction failed with, as the node writes it (e.g. {"InstructionError":[0,{"Custom":0}]}), or null. */
  err: unknown;
  /** Lamports. */
  fee: number;
  preBalances: number[];
  postBalances: number[];
  innerInstructions?: RpcInnerInstructions[] | null;
  preTokenBalances?: RpcTokenBalance[] | null;
  postTokenBalances?: RpcTokenBalance[] | null;
  logMessages?: string[] | null;
  rewards?: unknown[] | null;
  loadedAddresses?: RpcLoadedAddresses;
  computeUnitsConsumed?: number;
  status?: unknown;
}

/** A JSON-RPC error object. */
export interface RpcError {
  code: number;
  message: string;
}

/** What getBlock says of a slot the node skipped or no longer has (the follower moves past it). */
export const SLOT_SKIPPED = -32007;
export const SLOT_MISSING_IN_LONG_TERM_STORAGE = -32009;
/** What getBlock says of a slot not yet available at the asked commitment (the follower asks again). */
export const BLOCK_NOT_AVAILABLE = -32004;
