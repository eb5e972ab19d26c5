import { z } from 'zod';
import { dec } from '../common/values.js';
import { offChain, partiesAnswer } from '../common/answer-parts.js';
import { unixIso as iso } from '../../datetime.js';
import { formatEther } from 'viem/utils';
import type { StoredLog } from '../../evm/record.js';
import { decodeCall, decodeLog } from './decode.js';
import type { SummaryCall, TxSummary } from './index/summary.js';

/**
 * The one renderer of a transaction item (the OpenAPI's `blockTransaction`,
 * `transaction` and `blockTransactionVerbose`; the wallet history adds its
 * fields to it): every transaction endpoint answers through `txItem`.
 * Off-chain fields (entities, labels, logos) are null.
 */

/** `internalItem`: the call tree keeps no input or output. */
export const internalTxAnswer = z.object({
  transaction_hash: z.string(),
  block_number: z.string(),
  block_hash: z.string(),
  type: z.string(),
  from: z.string().nullable(),
  to: z.string().nullable(),
  value: z.string(),
  gas: z.string(),
  gas_used: z.string(),
  input: offChain.meta({ description: 'Not kept by the call tree: null' }),
  output: offChain.meta({ description: 'Not kept by the call tree: null' }),
});

/** decode.ts's `Decoded`: for the standard token ABIs only, null otherwise. */
const decodedAnswer = z
  .object({
    signature: z.string(),
    label: z.string(),
    type: z.enum(['event', 'function']),
    params: z.array(z.object({ name: z.string(), value: z.string(), type: z.string() })),
  })
  .nullable()
  .meta({ description: 'Decoded by the standard ERC-20, ERC-721 and ERC-1155 ABIs; null for anything else' });

const logAnswer = z.object({
  log_index: z.string(),
  transaction_hash: z.string(),
  transaction_index: z.string(),
  address: z.string(),
  data: z.string(),
  topic0: z.string().nullable(),
  topic1: z.string().nullable(),
  topic2: z.string().nullable(),
  topic3: z.string().nullable(),
  block_timestamp: z.string(),
  block_number: z.string(),
  block_hash: z.string(),
});

/** `txItem` without logs: the wallet's list and history items (`internal_transactions` with include=internal_transactions). */
export const txAnswer = z.object({
  hash: z.string(),
  nonce: z.string(),
  transaction_index: z.string(),
  ...partiesAnswer,
  to_address: z.string().nullable().meta({ description: 'null for a contract creation' }),
  value: z.string(),
  gas: z.string(),
  gas_price: z.string(),
  input: z.string(),
  receipt_cumulative_gas_used: z.string(),
  receipt_gas_used: z.string(),
  receipt_contract_address: z.string().nullable(),
  receipt_root: z.string().nullable(),
  receipt_status: z.string().nullable().meta({ description: '1 or 0; null before Byzantium (no status in the receipt)' }),
  transaction_fee: z.string(),
  block_timestamp: z.string(),
  block_number: z.string(),
  block_hash: z.string(),
  internal_transactions: z.array(internalTxAnswer).optional(),
});
/** With its logs (GET /transaction/:transaction_hash, a block's transactions). */
export const txWithLogsAnswer = txAnswer.extend({ logs: z.array(logAnswer) });
/** Verbose: its logs with decoded_event, and decoded_call (the /verbose endpoints). */
export const txVerboseAnswer = txAnswer.extend({
  logs: z.array(logAnswer.extend({ decoded_event: decodedAnswer })),
  decoded_call: decodedAnswer,
});

export interface ItemOptions {
  /** The transaction's logs, when the item shows them (undefined: no `logs` field). */
  logs?: readonly StoredLog[];
  /** include=internal_transactions. */
  internal: boolean;
  /** Logs with decoded_event, and decoded_call. */
  verbose?: boolean;
}

/** An internal call of the transaction. The stored call tree keeps no input or output: null. */
export function internalItem(s: TxSummary, c: SummaryCall) {
  return {
    transaction_hash: s.hash,
    block_number: String(s.blockNumber),
    block_hash: s.blockHash,
    type: c.type,
    from: c.from,
    to: c.to,
    value: dec(c.value),
    gas: dec(c.gas),
    gas_used: dec(c.gasUsed),
    input: null,
    output: null,
  };
}

function logItem(s: TxSummary, l: StoredLog, verbose: boolean) {
  const item = {
    log_index: String(Number(l.logIndex)),
    transaction_hash: s.hash,
    transaction_index: String(s.index),
    address: l.address.toLowerCase(),
    data: l.data,
    topic0: l.topics[0] ?? null,
    topic1: l.topics[1] ?? null,
    topic2: l.topics[2] ?? null,
    topic3: l.topics[3] ?? null,
    block_timestamp: iso(s.timestamp),
    block_number: String(s.blockNumber),
    block_hash: s.blockHash,
  };
  return verbose ? { ...item, decoded_event: decodeLog(l) } : item;
}

/** What a transaction paid, in wei: gas used × the gas price it paid. */
export const feeWei = (s: Pick<TxSummary, 'gasUsed' | 'gasPrice'>): bigint => BigInt(s.gasUsed) * BigInt(s.gasPrice);

export function txItem(s: TxSummary, opts: ItemOptions) {
  const fee = feeWei(s);
  return {
    hash: s.hash,
    nonce: dec(s.nonce),
    transaction_index: String(s.index),
    from_address_entity: null,
    from_address_entity_logo: null,
    from_address: s.from,
    from_address_label: null,
    to_address_entity: null,
    to_address_entity_logo: null,
    to_address: s.to,
    to_address_label: null,
    value: dec(s.value),
    gas: dec(s.gas),
    gas_price: dec(s.gasPrice),
    input: s.input,
    receipt_cumulative_gas_used: dec(s.cumulativeGasUsed),
    receipt_gas_used: dec(s.gasUsed),
    receipt_contract_address: s.contractAddress,
    receipt_root: s.root,
    receipt_status: s.status === null ? null : String(s.status),
    transaction_fee: formatEther(fee),
    block_timestamp: iso(s.timestamp),
    block_number: String(s.blockNumber),
    block_hash: s.blockHash,
    ...(opts.logs === undefined ? {} : { logs: opts.logs.map((l) => logItem(s, l, opts.verbose === true)) }),
    ...(opts.verbose === true ? { decoded_call: decodeCall(s.input) } : {}),
    ...(opts.internal ? { internal_transactions: s.internal.map((c) => internalItem(s, c)) } : {}),
  };
}
