import type { Clock } from '../../engine/clock.js';
import type { Config } from '../../engine/config/config.js';
import { findChain, type Chain, type ChainFamily } from '../../engine/chains/registry.js';
import { pathChain, resolveChains, type ResolvedChains } from '../../engine/crosschain/chains.js';
import { v1Pnl, v1PnlQuery, v1PnlSummary, v1PnlSummaryQuery } from '../../engine/crosschain/pnl.js';
import { blockPageQuery, v1Block, v1Transaction } from '../../engine/crosschain/chain-data.js';
import {
  topTraders,
  topTradersQuery,
  v1OhlcvQuery,
  v1PairOhlcv,
  v1PairSwaps,
  v1PairSwapsQuery,
  v1TokenSwaps,
  v1TokenSwapsQuery,
} from '../../engine/crosschain/trades.js';
import { sparkline, sparklineQuery, timeseries, timeseriesQuery } from '../../engine/crosschain/price-series.js';
import { BITCOIN, metaOf, v1PriceQuery, v1TokenPrice } from '../../engine/crosschain/token-price.js';
import * as answer from '../../engine/crosschain/responses.js';
import * as defiAnswer from '../../engine/crosschain/defi/responses.js';
import { walletAddresses } from '../../engine/bitcoin/xpub-wallet.js';
import { extendedKey } from '../../engine/bitcoin/stream.js';
import { validate } from '../../engine/schema.js';
import { z } from 'zod';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import { arrayParams, queryAndPath } from './data.js';
import { queryList, queryParams } from './query.js';
import { json, type Request, type Route, type RouteDoc } from './route.js';
import { tokenAddressesQuery, tokensQuery, v1WalletTokens } from '../../engine/crosschain/wallet-tokens.js';
import { historyQuery, v1WalletHistory } from '../../engine/crosschain/wallet-history.js';
import { insightQuery, v1WalletInsight } from '../../engine/crosschain/wallet-insight.js';
import { walletFamilies, type Wallet } from '../../engine/crosschain/wallet.js';
import {
  v1DefiPositions,
  v1DefiPositionsQuery,
  v1DefiProtocolPositions,
  v1DefiProtocolQuery,
  v1DefiProtocols,
  v1DefiSummary,
  v1DefiSummaryQuery,
  v1ProtocolsQuery,
} from '../../engine/crosschain/defi/wallet.js';

/** GET /v1/chains/:chainAlias/wallets/:publicKey/addresses: the key (the path's other part is the chain, resolved apart). */
const walletAddressesPath = z.object({ publicKey: extendedKey });

const ALL_FAMILIES: readonly ChainFamily[] = ['evm', 'bitcoin', 'solana'];

/** `chains`, which requestChains reads (any array form, or a comma list), beside the endpoint's own query: for the document. */
const CHAINS_QUERY = z.object({
  chains: z
    .array(z.string())
    .optional()
    .meta({ description: 'Chains: hex ids, names, aliases or all, mainnets, testnets; all the server follows when absent' }),
});
const withChains = (query: z.ZodType): z.ZodType => z.intersection(CHAINS_QUERY, query);

/** The document of a /v1 route: its query (path parameters included) and its answer. */
const doc = (query: z.ZodType | undefined, response: z.ZodType): RouteDoc => ({
  ...(query === undefined ? {} : { query }),
  responses: { 200: response },
});

/** The chains of a cross-chain request (`chains`, in any array form; none: all followed), resolved by engine/crosschain/chains.ts. */
export function requestChains(req: Request, followed: readonly string[], now: number, families = ALL_FAMILIES): ResolvedChains {
  return resolveChains(queryList(queryParams(req.query), 'chains'), { followed, families, now });
}

/** The cross-chain API (/v1): one request covers several chains, EVM, Bitcoin and Solana. `followed`: the chains this server follows; `config`: an xpub's gap (its addresses). */
export function crossChainRoutes(
  clock: Clock,
  followed: () => readonly string[],
  deps: DataDeps,
  config: Pick<Config, 'bitcoin'>,
): Route[] {
  const bitcoinGap = config.bitcoin.gap;
  // Bitcoin's price is read on EVM chains: it needs no Bitcoin node.
  const priceChain = (req: Request): Chain =>
    pathChain(req.params['chainAlias']!, { followed: [...followed(), BITCOIN.key], families: ['evm', 'bitcoin'], now: clock.now() });
  // PnL (DEX swaps) and DeFi (protocol contracts) are EVM's: Bitcoin or Solana asked is unsupported there.
  const evmOnly = (req: Request): ResolvedChains => requestChains(req, followed(), clock.now(), ['evm']);
  // tokenAddresses is a list.
  const pnlInput = (req: Request) => ({ ...queryAndPath(req), tokenAddresses: queryList(queryParams(req.query), 'tokenAddresses') });
  const evmChains = (): Chain[] => followed().flatMap((k) => (findChain(k)?.family === 'evm' ? [findChain(k)!] : []));
  const seconds = (): number => Math.floor(clock.now() / 1000);
  const get = (pattern: string, d: RouteDoc, handle: Route['handle']): Route => ({
    method: 'GET',
    pattern,
    area: 'crosschain',
    auth: 'key',
    doc: d,
    handle,
  });
  /**
   * A wallet endpoint: its query validated first (the wallet decides which chains can answer for it: its
   * family's), then its chains, then the answer.
   */
  const walletRoute = <Q>(
    pattern: string,
    schema: z.ZodType<Q>,
    wallet: (q: Q) => Wallet,
    d: RouteDoc,
    run: (q: Q, resolved: ResolvedChains, req: Request) => Promise<unknown>,
  ): Route =>
    get(pattern, d, async (req) => {
      const q = validate(schema, queryAndPath(req), 'query');
      return json(200, await run(q, requestChains(req, followed(), clock.now(), walletFamilies(wallet(q))), req));
    });
  // One chain's endpoints: chain data on any family the server follows, the DEX ones on an EVM chain.
  const oneChain = (
    families: readonly ChainFamily[],
    pattern: string,
    d: RouteDoc,
    run: (chain: Chain, req: Request) => Promise<unknown>,
  ): Route =>
    get(pattern, d, async (req) =>
      json(200, await run(pathChain(req.params['chainAlias']!, { followed: followed(), families, now: clock.now() }), req)),
    );
  const withTypes = (req: Request) => ({ ...queryAndPath(req), ...arrayParams(req, ['transactionTypes']) });
  return [
    walletRoute(
      '/v1/wallets/:walletAddressOrPublicKey/tokens',
      tokensQuery,
      (q) => q.walletAddressOrPublicKey,
      doc(withChains(z.intersection(tokensQuery, tokenAddressesQuery)), answer.v1WalletTokens),
      (q, resolved, req) =>
        v1WalletTokens(deps, q, queryList(queryParams(req.query), 'tokenAddresses'), {
          resolved,
          evmChains: evmChains(),
          bitcoinGap,
          now: seconds(),
        }),
    ),
    walletRoute(
      '/v1/wallets/:walletAddressOrPublicKey/history',
      historyQuery,
      (q) => q.walletAddressOrPublicKey,
      doc(withChains(historyQuery), answer.v1WalletHistory),
      (q, resolved) => v1WalletHistory(deps, q, resolved, bitcoinGap),
    ),
    walletRoute(
      '/v1/wallets/:walletAddress/insight',
      insightQuery,
      (q) => q.walletAddress,
      doc(withChains(insightQuery), answer.v1WalletInsight),
      (q, resolved) => v1WalletInsight(deps, q, resolved, { evmChains: evmChains(), bitcoinGap, now: seconds() }),
    ),
    get('/v1/wallets/:walletAddress/pnl', doc(withChains(v1PnlQuery), answer.v1Pnl), async (req) =>
      json(200, await v1Pnl(deps, evmOnly(req), pnlInput(req), seconds())),
    ),
    get('/v1/wallets/:walletAddress/pnl/summary', doc(withChains(v1PnlSummaryQuery), answer.v1PnlSummary), async (req) =>
      json(200, await v1PnlSummary(deps, evmOnly(req), queryAndPath(req), seconds())),
    ),
    get('/v1/defi/protocols', doc(withChains(v1ProtocolsQuery), defiAnswer.v1DefiProtocols), (req) =>
      json(200, v1DefiProtocols(deps, evmOnly(req), validate(v1ProtocolsQuery, queryAndPath(req), 'query'))),
    ),
    get('/v1/wallets/:walletAddress/defi/positions', doc(withChains(v1DefiPositionsQuery), defiAnswer.v1DefiPositions), async (req) =>
      json(200, await v1DefiPositions(deps, evmOnly(req), validate(v1DefiPositionsQuery, queryAndPath(req), 'query'))),
    ),
    get('/v1/wallets/:walletAddress/defi/summary', doc(withChains(v1DefiSummaryQuery), defiAnswer.v1DefiSummary), async (req) =>
      json(200, await v1DefiSummary(deps, evmOnly(req), validate(v1DefiSummaryQuery, queryAndPath(req), 'query'))),
    ),
    get(
      '/v1/wallets/:walletAddress/defi/:protocol/positions',
      doc(withChains(v1DefiProtocolQuery), defiAnswer.v1DefiProtocolPositions),
      async (req) =>
        json(200, await v1DefiProtocolPositions(deps, evmOnly(req), validate(v1DefiProtocolQuery, queryAndPath(req), 'query'))),
    ),
    oneChain(ALL_FAMILIES, '/v1/chains/:chainAlias/blocks/:blockIdentifier', doc(blockPageQuery, answer.v1Block), async (chain, req) => ({
      ...(await v1Block(deps, chain, queryAndPath(req))),
      meta: metaOf(deps, [chain]),
    })),
    // txHash is checked by its chain's family's pattern.
    oneChain(ALL_FAMILIES, '/v1/chains/:chainAlias/transactions/:txHash', doc(undefined, answer.v1Transaction), async (chain, req) => ({
      ...(await v1Transaction(deps, chain, queryAndPath(req))),
      meta: metaOf(deps, [chain]),
    })),
    oneChain(['evm'], '/v1/chains/:chainAlias/tokens/:tokenAddress/swaps', doc(v1TokenSwapsQuery, answer.v1TokenSwaps), (chain, req) =>
      v1TokenSwaps(deps, chain, withTypes(req)),
    ),
    oneChain(['evm'], '/v1/chains/:chainAlias/tokens/:tokenAddress/top-traders', doc(topTradersQuery, answer.v1TopTraders), (chain, req) =>
      topTraders(deps, chain, queryAndPath(req), seconds()),
    ),
    oneChain(['evm'], '/v1/chains/:chainAlias/pairs/:pairAddress/swaps', doc(v1PairSwapsQuery, answer.v1PairSwaps), (chain, req) =>
      v1PairSwaps(deps, chain, withTypes(req)),
    ),
    oneChain(['evm'], '/v1/chains/:chainAlias/pairs/:pairAddress/ohlcv', doc(v1OhlcvQuery, answer.v1PairOhlcv), (chain, req) =>
      v1PairOhlcv(deps, chain, queryAndPath(req)),
    ),
    get('/v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price', doc(v1PriceQuery, answer.v1Price), async (req) =>
      json(200, await v1TokenPrice(deps, priceChain(req), queryAndPath(req), evmChains())),
    ),
    get(
      '/v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price/timeseries',
      doc(timeseriesQuery, answer.v1Timeseries),
      async (req) => json(200, await timeseries(deps, priceChain(req), queryAndPath(req), evmChains(), seconds())),
    ),
    get('/v1/chains/:chainAlias/tokens/:tokenAliasOrTokenAddress/price/sparkline', doc(sparklineQuery, answer.v1Sparkline), async (req) =>
      json(200, await sparkline(deps, priceChain(req), queryAndPath(req), evmChains(), seconds())),
    ),
    oneChain(
      ['bitcoin'],
      '/v1/chains/:chainAlias/wallets/:publicKey/addresses',
      doc(walletAddressesPath, answer.v1XpubAddresses),
      async (chain, req) => {
        const { publicKey } = validate(walletAddressesPath, req.params, 'path');
        const addresses = walletAddresses(deps.kv, chain.key, publicKey, bitcoinGap).map(({ address, path, transfers }) => ({
          address,
          path,
          transfers,
        }));
        return { addresses, meta: metaOf(deps, [chain]) };
      },
    ),
  ];
}
