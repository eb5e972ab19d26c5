import type { BlockRecord, Hex, InternalCall, StoredTx } from '../../../evm/record.js';
import { topicAddress, transferKeyRef, transferRef, transfersOf, word, type Transfer, type TransferRef } from '../../../evm/store.js';

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
  /** Its ERC-20 and NFT transfers, in log order: read through transferOfSummary (engine/data-api/transactions/source.ts). */
  transfers: TransferRef[];
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
    if (t0 === APPROVAL && l.topics.length === 3 && l.data.length >= 66)
      out.push({
        token: l.address.toLowerCase(),
        owner: topicAddress(t1),
        spender: topicAddress(t2),
        value: `0x${BigInt(word(l.data, 0)).toString(16)}`,
      });
    if (t0 === APPROVAL_FOR_ALL && l.topics.length === 3 && l.data.length >= 66)
      out.push({
        token: l.address.toLowerCase(),
        owner: topicAddress(t1),
        spender: topicAddress(t2),
        approved: BigInt(word(l.data, 0)) !== 0n,
      });
  }
  return out;
}

/** The summaries of a block's transactions, in block order (`transfers`: the block's, when the caller has them). */
export function summarize(r: BlockRecord, transfers: readonly Transfer[] = transfersOf(r)): TxSummary[] {
  const blockNumber = Number(r.header['number']);
  const blockHash = String(r.header['hash']).toLowerCase();
  const timestamp = Number(r.header['timestamp']);
  const calls: SummaryCall[][] = r.txs.map(() => []);
  for (const c of r.internal ?? [])
    calls[c.txIndex]?.push({ type: c.type, from: lower(c.from), to: lower(c.to), value: c.value, gas: c.gas, gasUsed: c.gasUsed });
  const refs: TransferRef[][] = r.txs.map(() => []);
  for (const t of transfers) refs[t.transactionIndex]?.push(transferRef(t));
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
      transfers: refs[index]!,
    };
  });
}

/**
 * A summary as the `nativeTxs` row `s/chain/number/index` stores it: a tuple, without what the key says (block
 * number, index) or `canon` keeps (the block's hash). Quantities that are exactly a safe integer are numbers
 * (1 to 9 bytes, not 4 to 18 of text); internal calls, approvals and transfer references are tuples too. The
 * tail's empty lists and nulls are left out.
 */
export type SummaryRow = [
  hash: Hex,
  timestamp: number,
  nonce: StoredQuantity,
  from: Hex,
  to: Hex | null,
  value: StoredQuantity,
  gas: StoredQuantity,
  gasPrice: StoredQuantity,
  input: Hex,
  cumulativeGasUsed: StoredQuantity,
  gasUsed: StoredQuantity,
  status: number | null,
  transfers?: StoredRef[],
  internal?: StoredCall[],
  approvals?: StoredApproval[],
  contractAddress?: Hex | null,
  root?: Hex | null,
];
type StoredQuantity = number | Hex;
/** contract 0: the transaction's `to` (a token called directly, the common case: 1 byte, not 22). */
type StoredRef = readonly [contract: Hex | 0, logIndex: number, tokenId?: StoredQuantity, batchIndex?: number];
type StoredCall = [type: string, from: Hex | null, to: Hex | null, value: StoredQuantity, gas: StoredQuantity, gasUsed: StoredQuantity];
/** An Approval's value, or an ApprovalForAll's approved. */
type StoredApproval = [token: Hex, owner: Hex, spender: Hex, valueOrApproved: StoredQuantity | boolean];
/** What a store written before 2026-11-24 holds under `s/`: the summary itself, with its transfers' `transfers` keys. */
export type NamedSummaryRow = Omit<TxSummary, 'transfers'> & { transfers: string[] };

/** A canonical quantity below 2^52 (13 hex digits) is stored as its number; any other hex stays as it is, so it reads back the same. */
const SMALL_QUANTITY = /^0x(0|[1-9a-f][0-9a-f]{0,12})$/;
const packQuantity = (q: Hex): StoredQuantity => (SMALL_QUANTITY.test(q) ? parseInt(q, 16) : q);
const quantity = (v: StoredQuantity): Hex => (typeof v === 'number' ? `0x${v.toString(16)}` : v);

/** A transfer reference with its contract and token id (an NFT's) stored or read by `c` and `f`; as long as it was (no trailing undefined). */
function mapRef<C, D, A, B>(
  ref: readonly [C, number, A?, number?],
  c: (contract: C) => D,
  f: (id: A) => B,
): readonly [D, number, B?, number?] {
  const [contract, logIndex, tokenId, batchIndex] = ref;
  if (tokenId === undefined) return [c(contract), logIndex];
  return batchIndex === undefined ? [c(contract), logIndex, f(tokenId)] : [c(contract), logIndex, f(tokenId), batchIndex];
}

/** Where the row's tail (left out when empty) begins: `transfers`. */
const TAIL = 12;

export function summaryRow(s: TxSummary): SummaryRow {
  const row: SummaryRow = [
    s.hash,
    s.timestamp,
    packQuantity(s.nonce),
    s.from,
    s.to,
    packQuantity(s.value),
    packQuantity(s.gas),
    packQuantity(s.gasPrice),
    s.input,
    packQuantity(s.cumulativeGasUsed),
    packQuantity(s.gasUsed),
    s.status,
    s.transfers.map((r) => mapRef(r, (contract): Hex | 0 => (contract === s.to ? 0 : contract), packQuantity)),
    s.internal.map((c): StoredCall => [c.type, c.from, c.to, packQuantity(c.value), packQuantity(c.gas), packQuantity(c.gasUsed)]),
    s.approvals.map((a): StoredApproval => [a.token, a.owner, a.spender, a.approved ?? packQuantity(a.value!)]),
    s.contractAddress,
    s.root,
  ];
  let end = row.length;
  const empty = (v: unknown): boolean => v === null || (Array.isArray(v) && v.length === 0);
  while (end > TAIL && empty(row[end - 1])) end--;
  row.length = end;
  return row;
}

/**
 * The summary a `nativeTxs` row holds, in either form (a tuple, or the named summary older code wrote), at
 * `block` and `index` (the row's key); `blockHash` gives the block's hash (`canon`'s), asked only of a tuple.
 */
export function decodeSummary(row: SummaryRow | NamedSummaryRow, block: number, index: number, blockHash: () => Hex): TxSummary {
  if (!Array.isArray(row)) return { ...row, transfers: row.transfers.map(transferKeyRef) };
  const [
    hash,
    timestamp,
    nonce,
    from,
    to,
    value,
    gas,
    gasPrice,
    input,
    cumulativeGasUsed,
    gasUsed,
    status,
    transfers = [],
    internal = [],
    approvals = [],
    contractAddress = null,
    root = null,
  ] = row;
  return {
    hash,
    blockNumber: block,
    blockHash: blockHash(),
    timestamp,
    index,
    nonce: quantity(nonce),
    from,
    to,
    value: quantity(value),
    gas: quantity(gas),
    gasPrice: quantity(gasPrice),
    input,
    cumulativeGasUsed: quantity(cumulativeGasUsed),
    gasUsed: quantity(gasUsed),
    contractAddress,
    root,
    status,
    internal: internal.map(([type, from, to, value, gas, gasUsed]) => ({
      type,
      from,
      to,
      value: quantity(value),
      gas: quantity(gas),
      gasUsed: quantity(gasUsed),
    })),
    approvals: approvals.map(([token, owner, spender, v]) =>
      typeof v === 'boolean' ? { token, owner, spender, approved: v } : { token, owner, spender, value: quantity(v) },
    ),
    transfers: transfers.map((r) => mapRef(r, (contract) => (contract === 0 ? to! : contract), quantity)),
  };
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
