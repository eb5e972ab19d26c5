import type { DataDeps } from '../../engine/data-api/common/deps.js';
import { ohlcvQuery, pairCandles } from '../../engine/data-api/dex/candles.js';
import {
  pairAddress,
  pairAddressQuery,
  pairPrice,
  pairPriceQuery,
  pairReserves,
  reservesQuery,
  tokenPairs,
  tokenPairsQuery,
} from '../../engine/data-api/dex/pairs.js';
import { tokenPrice, tokenPriceQuery, tokenPrices, tokenPricesBody, tokenPricesQuery } from '../../engine/data-api/dex/token-prices.js';
import { netWorth, netWorthQuery } from '../../engine/data-api/erc20/balances.js';
import { analyticsQuery, tokenAnalytics } from '../../engine/data-api/scores/analytics.js';
import { historicalScoreQuery, historicalTokenScore, scoreQuery, tokenScore } from '../../engine/data-api/scores/score.js';
import { pairSwaps, pairSwapsQuery, tokenSwaps, tokenSwapsQuery, walletSwaps, walletSwapsQuery } from '../../engine/data-api/dex/swaps.js';
import { chainFor } from '../../engine/chains/lifecycle.js';
import {
  profitability,
  profitabilityQuery,
  profitabilitySummary,
  profitabilitySummaryQuery,
  topGainers,
  topGainersQuery,
} from '../../engine/crosschain/pnl.js';
import type { Clock } from '../../engine/clock.js';
import { findChain } from '../../engine/chains/registry.js';
import { badRequest } from '../../engine/errors.js';
import { validate } from '../../engine/schema.js';
import { queryAndPath, queryEndpoint, queryList, type DataEndpoint } from './data.js';
import { json } from './route.js';

/** The price, pair, swap and token-score endpoints of the Data API (issues 18, 20; engine/data-api/dex/token-prices.ts, pairs.ts, swaps.ts and engine/data-api/scores/score.ts hold their logic). */
export function priceEndpoints(deps: DataDeps, clock: Clock): DataEndpoint[] {
  const nowSeconds = (): number => Math.floor(clock.now() / 1000);
  return [
    queryEndpoint('getTokenPrice', 'GET', '/erc20/:address/price', tokenPriceQuery, (c, q) => tokenPrice(deps, c, q)),
    {
      operation: 'getWalletNetWorth',
      method: 'GET',
      path: '/wallets/:address/net-worth',
      // `chains` names the chains (the request's chain when absent); one not followed here is answered as unsupported.
      chain: 'known',
      handle: async (req, c) => {
        const q = validate(netWorthQuery, queryAndPath(req), 'query');
        // Each checked as the `chain` of any data request is (known, an EVM chain, not removed), naming `chains`.
        const asked = queryList(req, 'chains').map((id) => chainFor(id, 'data', clock.now(), { field: 'chains' }).key);
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
    queryEndpoint('getTokenAnalytics', 'GET', '/tokens/:tokenAddress/analytics', analyticsQuery, (c, q) => tokenAnalytics(deps, c, q)),
    queryEndpoint('getTokenScore', 'GET', '/tokens/:tokenAddress/score', scoreQuery, (c, q) => tokenScore(deps, c, q)),
    queryEndpoint('getHistoricalTokenScore', 'GET', '/tokens/:tokenAddress/score/historical', historicalScoreQuery, (c, q) =>
      historicalTokenScore(deps, c, q),
    ),
    queryEndpoint('getSwapsByWalletAddress', 'GET', '/wallets/:address/swaps', walletSwapsQuery, (c, q) => walletSwaps(deps, c, q), {
      lists: ['transactionTypes'],
    }),
    queryEndpoint('getSwapsByTokenAddress', 'GET', '/erc20/:address/swaps', tokenSwapsQuery, (c, q) => tokenSwaps(deps, c, q), {
      lists: ['transactionTypes'],
    }),
    queryEndpoint('getSwapsByPairAddress', 'GET', '/pairs/:address/swaps', pairSwapsQuery, (c, q) => pairSwaps(deps, c, q), {
      lists: ['transactionTypes'],
    }),
    // Profit and loss (engine/crosschain/pnl.ts, the /v1 PnL's logic); `days` counts back from the service clock.
    queryEndpoint(
      'getWalletProfitability',
      'GET',
      '/wallets/:address/profitability',
      profitabilityQuery,
      (c, q) => profitability(deps, findChain(c)!, q, nowSeconds()),
      { lists: ['token_addresses'] },
    ),
    queryEndpoint('getWalletProfitabilitySummary', 'GET', '/wallets/:address/profitability/summary', profitabilitySummaryQuery, (c, q) =>
      profitabilitySummary(deps, findChain(c)!, q, nowSeconds()),
    ),
    queryEndpoint('getTopProfitableWalletPerToken', 'GET', '/erc20/:address/top-gainers', topGainersQuery, (c, q) =>
      topGainers(deps, findChain(c)!, q, nowSeconds()),
    ),
    queryEndpoint('getTokenPairs', 'GET', '/erc20/:token_address/pairs', tokenPairsQuery, (c, q) => tokenPairs(deps, c, q)),
    queryEndpoint('getPairCandlesticks', 'GET', '/pairs/:address/ohlcv', ohlcvQuery, (c, q) => pairCandles(deps, c, q)),
    queryEndpoint('getPairReserves', 'GET', '/:pair_address/reserves', reservesQuery, (c, q) => pairReserves(deps, c, q)),
    queryEndpoint('getPairAddress', 'GET', '/:token0_address/:token1_address/pairAddress', pairAddressQuery, (c, q) =>
      pairAddress(deps, c, q),
    ),
    queryEndpoint('getPairPrice', 'GET', '/:token0_address/:token1_address/price', pairPriceQuery, (c, q) => pairPrice(deps, c, q)),
    {
      operation: 'getMultipleTokenPrices',
      method: 'POST',
      path: '/erc20/prices',
      handle: async (req, c) => {
        const q = validate(tokenPricesQuery, queryAndPath(req), 'query');
        return json(200, await tokenPrices(deps, c.key, q, validate(tokenPricesBody, req.body, 'body')));
      },
    },
  ];
}
