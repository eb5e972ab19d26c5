import { z } from 'zod';
import { ohlcvAnswer } from '../data-api/dex/candles.js';
import { pairSwapsAnswer, tradesAnswer } from '../data-api/dex/swaps.js';
import { txWithLogsAnswer } from '../data-api/transactions/item.js';
import { blockFieldsAnswer } from '../data-api/transactions/txs.js';

/**
 * What the cross-chain API (/v1) answers: one schema per answer, beside the modules of this folder that make them
 * (the OpenAPI document and the test suite's check of every answer read these). Names as the Universal API has
 * them (data-api-notes §4). Amounts that are strings in the answers stay strings here.
 */

// ---- shared by every answer ----

export const failedChain = z.object({
  chainId: z.string(),
  code: z
    .union([z.number(), z.string()])
    .meta({ description: "The HTTP status the chain's part would have answered alone, or the node's error code" }),
  error: z.string(),
});

export const v1Meta = z.object({
  syncedAt: z
    .record(z.string(), z.number().int().nullable())
    .meta({ description: 'Per chain id asked: the last block indexed (Solana: its slot), null before the first' }),
  unsupportedChains: z.array(z.string()).optional(),
  failedChains: z.array(failedChain).optional(),
});

export const cursor = z.string().nullable().meta({ description: "The next page's cursor; null on the last page" });
export const chainId = z.string().meta({ description: 'The hex chain id, or the family name (bitcoin, solana)' });

const addressType = z.enum(['evm', 'bitcoin', 'xpub']);

// ---- prices ----

export const pricePoint = z.object({ timestamp: z.string(), price: z.number() });

const nativePrice = z.object({ value: z.string(), decimals: z.number().int(), name: z.string(), symbol: z.string(), address: z.string() });

/** GET /v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price. */
export const v1Price = z.object({
  chain: chainId,
  tokenName: z.string().nullable(),
  tokenSymbol: z.string().nullable(),
  tokenAddress: z.string().nullable(),
  tokenLogo: z.null(),
  tokenDecimals: z.number().int(),
  usdPrice: z.number().nullable(),
  '24hrChangeUsd': z.number().nullable(),
  '24hrChangePercent': z.number().nullable(),
  nativePrice: nativePrice.nullable(),
  verifiedContract: z.boolean(),
  securityScore: z.null(),
  possibleSpam: z.boolean(),
  updatedAt: z.string().nullable().meta({ description: 'The time of the block the price is read at' }),
  dexInformation: z
    .object({
      chainId,
      exchangeName: z.string(),
      exchangeAddress: z.string(),
      pairAddress: z.string(),
      pairTotalLiquidityUsd: z.string(),
      tokenAddress: z.string(),
      toBlock: z.string(),
    })
    .nullable(),
  meta: v1Meta,
});

const seriesPage = {
  chain: chainId,
  fromDate: z.string(),
  toDate: z.string(),
  page: z.number().int(),
  cursor,
  result: z.array(pricePoint),
  meta: v1Meta,
};
export const v1Timeseries = z.object({ ...seriesPage, interval: z.enum(['5m', 'hourly', 'daily', 'weekly', 'monthly']) });
export const v1Sparkline = z.object({ ...seriesPage, range: z.enum(['24h', '7d', '30d', '90d', '1y']) });

// ---- profit and loss ----

/** A token row of GET /v1/wallets/:walletAddress/pnl; also the `pnl` of a token balance row. */
export const v1PnlItem = z.object({
  chain: chainId,
  walletAddress: z.string(),
  tokenAddress: z.string(),
  totalTokensBought: z.string(),
  totalTokensSold: z.string(),
  totalBoughtVolumeUsd: z.number(),
  totalSoldVolumeUsd: z.number(),
  totalTrades: z.number().int(),
  totalBuys: z.number().int(),
  totalSells: z.number().int(),
  avgBuyPriceUsd: z.number().nullable(),
  avgSellPriceUsd: z.number().nullable(),
  avgCostOfQuantitySold: z.number().nullable(),
  remainingBalance: z.string(),
  currentPriceUsd: z.number().nullable(),
  realizedProfitUsd: z.number(),
  realizedProfitPercentage: z.number(),
  unrealizedProfitUsd: z.number().nullable(),
  unrealizedProfitPercentage: z.number().nullable(),
  totalPnlUsd: z.number(),
  totalPnlPercentage: z.number(),
  roi: z.number().meta({ description: 'totalPnlUsd over totalBoughtVolumeUsd, as a fraction' }),
  name: z.string(),
  symbol: z.string(),
  decimals: z.number().int(),
  logo: z.null(),
  possibleSpam: z.boolean(),
  verifiedContract: z.boolean(),
  securityScore: z.null(),
});

export const v1Pnl = z.object({ meta: v1Meta, result: z.array(v1PnlItem), cursor, limit: z.number().int() });

export const v1PnlSummary = z.object({
  meta: v1Meta,
  totalTokensBought: z.string(),
  totalTokensSold: z.string(),
  totalBoughtVolumeUsd: z.number(),
  totalSoldVolumeUsd: z.number(),
  totalTrades: z.number().int(),
  totalBuys: z.number().int(),
  totalSells: z.number().int(),
  realizedProfitUsd: z.number(),
  realizedProfitPercentage: z.number(),
  unrealizedProfitUsd: z.number(),
  unrealizedProfitPercentage: z.number(),
  totalPnlUsd: z.number(),
  totalPnlPercentage: z.number(),
  roi: z.number(),
  winRate: z.number().meta({ description: 'Of the tokens sold, the percentage whose sales realized a profit' }),
  tokensTraded: z.number().int(),
});

/** GET /v1/chains/:chainAlias/tokens/:tokenAddress/top-traders. */
export const v1TopTraders = z.object({
  token: z.object({
    chain: chainId,
    tokenAddress: z.string(),
    name: z.string(),
    symbol: z.string(),
    decimals: z.number().int().nullable(),
    logo: z.null(),
    possibleSpam: z.boolean(),
    verifiedContract: z.boolean(),
    securityScore: z.null(),
    currentPriceUsd: z.number().nullable(),
  }),
  result: z.array(
    z.object({
      walletAddress: z.string(),
      totalTokensBought: z.string(),
      totalTokensSold: z.string(),
      totalBoughtVolumeUsd: z.string(),
      totalSoldVolumeUsd: z.string(),
      totalTrades: z.number().int(),
      avgBuyPriceUsd: z.string().nullable(),
      avgSellPriceUsd: z.string().nullable(),
      avgCostOfQuantitySold: z.string().nullable(),
      realizedProfitUsd: z.string(),
      realizedProfitPercentage: z.number(),
      unrealizedProfitUsd: z.string().nullable(),
      totalPnlUsd: z.string(),
      totalPnlPercentage: z.number(),
      roi: z.number(),
    }),
  ),
  cursor,
  limit: z.number().int(),
  meta: v1Meta,
});

// ---- wallets ----

/** A row of GET /v1/wallets/:walletAddressOrPublicKey/tokens. */
export const v1TokenRow = z.object({
  tokenAddress: z.string().nullable(),
  balanceRaw: z.string(),
  chainId,
  name: z.string().nullable(),
  symbol: z.string().nullable(),
  decimals: z.number().int(),
  logo: z.null(),
  possibleSpam: z.boolean(),
  verifiedContract: z.boolean(),
  balance: z.string(),
  securityScore: z.null(),
  portfolioPercentage: z.number().nullable(),
  usdPrice: z.number().nullable(),
  usdPrice24hrUsdChange: z.number().nullable(),
  usdPrice24hrPercentChange: z.number().nullable(),
  usdValue: z.number().nullable(),
  usdValue24hrUsdChange: z.number().nullable(),
  nativeToken: z.boolean(),
  derivedAddress: z.string().nullable().meta({ description: "An extended key's: the derived address that holds the balance" }),
  derivedPath: z.string().nullable(),
  sparkline: z.array(pricePoint).optional().meta({ description: "includeSparklines=true: the token's price over the last 7 days, hourly" }),
  pnl: v1PnlItem
    .nullable()
    .optional()
    .meta({ description: "includePnl=true, EVM tokens: the wallet's PnL in the token; null when it never swapped it" }),
});

export const v1WalletTokens = z.object({ address: z.string(), addressType, cursor, result: z.array(v1TokenRow), meta: v1Meta });

const direction = z.enum(['incoming', 'outgoing', 'self']);
const party = z.object({ address: z.string().nullable(), addressLabel: z.null(), entity: z.null() });
const moves = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), hasMore: z.boolean() });

export const nativeMove = z.object({
  fromAddress: z.string().nullable(),
  toAddress: z.string().nullable(),
  amount: z.string(),
  amountRaw: z.string().meta({ description: "The amount in the chain's smallest unit (wei, satoshis)" }),
  direction,
  isInternal: z.boolean(),
});

/** An item of GET /v1/wallets/:walletAddressOrPublicKey/history. */
export const v1HistoryItem = z.object({
  chainId,
  block: z.object({ number: z.number().int(), timestamp: z.string(), hash: z.string().nullable() }),
  transaction: z.object({
    hash: z.string(),
    index: z.number().int(),
    status: z.enum(['success', 'failed']).nullable(),
    direction,
    category: z.string(),
    summary: z.string(),
    methodLabel: z.null(),
    possibleSpam: z.boolean(),
    initiatedBy: party,
    from: party,
    to: party,
    fee: z.object({ amount: z.string().nullable(), amountRaw: z.string().nullable() }),
    confirmations: z.number().int(),
    nativeTransfers: moves(nativeMove),
    tokenTransfers: moves(
      z.object({
        fromAddress: z.string(),
        toAddress: z.string(),
        value: z.string(),
        valueFormatted: z.string(),
        direction,
        tokenAddress: z.string(),
        tokenSymbol: z.string().nullable(),
        tokenName: z.string().nullable(),
        tokenDecimals: z.number().int(),
        tokenLogo: z.null(),
      }),
    ),
    nftTransfers: moves(
      z.object({
        fromAddress: z.string(),
        toAddress: z.string(),
        tokenAddress: z.string(),
        tokenId: z.string(),
        amount: z.string(),
        contractType: z.string(),
        direction,
      }),
    ),
  }),
  raw: z
    .unknown()
    .meta({ description: "verbose=true: the transaction as its chain's node shows it (EVM: the Data API's verbose item); else null" }),
});

export const v1WalletHistory = z.object({
  address: z.string(),
  addressType,
  cursor,
  page: z.number().int(),
  pageSize: z.number().int(),
  result: z.array(v1HistoryItem),
  meta: v1Meta,
});

const activity = z
  .object({
    chain: chainId,
    blockNumber: z.number().int(),
    blockTimestamp: z.string(),
    transactionHash: z.string(),
    type: z.string(),
    direction,
  })
  .nullable();
const counts = z.object({ sent: z.number().int(), received: z.number().int(), total: z.number().int() });
const usd = z.number().nullable();
/** The keys the insight's top level and each chain's breakdown share. */
const insightFields = {
  walletAgeDays: z.number().int(),
  firstActivityAt: activity,
  lastActivityAt: activity,
  firstInitiatedAt: activity,
  lastInitiatedAt: activity,
  activeDays: z.number().int(),
  transactionsInitiated: z.number().int(),
  transactionsInvolved: z.number().int(),
  nativeTransfers: counts,
  erc20Transfers: counts,
  nftTransfers: counts,
  uniqueCounterparties: z.object({ sentTo: z.number().int(), receivedFrom: z.number().int() }),
  swapVolumeUsd: usd,
  totalGasSpentUsd: usd,
  avgGasPerTransactionUsd: usd,
  nativeVolumeSentUsd: usd,
  nativeVolumeReceivedUsd: usd,
  nativeNetFlowUsd: usd,
  uniqueTokensInteracted: z.number().int(),
  contractsCreated: z.number().int(),
  largestNativeTransferInUsd: usd,
  largestNativeTransferOutUsd: usd,
};

/** GET /v1/wallets/:walletAddress/insight. */
export const v1WalletInsight = z.object({
  address: z.string(),
  addressType,
  ...insightFields,
  activeChains: z.array(chainId),
  mostActiveChain: chainId.nullable(),
  chainBreakdown: z
    .array(
      z.object({
        chain: chainId,
        ...insightFields,
        totalGasSpentNative: z.string(),
        avgGasPerTransactionNative: z.string().nullable(),
        nativeVolumeSent: z.string(),
        nativeVolumeReceived: z.string(),
        nativeNetFlow: z.string(),
        largestNativeTransferIn: z.string(),
        largestNativeTransferOut: z.string(),
      }),
    )
    .meta({ description: 'includeChainBreakdown=true: per chain; else empty' }),
  meta: v1Meta,
});

/** GET /v1/chains/:chainAlias/wallets/:publicKey/addresses. */
export const v1XpubAddresses = z.object({
  addresses: z.array(
    z.object({
      address: z.string(),
      path: z.string(),
      transfers: z.number().int().meta({ description: 'Transactions of the address this server indexed' }),
    }),
  ),
  meta: v1Meta,
});

// ---- DEX ----

/** GET /v1/chains/:chainAlias/tokens/:tokenAddress/swaps. */
export const v1TokenSwaps = z.object({
  cursor,
  page: z.number().int(),
  pageSize: z.number().int(),
  result: tradesAnswer.shape.result,
  meta: v1Meta,
});

/** GET /v1/chains/:chainAlias/pairs/:pairAddress/swaps: the Data API's pair swaps with the /v1 meta. */
export const v1PairSwaps = pairSwapsAnswer.extend({ meta: v1Meta });

/** GET /v1/chains/:chainAlias/pairs/:pairAddress/ohlcv: the Data API's candles with the /v1 meta. */
export const v1PairOhlcv = ohlcvAnswer.extend({ meta: v1Meta });

// ---- blocks and transactions (chain-data.ts) ----

const paging = { page: z.number().int(), totalPages: z.number().int(), itemsOnPage: z.number().int() };
const txBase = {
  chainId,
  txid: z.string(),
  blockHash: z.string(),
  blockHeight: z.number().int(),
  blockTime: z.number().int().nullable(),
  fees: z.string().nullable(),
};

const evmTx = z.object({
  chainFamily: z.literal('EVM'),
  ...txBase,
  value: z.string(),
  tokenTransfers: z.array(
    z.object({
      tokenType: z.string(),
      tokenAddress: z.string(),
      from: z.string(),
      to: z.string(),
      value: z.string(),
      tokenId: z.string().nullable(),
    }),
  ),
  evmSpecific: txWithLogsAnswer.meta({
    description: "The Data API's transaction (GET /transaction/{transaction_hash}), its internal transactions included",
  }),
});

const addresses = { addresses: z.array(z.string()), isAddress: z.boolean() };
const bitcoinTx = z.object({
  chainFamily: z.literal('Bitcoin'),
  ...txBase,
  vin: z.array(
    z.object({
      txid: z.string(),
      vout: z.number().int(),
      sequence: z.number().int(),
      n: z.number().int(),
      ...addresses,
      value: z.string().nullable(),
      hex: z.string(),
    }),
  ),
  vout: z.array(z.object({ n: z.number().int(), value: z.string(), ...addresses, spent: z.boolean().nullable(), hex: z.string() })),
  value: z.string(),
  tokenTransfers: z.array(z.never()),
  bitcoinSpecific: z.object({
    version: z.number().int(),
    locktime: z.number().int(),
    size: z.number().int(),
    vsize: z.number().int(),
    weight: z.number().int(),
    hash: z.string(),
    valueIn: z.string().nullable(),
    hex: z.null(),
    miscJson: z.null(),
  }),
});

const solanaTx = z.object({
  chainFamily: z.literal('Solana'),
  ...txBase,
  value: z.null(),
  tokenTransfers: z.array(
    z.object({
      tokenAddress: z.string(),
      account: z.string().nullable(),
      owner: z.string().nullable(),
      decimals: z.number().int(),
      change: z.string(),
    }),
  ),
  // The transaction as the Solana stream's webhook shows it (engine/solana/body.ts), less what the envelope has.
  solanaSpecific: z.looseObject({ version: z.union([z.literal('legacy'), z.literal(0)]), isVote: z.boolean() }),
});

const blockBase = {
  chainId,
  hash: z.string(),
  previousBlockHash: z.string(),
  height: z.number().int(),
  time: z.number().int().nullable(),
  size: z.number().int().nullable(),
  txCount: z.number().int(),
  ...paging,
  meta: v1Meta,
};

/** GET /v1/chains/:chainAlias/blocks/:blockIdentifier: one envelope, the family's own fields apart. */
export const v1Block = z.discriminatedUnion('chainFamily', [
  z.object({
    chainFamily: z.literal('EVM'),
    ...blockBase,
    txs: z.array(evmTx),
    evmSpecific: blockFieldsAnswer.omit({ transaction_count: true }),
  }),
  z.object({
    chainFamily: z.literal('Bitcoin'),
    ...blockBase,
    txs: z.array(bitcoinTx),
    bitcoinSpecific: z.object({
      bits: z.string(),
      chainwork: z.null(),
      difficulty: z.number(),
      merkleRoot: z.string(),
      miner: z.null(),
      nonce: z.number().int(),
      version: z.number().int(),
      strippedSize: z.number().int(),
      weight: z.number().int(),
      witnessCommitment: z.string().nullable(),
    }),
  }),
  z.object({
    chainFamily: z.literal('Solana'),
    ...blockBase,
    txs: z.array(solanaTx),
    solanaSpecific: z.object({ slot: z.number().int(), parentSlot: z.number().int(), blockHeight: z.number().int().nullable() }),
  }),
]);

/** GET /v1/chains/:chainAlias/transactions/:txHash. */
export const v1Transaction = z.discriminatedUnion('chainFamily', [
  evmTx.extend({ meta: v1Meta }),
  bitcoinTx.extend({ meta: v1Meta }),
  solanaTx.extend({ meta: v1Meta }),
]);
