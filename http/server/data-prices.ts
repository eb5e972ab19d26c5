import type { DataDeps } from '../../engine/data-api/deps.js';
import { ohlcvQuery, pairCandles } from '../../engine/data-api/candles.js';
import { pairAddress, pairAddressQuery, pairPrice, pairPriceQuery, pairReserves, reservesQuery, tokenPairs, tokenPairsQuery } from '../../engine/data-api/pairs.js';
import { tokenPrice, tokenPriceQuery, tokenPrices, tokenPricesBody, tokenPricesQuery } from '../../engine/data-api/token-prices.js';
import { netWorth, netWorthQuery } from '../../engine/data-api/erc20-balances.js';
import { analyticsQuery, tokenAnalytics } from '../../engine/data-api/token-analytics.js';
import { chainFor } from '../../engine/chains/lifecycle.js';
import type { Clock } from '../../engine/clock.js';
import { badRequest } from '../../engine/errors.js';
import { validate } from '../../engine/schema.js';
import { queryAndPath, queryList, type DataEndpoint } from './data.js';
import { json } from './route.js';

/** The price and pair endpoints of the Data API (issue 18; engine/data-api/token-prices.ts and pairs.ts hold their logic). */
export function priceEndpoints(deps: DataDeps, clock: Clock): DataEndpoint[] {
  return [
    { method: 'GET', path: '/erc20/:address/price', handle: async (req, c) => json(200, await tokenPrice(deps, c.key, validate(tokenPriceQuery, queryAndPath(req), 'query'))) },
    {
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
        if (followed.length === 0) throw badRequest('chains', `none of ${chains.join(', ')} is followed by this server; add them to CHAINPOST_CHAINS`);
        return json(200, await netWorth(deps, followed, chains.filter((k) => !followed.includes(k)), q));
      },
    },
    { method: 'GET', path: '/tokens/:tokenAddress/analytics', handle: async (req, c) => json(200, await tokenAnalytics(deps, c.key, validate(analyticsQuery, queryAndPath(req), 'query'))) },
    { method: 'GET', path: '/erc20/:token_address/pairs', handle: async (req, c) => json(200, await tokenPairs(deps, c.key, validate(tokenPairsQuery, queryAndPath(req), 'query'))) },
    { method: 'GET', path: '/pairs/:address/ohlcv', handle: async (req, c) => json(200, await pairCandles(deps, c.key, validate(ohlcvQuery, queryAndPath(req), 'query'))) },
    { method: 'GET', path: '/:pair_address/reserves', handle: async (req, c) => json(200, await pairReserves(deps, c.key, validate(reservesQuery, queryAndPath(req), 'query'))) },
    { method: 'GET', path: '/:token0_address/:token1_address/pairAddress', handle: async (req, c) => json(200, await pairAddress(deps, c.key, validate(pairAddressQuery, queryAndPath(req), 'query'))) },
    { method: 'GET', path: '/:token0_address/:token1_address/price', handle: async (req, c) => json(200, await pairPrice(deps, c.key, validate(pairPriceQuery, queryAndPath(req), 'query'))) },
    {
      method: 'POST',
      path: '/erc20/prices',
      handle: async (req, c) => {
        const q = validate(tokenPricesQuery, queryAndPath(req), 'query');
        return json(200, await tokenPrices(deps, c.key, q, validate(tokenPricesBody, req.body, 'body')));
      },
    },
  ];
}
