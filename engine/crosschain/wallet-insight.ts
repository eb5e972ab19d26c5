import { z } from 'zod';
import type { Chain } from '../chains/registry.js';
import type { DataDeps } from '../data-api/deps.js';
import { bool } from '../data-api/params.js';
import { badRequest } from '../errors.js';
import { v1ChainId, type ResolvedChains } from './chains.js';
import { acrossChains, syncedAt, v1Meta } from './fan-out.js';
import { feeOf, nativeUnits, walletList, type Direction, type HistoryEntry } from './wallet-history.js';
import { addressType, walletParam, walletText } from './wallet.js';

/**
 * GET /v1/wallets/:walletAddress/insight: the wallet's activity folded from its history on each chain asked
 * (wallet-history.ts, the same items /history pages), whole: counts, first and last activity, counterparties,
 * native volumes, gas. The USD fields are null: they need the native currency's price at each transaction's
 * time, which no price series here answers for every chain (Bitcoin's, and EVM chains without pricing).
 * An extended key is not taken (the path names one address; its addresses are listed by /v1/chains/bitcoin/wallets/:publicKey/addresses).
 */

export const insightQuery = z.object({ walletAddress: walletParam(false), includeChainBreakdown: bool(false) });
export type InsightQuery = z.output<typeof insightQuery>;

/** Entries read per step of the walk. */
const STEP = 100;

interface Activity {
  chain: string;
  blockNumber: number;
  blockTimestamp: string;
  transactionHash: string;
  type: string;
  direction: Direction;
}
const activity = (e: HistoryEntry): Activity => ({ chain: e.item.chainId, blockNumber: e.item.block.number, blockTimestamp: e.item.block.timestamp, transactionHash: e.item.transaction.hash, type: e.item.transaction.category, direction: e.item.transaction.direction });

interface Counts {
  sent: number;
  received: number;
}

/** One chain's activity, folded from its entries newest first. */
class ChainFold {
  first: (Activity & { time: number }) | undefined;
  last: (Activity & { time: number }) | undefined;
  firstInitiated: Activity | undefined;
  lastInitiated: Activity | undefined;
  readonly days = new Set<string>();
  initiated = 0;
  involved = 0;
  readonly native: Counts = { sent: 0, received: 0 };
  readonly erc20: Counts = { sent: 0, received: 0 };
  readonly nft: Counts = { sent: 0, received: 0 };
  readonly sentTo = new Set<string>();
  readonly receivedFrom = new Set<string>();
  readonly tokens = new Set<string>();
  contractsCreated = 0;
  gas = 0n;
  volumeSent = 0n;
  volumeReceived = 0n;
  largestIn = 0n;
  largestOut = 0n;

  add(time: number, e: HistoryEntry): void {
    const t = e.item.transaction;
    const at = { ...activity(e), time };
    // A Bitcoin transaction whose block record was pruned has no time (0): counted, but it dates nothing.
    const dated = time > 0;
    if (dated) {
      this.last ??= at;
      this.first = at;
      this.days.add(new Date(time * 1000).toISOString().slice(0, 10));
    }
    if (e.initiated) {
      if (dated) {
        this.lastInitiated ??= activity(e);
        this.firstInitiated = activity(e);
      }
      this.initiated++;
      this.gas += feeOf(e);
    }
    if (e.created) this.contractsCreated++;
    this.involved++;
    const party = (m: { direction: Direction; fromAddress: string | null; toAddress: string | null }, counts: Counts): void => {
      if (m.direction === 'outgoing') {
        counts.sent++;
        if (m.toAddress !== null) this.sentTo.add(m.toAddress);
      } else if (m.direction === 'incoming') {
        counts.received++;
        if (m.fromAddress !== null) this.receivedFrom.add(m.fromAddress);
      }
    };
    for (const m of t.nativeTransfers.items) {
      party(m, this.native);
      const v = BigInt(m.amountRaw);
      if (m.direction === 'outgoing') [this.volumeSent, this.largestOut] = [this.volumeSent + v, v > this.largestOut ? v : this.largestOut];
      if (m.direction === 'incoming') [this.volumeReceived, this.largestIn] = [this.volumeReceived + v, v > this.largestIn ? v : this.largestIn];
    }
    for (const m of t.tokenTransfers.items) {
      party(m, this.erc20);
      this.tokens.add(`${e.item.chainId}/${m.tokenAddress}`);
    }
    for (const m of t.nftTransfers.items) {
      party(m, this.nft);
      this.tokens.add(`${e.item.chainId}/${m.tokenAddress}`);
    }
  }
}

/** Transactions folded per chain at most: insight reads a wallet's whole history for each answer. */
export const MAX_INSIGHT_TRANSACTIONS = 100_000;

/** A 400 naming walletAddress once a chain's fold holds more than `max` transactions. */
export function withinInsightBound(involved: number, chain: string, max = MAX_INSIGHT_TRANSACTIONS): void {
  if (involved > max) throw badRequest('walletAddress', `more than ${max} transactions on chain ${chain}: more than this server folds for one answer`);
}

/** Reads the chain's whole list, STEP entries at a time (past MAX_INSIGHT_TRANSACTIONS, a 400). */
async function fold(deps: DataDeps, q: InsightQuery, bitcoinGap: number, chain: Chain): Promise<ChainFold> {
  const read = walletList(deps, q.walletAddress, bitcoinGap, { verbose: false });
  const f = new ChainFold();
  for (let after: string | undefined; ; ) {
    const step = await read(chain, after, STEP);
    for (const { time, item } of step) f.add(time, item);
    withinInsightBound(f.involved, chain.key);
    if (step.length < STEP) return f;
    after = step.at(-1)!.at;
  }
}

const counts = (c: Counts) => ({ sent: c.sent, received: c.received, total: c.sent + c.received });
const DAY = 86_400;

/** The keys the top level and each chain's breakdown share; `now`: service time, Unix seconds. */
function common(folds: readonly ChainFold[], now: number) {
  const sum = (f: (c: ChainFold) => number): number => folds.reduce((s, c) => s + f(c), 0);
  const union = (f: (c: ChainFold) => Set<string>): number => new Set(folds.flatMap((c) => [...f(c)])).size;
  const first = folds.map((c) => c.first).filter((a) => a !== undefined).sort((a, b) => a.time - b.time)[0];
  const last = folds.map((c) => c.last).filter((a) => a !== undefined).sort((a, b) => b.time - a.time)[0];
  const byTime = (pick: (c: ChainFold) => Activity | undefined, newest: boolean): Activity | null =>
    folds
      .map(pick)
      .filter((a) => a !== undefined)
      .sort((a, b) => (newest ? -1 : 1) * a.blockTimestamp.localeCompare(b.blockTimestamp))[0] ?? null;
  const strip = (a: (Activity & { time: number }) | undefined): Activity | null => (a === undefined ? null : { chain: a.chain, blockNumber: a.blockNumber, blockTimestamp: a.blockTimestamp, transactionHash: a.transactionHash, type: a.type, direction: a.direction });
  const native: Counts = { sent: sum((c) => c.native.sent), received: sum((c) => c.native.received) };
  const erc20: Counts = { sent: sum((c) => c.erc20.sent), received: sum((c) => c.erc20.received) };
  const nft: Counts = { sent: sum((c) => c.nft.sent), received: sum((c) => c.nft.received) };
  return {
    walletAgeDays: first === undefined ? 0 : Math.max(0, Math.floor((now - first.time) / DAY)),
    firstActivityAt: strip(first),
    lastActivityAt: strip(last),
    firstInitiatedAt: byTime((c) => c.firstInitiated, false),
    lastInitiatedAt: byTime((c) => c.lastInitiated, true),
    activeDays: union((c) => c.days),
    transactionsInitiated: sum((c) => c.initiated),
    transactionsInvolved: sum((c) => c.involved),
    nativeTransfers: counts(native),
    erc20Transfers: counts(erc20),
    nftTransfers: counts(nft),
    uniqueCounterparties: { sentTo: union((c) => c.sentTo), receivedFrom: union((c) => c.receivedFrom) },
    swapVolumeUsd: null,
    totalGasSpentUsd: null,
    avgGasPerTransactionUsd: null,
    nativeVolumeSentUsd: null,
    nativeVolumeReceivedUsd: null,
    nativeNetFlowUsd: null,
    uniqueTokensInteracted: union((c) => c.tokens),
    contractsCreated: sum((c) => c.contractsCreated),
    largestNativeTransferInUsd: null,
    largestNativeTransferOutUsd: null,
  };
}

/** A chain's breakdown: the shared keys, and the native amounts in the chain's own currency (they add up within a chain only). */
function breakdown(chain: Chain, f: ChainFold, now: number) {
  const units = (v: bigint): string => nativeUnits(chain, v);
  const net = f.volumeReceived - f.volumeSent;
  return {
    chain: v1ChainId(chain),
    ...common([f], now),
    totalGasSpentNative: units(f.gas),
    avgGasPerTransactionNative: f.initiated === 0 ? null : units(f.gas / BigInt(f.initiated)),
    nativeVolumeSent: units(f.volumeSent),
    nativeVolumeReceived: units(f.volumeReceived),
    nativeNetFlow: net < 0n ? `-${units(-net)}` : units(net),
    largestNativeTransferIn: units(f.largestIn),
    largestNativeTransferOut: units(f.largestOut),
  };
}

export async function v1WalletInsight(deps: DataDeps, q: InsightQuery, resolved: ResolvedChains, bitcoinGap: number, now: number) {
  const { parts, failed } = await acrossChains(resolved.chains, (chain) => fold(deps, q, bitcoinGap, chain));
  const active = parts.filter((p) => p.value.involved > 0);
  const most = [...active].sort((a, b) => b.value.involved - a.value.involved)[0];
  return {
    address: walletText(q.walletAddress),
    addressType: addressType(q.walletAddress),
    ...common(
      parts.map((p) => p.value),
      now,
    ),
    activeChains: active.map((p) => v1ChainId(p.chain)),
    mostActiveChain: most === undefined ? null : v1ChainId(most.chain),
    // Listed when asked (includeChainBreakdown=true), else empty: the Universal API marks the field required.
    chainBreakdown: q.includeChainBreakdown ? parts.map((p) => breakdown(p.chain, p.value, now)) : [],
    meta: v1Meta(resolved, failed, syncedAt(deps)),
  };
}
