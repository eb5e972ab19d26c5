import { ZERO_ADDRESS as ZERO, dec } from '../common/values.js';
import { metadata } from '../common/node-reads.js';
import { collectionKey, type Collection } from '../nft/index/writer.js';
import { formatEther, formatUnits } from 'viem/utils';
import { z } from 'zod';
import type { Chain } from '../../chains/registry.js';
import type { TokenInfo } from '../../evm/token-metadata.js';
import type { DataDeps } from '../common/deps.js';
import { blockRange, bool, cursor, evmAddress, limit, order } from '../common/params.js';
import { activityKey, type Activity, type Moment, type StoredMoment } from './index/writer.js';
import { txAnswer, txItem } from './item.js';
import { offChain, pageAnswer, partiesAnswer } from '../common/answer-parts.js';
import { unixIso as iso } from '../../datetime.js';
import { caughtUp, summaryAt, transferOfSummary, type SummaryTransfer } from './source.js';
import type { SummaryApproval, TxSummary } from './index/summary.js';
import { addressPage } from './txs.js';

/**
 * The wallet endpoints of native activity: GET /wallets/:address/history (each transaction the wallet took
 * part in, with its category, summary and transfers), /wallets/:address/chains (first and last activity per
 * chain) and /wallets/:address/stats (counters kept by the index).
 */

export const historyQuery = z.object({
  address: evmAddress,
  ...blockRange,
  include_internal_transactions: bool(false),
  nft_metadata: bool(false),
  cursor,
  order,
  limit: limit(),
});
export const walletQuery = z.object({ address: evmAddress });
/** GET /wallets/:address/chains: `chains` is a list of chains (hex, decimal or name), read by the route (it knows which are followed). */
export const walletChainsQuery = walletQuery.extend({ chains: z.array(z.string()).optional() });

const directionAnswer = z.enum(['incoming', 'outgoing']);

const nativeTransferAnswer = z.object({
  ...partiesAnswer,
  from_address: z.string().nullable(),
  to_address: z.string().nullable(),
  value: z.string(),
  value_formatted: z.string(),
  direction: directionAnswer,
  internal_transaction: z.boolean(),
  token_symbol: z.string(),
  token_logo: offChain,
});

const erc20TransferAnswer = z.object({
  token_name: z.string(),
  token_symbol: z.string(),
  token_logo: offChain,
  token_decimals: z.string(),
  address: z.string(),
  block_timestamp: z.string(),
  ...partiesAnswer,
  value: z.string(),
  value_formatted: z.string(),
  direction: directionAnswer,
  transaction_index: z.int(),
  log_index: z.int(),
  possible_spam: z.boolean(),
  verified_contract: z.boolean(),
});

const nftTransferAnswer = z.object({
  token_address: z.string(),
  token_id: z.string(),
  ...partiesAnswer,
  value: z.string().meta({ description: "The transaction's value (wei)" }),
  amount: z.string(),
  contract_type: z.enum(['ERC721', 'ERC1155']),
  transaction_type: z.enum(['Single', 'Batch']),
  log_index: z.int(),
  operator: z.string().nullable(),
  possible_spam: z.boolean(),
  verified_collection: z.boolean(),
  verified: z.boolean().meta({ description: 'As verified_collection (the hosted item requires both): false, no verified list here' }),
  direction: directionAnswer,
  collection_logo: offChain,
  collection_banner_image: offChain,
  normalized_metadata: z.null().meta({ description: 'Not read here: null' }),
});

const interactionToken = z.object({
  address: z.string(),
  address_label: offChain,
  token_name: z.string(),
  token_logo: offChain,
  token_symbol: z.string(),
});
const interactionSpender = z.object({
  address: z.string(),
  address_label: offChain,
  name: offChain,
  symbol: offChain,
  logo: offChain,
  entity: offChain,
  entity_logo: offChain,
});
const approvalRow = z.object({
  value: z.string(),
  value_formatted: z.string().nullable().meta({ description: 'null for a token without decimals()' }),
  token: interactionToken,
  spender: interactionSpender,
});
const approvalAllRow = z.object({ token: interactionToken, operator: interactionSpender });

/** A wallet history item (GET /wallets/:address/history), `historyItem`. */
const historyItemAnswer = txAnswer.extend({
  category: z.enum([
    'mint',
    'burn',
    'nft purchase',
    'nft sale',
    'nft receive',
    'nft send',
    'token swap',
    'token receive',
    'token send',
    'send',
    'receive',
    'contract interaction',
  ]),
  contract_interactions: z
    .object({
      approvals: z.array(approvalRow).optional(),
      revokes: z.array(approvalRow).optional(),
      set_approvals_all: z.array(approvalAllRow).optional(),
      set_revokes_all: z.array(approvalAllRow).optional(),
    })
    .nullable()
    .meta({ description: "The wallet's approvals in the transaction, by kind; null when it made none" }),
  possible_spam: z.boolean(),
  method_label: offChain,
  summary: z.string(),
  nft_transfers: z.array(nftTransferAnswer),
  erc20_transfers: z.array(erc20TransferAnswer),
  native_transfers: z.array(nativeTransferAnswer),
});
export const walletHistoryAnswer = pageAnswer(historyItemAnswer);

const momentAnswer = z.object({
  block_number: z.string(),
  block_timestamp: z.string(),
  transaction_hash: z.string().nullable(),
});
export const walletChainsAnswer = z.object({
  address: z.string(),
  active_chains: z.array(
    z.object({ chain: z.string(), chain_id: z.string(), first_transaction: momentAnswer, last_transaction: momentAnswer }),
  ),
});

const total = z.object({ total: z.string() });
export const walletStatsAnswer = z.object({
  nfts: z.string(),
  collections: z.string(),
  transactions: total,
  nft_transfers: total,
  token_transfers: total,
});

const short = (a: string | null): string => (a === null ? 'a new contract' : `${a.slice(0, 6)}…${a.slice(-4)}`);

/** An ERC-20 or NFT transfer of the transaction, read through its summary's reference, with its log index. */
interface TokenMove {
  t: SummaryTransfer;
  logIndex: number;
}

function movesOf(deps: DataDeps, chain: string, s: TxSummary, wallet: string): TokenMove[] {
  const out: TokenMove[] = [];
  for (const ref of s.transfers) {
    const t = transferOfSummary(deps.kv, chain, s.blockNumber, ref);
    if (t === undefined || (t.from.toLowerCase() !== wallet && t.to.toLowerCase() !== wallet)) continue;
    out.push({ t, logIndex: ref[1] });
  }
  return out;
}

const direction = (from: string | null, wallet: string): 'outgoing' | 'incoming' =>
  from?.toLowerCase() === wallet ? 'outgoing' : 'incoming';

/** The ether the wallet sent or received in the transaction: its value, then internal calls that moved value. */
function nativeTransfers(s: TxSummary, wallet: string, symbol: string) {
  const moves = [
    ...(BigInt(s.value) > 0n ? [{ from: s.from, to: s.to, value: s.value, internal: false }] : []),
    ...s.internal.filter((c) => BigInt(c.value) > 0n).map((c) => ({ from: c.from, to: c.to, value: c.value, internal: true })),
  ].filter((m) => m.from === wallet || m.to === wallet);
  return moves.map((m) => ({
    from_address_entity: null,
    from_address_entity_logo: null,
    from_address: m.from,
    from_address_label: null,
    to_address_entity: null,
    to_address_entity_logo: null,
    to_address: m.to,
    to_address_label: null,
    value: dec(m.value),
    value_formatted: formatEther(BigInt(m.value)),
    direction: direction(m.from, wallet),
    internal_transaction: m.internal,
    token_symbol: symbol,
    token_logo: null,
  }));
}

export type Meta = (contract: string) => Promise<TokenInfo>;

async function erc20Item(m: TokenMove, s: TxSummary, wallet: string, meta: Meta) {
  const info = await meta(m.t.contract);
  return {
    token_name: info.name,
    token_symbol: info.symbol,
    token_logo: null,
    token_decimals: String(info.decimals ?? 0),
    address: m.t.contract.toLowerCase(),
    block_timestamp: iso(s.timestamp),
    to_address_entity: null,
    to_address_entity_logo: null,
    to_address: m.t.to.toLowerCase(),
    to_address_label: null,
    from_address_entity: null,
    from_address_entity_logo: null,
    from_address: m.t.from.toLowerCase(),
    from_address_label: null,
    value: dec(m.t.value),
    value_formatted: formatUnits(BigInt(m.t.value), info.decimals ?? 0),
    direction: direction(m.t.from, wallet),
    transaction_index: s.index,
    log_index: m.logIndex,
    possible_spam: info.possibleSpam,
    verified_contract: false,
  };
}

async function nftItem(m: TokenMove, s: TxSummary, wallet: string, meta: Meta) {
  const info = await meta(m.t.contract);
  return {
    token_address: m.t.contract.toLowerCase(),
    token_id: dec(m.t.tokenId!),
    from_address_entity: null,
    from_address_entity_logo: null,
    from_address: m.t.from.toLowerCase(),
    from_address_label: null,
    to_address_entity: null,
    to_address_entity_logo: null,
    to_address: m.t.to.toLowerCase(),
    to_address_label: null,
    value: dec(s.value),
    amount: dec(m.t.value),
    contract_type: m.t.kind === 'erc721' ? 'ERC721' : 'ERC1155',
    transaction_type: m.t.batchIndex === undefined ? 'Single' : 'Batch',
    log_index: m.logIndex,
    operator: m.t.operator?.toLowerCase() ?? null,
    possible_spam: info.possibleSpam,
    verified_collection: false,
    verified: false,
    direction: direction(m.t.from, wallet),
    collection_logo: null,
    collection_banner_image: null,
    // Metadata is the NFT part's (nft_metadata=true): none here yet.
    normalized_metadata: null,
  };
}

async function interactions(approvals: SummaryApproval[], wallet: string, meta: Meta) {
  const mine = approvals.filter((a) => a.owner === wallet);
  if (mine.length === 0) return null;
  const out: Record<string, unknown[]> = {};
  for (const a of mine) {
    const info = await meta(a.token);
    const token = { address: a.token, address_label: null, token_name: info.name, token_logo: null, token_symbol: info.symbol };
    const spender = { address: a.spender, address_label: null, name: null, symbol: null, logo: null, entity: null, entity_logo: null };
    const [list, row] =
      a.approved === undefined
        ? [
            BigInt(a.value!) === 0n ? 'revokes' : 'approvals',
            {
              value: dec(a.value!),
              value_formatted: info.decimals === null ? null : formatUnits(BigInt(a.value!), info.decimals),
              token,
              spender,
            },
          ]
        : [a.approved ? 'set_approvals_all' : 'set_revokes_all', { token, operator: spender }];
    (out[list] ??= []).push(row);
  }
  return out;
}

/**
 * The transaction's category for the wallet (the OpenAPI's ETransactionCategory) and a one-line summary:
 * NFTs first (mint, burn, purchase, sale, send, receive), then tokens (mint, burn, swap, send, receive), then
 * ether (send, receive), else a contract interaction (approvals included: the enumeration has no approve).
 */
export function categorize(
  s: TxSummary,
  wallet: string,
  moves: TokenMove[],
  natives: Array<{ direction: string; value_formatted: string }>,
  symbols: Map<string, string>,
  native: string,
): { category: string; summary: string } {
  const nfts = moves.filter((m) => m.t.kind !== 'erc20');
  const tokens = moves.filter((m) => m.t.kind === 'erc20');
  const gotNft = nfts.filter((m) => m.t.to.toLowerCase() === wallet);
  const sentNft = nfts.filter((m) => m.t.from.toLowerCase() === wallet);
  const paid = natives.some((n) => n.direction === 'outgoing') || tokens.some((m) => m.t.from.toLowerCase() === wallet);
  const earned = natives.some((n) => n.direction === 'incoming') || tokens.some((m) => m.t.to.toLowerCase() === wallet);
  const sym = (m: TokenMove): string => symbols.get(m.t.contract.toLowerCase()) ?? 'tokens';
  if (gotNft.length > 0 && gotNft.every((m) => m.t.from === ZERO))
    return { category: 'mint', summary: `Minted ${gotNft.length} NFT${gotNft.length > 1 ? 's' : ''}` };
  if (sentNft.length > 0 && sentNft.every((m) => m.t.to === ZERO))
    return { category: 'burn', summary: `Burned ${sentNft.length} NFT${sentNft.length > 1 ? 's' : ''}` };
  if (gotNft.length > 0 && paid) return { category: 'nft purchase', summary: `Bought ${gotNft.length} NFT${gotNft.length > 1 ? 's' : ''}` };
  if (sentNft.length > 0 && earned) return { category: 'nft sale', summary: `Sold ${sentNft.length} NFT${sentNft.length > 1 ? 's' : ''}` };
  if (gotNft.length > 0)
    return {
      category: 'nft receive',
      summary: `Received ${gotNft.length} NFT${gotNft.length > 1 ? 's' : ''} from ${short(gotNft[0]!.t.from.toLowerCase())}`,
    };
  if (sentNft.length > 0)
    return {
      category: 'nft send',
      summary: `Sent ${sentNft.length} NFT${sentNft.length > 1 ? 's' : ''} to ${short(sentNft[0]!.t.to.toLowerCase())}`,
    };
  const got = tokens.filter((m) => m.t.to.toLowerCase() === wallet && m.t.from.toLowerCase() !== wallet);
  const sent = tokens.filter((m) => m.t.from.toLowerCase() === wallet && m.t.to.toLowerCase() !== wallet);
  if (got.length > 0 && sent.length > 0) return { category: 'token swap', summary: `Swapped ${sym(sent[0]!)} for ${sym(got[0]!)}` };
  if (got.length > 0 && got.every((m) => m.t.from === ZERO)) return { category: 'mint', summary: `Minted ${sym(got[0]!)}` };
  if (sent.length > 0 && sent.every((m) => m.t.to === ZERO)) return { category: 'burn', summary: `Burned ${sym(sent[0]!)}` };
  if (got.length > 0) return { category: 'token receive', summary: `Received ${sym(got[0]!)} from ${short(got[0]!.t.from.toLowerCase())}` };
  if (sent.length > 0) return { category: 'token send', summary: `Sent ${sym(sent[0]!)} to ${short(sent[0]!.t.to.toLowerCase())}` };
  const out = natives.find((n) => n.direction === 'outgoing');
  const inn = natives.find((n) => n.direction === 'incoming');
  if (s.approvals.some((a) => a.owner === wallet))
    return { category: 'contract interaction', summary: `Approved spending of ${s.approvals.length > 1 ? 'tokens' : 'a token'}` };
  if (s.from === wallet && s.input !== '0x' && s.to !== null && out === undefined)
    return { category: 'contract interaction', summary: `Called ${short(s.to)}` };
  if (out !== undefined) return { category: 'send', summary: `Sent ${out.value_formatted} ${native} to ${short(s.to)}` };
  if (inn !== undefined) return { category: 'receive', summary: `Received ${inn.value_formatted} ${native} from ${short(s.from)}` };
  return { category: 'contract interaction', summary: s.to === null ? 'Created a contract' : `Interacted with ${short(s.to)}` };
}

/** The native currency's symbol; the registry names none, so Ether's. */
const NATIVE_SYMBOL = 'ETH';

/** Token metadata read once per contract for the items of one answer. */
export function metaCache(deps: DataDeps, chain: string): Meta {
  const cache = new Map<string, Promise<TokenInfo>>();
  return (contract) => {
    const key = contract.toLowerCase();
    let p = cache.get(key);
    if (p === undefined) cache.set(key, (p = metadata(deps, chain, key)));
    return p;
  };
}

/** A wallet history item of one transaction (`wallet` lower case): what GET /wallets/:address/history and the cross-chain history answer. */
export async function historyItem(deps: DataDeps, chain: string, s: TxSummary, wallet: string, meta: Meta, internal: boolean) {
  const moves = movesOf(deps, chain, s, wallet);
  const natives = nativeTransfers(s, wallet, NATIVE_SYMBOL);
  const erc20 = await Promise.all(moves.filter((m) => m.t.kind === 'erc20').map((m) => erc20Item(m, s, wallet, meta)));
  const nft = await Promise.all(moves.filter((m) => m.t.kind !== 'erc20').map((m) => nftItem(m, s, wallet, meta)));
  const symbols = new Map(erc20.map((e) => [e.address, e.token_symbol]));
  const { category, summary } = categorize(s, wallet, moves, natives, symbols, NATIVE_SYMBOL);
  // Added to the transaction's item, not spread into a new object: V8 gives a spread copy of an object this
  // large a hidden class of its own each time, and those classes are garbage the young collections copy around.
  return Object.assign(txItem(s, { internal }), {
    category,
    contract_interactions: await interactions(s.approvals, wallet, meta),
    possible_spam: erc20.some((e) => e.possible_spam) || nft.some((n) => n.possible_spam),
    method_label: null,
    summary,
    nft_transfers: nft,
    erc20_transfers: erc20,
    native_transfers: natives,
  });
}

export type HistoryItem = Awaited<ReturnType<typeof historyItem>>;

export async function walletHistory(deps: DataDeps, chain: string, q: z.output<typeof historyQuery>) {
  const { page, cursor: next, items } = await addressPage(deps, chain, 'hist', q);
  const meta = metaCache(deps, chain);
  const result = await Promise.all(items.map((s) => historyItem(deps, chain, s, q.address, meta, q.include_internal_transactions)));
  return { page, page_size: q.limit, cursor: next, result };
}

/** A moment of an activity row as answered; a row written before 2026-11-24 holds `{block, timestamp, hash}` itself. */
function moment(kv: DataDeps['kv'], chain: string, m: Moment | StoredMoment) {
  if (!Array.isArray(m)) return { block_number: String(m.block), block_timestamp: iso(m.timestamp), transaction_hash: m.hash };
  const [block, index, timestamp] = m;
  return {
    block_number: String(block),
    block_timestamp: iso(timestamp),
    transaction_hash: summaryAt({ kv }, chain, block, index)?.hash ?? null,
  };
}

/** GET /wallets/:address/chains: the first and last activity on each chain asked (default: every chain followed). */
export async function walletChains(deps: DataDeps, address: string, chains: readonly Chain[]) {
  await Promise.all(chains.map((c) => caughtUp(deps, c.key)));
  // Only the chains where the wallet did something are active.
  const active_chains = chains.flatMap((c) => {
    const row = deps.kv.get<Activity>('activity', activityKey(address, c.key));
    return row === undefined
      ? []
      : [
          {
            chain: c.slug,
            chain_id: c.key,
            first_transaction: moment(deps.kv, c.key, row.first),
            last_transaction: moment(deps.kv, c.key, row.last),
          },
        ];
  });
  return { address, active_chains };
}

export async function walletStats(deps: DataDeps, chain: string, q: z.output<typeof walletQuery>) {
  await caughtUp(deps, chain);
  const row = deps.kv.get<Activity>('activity', activityKey(q.address, chain));
  // What the wallet holds, from the NFT ownership index: its collections, each with the token ids it holds.
  const prefix = collectionKey(chain, q.address, '');
  const held = deps.kv.range<Collection>('nftCollections', { start: prefix, end: `${prefix}\uffff` });
  return {
    nfts: String(held.reduce((n, c) => n + c.value.count, 0)),
    collections: String(held.length),
    transactions: { total: String(row?.txs ?? 0) },
    nft_transfers: { total: String(row?.nft ?? 0) },
    token_transfers: { total: String(row?.erc20 ?? 0) },
  };
}
