import type { Clock } from '../../engine/clock.js';
import type { ChainFamily } from '../../engine/chains/registry.js';
import { resolveChains, type ResolvedChains } from '../../engine/crosschain/chains.js';
import { queryList, queryParams } from './query.js';
import { notBuilt, type Request, type Route } from './route.js';

const ALL_FAMILIES: readonly ChainFamily[] = ['evm', 'bitcoin', 'solana'];

/** The chains of a cross-chain request (`chains`, in any array form; none: all followed), resolved by engine/crosschain/chains.ts. */
export function requestChains(req: Request, followed: readonly string[], now: number, families = ALL_FAMILIES): ResolvedChains {
  return resolveChains(queryList(queryParams(req.query), 'chains'), { followed, families, now });
}

/** The cross-chain API (/v1): one request covers several chains, EVM, Bitcoin and Solana. `followed`: the chains this server follows. */
export function crossChainRoutes(clock: Clock, followed: () => readonly string[]): Route[] {
  return [
    {
      method: 'GET',
      pattern: '/v1/defi/protocols',
      area: 'crosschain',
      auth: 'key',
      handle: (req) => {
        requestChains(req, followed(), clock.now());
        return notBuilt('GET', '/v1/defi/protocols');
      },
    },
  ];
}
