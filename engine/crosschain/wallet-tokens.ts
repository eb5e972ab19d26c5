import { formatUnits } from 'viem/utils';
import { z } from 'zod';
import { balanceOf } from '../bitcoin/address-index.js';
import type { Chain } from '../chains/registry.js';
import type { DataDeps } from '../data-api/common/deps.js';
import { pricedBalances } from '../data-api/erc20/balances.js';
import { bool, cursor, evmAddress, limit } from '../data-api/common/params.js';
import { v1PriceParams } from '../data-api/dex/index/usd.js';
import { validate } from '../schema.js';
import { v1ChainId, type ResolvedChains } from './chains.js';
import { listOf, nextOffset, readOffset } from './cursor.js';
import { acrossChains, allFailed, nodeReachable, syncedAt, v1Meta, type FailedChain } from './fan-out.js';
import { walletTokenPnl } from './pnl.js';
import { sparklineOf, type PricePointV1, type SeriesRead } from './price-series.js';
import type { v1TokenRow } from './responses.js';
import { evmToken, wrappedBtc } from './token-price.js';
import { addressType, bitcoinAddresses, walletParam, walletText, type Wallet } from './wallet.js';

/**
 * GET /v1/wallets/:walletAddressOrPublicKey/tokens: an EVM wallet's balances (native first, then its ERC-20
 * tokens, priced) on each chain asked, made by the Data API's GET /wallets/:address/tokens code
 * (pricedBalances); a Bitcoin address's or extended key's BTC, one row per derived address that holds any
 * (`derivedAddress`, `derivedPath`): together the wallet's balance. Rows of all chains are paged together.
 */

export const tokensQuery = z.object({
  walletAddressOrPublicKey: walletParam(true),
  ...v1PriceParams,
  excludeSpam: bool(false),
  excludeUnverifiedContracts: bool(false),
  excludeNative: bool(false),
  includeSparklines: bool(false),
  // Each EVM token row gets `pnl`: the token's figures of /v1/wallets/:walletAddress/pnl over all the wallet's swaps (null: none).
  includePnl: bool(false),
  limit: limit(100),
  cursor,
});
export type TokensQuery = z.output<typeof tokensQuery>;
/** `tokenAddresses`, read as a list apart from the query (any array form). */
export const tokenAddressesQuery = z.object({ tokenAddresses: z.array(evmAddress).max(100, 'at most 100 addresses').default([]) });

/** A row of the answer (responses.ts). */
export type V1TokenRow = z.output<typeof v1TokenRow>;

const num = (v: string | null): number | null => (v === null ? null : Number(v));

/** An EVM chain's rows: the Data API's priced balances under the cross-chain names. */
async function evmRows(deps: DataDeps, chain: Chain, address: string, q: TokensQuery, only: readonly string[]): Promise<V1TokenRow[]> {
  const { all } = await pricedBalances(
    deps,
    chain.key,
    {
      address,
      to_block: undefined,
      exclude_spam: q.excludeSpam,
      exclude_unverified_contracts: q.excludeUnverifiedContracts,
      exclude_native: q.excludeNative,
      min_pair_side_liquidity_usd: q.liquidityThreshold,
      max_token_inactivity: q.maxTokenInactivity,
    },
    only,
  );
  const pnl = q.includePnl ? await walletTokenPnl(deps, chain, address) : undefined;
  return all.map((i) => ({
    ...(pnl === undefined ? {} : { pnl: i.native_token ? null : (pnl.get(i.token_address.toLowerCase()) ?? null) }),
    tokenAddress: i.token_address,
    balanceRaw: i.balance,
    chainId: v1ChainId(chain),
    name: i.name,
    symbol: i.symbol,
    decimals: i.decimals,
    logo: null,
    possibleSpam: i.possible_spam,
    verifiedContract: i.verified_contract,
    balance: i.balance_formatted,
    securityScore: null,
    portfolioPercentage: null,
    usdPrice: num(i.usd_price),
    usdPrice24hrUsdChange: num(i.usd_price_24hr_usd_change),
    usdPrice24hrPercentChange: num(i.usd_price_24hr_percent_change),
    usdValue: i.usd_value,
    usdValue24hrUsdChange: num(i.usd_value_24hr_usd_change),
    nativeToken: i.native_token,
    derivedAddress: null,
    derivedPath: null,
  }));
}

/**
 * Bitcoin's rows: the balance (sum of unspent outputs) of the address, or of each derived address holding any,
 * priced as wrapped bitcoin on the EVM chains followed (token-price.ts), with the query's price options; the token
 * priced is put in `sources` under the chain's id, where the rows' sparkline is read. The token filters are EVM's:
 * Bitcoin ignores them, as the Universal API documents (data-api-notes §4.1).
 */
async function bitcoinRows(
  deps: DataDeps,
  chain: Chain,
  wallet: Exclude<Wallet, { kind: 'evm' }>,
  gap: number,
  q: TokensQuery,
  ctx: { evmChains: readonly Chain[]; failed: FailedChain[]; sources: Map<string, SeriesRead> },
): Promise<V1TokenRow[]> {
  nodeReachable(deps, chain);
  const held = bitcoinAddresses(deps.kv, chain.key, wallet, gap)
    .map((a) => ({ ...a, sats: balanceOf(deps.kv, chain.key, a.address) }))
    // One address answers its balance even when empty; a key answers the addresses that hold something.
    .filter((a) => wallet.kind === 'bitcoin' || a.sats > 0);
  const btc = held.length === 0 ? undefined : await wrappedBtc(deps, ctx.evmChains, q);
  ctx.failed.push(...(btc?.failed ?? []));
  const price = btc?.best?.price;
  ctx.sources.set(v1ChainId(chain), btc?.best === undefined ? undefined : { chain: btc.best.chain, token: btc.best.address });
  return held.map((a) => {
    const balance = formatUnits(BigInt(a.sats), 8);
    const usdValue = price === undefined ? null : price.usdPrice * Number(balance);
    return {
      tokenAddress: null,
      balanceRaw: String(a.sats),
      chainId: v1ChainId(chain),
      name: 'Bitcoin',
      symbol: 'BTC',
      decimals: 8,
      logo: null,
      possibleSpam: false,
      verifiedContract: false,
      balance,
      securityScore: null,
      portfolioPercentage: null,
      usdPrice: price?.usdPrice ?? null,
      usdPrice24hrUsdChange: price?.usdPrice24hrUsdChange ?? null,
      usdPrice24hrPercentChange: price?.usdPrice24hrPercentChange ?? null,
      usdValue,
      usdValue24hrUsdChange:
        usdValue === null || price?.usdPrice24hrUsdChange == null ? null : price.usdPrice24hrUsdChange * Number(balance),
      nativeToken: true,
      derivedAddress: wallet.kind === 'xpub' ? a.address : null,
      derivedPath: a.path,
    };
  });
}

export interface TokensContext {
  resolved: ResolvedChains;
  evmChains: readonly Chain[];
  bitcoinGap: number;
  /** Service time, Unix seconds (a sparkline's end while nothing is indexed). */
  now: number;
}

/** `q`: the query validated (its wallet decided the chains of `ctx.resolved`); `tokenAddresses`: the list as given. */
export async function v1WalletTokens(deps: DataDeps, q: TokensQuery, tokenAddresses: readonly string[], ctx: TokensContext) {
  const wallet = q.walletAddressOrPublicKey;
  const only = validate(tokenAddressesQuery, { tokenAddresses }, 'query').tokenAddresses;
  // The cursor is of the wallet, the filters and the chains: replayed on another of them, it is refused.
  const list = listOf(
    'wallet-tokens',
    { ...q, walletAddressOrPublicKey: walletText(wallet) },
    only,
    ctx.resolved.chains.map((c) => c.key),
  );
  const start = readOffset(q.cursor, list);
  const extra: FailedChain[] = [];
  // Bitcoin's price source per chain id: the rows' price and their sparkline are one lookup.
  const sources = new Map<string, SeriesRead>();
  const { parts, failed } = await acrossChains(ctx.resolved.chains, (chain) =>
    wallet.kind === 'evm'
      ? evmRows(deps, chain, wallet.address, q, only)
      : bitcoinRows(deps, chain, wallet, ctx.bitcoinGap, q, { evmChains: ctx.evmChains, failed: extra, sources }),
  );
  const rows = parts.flatMap((p) => p.value);
  const total = rows.reduce((s, r) => s + (r.usdValue ?? 0), 0);
  for (const r of rows) r.portfolioPercentage = r.usdValue === null || total === 0 ? null : (100 * r.usdValue) / total;
  const page = rows.slice(start, start + q.limit);
  if (q.includeSparklines) {
    // One series per token, however many rows hold it (an xpub's addresses).
    const series = new Map<string, Promise<PricePointV1[]>>();
    for (const r of page) {
      const chain = ctx.resolved.chains.find((c) => v1ChainId(c) === r.chainId)!;
      const token = r.nativeToken ? 'native' : r.tokenAddress!;
      const key = `${r.chainId}/${token}`;
      const read = (): SeriesRead => (chain.family === 'bitcoin' ? sources.get(r.chainId) : { chain, token: evmToken(deps, chain, token) });
      if (!series.has(key))
        series.set(key, r.usdPrice === null ? Promise.resolve([]) : sparklineOf(deps, read(), '7d', ctx.now).then((s) => s.points));
      r.sparkline = await series.get(key)!;
    }
  }
  return {
    address: walletText(wallet),
    addressType: addressType(wallet),
    cursor: nextOffset(list, start, q.limit, rows.length),
    result: page,
    meta: v1Meta(ctx.resolved, allFailed(failed, extra), syncedAt(deps)),
  };
}
