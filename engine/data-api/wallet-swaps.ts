import { z } from 'zod';
import { factoryOf } from '../chains/pricing.js';
import { pos, posAt } from '../evm/store.js';
import type { TokenInfo } from '../evm/token-metadata.js';
import type { Kv } from '../ports.js';
import { rangePage } from '../page.js';
import { headBounds } from './block-times.js';
import { baseIsToken0 } from './swap-candles.js';
import type { DataDeps } from './deps.js';
import { poolKey, poolRowsPrefix, walletSwapsPrefix, type PoolRow, type SwapRow } from './dex-index.js';
import { formatted, indexedHead, pageBlocks } from './erc20-common.js';
import { metadata } from './nft-transfers.js';
import { blockNumber, cursor, date, evmAddress, limit, order } from './params.js';
import { decimal, div, mul, priceReader, toNumber, type PriceReader, type Ratio } from './prices.js';

/**
 * GET /wallets/:address/swaps: the swaps the wallet sent (it is their transaction's sender), from the
 * `dexWalletSwaps` index, newest first unless asked, in the hosted service's `swapsByWalletAddressResult` shape
 * (data-api-notes.md §2, §3). Each swap is one pool's Swap log: a router's multi-hop swap is one item per hop.
 * Base and quote: the quote token is the pool's token that routes to USD (a stablecoin, the wrapped native token,
 * a whitelisted token; swap-candles.ts's rule), the base the other; a buy takes the base token out of the pool. The USD
 * fields are the tokens' prices at the swap's block (null without one). Labels, entities, logos and `subCategory`
 * are off-chain or unpublished heuristics: null.
 */

const TYPES = ['buy', 'sell'] as const;
/**
 * Swaps a filtered page reads at most (tokenAddress and transactionTypes are read from each swap's rows): past them
 * the page is short and its cursor goes on, so a bot's million swaps never hold one request.
 */
const MAX_SCAN = 5_000;
type SwapType = (typeof TYPES)[number];

export const walletSwapsQuery = z.object({
  address: evmAddress,
  tokenAddress: evmAddress.optional(),
  fromBlock: blockNumber.optional(),
  toBlock: blockNumber.optional(),
  fromDate: date.optional(),
  toDate: date.optional(),
  transactionTypes: z.array(z.enum(TYPES, 'buy or sell')).default([]),
  limit: limit(),
  order,
  cursor,
});
type WalletSwapsQuery = z.output<typeof walletSwapsQuery>;

/** One indexed swap as the wallet saw it. */
interface Seen {
  pool: string;
  row: PoolRow;
  swap: SwapRow;
  blockNumber: number;
  baseIs0: boolean;
  /** The token the pool paid out (its balance fell): the one the wallet bought. */
  boughtIs0: boolean;
  type: SwapType;
}

/** A `dexWalletSwaps` entry read with its pool and swap rows; undefined when either is gone. */
function seen(kv: Kv, chain: string, reader: Pick<PriceReader, 'role'>, poolRow: (pool: string) => PoolRow | undefined, key: string, pool: string): Seen | undefined {
  const row = poolRow(pool);
  const { blockNumber, logIndex } = posAt(key);
  const swap = kv.get<SwapRow>('dexSwaps', poolRowsPrefix(chain, pool) + pos(blockNumber, logIndex));
  if (row === undefined || swap === undefined) return undefined;
  const baseIs0 = baseIsToken0(reader, row);
  const boughtIs0 = BigInt(swap[3]) < 0n;
  return { pool, row, swap, blockNumber, baseIs0, boughtIs0, type: boughtIs0 === baseIs0 ? 'buy' : 'sell' };
}

/** One leg (bought or sold) in the reference's TokenTransactionTokenMetadata: the amount as a positive decimal, USD at the swap's block. */
function leg(token: string, info: TokenInfo, raw: bigint, usd: Ratio | null) {
  const whole: Ratio = { num: raw < 0n ? -raw : raw, den: 10n ** BigInt(info.decimals ?? 0) };
  const value = usd === null ? null : mul(whole, usd);
  return {
    value,
    item: { address: token, name: info.name, symbol: info.symbol, logo: null, amount: formatted(whole.num, info.decimals), usdPrice: usd === null ? null : toNumber(usd), usdAmount: value === null ? null : toNumber(value) },
    whole,
  };
}

async function item(deps: DataDeps, chain: string, reader: PriceReader, wallet: string, s: Seen, infoOf: (token: string) => Promise<TokenInfo>, iso: string) {
  const [, token0, token1, factory] = s.row;
  const amounts = [BigInt(s.swap[3]), BigInt(s.swap[4])] as const;
  const side = (is0: boolean) => ({ token: is0 ? token0 : token1, raw: amounts[is0 ? 0 : 1] });
  const legOf = async (is0: boolean) => {
    const { token, raw } = side(is0);
    const [info, usd] = await Promise.all([infoOf(token), reader.valueUsd(token, s.blockNumber)]);
    return { token, info, ...leg(token, info, raw, usd) };
  };
  const [bought, sold] = await Promise.all([legOf(s.boughtIs0), legOf(!s.boughtIs0)]);
  const [base, quote] = s.boughtIs0 === s.baseIs0 ? [bought, sold] : [sold, bought];
  return {
    transactionHash: s.swap[0],
    transactionIndex: s.swap[1],
    transactionType: s.type,
    blockTimestamp: iso,
    blockNumber: s.blockNumber,
    subCategory: null,
    walletAddress: wallet,
    walletAddressLabel: null,
    entity: null,
    entityLogo: null,
    pairAddress: s.pool,
    pairLabel: `${base.info.symbol || base.token}/${quote.info.symbol || quote.token}`,
    exchangeAddress: factory,
    exchangeName: factoryOf(deps.pricing?.(chain), factory)?.name ?? null,
    exchangeLogo: null,
    bought: bought.item,
    sold: sold.item,
    // The execution price: quote tokens paid or received per base token.
    baseQuotePrice: base.whole.num === 0n ? null : decimal(div(quote.whole, base.whole), 18),
    // The trade's value: its quote leg (the token that routes to USD), else its base leg.
    totalValueUsd: quote.value !== null ? toNumber(quote.value) : base.value !== null ? toNumber(base.value) : null,
  };
}

export async function walletSwaps(deps: DataDeps, chain: string, q: WalletSwapsQuery) {
  const head = await indexedHead(deps, chain);
  const reader = priceReader(deps, chain, head);
  const bounds = headBounds(deps.kv, chain, head, { from_block: q.fromBlock, to_block: q.toBlock, from_date: q.fromDate, to_date: q.toDate });
  // No pricing entry: the DEX index holds nothing of the chain (and could not tell base from quote).
  if (reader === undefined || bounds === null) return { page: 0, page_size: q.limit, cursor: null, result: [] };
  // A request reads each pool row once, and each entry once (the filter reads it, then the page).
  const pools = new Map<string, PoolRow | undefined>();
  const poolRow = (pool: string): PoolRow | undefined => (pools.has(pool) ? pools.get(pool) : pools.set(pool, deps.kv.get<PoolRow>('dexPools', poolKey(chain, pool))).get(pool));
  const entries = new Map<string, Seen | undefined>();
  const entry = (key: string, pool: string): Seen | undefined => (entries.has(key) ? entries.get(key) : entries.set(key, seen(deps.kv, chain, reader, poolRow, key, pool)).get(key));
  const types = new Set(q.transactionTypes);
  const keep = (pool: string, key: string): boolean => {
    const s = entry(key, pool);
    return s !== undefined && (q.tokenAddress === undefined || s.row[1] === q.tokenAddress || s.row[2] === q.tokenAddress) && (types.size === 0 || types.has(s.type));
  };
  // The query names the list (dates, not the blocks they come to: a date past the head moves with each block).
  const list = `wallet-swaps ${q.order} ${[q.fromBlock, q.toBlock, q.fromDate, q.toDate, q.tokenAddress].join(',')} ${[...types].join(',')}`;
  const page = rangePage<string>(deps.kv, 'dexWalletSwaps', walletSwapsPrefix(chain, q.address), { list, limit: q.limit, reverse: q.order === 'DESC', cursor: q.cursor, ...bounds, keep, maxScan: MAX_SCAN });
  const rows = page.rows.flatMap(({ key, value }) => entry(key, value) ?? []);
  // A page's swaps share a few tokens: each token's metadata is read once.
  const infos = new Map<string, Promise<TokenInfo>>();
  const infoOf = (token: string): Promise<TokenInfo> => infos.get(token) ?? infos.set(token, metadata(deps, chain, token)).get(token)!;
  const block = pageBlocks(deps, chain);
  const result = await Promise.all(rows.map((s) => item(deps, chain, reader, q.address, s, infoOf, block(s.blockNumber).iso)));
  return { page: page.page, page_size: q.limit, cursor: page.cursor, result };
}
