import type { SolRecordView } from './record.js';
import type { RpcTokenBalance } from './rpc-json.js';
import type { SolInstruction, SolTransaction } from './scan.js';

/**
 * The webhook body of a Solana stream, in the shape of the hosted service's
 * OpenAPI schema (SolanaWebhook; notes §2.4): slot numbers, blockHeight and fee
 * as strings, blockTime a number; instructions name their program and accounts
 * by address, not by index into the keys.
 *
 * Choices where the schema says nothing (it leaves these untyped):
 * - innerInstructions are resolved as top-level instructions are, [{index, instructions: [{programId, accounts,
 *   data, stackHeight}]}]: index names the top-level instruction that made the calls, as in the node's answer;
 *   indexes into accountKeys would make a receiver do the lookup-table ordering itself, which the body otherwise
 *   spares it; stackHeight (the call depth, null on slots before nodes reported it) is what rebuilds the call tree
 *   from the flat list. null when the node gives null.
 * - pre/postTokenBalances are the node's objects as it gives them ({accountIndex, mint, owner, programId,
 *   uiTokenAmount{amount, decimals, uiAmount, uiAmountString}}; accountIndex into accountKeys); null when the node gives null.
 * - err is the node's value (e.g. {"InstructionError":[0,{"Custom":1}]}), null for a success.
 */
export interface SolBodyBlock {
  slot: string;
  blockHash: string;
  /** null when the node gives none (slots before block heights were kept). */
  blockHeight: string | null;
  blockTime: number | null;
  parentSlot: string;
  previousBlockHash: string;
}

export interface SolBodyInstruction {
  programId: string;
  accounts: string[];
  /** base58, as the node gives it. */
  data: string;
}

export interface SolBodyInnerInstruction extends SolBodyInstruction {
  stackHeight: number | null;
}

export interface SolBodyTransaction {
  signature: string;
  slot: string;
  blockTime: number | null;
  /** Lamports. */
  fee: string;
  err: unknown;
  /** Static keys, then those loaded from lookup tables (writable, then readonly). */
  accountKeys: string[];
  instructions: SolBodyInstruction[];
  innerInstructions: Array<{ index: number; instructions: SolBodyInnerInstruction[] }> | null;
  preTokenBalances: RpcTokenBalance[] | null;
  postTokenBalances: RpcTokenBalance[] | null;
}

export interface SolanaBody {
  confirmed: boolean;
  chainId: 'solana_mainnet';
  network: 'mainnet';
  streamId: string;
  tag: string;
  retries: number;
  block: SolBodyBlock;
  transactions: SolBodyTransaction[];
}

export interface SolBodyOptions {
  streamId: string;
  tag: string;
  confirmed: boolean;
  /** The transactions to send, in block order. */
  txIndexes: readonly number[];
}

function instructionOf(t: SolTransaction, ix: SolInstruction): SolBodyInstruction {
  const key = (i: number): string => {
    const k = t.accountKeys[i];
    if (k === undefined) throw new RangeError(`transaction ${t.signature}: account index ${i} is past its ${t.accountKeys.length} keys`);
    return k;
  };
  return { programId: key(ix.programIdIndex), accounts: ix.accounts.map(key), data: ix.data };
}

/** A transaction as bodies (and the /v1 Solana DTOs) show it: keys by address, err parsed. */
export function solanaTx(t: SolTransaction, slot: string, blockTime: number | null): SolBodyTransaction {
  return {
    signature: t.signature,
    slot,
    blockTime,
    fee: String(t.fee),
    err: t.err === null ? null : (JSON.parse(t.err) as unknown),
    accountKeys: t.accountKeys,
    instructions: t.instructions.map((ix) => instructionOf(t, ix)),
    innerInstructions:
      t.innerInstructions?.map((g) => ({
        index: g.index,
        instructions: g.instructions.map((ix) => ({ ...instructionOf(t, ix), stackHeight: ix.stackHeight })),
      })) ?? null,
    preTokenBalances: t.preTokenBalances,
    postTokenBalances: t.postTokenBalances,
  };
}

/** The body of a slot delivery: the transactions at `txIndexes`, decoded from the record alone. */
export function solanaBody(view: SolRecordView, o: SolBodyOptions): SolanaBody {
  const h = view.header;
  const slot = String(h.slot);
  return {
    confirmed: o.confirmed,
    chainId: 'solana_mainnet',
    network: 'mainnet',
    streamId: o.streamId,
    tag: o.tag,
    retries: 0,
    block: {
      slot,
      blockHash: h.blockhash,
      blockHeight: h.blockHeight === null ? null : String(h.blockHeight),
      blockTime: h.blockTime,
      parentSlot: String(h.parentSlot),
      previousBlockHash: h.previousBlockhash,
    },
    transactions: o.txIndexes.map((i) => solanaTx(view.tx(i), slot, h.blockTime)),
  };
}
