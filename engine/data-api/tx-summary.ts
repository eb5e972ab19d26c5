import type { BlockRecord, Hex, InternalCall, StoredTx } from '../evm/record.js';
import { topicAddress, transferKeys, transfersOf, word, type Transfer } from '../evm/store.js';

/**
 * What a transaction item of the Data API needs, kept after the block record is
 * pruned (CHAINPOST_RETENTION_BLOCKS): the transaction and receipt fields the
 * item shows, its internal calls (the record keeps no call input or output) and
 * the approvals its logs made (the history's contract_interactions). Logs are
 * not kept: an item with logs reads them from the record, or from the node.
 * Quantities stay as the node's hex.
 */
export interface TxSummary {
  hash: Hex;
  blockNumber: number;
  blockHash: Hex;
  /** Unix seconds. */
  timestamp: number;
  index: number;
  nonce: Hex;
  from: Hex;
  to: Hex | null;
  value: Hex;
  gas: Hex;
  gasPrice: Hex;
  input: Hex;
  cumulativeGasUsed: Hex;
  gasUsed: Hex;
  contractAddress: Hex | null;
  root: Hex | null;
  /** 1, 0, or null before Byzantium (no status in the receipt). */
  status: number | null;
  internal: SummaryCall[];
  approvals: SummaryApproval[];
  /** Its ERC-20 and NFT transfers: their keys in the `transfers` table (by contract), in log order. */
  transfers: string[];
}

export type SummaryCall = Pick<InternalCall, 'type' | 'from' | 'to' | 'value' | 'gas' | 'gasUsed'>;

/** An ERC-20 Approval (value) or an ApprovalForAll (approved) the transaction's logs hold. */
export interface SummaryApproval {
  token: Hex;
  owner: Hex;
  spender: Hex;
  value?: Hex;
  approved?: boolean;
}

/** topic0 of Approval(address,address,uint256) and ApprovalForAll(address,address,bool). */
export const APPROVAL = '0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925';
export const APPROVAL_FOR_ALL = '0x17307eab39ab6107e8899845ad3d59bd9653f200f220920489ca2b5937696c31';

const lower = (a: unknown): Hex | null => (typeof a === 'string' ? a.toLowerCase() : null);
const hex = (v: unknown, fallback = '0x0'): Hex => (typeof v === 'string' ? v : fallback);

function approvalsOf(t: StoredTx): SummaryApproval[] {
  const out: SummaryApproval[] = [];
  for (const l of t.logs) {
    const [t0, t1, t2] = l.topics;
    // Three topics: ERC-20's Approval (ERC-721's has the token id as a fourth).
    if (t0 === APPROVAL && l.topics.length === 3 && l.data.length >= 66) out.push({ token: l.address.toLowerCase(), owner: topicAddress(t1), spender: topicAddress(t2), value: `0x${BigInt(word(l.data, 0)).toString(16)}` });
    if (t0 === APPROVAL_FOR_ALL && l.topics.length === 3 && l.data.length >= 66) out.push({ token: l.address.toLowerCase(), owner: topicAddress(t1), spender: topicAddress(t2), approved: BigInt(word(l.data, 0)) !== 0n });
  }
  return out;
}

/** The summaries of a block's transactions, in block order (`transfers`: the block's, when the caller has them). */
export function summarize(chain: string, r: BlockRecord, transfers: readonly Transfer[] = transfersOf(r)): TxSummary[] {
  const blockNumber = Number(r.header['number']);
  const blockHash = String(r.header['hash']).toLowerCase();
  const timestamp = Number(r.header['timestamp']);
  const calls: SummaryCall[][] = r.txs.map(() => []);
  for (const c of r.internal ?? []) calls[c.txIndex]?.push({ type: c.type, from: lower(c.from), to: lower(c.to), value: c.value, gas: c.gas, gasUsed: c.gasUsed });
  const keys: string[][] = r.txs.map(() => []);
  for (const t of transfers) keys[t.transactionIndex]?.push(transferKeys(chain, t).byContract);
  return r.txs.map((t, index): TxSummary => {
    const status = t.receipt['status'];
    return {
      hash: String(t.tx['hash']).toLowerCase(),
      blockNumber,
      blockHash,
      timestamp,
      index,
      nonce: hex(t.tx['nonce']),
      from: String(t.tx['from']).toLowerCase(),
      to: lower(t.tx['to']),
      value: hex(t.tx['value']),
      gas: hex(t.tx['gas']),
      // The price paid: a type-2 transaction's effective price is in its receipt.
      gasPrice: hex(t.receipt['effectiveGasPrice'] ?? t.tx['gasPrice']),
      input: hex(t.tx['input'], '0x'),
      cumulativeGasUsed: hex(t.receipt['cumulativeGasUsed']),
      gasUsed: hex(t.receipt['gasUsed']),
      contractAddress: lower(t.receipt['contractAddress']),
      root: lower(t.receipt['root']),
      status: typeof status === 'string' ? Number(status) : null,
      internal: calls[index]!,
      approvals: approvalsOf(t),
      transfers: keys[index]!,
    };
  });
}

/** Every address a transaction's ether moved between or called: sender, receiver, created contract, internal calls' parties. */
export function nativeParties(s: TxSummary): Set<Hex> {
  const out = new Set<Hex>([s.from]);
  if (s.to !== null) out.add(s.to);
  if (s.contractAddress !== null) out.add(s.contractAddress);
  for (const c of s.internal) {
    if (c.from !== null) out.add(c.from);
    if (c.to !== null) out.add(c.to);
  }
  return out;
}
