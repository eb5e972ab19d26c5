import type { Clock } from '../../engine/clock.js';
import { chainFor } from '../../engine/chains/lifecycle.js';
import type { Chain } from '../../engine/chains/registry.js';
import { queryList, queryParams } from './query.js';
import { notBuilt, type Request, type Route } from './route.js';

/** The cross-chain API (/v1): one request covers several chains, EVM, Bitcoin and Solana. */
export function crossChains(req: Request, now: number): Chain[] {
  const q = queryParams(req.query);
  const named = [...queryList(q, 'chains').map((v) => ['chains', v] as const), ...queryList(q, 'chain').map((v) => ['chain', v] as const)];
  return named.map(([field, v]) => chainFor(v, 'crosschain', now, { field, families: ['evm', 'bitcoin', 'solana'] }));
}

export function crossChainRoutes(clock: Clock): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/v1/defi/protocols',
      area: 'crosschain',
      auth: 'key',
      handle: (req) => {
        crossChains(req, clock.now());
        return notBuilt('GET', '/v1/defi/protocols');
      },
    },
  ];
}
