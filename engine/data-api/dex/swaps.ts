import { z } from 'zod';
import { factoryOf } from '../../chains/pricing.js';
import { pos, posAt } from '../../evm/store.js';
import type { TokenInfo } from '../../evm/token-metadata.js';
import { ApiError, badRequest } from '../../errors.js';
import type { Kv } from '../../ports.js';
import { rangePage } from '../../page.js';
import { headBounds, type BlockRangeQuery } from '../common/block-times.js';
import { baseIsToken0 } from './index/swap-candles.js';
import type { DataDeps } from '../common/deps.js';
import { poolKey, poolRowsPrefix, tokenSwapsPrefix, walletSwapsPrefix, type PoolRow, type SwapRow } from './index/keys.js';
import { formatted } from '../common/values.js';
import { metadata } from '../common/node-reads.js';
import { blockNumber, cursor, date, evmAddress, limit, order, poolAddress } from '../common/params.js';
import { decimal, div, mul, priceReader, toNumber, type PriceReader, type Ratio } from './index/prices.js';
import { indexedHead, pageBlocks } from '../common/pages.js';
import { offChain, pageAnswer } from '../common/answer-parts.js';

/**
 * The swap lists of the Data API, one piece of code for the three (data-api-notes.md §2, §3):
 * - GET /wallets/:address/swaps: the swaps the wallet sent (it is their transaction's sender), from `dexWalletSwaps`;
 * - GET /erc20/:address/swaps: the swaps of the token in any of its pools, from `dexTokenSwaps`;
 * - GET /pairs/:address/swaps: one pool's swaps, its own `dexSwaps` rows.
 * Newest first unless asked. Wallet and token items are the hosted service's `swapsByWalletAddressResult`, pair
 * items its `swapsByPairAddressResult` under the pair's own fields. Each swap is one pool's Swap log: a router's
 * multi-hop swap is one item per hop. Base and quote: the quote token is the pool's token that routes to USD (a
 * stablecoin, the wrapped native token, a whitelisted token; index/swap-candles.ts's rule), the base the other; a buy takes
 * the base token out of the pool. A token's list is the asked token's trades, as its analytics counts them: the asked
 * token is the base (a buy took it out of the pool, even when it is WETH or a stablecoin), the pool's other token the
 * quote, and the pair label reads base/quote. The trade's value is the leg of the token that routes to USD whichever
 * list it is in. The USD fields are the tokens' prices at the swap's block (null without one).
 * Labels, entities, logos and `subCategory` are off-chain or unpublished heuristics: null.
 */

const TYPES = ['buy', 'sell'] as const;
/** The pair list's types as the reference names them: liquidity changes are not indexed, so asking only for them answers nothing. */
const PAIR_TYPES = [...TYPES, 'addLiquidity', 'removeLiquidity'] as const;
/**
 * Swaps a filtered page reads at most (the filters are read from each swap's rows): past them the page is short and
 * its cursor goes on, so a bot's million swaps never hold one request.
 */
const MAX_SCAN = 5_000;
type SwapType = (typeof TYPES)[number];

/** The parameters every swap list takes (the reference's camelCase names). */
const listParams = {
  fromBlock: blockNumber.optional(),
  toBlock: blockNumber.optional(),
  fromDate: date.optional(),
  toDate: date.optional(),
  limit: limit(),
  order,
  cursor,
};
const typesOf = <T extends readonly [string, ...string[]]>(types: T) => z.array(z.enum(types, types.join(' or '))).default([]);

export const walletSwapsQuery = z.object({
  address: evmAddress,
  tokenAddress: evmAddress.optional(),
  ...listParams,
  transactionTypes: typesOf(TYPES),
});
export const tokenSwapsQuery = z.object({ address: evmAddress, ...listParams, transactionTypes: typesOf(TYPES) });
export const pairSwapsQuery = z.object({ address: poolAddress, ...listParams, transactionTypes: typesOf(PAIR_TYPES) });

/** A token of a swap (the reference's TokenTransactionTokenMetadata): the amount as a positive decimal, USD at the swap's block. */
const swapToken = z.object({
  address: z.string(),
  name: z.string(),
  symbol: z.string(),
  logo: offChain,
  amount: z.string(),
  usdPrice: z.number().nullable(),
  usdAmount: z.number().nullable(),
});
/** The fields every list's item starts with. */
const swapItem = z.object({
  transactionHash: z.string(),
  transactionIndex: z.number().int(),
  transactionType: z.enum(TYPES),
  blockTimestamp: z.string(),
  blockNumber: z.number().int(),
  subCategory: offChain,
  walletAddress: z.string().meta({ description: "The transaction's sender" }),
});
const priceFields = {
  baseQuotePrice: z.string().nullable().meta({ description: 'Quote tokens paid or received per base token' }),
  totalValueUsd: z
    .number()
    .nullable()
    .meta({ description: "The trade's value: its leg of the token that routes to USD, at the swap's block" }),
};
/** A wallet or token list's item: the reference's swapsByWalletAddressResult. */
const tradeAnswer = swapItem.extend({
  walletAddressLabel: offChain,
  entity: offChain,
  entityLogo: offChain,
  pairAddress: z.string(),
  pairLabel: z.string(),
  exchangeAddress: z.string().meta({ description: "The pool's factory (a V4 pool: its PoolManager)" }),
  exchangeName: z.string().nullable(),
  exchangeLogo: offChain,
  bought: swapToken,
  sold: swapToken,
  ...priceFields,
});
/** GET /wallets/:address/swaps and GET /erc20/:address/swaps. */
export const tradesAnswer = pageAnswer(tradeAnswer);
/** A pair's token: its price at the indexed head (amounts belong to swaps). */
const pairToken = swapToken.extend({ amount: z.null(), usdAmount: z.null() });
/** GET /pairs/:address/swaps: the reference's swapsByPairAddress, its items swapsByPairAddressResult. */
export const pairSwapsAnswer = z.object({
  page: z.number().int(),
  pageSize: z.number().int(),
  cursor: z.string().nullable(),
  exchangeAddress: z.string(),
  exchangeName: z.string().nullable(),
  exchangeLogo: offChain,
  pairLabel: z.string(),
  pairAddress: z.string(),
  baseToken: pairToken,
  quoteToken: pairToken,
  result: z.array(
    swapItem.extend({
      baseTokenAmount: z.string(),
      quoteTokenAmount: z.string(),
      baseTokenPriceUsd: z.number().nullable(),
      quoteTokenPriceUsd: z.number().nullable(),
      ...priceFields,
    }),
  ),
});
type TradesAnswer = z.infer<typeof tradesAnswer>;

type ListQuery = Omit<z.output<typeof tokenSwapsQuery>, 'transactionTypes'> & { transactionTypes: readonly string[] };

/** Where a list's swaps are: an index whose entries name the pool (a wallet's, a token's), or one pool's own rows. */
type Source =
  | { table: 'dexWalletSwaps'; prefix: string }
  | { table: 'dexTokenSwaps'; prefix: string; token: string }
  | { table: 'dexSwaps'; prefix: string; pool: string };

/** One indexed swap. */
interface Seen {
  pool: string;
  row: PoolRow;
  swap: SwapRow;
  blockNumber: number;
  /** The list's base token: the asked token in a token's list, else the pool's base (index/swap-candles.ts's rule). */
  baseIs0: boolean;
  /** The pool's quote token by that rule (the one that routes to USD): the trade's value is its leg. */
  usdIs0: boolean;
  /** The token the pool paid out (its balance fell): the one the trader bought. */
  boughtIs0: boolean;
  type: SwapType;
}

/** An entry of a list's source read with its pool and swap rows; undefined when either is gone. */
function seen(
  kv: Kv,
  chain: string,
  reader: Pick<PriceReader, 'role'>,
  poolRow: (pool: string) => PoolRow | undefined,
  source: Source,
  key: string,
  value: string | SwapRow,
): Seen | undefined {
  const { blockNumber, logIndex } = posAt(key);
  const pool = source.table === 'dexSwaps' ? source.pool : (value as string);
  const swap =
    source.table === 'dexSwaps'
      ? (value as SwapRow)
      : kv.get<SwapRow>('dexSwaps', poolRowsPrefix(chain, pool) + pos(blockNumber, logIndex));
  const row = poolRow(pool);
  if (row === undefined || swap === undefined) return undefined;
  const usdIs0 = !baseIsToken0(reader, row);
  // A token's list sees each swap as the asked token's trade, as analytics counts it: a buy took it out of the pool.
  const baseIs0 = source.table === 'dexTokenSwaps' ? row[1] === source.token : !usdIs0;
  const boughtIs0 = BigInt(swap[3]) < 0n;
  return { pool, row, swap, blockNumber, baseIs0, usdIs0, boughtIs0, type: boughtIs0 === baseIs0 ? 'buy' : 'sell' };
}

/** One leg (bought or sold) of a swap: its whole amount (positive) and its USD value at the swap's block (null without a price). */
function legOf(reader: Pick<PriceReader, 'valueUsd'>, s: Seen, is0: boolean, decimals: number) {
  const token = is0 ? s.row[1] : s.row[2];
  const raw = BigInt(s.swap[is0 ? 3 : 4]);
  const whole: Ratio = { num: raw < 0n ? -raw : raw, den: 10n ** BigInt(decimals) };
  const usd = reader.valueUsd(token, s.blockNumber);
  return { token, whole, usd, value: usd === null ? null : mul(whole, usd) };
}
type Leg = ReturnType<typeof legOf>;

/**
 * A swap's bought and sold legs, and the trade's value: the leg of the pool's token that routes to USD, else the
 * other leg (null when neither is priced). What the lists answer and what profit and loss counts (crosschain/pnl.ts).
 */
function legs(reader: Pick<PriceReader, 'valueUsd'>, s: Seen, decimalsOf: (token: string) => number) {
  const bought = legOf(reader, s, s.boughtIs0, decimalsOf(s.boughtIs0 ? s.row[1] : s.row[2]));
  const sold = legOf(reader, s, !s.boughtIs0, decimalsOf(s.boughtIs0 ? s.row[2] : s.row[1]));
  const [usd, other] = s.boughtIs0 === s.usdIs0 ? [bought, sold] : [sold, bought];
  return { bought, sold, value: usd.value ?? other.value };
}

/** A leg in the reference's TokenTransactionTokenMetadata: the amount as a positive decimal, USD at the swap's block. */
const legItem = (l: Leg, info: TokenInfo) => ({
  address: l.token,
  name: info.name,
  symbol: info.symbol,
  logo: null,
  amount: formatted(l.whole.num, info.decimals),
  usdPrice: l.usd === null ? null : toNumber(l.usd),
  usdAmount: l.value === null ? null : toNumber(l.value),
});

const pairLabel = (base: { token: string; info: TokenInfo }, quote: { token: string; info: TokenInfo }): string =>
  `${base.info.symbol || base.token}/${quote.info.symbol || quote.token}`;

/** A swap with its legs valued: what each list's item is made of. */
async function priced(reader: PriceReader, s: Seen, infoOf: (token: string) => Promise<TokenInfo>, iso: string) {
  const [info0, info1] = await Promise.all([infoOf(s.row[1]), infoOf(s.row[2])]);
  const infos = new Map([
    [s.row[1], info0],
    [s.row[2], info1],
  ]);
  const { bought: b, sold: o, value } = legs(reader, s, (token) => infos.get(token)!.decimals ?? 0);
  const withInfo = (l: Leg) => ({ ...l, info: infos.get(l.token)!, item: legItem(l, infos.get(l.token)!) });
  const [bought, sold] = [withInfo(b), withInfo(o)];
  const [base, quote] = s.boughtIs0 === s.baseIs0 ? [bought, sold] : [sold, bought];
  return {
    s,
    iso,
    bought,
    sold,
    base,
    quote,
    // The execution price: quote tokens paid or received per base token.
    baseQuotePrice: base.whole.num === 0n ? null : decimal(div(quote.whole, base.whole), 18),
    totalValueUsd: value === null ? null : toNumber(value),
  };
}
type Priced = Awaited<ReturnType<typeof priced>>;

/** The fields every list's item starts with. */
const swapFields = (p: Priced) => ({
  transactionHash: p.s.swap[0],
  transactionIndex: p.s.swap[1],
  transactionType: p.s.type,
  blockTimestamp: p.iso,
  blockNumber: p.s.blockNumber,
  subCategory: null,
  walletAddress: p.s.swap[2],
});

/** A wallet or token list's item: the reference's swapsByWalletAddressResult. */
const tradeItem = (deps: DataDeps, chain: string) => (p: Priced) => ({
  ...swapFields(p),
  walletAddressLabel: null,
  entity: null,
  entityLogo: null,
  pairAddress: p.s.pool,
  pairLabel: pairLabel(p.base, p.quote),
  exchangeAddress: p.s.row[3],
  exchangeName: factoryOf(deps.pricing?.(chain), p.s.row[3])?.name ?? null,
  exchangeLogo: null,
  bought: p.bought.item,
  sold: p.sold.item,
  baseQuotePrice: p.baseQuotePrice,
  totalValueUsd: p.totalValueUsd,
});

/** A pair list's item: the reference's swapsByPairAddressResult. */
const pairItem = (p: Priced) => ({
  ...swapFields(p),
  baseTokenAmount: p.base.item.amount,
  quoteTokenAmount: p.quote.item.amount,
  baseTokenPriceUsd: p.base.item.usdPrice,
  quoteTokenPriceUsd: p.quote.item.usdPrice,
  baseQuotePrice: p.baseQuotePrice,
  totalValueUsd: p.totalValueUsd,
});

/**
 * A page of a list's swaps, valued: `keep` filters beyond the transaction types (the wallet list's token). The
 * cursor names the list by `name` and the query (dates, not the blocks they come to: a date past the head moves
 * with each block). Empty when the chain has no pricing entry (the DEX index holds nothing of it).
 */
async function swapPage(
  deps: DataDeps,
  chain: string,
  head: number,
  reader: PriceReader | undefined,
  name: string,
  q: ListQuery,
  source: Source,
  keepAlso?: { by: string | undefined; keep: (s: Seen) => boolean },
) {
  const bounds = headBounds(deps.kv, chain, head, {
    from_block: q.fromBlock,
    to_block: q.toBlock,
    from_date: q.fromDate,
    to_date: q.toDate,
  });
  const types = new Set(q.transactionTypes);
  // Only types never indexed (the pair list's liquidity changes): nothing to read.
  const none = types.size > 0 && !TYPES.some((t) => types.has(t));
  if (reader === undefined || bounds === null || none) return { page: 0, cursor: null, swaps: [] };
  // A request reads each pool row once, and each entry once (the filter reads it, then the page).
  const pools = new Map<string, PoolRow | undefined>();
  const poolRow = (pool: string): PoolRow | undefined =>
    pools.has(pool) ? pools.get(pool) : pools.set(pool, deps.kv.get<PoolRow>('dexPools', poolKey(chain, pool))).get(pool);
  const entries = new Map<string, Seen | undefined>();
  const entry = (key: string, value: string | SwapRow): Seen | undefined =>
    entries.has(key) ? entries.get(key) : entries.set(key, seen(deps.kv, chain, reader, poolRow, source, key, value)).get(key);
  const keep = (value: string | SwapRow, key: string): boolean => {
    const s = entry(key, value);
    return s !== undefined && (keepAlso === undefined || keepAlso.keep(s)) && (types.size === 0 || types.has(s.type));
  };
  // The wallet list's cursors keep the form they had before the other lists (its filter last among the query's), so cursors already handed out still page.
  const list = `${name} ${q.order} ${[q.fromBlock, q.toBlock, q.fromDate, q.toDate, ...(keepAlso === undefined ? [] : [keepAlso.by])].join(',')} ${[...types].join(',')}`;
  const page = rangePage<string | SwapRow>(deps.kv, source.table, source.prefix, {
    list,
    limit: q.limit,
    reverse: q.order === 'DESC',
    cursor: q.cursor,
    ...bounds,
    keep,
    maxScan: MAX_SCAN,
  });
  const rows = page.rows.flatMap(({ key, value }) => entry(key, value) ?? []);
  // A page's swaps share a few tokens: each token's metadata is read once.
  const infos = new Map<string, Promise<TokenInfo>>();
  const infoOf = (token: string): Promise<TokenInfo> => infos.get(token) ?? infos.set(token, metadata(deps, chain, token)).get(token)!;
  const block = pageBlocks(deps, chain);
  return {
    page: page.page,
    cursor: page.cursor,
    swaps: await Promise.all(rows.map((s) => priced(reader, s, infoOf, block(s.blockNumber).iso))),
  };
}

async function readerAt(deps: DataDeps, chain: string) {
  const head = await indexedHead(deps, chain);
  return { head, reader: priceReader(deps, chain, head) };
}

export async function walletSwaps(deps: DataDeps, chain: string, q: z.output<typeof walletSwapsQuery>): Promise<TradesAnswer> {
  const { head, reader } = await readerAt(deps, chain);
  const token = q.tokenAddress;
  const ofToken = { by: token, keep: (s: Seen): boolean => token === undefined || s.row[1] === token || s.row[2] === token };
  const p = await swapPage(
    deps,
    chain,
    head,
    reader,
    'wallet-swaps',
    q,
    { table: 'dexWalletSwaps', prefix: walletSwapsPrefix(chain, q.address) },
    ofToken,
  );
  return { page: p.page, page_size: q.limit, cursor: p.cursor, result: p.swaps.map(tradeItem(deps, chain)) };
}

export async function tokenSwaps(deps: DataDeps, chain: string, q: z.output<typeof tokenSwapsQuery>): Promise<TradesAnswer> {
  const { head, reader } = await readerAt(deps, chain);
  const p = await swapPage(deps, chain, head, reader, 'token-swaps', q, {
    table: 'dexTokenSwaps',
    prefix: tokenSwapsPrefix(chain, q.address),
    token: q.address,
  });
  return { page: p.page, page_size: q.limit, cursor: p.cursor, result: p.swaps.map(tradeItem(deps, chain)) };
}

/** A pair's swaps under its own fields (exchange, label, base and quote tokens with their USD price at the head); an unknown pair is a 404, as the hosted service answers. */
export async function pairSwaps(
  deps: DataDeps,
  chain: string,
  q: z.output<typeof pairSwapsQuery>,
): Promise<z.infer<typeof pairSwapsAnswer>> {
  const { head, reader } = await readerAt(deps, chain);
  const row = deps.kv.get<PoolRow>('dexPools', poolKey(chain, q.address));
  if (row === undefined || reader === undefined)
    throw new ApiError(404, `${q.address} is no DEX pool this server indexes on chain ${chain} (a pool of a factory in CHAINPOST_PRICING)`);
  const p = await swapPage(deps, chain, head, reader, 'pair-swaps', q, {
    table: 'dexSwaps',
    prefix: poolRowsPrefix(chain, q.address),
    pool: q.address,
  });
  const baseIs0 = baseIsToken0(reader, row);
  // The pair's tokens: amounts belong to swaps, so only the price (at the head) is the pair's.
  const side = async (token: string) => {
    const [info, usd] = await Promise.all([metadata(deps, chain, token), reader.valueUsd(token, head)]);
    return {
      token,
      info,
      item: {
        address: token,
        name: info.name,
        symbol: info.symbol,
        logo: null,
        amount: null,
        usdPrice: usd === null ? null : toNumber(usd),
        usdAmount: null,
      },
    };
  };
  const [base, quote] = await Promise.all([side(baseIs0 ? row[1] : row[2]), side(baseIs0 ? row[2] : row[1])]);
  return {
    page: p.page,
    pageSize: q.limit,
    cursor: p.cursor,
    exchangeAddress: row[3],
    exchangeName: factoryOf(deps.pricing?.(chain), row[3])?.name ?? null,
    exchangeLogo: null,
    pairLabel: pairLabel(base, quote),
    pairAddress: q.address,
    baseToken: base.item,
    quoteToken: quote.item,
    result: p.swaps.map(pairItem),
  };
}

/**
 * A swap as profit and loss counts it (engine/crosschain/pnl.ts): who sent it, the tokens bought and sold in whole
 * units, and the trade's value in USD at its block, exact (the lists' totalValueUsd); null when neither leg is priced.
 */
export interface Trade {
  wallet: string;
  blockNumber: number;
  bought: { token: string; amount: Ratio };
  sold: { token: string; amount: Ratio };
  valueUsd: Ratio | null;
}

/** Swaps one profit-and-loss read takes at most per chain: past them it is refused, naming the caller's field (narrow the window). */
export const MAX_TRADES = 20_000;

/** What a read past MAX_TRADES is refused with: the parameter to blame and what to do instead (default: narrow it). */
export interface Blame {
  field: string;
  hint?: string;
}

/**
 * Every swap of a wallet (the transactions it sent) or of a token, oldest first, within `range` (blocks or dates, as
 * the lists take them), valued at their blocks; with the price reader at the indexed head for current prices. No
 * swaps when the chain has no pricing entry (the DEX index holds nothing of it).
 */
export async function tradesOf(
  deps: DataDeps,
  chain: string,
  of: { wallet: string } | { token: string },
  range: BlockRangeQuery,
  blame: Blame,
  max = MAX_TRADES,
): Promise<{ trades: Trade[]; reader: PriceReader | undefined; head: number }> {
  const { head, reader } = await readerAt(deps, chain);
  const bounds = headBounds(deps.kv, chain, head, range);
  if (reader === undefined || bounds === null) return { trades: [], reader, head };
  const source: Source =
    'wallet' in of
      ? { table: 'dexWalletSwaps', prefix: walletSwapsPrefix(chain, of.wallet) }
      : { table: 'dexTokenSwaps', prefix: tokenSwapsPrefix(chain, of.token), token: of.token };
  const entries = deps.kv.range<string>(source.table, {
    start: source.prefix + (bounds.low ?? ''),
    end: source.prefix + bounds.high,
    limit: max + 1,
  });
  if (entries.length > max)
    throw badRequest(blame.field, `more than ${max} swaps in the window on chain ${chain}: ${blame.hint ?? 'narrow it'}`);
  const rows = new Map<string, PoolRow | undefined>();
  const poolRow = (pool: string): PoolRow | undefined =>
    rows.has(pool) ? rows.get(pool) : rows.set(pool, deps.kv.get<PoolRow>('dexPools', poolKey(chain, pool))).get(pool);
  const swaps = entries.flatMap(({ key, value }) => seen(deps.kv, chain, reader, poolRow, source, key, value) ?? []);
  const decimals = new Map<string, number>();
  await Promise.all(
    [...new Set(swaps.flatMap((s) => [s.row[1], s.row[2]]))].map(async (t) => void decimals.set(t, await reader.tokenDecimals(t))),
  );
  const trades = swaps.map((s): Trade => {
    const { bought, sold, value } = legs(reader, s, (t) => decimals.get(t)!);
    return {
      wallet: s.swap[2],
      blockNumber: s.blockNumber,
      bought: { token: bought.token, amount: bought.whole },
      sold: { token: sold.token, amount: sold.whole },
      valueUsd: value,
    };
  });
  return { trades, reader, head };
}
