import { formatEther, formatUnits } from 'viem/utils';
import { z } from 'zod';
import { addressTxs, txPlace } from '../bitcoin/address-index.js';
import { BtcRecordView } from '../bitcoin/record.js';
import { txFlow } from '../bitcoin/tx-flow.js';
import type { Chain } from '../chains/registry.js';
import { headBounds, type BlockRangeQuery } from '../data-api/common/block-times.js';
import type { DataDeps } from '../data-api/common/deps.js';
import { blockNumber, bool, cursor, date, limit } from '../data-api/common/params.js';
import { addressTxReads, historyPrefixes, nextPosition, positionOf, txPosition } from '../data-api/transactions/index/writer.js';
import { mergeRanges } from '../page.js';
import { feeWei, txItem } from '../data-api/transactions/item.js';
import { blockHashes, caughtUp, logsOf, summaryAt } from '../data-api/transactions/source.js';
import { historyItem, metaCache } from '../data-api/transactions/wallet.js';
import { unixIso as iso } from '../datetime.js';
import { ApiError } from '../errors.js';
import { blockKey } from '../ingest/chain-store.js';
import { v1ChainId } from './chains.js';
import type { ChainList } from './merged-page.js';
import { listOf } from './cursor.js';
import { addressType, bitcoinAddresses, walletParam, walletText, type Wallet } from './wallet.js';
import { mergedPage } from './merged-page.js';
import { nodeReachable, syncedAt, v1Meta } from './fan-out.js';
import type { ResolvedChains } from './chains.js';
import type { nativeMove, v1HistoryItem } from './responses.js';

/**
 * A wallet's transactions over several chains, in one shape for EVM and Bitcoin: GET
 * /v1/wallets/:walletAddressOrPublicKey/history pages them newest first, merged by time across chains
 * (merged-page.ts), and /insight folds them. An EVM chain's list is the wallet history index of the Data API
 * (`hist/` of addressTxs, items made by its GET /wallets/:address/history code); Bitcoin's is the address
 * index (btcAddressTxs) of the address, or of every address derived from the key, each transaction once.
 */

export const historyQuery = z.object({
  walletAddressOrPublicKey: walletParam(true),
  limit: limit(100),
  cursor,
  // Pages merged across chains run newest first (merged-page.ts): ASC would need each chain read from its oldest, which no index here orders by time across chains.
  order: z.enum(['DESC'], 'DESC (pages merged across chains run newest first)').default('DESC'),
  fromDate: date.optional(),
  toDate: date.optional(),
  fromBlock: blockNumber.optional(),
  toBlock: blockNumber.optional(),
  verbose: bool(false),
});
export type HistoryQuery = z.output<typeof historyQuery>;

interface Party {
  address: string | null;
  addressLabel: null;
  entity: null;
}
const party = (address: string | null | undefined): Party => ({ address: address ?? null, addressLabel: null, entity: null });

export type Direction = 'incoming' | 'outgoing' | 'self';

export type NativeMove = z.output<typeof nativeMove>;

/** An item of the answer (responses.ts); `raw`: verbose=true, the transaction as its chain's node shows it (EVM: the Data API's verbose item, with logs), else null. */
export type V1HistoryItem = z.output<typeof v1HistoryItem>;

/** A list entry: the item, and whether the wallet started the transaction (insight's "initiated"). */
export interface HistoryEntry {
  item: V1HistoryItem;
  initiated: boolean;
  /** Whether the transaction made a contract the wallet deployed. */
  created: boolean;
}

const rangeOf = (q: Pick<HistoryQuery, 'fromBlock' | 'toBlock' | 'fromDate' | 'toDate'>): BlockRangeQuery => ({
  from_block: q.fromBlock,
  to_block: q.toBlock,
  from_date: q.fromDate,
  to_date: q.toDate,
});

/** An EVM chain's list: the Data API's wallet history index, strictly before `after` (its key), within the query's blocks up to the indexed head. */
function evmList(
  deps: DataDeps,
  wallet: string,
  q: Pick<HistoryQuery, 'fromBlock' | 'toBlock' | 'fromDate' | 'toDate' | 'verbose'>,
): ChainList<HistoryEntry> {
  return async (chain, after, limit) => {
    nodeReachable(deps, chain);
    await caughtUp(deps, chain.key);
    const head = deps.indexer.position(chain.key) ?? -1;
    const bounds = headBounds(deps.kv, chain.key, head, rangeOf(q));
    if (bounds === null) return [];
    // Both lists of its history, newest first, from the position `after` names (a key of either: its number/index).
    const { rows } = mergeRanges<number>(
      addressTxReads(deps.kv),
      'addressTxs',
      historyPrefixes(chain.key, wallet),
      { ...bounds, reverse: true, step: nextPosition, ...(after === undefined ? {} : { after: positionAfter(after) }) },
      limit,
    );
    const hashOf = blockHashes(deps, chain.key);
    const meta = metaCache(deps, chain.key);
    return Promise.all(
      rows.map(async ({ key }) => {
        const { block, index } = positionOf(key);
        const s = summaryAt(deps, chain.key, block, index, hashOf);
        if (s === undefined) throw new ApiError(500, `the summary of transaction ${block}/${index} of chain ${chain.key} is missing`);
        const h = await historyItem(deps, chain.key, s, wallet, meta, true);
        const outgoing =
          h.native_transfers.some((n) => n.direction === 'outgoing') ||
          h.erc20_transfers.some((e) => e.direction === 'outgoing') ||
          h.nft_transfers.some((n) => n.direction === 'outgoing');
        const direction: Direction = s.from === wallet ? (s.to === wallet ? 'self' : 'outgoing') : outgoing ? 'outgoing' : 'incoming';
        const item: V1HistoryItem = {
          chainId: v1ChainId(chain),
          block: { number: s.blockNumber, timestamp: h.block_timestamp, hash: s.blockHash },
          transaction: {
            hash: s.hash,
            index: s.index,
            status: s.status === null ? null : s.status === 1 ? 'success' : 'failed',
            direction,
            category: h.category,
            summary: h.summary,
            methodLabel: null,
            possibleSpam: h.possible_spam,
            initiatedBy: party(s.from),
            from: party(s.from),
            to: party(s.to),
            fee: { amount: h.transaction_fee, amountRaw: feeWei(s).toString() },
            confirmations: Math.max(0, (deps.follower(chain.key)?.head ?? head) - s.blockNumber + 1),
            nativeTransfers: {
              items: h.native_transfers.map((n) => ({
                fromAddress: n.from_address,
                toAddress: n.to_address,
                amount: n.value_formatted,
                amountRaw: n.value,
                direction: n.direction,
                isInternal: n.internal_transaction,
              })),
              hasMore: false,
            },
            tokenTransfers: {
              items: h.erc20_transfers.map((e) => ({
                fromAddress: e.from_address,
                toAddress: e.to_address,
                value: e.value,
                valueFormatted: e.value_formatted,
                direction: e.direction,
                tokenAddress: e.address,
                tokenSymbol: e.token_symbol,
                tokenName: e.token_name,
                tokenDecimals: Number(e.token_decimals),
                tokenLogo: null,
              })),
              hasMore: false,
            },
            nftTransfers: {
              items: h.nft_transfers.map((n) => ({
                fromAddress: n.from_address,
                toAddress: n.to_address,
                tokenAddress: n.token_address,
                tokenId: n.token_id,
                amount: n.amount,
                contractType: n.contract_type,
                direction: n.direction,
              })),
              hasMore: false,
            },
          },
          raw: q.verbose ? txItem(s, { verbose: true, internal: true, logs: await logsOf(deps, chain.key, s) }) : null,
        };
        return {
          time: s.timestamp,
          at: key,
          item: { item, initiated: s.from === wallet, created: s.from === wallet && s.contractAddress !== null },
        };
      }),
    );
  };
}

const sats = (n: number | bigint): string => formatUnits(BigInt(n), 8);
const short = (a: string | null | undefined): string =>
  a === null || a === undefined ? 'an unknown address' : `${a.slice(0, 6)}…${a.slice(-4)}`;

/** A Bitcoin transaction seen from the wallet (`mine`: its addresses); undefined `view`: its block record was pruned. */
function bitcoinItem(
  chain: Chain,
  view: BtcRecordView | undefined,
  at: { txid: string; height: number; index: number },
  mine: ReadonlySet<string>,
  head: number,
  verbose: boolean,
): HistoryEntry {
  const t = view?.tx(at.index);
  const flow = t === undefined ? undefined : txFlow(t);
  const [ins, outs] = [flow?.ins ?? [], flow?.outs ?? []];
  const isMine = (a: string | undefined): boolean => a !== undefined && mine.has(a);
  const ourIns = ins.filter((i) => isMine(i.address));
  const spent = ourIns.length > 0;
  const direction: Direction = spent ? (outs.every((o) => isMine(o.address)) ? 'self' : 'outgoing') : 'incoming';
  const feeRaw = flow?.fee ?? null;
  const sender = ourIns[0]?.address ?? ins[0]?.address ?? null;
  // What moved for the wallet: every output of a transaction it paid for (its change as `self`), else the outputs paid to it.
  const moves: NativeMove[] = outs
    .filter((o) => spent || isMine(o.address))
    .map((o) => ({
      fromAddress: sender,
      toAddress: o.address ?? null,
      amount: sats(o.value),
      amountRaw: String(o.value),
      direction: spent ? (isMine(o.address) ? 'self' : 'outgoing') : 'incoming',
      isInternal: false,
    }));
  const sum = (d: Direction): bigint => moves.filter((m) => m.direction === d).reduce((s, m) => s + BigInt(m.amountRaw), 0n);
  const counterparty =
    direction === 'incoming' ? outs.find((o) => isMine(o.address))?.address : outs.find((o) => !isMine(o.address))?.address;
  const summary =
    t?.isCoinbase === true
      ? `Mined ${sats(sum('incoming'))} BTC`
      : direction === 'incoming'
        ? `Received ${sats(sum('incoming'))} BTC from ${short(sender)}`
        : direction === 'outgoing'
          ? `Sent ${sats(sum('outgoing'))} BTC to ${short(counterparty)}`
          : 'Moved BTC between its own addresses';
  const item: V1HistoryItem = {
    chainId: v1ChainId(chain),
    block: { number: at.height, timestamp: view === undefined ? '' : iso(view.header.time), hash: view?.header.hash ?? null },
    transaction: {
      hash: at.txid,
      index: at.index,
      status: 'success',
      direction,
      category: direction === 'incoming' ? 'receive' : 'send',
      summary,
      methodLabel: null,
      possibleSpam: false,
      initiatedBy: party(sender),
      from: party(sender),
      to: party(counterparty),
      fee: { amount: feeRaw === null ? null : sats(feeRaw), amountRaw: feeRaw === null ? null : feeRaw.toString() },
      confirmations: Math.max(0, head - at.height + 1),
      nativeTransfers: { items: moves, hasMore: false },
      tokenTransfers: { items: [], hasMore: false },
      nftTransfers: { items: [], hasMore: false },
    },
    raw:
      verbose && t !== undefined
        ? {
            txid: t.txid,
            hash: t.hash,
            version: t.version,
            locktime: t.locktime,
            size: t.size,
            vsize: t.vsize,
            weight: t.weight,
            isCoinbase: t.isCoinbase,
            vin: t.vin.map((i, k) => ({
              txid: i.txid,
              vout: i.vout,
              sequence: i.sequence,
              address: ins[k]!.address ?? null,
              value: ins[k]!.value ?? null,
            })),
            vout: outs.map((o) => ({ n: o.n, value: o.value, address: o.address ?? null })),
          }
        : null,
  };
  return { item, initiated: spent, created: false };
}

/**
 * Bitcoin's list: the transactions of the wallet's addresses, each once (a transaction that pays two of its
 * addresses is one entry), newest first, strictly before `after` (a txPlace: the same for every address). Blocks
 * bound the index's keys; dates are read from the blocks' headers, so a page with dates reads on until it is full.
 */
function bitcoinList(
  deps: DataDeps,
  wallet: Exclude<Wallet, { kind: 'evm' }>,
  gap: number,
  q: Pick<HistoryQuery, 'fromBlock' | 'toBlock' | 'fromDate' | 'toDate' | 'verbose'>,
): ChainList<HistoryEntry> {
  return (chain, after, limit) => {
    nodeReachable(deps, chain);
    const addresses = bitcoinAddresses(deps.kv, chain.key, wallet, gap).map((a) => a.address);
    const mine = new Set(addresses);
    const head = deps.follower(chain.key)?.head ?? -1;
    const bounds = {
      low: q.fromBlock === undefined ? undefined : txPlace(q.fromBlock, 0),
      high: q.toBlock === undefined ? undefined : txPlace(q.toBlock + 1, 0),
    };
    const views = new Map<number, BtcRecordView | undefined>();
    const viewAt = (height: number): BtcRecordView | undefined => {
      if (!views.has(height)) {
        const bytes = deps.kv.getRaw('blocks', blockKey(chain.key, height));
        views.set(height, bytes === undefined ? undefined : BtcRecordView.of(bytes));
      }
      return views.get(height);
    };
    const out: Array<{ time: number; at: string; item: HistoryEntry }> = [];
    let before = after;
    while (out.length < limit) {
      // Each address's newest `limit` before the place: enough for the wallet's newest `limit` (distinct by place).
      const byPlace = new Map<string, { txid: string; height: number; index: number }>();
      for (const a of addresses)
        for (const t of addressTxs(deps.kv, chain.key, a, limit, { ...bounds, before })) byPlace.set(txPlace(t.height, t.index), t);
      const places = [...byPlace.keys()].sort().reverse().slice(0, limit);
      for (const place of places) {
        const at = byPlace.get(place)!;
        const view = viewAt(at.height);
        const time = view?.header.time ?? 0;
        if ((q.fromDate !== undefined && time < q.fromDate) || (q.toDate !== undefined && time > q.toDate)) continue;
        if (out.length < limit) out.push({ time, at: place, item: bitcoinItem(chain, view, at, mine, head, q.verbose) });
      }
      if (places.length < limit) break;
      before = places.at(-1);
    }
    return out;
  };
}

/** The list of the wallet's transactions on `chain` (of the wallet's family: resolveChains took only those). */
export function walletList(
  deps: DataDeps,
  wallet: Wallet,
  gap: number,
  q: Pick<HistoryQuery, 'fromBlock' | 'toBlock' | 'fromDate' | 'toDate' | 'verbose'>,
): ChainList<HistoryEntry> {
  return wallet.kind === 'evm' ? evmList(deps, wallet.address, q) : bitcoinList(deps, wallet, gap, q);
}

/** The fee in the chain's own unit, for sums. */
export const feeOf = (e: HistoryEntry): bigint => BigInt(e.item.transaction.fee.amountRaw ?? '0');
export const nativeUnits = (chain: Chain, raw: bigint): string => (chain.family === 'bitcoin' ? sats(raw) : formatEther(raw));

/** GET /v1/wallets/:walletAddressOrPublicKey/history: one page of the chains' lists merged by time, newest first. */
export async function v1WalletHistory(deps: DataDeps, q: HistoryQuery, resolved: ResolvedChains, bitcoinGap: number) {
  const wallet = q.walletAddressOrPublicKey;
  // The cursor is made for the wallet and the query's range: replayed on another, it is refused.
  const list = listOf('wallet-history', { ...q, walletAddressOrPublicKey: walletText(wallet) });
  const page = await mergedPage(resolved.chains, walletList(deps, wallet, bitcoinGap, q), { list, limit: q.limit, cursor: q.cursor });
  return {
    address: walletText(wallet),
    addressType: addressType(wallet),
    cursor: page.cursor,
    page: page.page,
    pageSize: q.limit,
    result: page.items.map((i) => i.item.item),
    meta: v1Meta(resolved, page.failed, syncedAt(deps)),
  };
}

/** The position (number/index) a key of either list ends with, as the merged range reads `after`. */
function positionAfter(key: string): string {
  const { block, index } = positionOf(key);
  return txPosition(block, index);
}
