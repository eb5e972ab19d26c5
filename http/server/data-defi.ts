import { z } from 'zod';
import type { Chain } from '../../engine/chains/registry.js';
import type { DefiAdapter } from '../../engine/crosschain/defi/adapter.js';
import { defiPositionsAnswer, defiProtocolPositionsAnswer, defiSummaryAnswer } from '../../engine/crosschain/defi/answers-v22.js';
import { chainPositions, v22Positions, v22ProtocolPositions, v22Summary } from '../../engine/crosschain/defi/positions.js';
import { ADAPTERS, adapterOf } from '../../engine/crosschain/defi/registry.js';
import type { DataDeps } from '../../engine/data-api/common/deps.js';
import { evmAddress } from '../../engine/data-api/common/params.js';
import { validate } from '../../engine/schema.js';
import { queryAndPath, type DataEndpoint } from './data.js';
import { json, type Request } from './route.js';

/**
 * The Data API's DeFi endpoints (the same positions as /v1's, engine/crosschain/defi/, on the one chain of `chain`).
 * 502: a contract's view read from a node that cannot be reached.
 */

const walletQuery = z.object({ address: evmAddress });
const protocolQuery = walletQuery.extend({ protocol: z.string().max(100) });

export function defiEndpoints(deps: DataDeps): DataEndpoint[] {
  const positions = (req: Request, chain: Chain, adapters: readonly DefiAdapter[]) =>
    chainPositions(deps, chain, adapters, validate(walletQuery, queryAndPath(req), 'query').address);
  return [
    {
      operation: 'getDefiSummary',
      method: 'GET',
      path: '/wallets/:address/defi/summary',
      query: walletQuery,
      responses: { 200: defiSummaryAnswer },
      errors: [502],
      handle: async (req, c) => json(200, v22Summary(await positions(req, c, ADAPTERS))),
    },
    {
      operation: 'getDefiPositionsSummary',
      method: 'GET',
      path: '/wallets/:address/defi/positions',
      query: walletQuery,
      responses: { 200: defiPositionsAnswer },
      errors: [502],
      handle: async (req, c) => json(200, v22Positions(await positions(req, c, ADAPTERS))),
    },
    {
      operation: 'getDefiPositionsByProtocol',
      method: 'GET',
      path: '/wallets/:address/defi/:protocol/positions',
      query: protocolQuery,
      responses: { 200: defiProtocolPositionsAnswer },
      errors: [502],
      handle: async (req, c) => {
        const adapter = adapterOf(validate(protocolQuery, queryAndPath(req), 'query').protocol);
        return json(200, v22ProtocolPositions(adapter, await positions(req, c, [adapter])));
      },
    },
  ];
}
