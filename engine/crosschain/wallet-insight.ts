import { z } from 'zod';
import type { Chain } from '../chains/registry.js';
import type { DataDeps } from '../data-api/common/deps.js';
import { blockAtOrBefore } from '../data-api/common/block-times.js';
import { indexedHead } from '../data-api/common/pages.js';
import { bool } from '../data-api/common/params.js';
import { mul, priceReader, toNumber, type Ratio } from '../data-api/dex/index/prices.js';
import { tradesOf } from '../data-api/dex/swaps.js';
import { badRequest } from '../errors.js';
import { v1ChainId, type ResolvedChains } from './chains.js';
import { acrossChains, allFailed, syncedAt, v1Meta, type FailedChain } from './fan-out.js';
import { wrappedBtc } from './token-price.js';
import { feeOf, nativeUnits, walletList, type Direction, type HistoryEntry } from './wallet-history.js';
import { addressType, walletParam, walletText } from './wallet.js';

/**
 * GET /v1/wallets/:walletAddress/insight: the wallet's activity folded from its history on each chain asked
 * (wallet-history.ts, the same items /history pages), whole: counts, first and last activity, counterparties,
 * native volumes, gas. The USD fields value each transaction's native amounts (moves, fee) at the native currency's
 * price at its block, the Data API's price from the server's own indexed DEX swaps (an EVM chain's wrapped native
 * token, what GET /api/v2.2/erc20/:address/price with to_block answers); Bitcoin's is its wrapped bitcoin's
 * (token-price.ts: the deepest followed pool, read at the last indexed EVM block at or before the Bitcoin block's
 * time, as its price series is). swapVolumeUsd sums the wallet's swaps' totalValueUsd (the v2.2 swap lists').
 * A transaction (or swap) without a price at its block counts nothing in them; a chain where none could be priced
 * has every USD field null, and the top level is null only when every chain's is.
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
const activity = (e: HistoryEntry): Activity => ({
  chain: e.item.chainId,
  blockNumber: e.item.block.number,
  blockTimestamp: e.item.block.timestamp,
  transactionHash: e.item.transaction.hash,
  type: e.item.transaction.category,
  direction: e.item.transaction.direction,
});

interface Counts {
  sent: number;
  received: number;
}

/** USD amounts are summed as integers of 10^-18 USD: exact to far below a cent, where sums of fractions would grow without bound. */
const USD_SCALE = 10n ** 18n;
const scaled = (r: Ratio): bigint => (r.num * USD_SCALE) / r.den;
const usdNumber = (v: bigint): number => (v < 0n ? -toNumber({ num: -v, den: USD_SCALE }) : toNumber({ num: v, den: USD_SCALE }));

/** A chain's USD figures, in USD_SCALE units: what could be priced of its transactions and swaps. */
interface UsdFold {
  /** Whether anything of the chain had a price at its block: else its USD fields are null. */
  priced: boolean;
  gas: bigint;
  /** Initiated transactions whose fee was priced: the average's divisor. */
  gasPriced: number;
  sent: bigint;
  received: bigint;
  largestIn: bigint;
  largestOut: bigint;
  swaps: bigint;
}

/** The native currency's USD price (per whole coin) at a transaction's block (its number, and its time in Unix seconds); null: none. */
type NativePrice = (block: number, time: number) => Ratio | null;

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
  readonly usd: UsdFold = { priced: false, gas: 0n, gasPriced: 0, sent: 0n, received: 0n, largestIn: 0n, largestOut: 0n, swaps: 0n };

  /** `decimals`: the native currency's (wei: 18, satoshis: 8). */
  constructor(private readonly decimals: number) {}

  /** `price`: the native currency's at the entry's block (null: none). */
  add(time: number, e: HistoryEntry, price: Ratio | null): void {
    const t = e.item.transaction;
    const usd = (raw: bigint): bigint => (price === null ? 0n : scaled(mul({ num: raw, den: 10n ** BigInt(this.decimals) }, price)));
    if (price !== null) this.usd.priced = true;
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
      if (price !== null) [this.usd.gas, this.usd.gasPriced] = [this.usd.gas + usd(feeOf(e)), this.usd.gasPriced + 1];
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
      const u = usd(v);
      if (m.direction === 'outgoing') {
        [this.volumeSent, this.largestOut] = [this.volumeSent + v, v > this.largestOut ? v : this.largestOut];
        [this.usd.sent, this.usd.largestOut] = [this.usd.sent + u, u > this.usd.largestOut ? u : this.usd.largestOut];
      }
      if (m.direction === 'incoming') {
        [this.volumeReceived, this.largestIn] = [this.volumeReceived + v, v > this.largestIn ? v : this.largestIn];
        [this.usd.received, this.usd.largestIn] = [this.usd.received + u, u > this.usd.largestIn ? u : this.usd.largestIn];
      }
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
  if (involved > max)
    throw badRequest('walletAddress', `more than ${max} transactions on chain ${chain}: more than this server folds for one answer`);
}

/**
 * An EVM chain's native price: its wrapped native token's at the block, by the reader its swaps were valued with (none
 * without a pricing entry). Bitcoin's: its wrapped bitcoin's on the EVM chain token-price.ts picks, at that chain's last
 * indexed block at or before the Bitcoin block's time (a pruned block's time, 0, has none).
 */
async function nativePrice(
  deps: DataDeps,
  chain: Chain,
  evmChains: readonly Chain[],
  reader: ReturnType<typeof priceReader>,
  failed: FailedChain[],
): Promise<NativePrice> {
  if (chain.family !== 'bitcoin') {
    const wrapped = deps.pricing?.(chain.key)?.wrappedNative;
    return (block) => (wrapped === undefined ? null : (reader?.valueUsd(wrapped, block) ?? null));
  }
  const btc = await wrappedBtc(deps, evmChains);
  failed.push(...btc.failed);
  if (btc.best === undefined) return () => null;
  const { chain: source, address } = btc.best;
  const at = priceReader(deps, source.key, await indexedHead(deps, source.key))!;
  return (_block, time) => {
    const block = time > 0 ? blockAtOrBefore(deps.kv, source.key, time) : undefined;
    return block === undefined ? null : at.valueUsd(address, block);
  };
}

/** Reads the chain's whole list, STEP entries at a time (past MAX_INSIGHT_TRANSACTIONS, a 400), and the wallet's swaps (EVM). */
async function fold(deps: DataDeps, q: InsightQuery, ctx: InsightContext, chain: Chain, failed: FailedChain[]): Promise<ChainFold> {
  const wallet = q.walletAddress;
  // The swaps valued at their blocks, and the reader that valued them, for the native price.
  const swaps =
    wallet.kind === 'evm'
      ? await tradesOf(
          deps,
          chain.key,
          { wallet: wallet.address },
          {},
          { field: 'walletAddress', hint: 'more than this server folds for one answer' },
          MAX_INSIGHT_TRANSACTIONS,
        )
      : undefined;
  const price = await nativePrice(deps, chain, ctx.evmChains, swaps?.reader, failed);
  const read = walletList(deps, wallet, ctx.bitcoinGap, { verbose: false });
  const f = new ChainFold(chain.family === 'bitcoin' ? 8 : 18);
  for (let after: string | undefined; ; ) {
    const step = await read(chain, after, STEP);
    for (const { time, item } of step) f.add(time, item, price(item.item.block.number, time));
    withinInsightBound(f.involved, chain.key);
    if (step.length < STEP) break;
    after = step.at(-1)!.at;
  }
  for (const t of swaps?.trades ?? []) {
    if (t.valueUsd === null) continue;
    f.usd.swaps += scaled(t.valueUsd);
    f.usd.priced = true;
  }
  return f;
}

const counts = (c: Counts) => ({ sent: c.sent, received: c.received, total: c.sent + c.received });
const DAY = 86_400;

/** The keys the top level and each chain's breakdown share; `now`: service time, Unix seconds. */
function common(folds: readonly ChainFold[], now: number) {
  const sum = (f: (c: ChainFold) => number): number => folds.reduce((s, c) => s + f(c), 0);
  const union = (f: (c: ChainFold) => Set<string>): number => new Set(folds.flatMap((c) => [...f(c)])).size;
  const first = folds
    .map((c) => c.first)
    .filter((a) => a !== undefined)
    .sort((a, b) => a.time - b.time)[0];
  const last = folds
    .map((c) => c.last)
    .filter((a) => a !== undefined)
    .sort((a, b) => b.time - a.time)[0];
  const byTime = (pick: (c: ChainFold) => Activity | undefined, newest: boolean): Activity | null =>
    folds
      .map(pick)
      .filter((a) => a !== undefined)
      .sort((a, b) => (newest ? -1 : 1) * a.blockTimestamp.localeCompare(b.blockTimestamp))[0] ?? null;
  const strip = (a: (Activity & { time: number }) | undefined): Activity | null =>
    a === undefined
      ? null
      : {
          chain: a.chain,
          blockNumber: a.blockNumber,
          blockTimestamp: a.blockTimestamp,
          transactionHash: a.transactionHash,
          type: a.type,
          direction: a.direction,
        };
  const native: Counts = { sent: sum((c) => c.native.sent), received: sum((c) => c.native.received) };
  const erc20: Counts = { sent: sum((c) => c.erc20.sent), received: sum((c) => c.erc20.received) };
  const nft: Counts = { sent: sum((c) => c.nft.sent), received: sum((c) => c.nft.received) };
  // USD: the chains where anything was priced; none, null.
  const priced = folds.filter((c) => c.usd.priced).map((c) => c.usd);
  const usd = (f: (u: UsdFold) => bigint): number | null => (priced.length === 0 ? null : usdNumber(priced.reduce((s, u) => s + f(u), 0n)));
  const largest = (f: (u: UsdFold) => bigint): number | null =>
    priced.length === 0 ? null : usdNumber(priced.reduce((m, u) => (f(u) > m ? f(u) : m), 0n));
  const gasPriced = priced.reduce((n, u) => n + u.gasPriced, 0);
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
    swapVolumeUsd: usd((u) => u.swaps),
    totalGasSpentUsd: usd((u) => u.gas),
    avgGasPerTransactionUsd: gasPriced === 0 ? null : usdNumber(priced.reduce((s, u) => s + u.gas, 0n) / BigInt(gasPriced)),
    nativeVolumeSentUsd: usd((u) => u.sent),
    nativeVolumeReceivedUsd: usd((u) => u.received),
    nativeNetFlowUsd: usd((u) => u.received - u.sent),
    uniqueTokensInteracted: union((c) => c.tokens),
    contractsCreated: sum((c) => c.contractsCreated),
    largestNativeTransferInUsd: largest((u) => u.largestIn),
    largestNativeTransferOutUsd: largest((u) => u.largestOut),
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

export interface InsightContext {
  /** The followed EVM chains: where Bitcoin's price is read. */
  evmChains: readonly Chain[];
  bitcoinGap: number;
  /** Service time, Unix seconds. */
  now: number;
}

export async function v1WalletInsight(deps: DataDeps, q: InsightQuery, resolved: ResolvedChains, ctx: InsightContext) {
  const { now } = ctx;
  // Chains that failed while Bitcoin's price was read on them: the wallet's chains still answer.
  const priceFailed: FailedChain[] = [];
  const { parts, failed } = await acrossChains(resolved.chains, (chain) => fold(deps, q, ctx, chain, priceFailed));
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
    meta: v1Meta(resolved, allFailed(failed, priceFailed), syncedAt(deps)),
  };
}
