import type { z } from 'zod';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import { ohlcvAnswer, ohlcvQuery, pairCandles } from '../../engine/data-api/dex/candles.js';
import {
  pairAddress,
  pairAddressAnswer,
  pairAddressQuery,
  pairPrice,
  pairPriceAnswer,
  pairPriceQuery,
  pairReserves,
  reservesAnswer,
  reservesQuery,
  tokenPairs,
  tokenPairsAnswer,
  tokenPairsQuery,
} from '../../engine/data-api/dex/pairs.js';
import {
  tokenPrice,
  tokenPriceAnswer,
  tokenPriceQuery,
  tokenPrices,
  tokenPricesAnswer,
  tokenPricesBody,
  tokenPricesQuery,
} from '../../engine/data-api/dex/token-prices.js';
import { netWorth, netWorthAnswer, netWorthQuery } from '../../engine/data-api/erc20/balances.js';
import { analyticsAnswer, analyticsQuery, tokenAnalytics } from '../../engine/data-api/scores/analytics.js';
import {
  historicalScoreAnswer,
  historicalScoreQuery,
  historicalTokenScore,
  scoreAnswer,
  scoreQuery,
  tokenScore,
} from '../../engine/data-api/scores/score.js';
import {
  pairSwaps,
  pairSwapsAnswer,
  pairSwapsQuery,
  tokenSwaps,
  tokenSwapsQuery,
  tradesAnswer,
  walletSwaps,
  walletSwapsQuery,
} from '../../engine/data-api/dex/swaps.js';
import { chainFor } from '../../engine/chains/lifecycle.js';
import { pairStats, pairStatsAnswer, pairStatsQuery } from '../../engine/data-api/dex/pair-stats.js';
import {
  multipleAnalyticsAnswer,
  multipleAnalyticsBody,
  multipleTokenAnalytics,
  timeseriesAnswer,
  timeseriesBody,
  timeseriesQuery,
  tokenTimeseries,
  trendingAnswer,
  trendingQuery,
  trendingTokens,
  type ChainToken,
} from '../../engine/data-api/scores/token-activity.js';
import {
  profitability,
  profitabilityQuery,
  profitabilitySummary,
  profitabilitySummaryQuery,
  topGainers,
  topGainersQuery,
} from '../../engine/crosschain/pnl.js';
import { profitabilityAnswer, profitabilitySummaryAnswer, topGainersAnswer } from '../../engine/crosschain/pnl-responses.js';
import type { Clock } from '../../engine/clock.js';
import { findChain } from '../../engine/chains/registry.js';
import { badRequest } from '../../engine/errors.js';
import { validate } from '../../engine/schema.js';
import { arrayParams, dataChain, notFollowed, queryAndPath, queryEndpoint, type DataEndpoint } from './data.js';
import { followedChains } from './data-txs.js';
import type { Request } from './route.js';
import { json } from './route.js';
import { queryParams } from './query.js';

/**
 * The price, pair, swap, token activity and token-score endpoints of the Data API (issues 18, 20; engine/data-api/dex/
 * token-prices.ts, pairs.ts, pair-stats.ts, swaps.ts and engine/data-api/scores/score.ts, token-activity.ts hold their
 * logic, and the schemas of their answers). Most read token
 * metadata from the chain's node the first time (502 when it cannot be reached); the swap lists read their blocks
 * from the indexes (503 for one not indexed yet).
 */
export function priceEndpoints(deps: DataDeps, clock: Clock): DataEndpoint[] {
  const nowSeconds = (): number => Math.floor(clock.now() / 1000);
  /** A body's tokens, each on its own chain: checked as a request's `chain` is (known, EVM, not removed, followed), naming `tokens`. */
  const tokensOf = (body: { tokens: Array<{ chain: string; tokenAddress: string }> }): ChainToken[] =>
    body.tokens.map(({ chain: given, tokenAddress }) => {
      const chain = chainFor(given, 'data', clock.now(), { field: 'tokens' });
      if (deps.follower(chain.key) === undefined)
        throw badRequest('tokens', `${chain.key} (${chain.name}) is not followed by this server; add it to CHAINPOST_CHAINS`);
      return { chain: chain.key, tokenAddress };
    });
  /** GET /tokens/trending's chains: the one asked, else every EVM chain followed here (the hosted default is every chain). */
  const trendingChains = (req: Request): string[] => {
    if (!queryParams(req.query).has('chain')) return followedChains(deps).map((c) => c.key);
    const chain = dataChain(req, clock.now());
    if (deps.follower(chain.key) === undefined) throw notFollowed(chain);
    return [chain.key];
  };
  const NODE = [502];
  const SWAPS = [502, 503];
  return [
    {
      ...queryEndpoint('getTokenPrice', 'GET', '/erc20/:address/price', tokenPriceQuery, (c, q) => tokenPrice(deps, c, q)),
      responses: { 200: tokenPriceAnswer },
      errors: NODE,
    },
    {
      operation: 'getWalletNetWorth',
      method: 'GET',
      path: '/wallets/:address/net-worth',
      // `chains` names the chains (the request's chain when absent); one not followed here is answered as unsupported.
      chain: 'known',
      query: netWorthQuery,
      responses: { 200: netWorthAnswer },
      handle: async (req, c) => {
        const q = validate(netWorthQuery, { ...queryAndPath(req), ...arrayParams(req, ['chains']) }, 'query');
        // Each checked as the `chain` of any data request is (known, an EVM chain, not removed), naming `chains`.
        const asked = q.chains.map((id) => chainFor(id, 'data', clock.now(), { field: 'chains' }).key);
        const chains = asked.length === 0 ? [c.key] : [...new Set(asked)];
        const followed = chains.filter((k) => deps.follower(k) !== undefined);
        if (followed.length === 0)
          throw badRequest('chains', `none of ${chains.join(', ')} is followed by this server; add them to CHAINPOST_CHAINS`);
        return json(
          200,
          await netWorth(
            deps,
            followed,
            chains.filter((k) => !followed.includes(k)),
            q,
          ),
        );
      },
    },
    {
      ...queryEndpoint('getTokenAnalytics', 'GET', '/tokens/:tokenAddress/analytics', analyticsQuery, (c, q) => tokenAnalytics(deps, c, q)),
      responses: { 200: analyticsAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getTokenScore', 'GET', '/tokens/:tokenAddress/score', scoreQuery, (c, q) => tokenScore(deps, c, q)),
      responses: { 200: scoreAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getHistoricalTokenScore', 'GET', '/tokens/:tokenAddress/score/historical', historicalScoreQuery, (c, q) =>
        historicalTokenScore(deps, c, q),
      ),
      responses: { 200: historicalScoreAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getSwapsByWalletAddress', 'GET', '/wallets/:address/swaps', walletSwapsQuery, (c, q) => walletSwaps(deps, c, q), {
        lists: ['transactionTypes'],
      }),
      responses: { 200: tradesAnswer },
      errors: SWAPS,
    },
    {
      ...queryEndpoint('getSwapsByTokenAddress', 'GET', '/erc20/:address/swaps', tokenSwapsQuery, (c, q) => tokenSwaps(deps, c, q), {
        lists: ['transactionTypes'],
      }),
      responses: { 200: tradesAnswer },
      errors: SWAPS,
    },
    {
      ...queryEndpoint('getSwapsByPairAddress', 'GET', '/pairs/:address/swaps', pairSwapsQuery, (c, q) => pairSwaps(deps, c, q), {
        lists: ['transactionTypes'],
      }),
      responses: { 200: pairSwapsAnswer },
      errors: SWAPS,
    },
    // Profit and loss (engine/crosschain/pnl.ts, the /v1 PnL's logic); `days` counts back from the service clock. Each
    // call's return type holds pnl.ts's builders to their answers' schemas.
    {
      ...queryEndpoint(
        'getWalletProfitability',
        'GET',
        '/wallets/:address/profitability',
        profitabilityQuery,
        (c, q): Promise<z.infer<typeof profitabilityAnswer>> => profitability(deps, findChain(c)!, q, nowSeconds()),
        { lists: ['token_addresses'] },
      ),
      responses: { 200: profitabilityAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint(
        'getWalletProfitabilitySummary',
        'GET',
        '/wallets/:address/profitability/summary',
        profitabilitySummaryQuery,
        (c, q): Promise<z.infer<typeof profitabilitySummaryAnswer>> => profitabilitySummary(deps, findChain(c)!, q, nowSeconds()),
      ),
      responses: { 200: profitabilitySummaryAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint(
        'getTopProfitableWalletPerToken',
        'GET',
        '/erc20/:address/top-gainers',
        topGainersQuery,
        (c, q): Promise<z.infer<typeof topGainersAnswer>> => topGainers(deps, findChain(c)!, q, nowSeconds()),
      ),
      responses: { 200: topGainersAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getTokenPairs', 'GET', '/erc20/:token_address/pairs', tokenPairsQuery, (c, q) => tokenPairs(deps, c, q)),
      responses: { 200: tokenPairsAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getPairCandlesticks', 'GET', '/pairs/:address/ohlcv', ohlcvQuery, (c, q) => pairCandles(deps, c, q)),
      responses: { 200: ohlcvAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getPairReserves', 'GET', '/:pair_address/reserves', reservesQuery, (c, q) => pairReserves(deps, c, q)),
      responses: { 200: reservesAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getPairAddress', 'GET', '/:token0_address/:token1_address/pairAddress', pairAddressQuery, (c, q) =>
        pairAddress(deps, c, q),
      ),
      responses: { 200: pairAddressAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getPairPrice', 'GET', '/:token0_address/:token1_address/price', pairPriceQuery, (c, q) => pairPrice(deps, c, q)),
      responses: { 200: pairPriceAnswer },
      errors: NODE,
    },
    {
      ...queryEndpoint('getPairStats', 'GET', '/pairs/:address/stats', pairStatsQuery, (c, q) => pairStats(deps, c, q)),
      responses: { 200: pairStatsAnswer },
      // 404: no pool of a registry factory at that address.
      errors: [404, 502],
    },
    {
      operation: 'getMultipleTokenAnalytics',
      method: 'POST',
      path: '/tokens/analytics',
      // Each token names its own chain.
      chain: 'none',
      body: multipleAnalyticsBody,
      responses: { 200: multipleAnalyticsAnswer },
      errors: NODE,
      handle: async (req) => json(200, await multipleTokenAnalytics(deps, tokensOf(validate(multipleAnalyticsBody, req.body, 'body')))),
    },
    {
      operation: 'getTimeSeriesTokenAnalytics',
      method: 'POST',
      path: '/tokens/analytics/timeseries',
      chain: 'none',
      query: timeseriesQuery,
      body: timeseriesBody,
      responses: { 200: timeseriesAnswer },
      errors: NODE,
      handle: async (req) => {
        const q = validate(timeseriesQuery, queryAndPath(req), 'query');
        return json(200, await tokenTimeseries(deps, tokensOf(validate(timeseriesBody, req.body, 'body')), q));
      },
    },
    {
      operation: 'getTrendingTokensV2',
      method: 'GET',
      path: '/tokens/trending',
      // `chain` narrows the list to one chain; without it, every chain followed here.
      chain: 'none',
      query: trendingQuery,
      responses: { 200: trendingAnswer },
      errors: NODE,
      handle: async (req) =>
        json(200, await trendingTokens(deps, trendingChains(req), validate(trendingQuery, queryAndPath(req), 'query'))),
    },
    {
      operation: 'getMultipleTokenPrices',
      method: 'POST',
      path: '/erc20/prices',
      query: tokenPricesQuery,
      body: tokenPricesBody,
      responses: { 200: tokenPricesAnswer },
      errors: NODE,
      handle: async (req, c) => {
        const q = validate(tokenPricesQuery, queryAndPath(req), 'query');
        return json(200, await tokenPrices(deps, c.key, q, validate(tokenPricesBody, req.body, 'body')));
      },
    },
  ];
}
